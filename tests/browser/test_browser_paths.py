"""The app as ``looptrace ui`` starts it (``app/serve.py``: warmed up, then listening),
in a real browser: every page at the path a user types (``/runs`` was "Page not
found": Streamlit serves its default page at ``/`` only), with or without a
trailing slash, and ``/`` the Runs page. Debian's Chromium driven by Playwright."""

from __future__ import annotations

import pytest
from browser_support import ui_server, wait_connected
from playwright.sync_api import expect
from tracer_kit import get_weather, make_agent, two_lap_model

from tracer import TraceMiddleware

TITLES = {"": "Runs", "runs": "Runs", "runs/": "Runs", "compare": "Compare two runs",
          "wire/": "Wire formats", "timeline": "Timeline"}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    db = tmp_path_factory.mktemp("paths") / "paths.db"
    trace = TraceMiddleware(db=db, run_name="path-run")
    make_agent(two_lap_model(), [get_weather], [trace]).invoke({"messages": [("user", "hi")]})
    trace.close()
    with ui_server(db, timeout=180) as (base, _printed_s, _pid):
        yield base


@pytest.mark.parametrize("path", list(TITLES))
def test_a_page_opens_at_its_own_path(browser, url: str, path: str) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{url}/{path}")
    wait_connected(page, 60_000)
    expect(page.locator('[data-testid="stMain"] h1').first).to_have_text(TITLES[path],
                                                                         timeout=60_000)
    page.wait_for_timeout(500)  # (the "Page not found" dialog follows the first run)
    assert page.get_by_text("Page not found").count() == 0
    page.close()
