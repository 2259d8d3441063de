"""The State view's diffs and the LangGraph store's branch, in a real browser, in both
hosts (the HTML export and the app's replay page), light and dark.

A Deep Agents run whose files live in the store (``tests/store_kit.py``): the item a
tool call wrote opens on its diff (a new file: every line added; an edit: the line
removed and the line added; a delete: every line removed), marked with the call that
wrote it; the scratch file's markup and script are shown as text, never run. The
file and plan diffs of a run whose files are in the state are in
``test_browser_state_view.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import ARTIFACTS, streamlit_server, wait_connected
from langchain_core.messages import HumanMessage
from playwright.sync_api import Page, expect
from replayer_driver import Replayer
from store_kit import store_agent, store_seeded

from tracer import TraceMiddleware
from tracer.interop import html_export
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay

expect.set_options(timeout=10_000)


@pytest.fixture(scope="module")
def store_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Replay]:
    db = tmp_path_factory.mktemp("store") / "store.db"
    trace = TraceMiddleware(db=db)
    agent = trace.attach(store_agent(store_seeded(), [trace]))
    agent.invoke({"messages": [HumanMessage("Write the Q3 notes.", id="human-store")]})
    trace.flush()
    with TraceDB(db) as tdb:
        (root,) = [r for r in tdb.runs() if r.parent_id is None]
        return db, root.id, build_replay(tdb.run(root.id))


def _step_of_call(rp: Replay, tool_call_id: str) -> int:
    """The step at which the store write of ``tool_call_id`` shows."""
    v = next(v for v in rp.run.state.store_writes() if v.tool_call_id == tool_call_id)
    return next(i for i, s in enumerate(rp.steps) if s.event.seq >= v.seq)


def _item(r: Replayer, item: str) -> Any:
    return r.part(f'li.lt-store-item[data-ns="fs"][data-item="{item}"]')


def _lines(loc: Any, cls: str) -> list[str]:
    return list(loc.locator(f"pre.lt-diff span.{cls}").all_text_contents())


def _go(r: Replayer, i: int) -> None:
    r.seek(i + 1)
    r.wait_step(i)


def _check_store(page: Page, r: Replayer, rp: Replay, shot: str) -> None:
    box = r.part('[data-testid="lt-state"]')
    # the file written by call-st-write: new, every line added, marked with its call
    _go(r, _step_of_call(rp, "call-st-write"))
    notes = _item(r, "/notes.md")
    expect(notes).to_have_class("lt-store-item written")
    expect(notes.locator(".lt-written")).to_have_text("written here")
    expect(notes.locator(".lt-state-by")).to_contain_text("call-st-write")
    assert _lines(notes, "lt-add") == ["+Q3 revenue: 12", "+Q3 cost: 7"]
    assert _lines(notes, "lt-del") == []
    expect(box.locator('.lt-state-key[data-key="store"]')).to_have_class(
        "lt-state-key lt-store changed")
    # the edit: one line out, one line in, the rest as context
    _go(r, _step_of_call(rp, "call-st-edit"))
    notes = _item(r, "/notes.md")
    expect(notes.locator(".lt-written")).to_have_text("changed here")
    assert _lines(notes, "lt-del") == ["-Q3 revenue: 12"]
    assert _lines(notes, "lt-add") == ["+Q3 revenue: 13"]
    assert _lines(notes, "lt-hunk") == ["@@ -1,2 +1,2 @@"]
    # the scratch file's markup is text: no element made of it, no script run
    _go(r, _step_of_call(rp, "call-st-scratch"))
    scratch = _item(r, "/scratch.md")
    assert _lines(scratch, "lt-add") == [
        '+<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>']
    assert box.locator("img, script").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
    # the delete: every line removed, and the item gone one step later
    i = _step_of_call(rp, "call-st-forget")
    _go(r, i)
    scratch = _item(r, "/scratch.md")
    expect(scratch.locator(".lt-written")).to_have_text("deleted here")
    assert _lines(scratch, "lt-del") and not _lines(scratch, "lt-add")
    _go(r, i + 1)
    expect(_item(r, "/scratch.md")).to_have_count(0)
    # the end: the two items the run left, nothing marked; the hook's note named
    _go(r, len(rp.steps) - 1)
    assert r.root.get_attribute("data-store-items") == "2"
    expect(r.part("li.lt-store-item.written")).to_have_count(0)
    expect(r.part('li.lt-store-item[data-ns="memo"][data-item="seen"]')).to_have_count(1)


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def _theme_ok(r: Replayer, scheme: str) -> None:
    colour = r.part('[data-testid="lt-state"]').evaluate("e => getComputedStyle(e).color")
    assert (_luminance(colour) < 0.5) == (scheme == "light")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_store_branch_in_the_html_export(browser, store_run, tmp_path, scheme):
    db, run_id, rp = store_run
    html = html_export.export_html(db, run_id, tmp_path / "store.html")
    ctx = browser.new_context(viewport={"width": 1300, "height": 1000}, color_scheme=scheme,
                              reduced_motion="reduce")
    try:
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(html.resolve().as_uri())
        r = Replayer(page)
        r.wait_ready()
        ARTIFACTS.mkdir(exist_ok=True)
        _check_store(page, r, rp, f"state-store-export-{scheme}.png")
        _theme_ok(r, scheme)
        assert not errors
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def app_url(store_run: tuple[Path, str, Replay]) -> Iterator[str]:
    with streamlit_server(store_run[0]) as url:
        yield url


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_store_branch_in_the_app(browser, store_run, app_url, scheme):
    _db, run_id, rp = store_run
    ctx = browser.new_context(viewport={"width": 1400, "height": 1100}, color_scheme=scheme,
                              reduced_motion="reduce")
    try:
        page = ctx.new_page()
        page.goto(f"{app_url}/replay?run={run_id}")
        wait_connected(page)
        r = Replayer(page)
        r.wait_ready(timeout=60_000)
        r.wait_step(0, timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        _check_store(page, r, rp, f"state-store-app-{scheme}.png")
        _theme_ok(r, scheme)
    finally:
        ctx.close()
