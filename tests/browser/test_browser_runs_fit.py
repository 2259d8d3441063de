"""The Runs table of the bundled samples at 1,500 px wide: every row on the page, in no
scroll box of its own (issue 47 in the way 3: the table showed 13 of 22 rows in a 440 px
box)."""

from __future__ import annotations

from pathlib import Path

from browser_support import streamlit_server, wait_connected

from tracer.read.loader import TraceDB

TABLE = '[data-testid="lt-runs-table"]'


def test_the_samples_table_shows_every_row_at_1500_px(browser, sample_db: Path,  # type: ignore[no-untyped-def]
                                           tmp_path: Path) -> None:
    with TraceDB(sample_db) as db:
        ids = {r.id for r in db.runs()}
    with streamlit_server(sample_db) as url:
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(url + "/")
        wait_connected(page, 60_000)
        rows = page.locator(TABLE + " tbody tr")
        rows.first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "runs-1500.png"), full_page=True)
        shown = [str(r.get_attribute("data-id")) for r in rows.all()]
        assert set(shown) == ids  # every sample run is a row of the page
        box = page.locator(TABLE).evaluate(
            "t => { const b = t.closest('.lt-runs') || t.parentElement;"
            " return [b.scrollHeight, b.clientHeight]; }")
        assert box[0] <= box[1], f"rows hidden in a scroll box: {box}"
        page.close()
