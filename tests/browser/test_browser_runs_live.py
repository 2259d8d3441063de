"""The Runs page in a real browser: a run recorded while the page is open appears
without a reload ("runs being recorded update live": the table's fragment reruns
every 2 s). Debian's Chromium driven by Playwright."""

from __future__ import annotations

from pathlib import Path

from browser_support import streamlit_server, wait_connected
from playwright.sync_api import expect
from tracer_kit import get_weather, make_agent, two_lap_model

from tracer import TraceMiddleware


def record(db: Path, name: str) -> None:
    trace = TraceMiddleware(db=db, run_name=name)
    make_agent(two_lap_model(), [get_weather], [trace]).invoke({"messages": [("user", "hi")]})
    trace.close()


def test_a_new_run_appears_on_the_open_runs_page(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "live.db"
    record(db, "first-run")
    with streamlit_server(db) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url + "/")
        wait_connected(page, 60_000)
        # the table (app/screens/runs/runs_grid.py, in a component's shadow root: Playwright's CSS
        # selectors reach into it); one cell per run in its "run" column
        cells = page.locator('[data-testid="lt-runs-table"] td[data-key="run"]')
        expect(cells.filter(has_text="first-run")).to_have_count(1, timeout=60_000)
        expect(cells.filter(has_text="second-run")).to_have_count(0)
        record(db, "second-run")  # while the page stays open: no reload, no click
        expect(cells.filter(has_text="second-run")).to_have_count(1, timeout=20_000)
        expect(cells.filter(has_text="first-run")).to_have_count(1)
        page.close()
