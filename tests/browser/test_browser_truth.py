"""What the screen says, in a real browser: the hand-rolled loop is drawn as the loop it
is, the Presenter has a run picker, and every page opens on the same run.

One Streamlit server over a copy of the bundled samples (Debian's Chromium driven by
Playwright). The hand-rolled sample (``hand-rolled-loop``, run ``weather_loop``: a
for-loop recorded by the callback handler, no middleware) must draw no hook node and
no arc the record does not hold, at every step, in the app and in the HTML export.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import collect_console_errors, streamlit_server, wait_connected
from playwright.sync_api import Page, expect
from replayer_driver import Replayer

from tracer.read.loader import TraceDB

expect.set_options(timeout=15_000)
LOOP_NODES = ["END", "START", "model", "tools"]


@pytest.fixture(scope="module")
def served(sample_db: Path, tmp_path_factory: pytest.TempPathFactory,
           browser: Any) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """(app URL, database, run name -> id)."""
    db = tmp_path_factory.mktemp("truth-browser") / "samples.db"
    shutil.copy(sample_db, db)
    with TraceDB(db) as tdb:
        ids = {r.name: r.id for r in tdb.runs()}
    with streamlit_server(db) as url:
        yield url, db, ids


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  reduced_motion="reduce")
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()


def walk_the_loop(r: Replayer) -> None:
    """Every step of the hand-rolled run: the loop's four nodes and no hook, no wrap box,
    no jump; an arc off the loop's edges only where the run left them (its last step:
    the bound stopped it right after the tools)."""
    graph = r.graph
    expect(graph).to_have_attribute("data-shape", "loop")
    nodes = sorted(graph.locator("g.node").evaluate_all("els => els.map(e => e.dataset.node)"))
    assert nodes == LOOP_NODES
    expect(graph.locator("g.wrap")).to_have_count(0)
    expect(graph.locator("g.node.passthrough, g.node.unknown")).to_have_count(0)
    assert not re.search(r"before_|after_|wrap_", graph.locator("svg").text_content() or "")
    r.press("Home")
    n = int(r.root.get_attribute("data-steps") or 0)
    assert n == 18
    for i in range(n):
        r.wait_step(i)
        expect(graph.locator("g.edge.jump")).to_have_count(0)
        expect(r.root).to_have_attribute("data-jump", "0")
        moves = graph.locator("g.jumps g.edge")
        if i == n - 1:  # tools -> END: a plain move, no jump
            expect(moves).to_have_count(1)
            expect(moves.first).to_have_attribute("data-edge", "tools>END")
            expect(moves.first).to_have_class(re.compile(r"\bmove\b"))
        else:
            expect(moves).to_have_count(0)
        assert "jump" not in (r.part(".lt-caption").text_content() or "")
        if i < n - 1:
            r.press("ArrowRight")


def test_the_hand_rolled_loop_draws_no_hook_node_and_no_arc(
        served: tuple[str, Path, dict[str, str]], page: Page) -> None:
    url, _, ids = served
    errors = collect_console_errors(page)
    page.goto(f"{url}/replay?run={ids['weather_loop']}")
    wait_connected(page)
    r = Replayer(page)
    r.wait_ready(timeout=60_000)
    walk_the_loop(r)
    assert not errors, errors


def test_the_html_export_draws_the_hand_rolled_loop_the_same(
        served: tuple[str, Path, dict[str, str]], page: Page, tmp_path: Path) -> None:
    from tracer.interop.html_export import export_html

    _, db, ids = served
    out = export_html(db, ids["weather_loop"], tmp_path / "loop.html")
    page.goto(out.as_uri())
    r = Replayer(page)
    r.wait_ready()
    walk_the_loop(r)


def pick(page: Page, label: str, option: str) -> None:
    """Choose ``option`` (text it contains) in the Streamlit selectbox labelled ``label``."""
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    field = box.locator('input[role="combobox"]')
    field.click()
    field.fill(option)
    page.locator('[role="option"]').filter(has_text=option).first.click()


def test_the_presenter_has_a_run_picker_and_a_way_back(
        served: tuple[str, Path, dict[str, str]], page: Page) -> None:
    url, _, ids = served
    page.goto(f"{url}/presenter?run={ids['weather']}")
    wait_connected(page)
    r = Replayer(page, ".st-key-presenter")
    r.wait_ready(timeout=60_000)
    r.wait_run(ids["weather"])
    expect(page.locator('[data-testid="stSidebar"]')).to_be_hidden()
    pick(page, "Run", f"shopping · completed · {ids['shopping'][:8]}")
    r.wait_run(ids["shopping"])
    expect(page).to_have_url(re.compile(rf"run={ids['shopping']}"))
    back = page.locator('[data-testid="stPageLink"] a').filter(has_text="Replay")
    back.click()
    expect(page).to_have_url(re.compile(r"/replay\?"))
    replay = Replayer(page)
    replay.wait_run(ids["shopping"])


HEADINGS = {"Wire": "Wire formats", "Timeline": "Timeline"}


def nav(page: Page, title: str) -> None:
    """Switch pages through the sidebar's navigation (which drops the query), and wait
    for the new page (its heading, where it has one)."""
    link = page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).first
    # (a click that lands while the page is still rerunning can be dropped by Streamlit,
    # as once in a loaded CI run: click again, up to three times in all)
    for attempt in range(3):
        link.click()
        try:
            expect(page).to_have_url(re.compile(rf"/{title.lower()}"), timeout=15_000)
            break
        except AssertionError:
            if attempt == 2:
                raise
    if title in HEADINGS:
        expect(page.get_by_role("heading", name=HEADINGS[title])).to_be_visible()


def test_every_page_opens_on_the_same_run(served: tuple[str, Path, dict[str, str]],
                                          page: Page) -> None:
    """The Replay on deep-research (a parent whose subagent run is newer): the Wire,
    Timeline and Presenter pages open on it too, not on the newest run."""
    url, _, ids = served
    parent = ids["deep-research"]
    page.goto(f"{url}/replay?run={parent}")
    wait_connected(page)
    Replayer(page).wait_run(parent, timeout=60_000)
    nav(page, "Wire")
    wire_pick = page.locator('[data-testid="stSelectbox"]').filter(has_text="Run").first
    expect(wire_pick.locator("input")).to_have_value(re.compile(parent[:10]), timeout=60_000)
    expect(page).to_have_url(re.compile(rf"run={parent}"))
    nav(page, "Timeline")
    expect(page.locator('[data-testid="stText"]').filter(has_text=parent).first).to_be_visible()
    nav(page, "Presenter")
    Replayer(page, ".st-key-presenter").wait_run(parent)
    # (the Presenter hides the sidebar: back through its link) a run picked on the
    # Timeline is the run of every page
    page.locator('[data-testid="stPageLink"] a').filter(has_text="Replay").click()
    Replayer(page).wait_run(parent)
    nav(page, "Timeline")
    pick(page, "Run", f"approvals · completed · {ids['approvals'][:8]}")
    expect(page.locator('[data-testid="stText"]').filter(
        has_text=ids["approvals"]).first).to_be_visible()
    expect(page).to_have_url(re.compile(rf"run={ids['approvals']}"))
    nav(page, "Replay")
    Replayer(page).wait_run(ids["approvals"])
