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


def test_the_id_column_is_in_view_at_1500_px_without_scrolling(  # type: ignore[no-untyped-def]
        browser, sample_db: Path, tmp_path: Path) -> None:
    """Issue 47 in the way 3: at 1,500 px the id column sat right of the table's visible
    part, behind its sideways scroll. Every id cell lies inside the viewport and inside
    the table's visible box, unscrolled, and shows the id's first 12 characters, as the
    app's pickers do (the whole id on hover: its title)."""
    with streamlit_server(sample_db) as url:
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.goto(url + "/")
        wait_connected(page, 60_000)
        page.locator(TABLE + " tbody tr").first.wait_for(timeout=60_000)
        page.screenshot(path=str(tmp_path / "runs-id-1500.png"), full_page=True)
        seen = page.locator(TABLE).evaluate(
            "t => { const w = t.getBoundingClientRect();"
            " return [w.left, w.right, t.scrollLeft, [...t.querySelectorAll("
            "'tbody td[data-key=\"id\"]')].map(td => { const b = td.getBoundingClientRect();"
            " return [b.left, b.right, td.scrollWidth <= td.clientWidth, td.textContent,"
            " td.title, td.closest('tr').dataset.id]; })]; }")
        left, right, scrolled, cells = seen
        assert scrolled == 0
        assert len(cells) == 23
        for c_left, c_right, whole, text, title, run_id in cells:
            assert left <= c_left and c_right <= min(right, 1500), (c_left, c_right, right)
            assert whole and text == run_id[:12] and title == run_id, (text, title)
        page.close()
