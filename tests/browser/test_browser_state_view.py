"""The State view of the one replayer (tracer/replayer: replayer.js, state_view.py) in a
real browser, on a Deep Agents run with a plan (``todos``) and files: at every step the
keys shown are ``Replay.values_at``'s, the keys changed at the step are highlighted with
who changed them, ``todos`` is a checklist, ``files`` a file tree with the file written at
the step marked. The HTML export in light and dark; the app's replay page below."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import streamlit_server, wait_connected
from playwright.sync_api import expect
from replayer_driver import Replayer
from truth.run import run_truth

from tracer import TraceMiddleware
from tracer.interop import html_export
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay

expect.set_options(timeout=10_000)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Replay]:
    db = tmp_path_factory.mktemp("state") / "workspace.db"
    trace = TraceMiddleware(db=db)
    run_truth("deep_workspace", [trace], position="first", callbacks=[trace.callback_handler()])
    trace.flush()
    with TraceDB(db) as tdb:
        (root,) = [r for r in tdb.runs() if r.parent_id is None]
        return db, root.id, build_replay(tdb.run(root.id))


def _step_of(rp: Replay, key: str, n: int = 0) -> int:
    """The index of the step at which the n-th change of ``key`` shows."""
    v = rp.run.state.history(key)[n]
    return next(i for i, s in enumerate(rp.steps) if s.event.seq >= v.seq)


def _shown(r: Replayer) -> dict[str, Any]:
    """What the State view shows (locators: they reach into the app's shadow root)."""
    box = r.part('[data-testid="lt-state"]')

    def attr(selector: str, name: str) -> list[str]:
        return box.locator(selector).evaluate_all(f"es => es.map(e => e.getAttribute('{name}'))")

    return {"hidden": box.evaluate("e => e.hidden"),
            "keys": attr(".lt-state-key", "data-key"),
            "changed": attr(".lt-state-key.changed", "data-key"),
            "by": box.locator(".lt-state-by").all_text_contents(),
            "todos": attr("li.lt-todo", "data-status"),
            "files": attr("li.lt-file", "data-path"),
            "written": attr("li.lt-file.written", "data-path"),
            "colour": r.root.evaluate("e => getComputedStyle(e).color")}


def _check_every_step(r: Replayer, rp: Replay) -> None:
    for i in range(len(rp.steps)):
        r.seek(i + 1)
        r.wait_step(i)
        got = _shown(r)
        want = rp.run.state.at(rp.steps[i].event.seq)
        assert got["keys"] == sorted(want), f"step {i + 1}: {got['keys']} != {sorted(want)}"


def _luminance(css: str) -> float:
    r, g, b = (int(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3])
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255


def _go(r: Replayer, i: int) -> dict[str, Any]:
    r.seek(i + 1)
    r.wait_step(i)
    return _shown(r)


def _check_plan_and_files(r: Replayer, rp: Replay) -> None:
    # the plan, as written by call-ws-plan: a checklist, highlighted with who wrote it
    got = _go(r, _step_of(rp, "todos"))
    assert "todos" in got["changed"]
    assert any("call-ws-plan" in b and "tools" in b for b in got["by"]), got["by"]
    assert got["todos"] == ["in_progress", "pending"]
    assert r.part("li.lt-todo").evaluate_all(
        "es => es.map(e => e.getAttribute('data-change'))") == ["added", "added"]
    # the file written by call-ws-write, marked in the tree
    i = _step_of(rp, "files", 1)
    got = _go(r, i)
    assert got["files"] == ["/notes.md"] and got["written"] == ["/notes.md"]
    assert any("call-ws-write" in b for b in got["by"])
    # a new file opens on its diff: every line added
    new = r.part('li.lt-file[data-path="/notes.md"] pre.lt-diff')
    assert new.locator("span.lt-add").all_text_contents() == ["+Q3 revenue: 12", "+Q3 cost: 7"]
    # one step later the file is there, not written again
    assert _go(r, i + 1)["written"] == []
    # the edit (call-ws-edit): the file opens on the line removed and the line added
    got = _go(r, _step_of(rp, "files", 2))
    assert got["written"] == ["/notes.md"]
    diff = r.part('li.lt-file[data-path="/notes.md"] pre.lt-diff')
    assert diff.locator("span.lt-del").all_text_contents() == ["-Q3 revenue: 12"]
    assert diff.locator("span.lt-add").all_text_contents() == ["+Q3 revenue: 13"]
    assert diff.locator("span.lt-dl:not(.lt-add):not(.lt-del):not(.lt-hunk)"
                        ).all_text_contents() == [" Q3 cost: 7"]
    # the plan completed (call-ws-done): each item marked with the status it had
    _go(r, _step_of(rp, "todos", 1))
    todos = r.part("li.lt-todo")
    assert todos.evaluate_all("es => es.map(e => e.getAttribute('data-change'))") == [
        "status", "status"]
    assert r.part("li.lt-todo .lt-todo-change").all_text_contents() == ["was doing", "was to do"]
    # the end: the plan completed; the file opens with its text
    assert _go(r, len(rp.steps) - 1)["todos"] == ["completed", "completed"]
    r.part('li.lt-file[data-path="/notes.md"] summary').click()
    expect(r.part('li.lt-file[data-path="/notes.md"] pre')).to_contain_text("Q3 revenue: 13")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_state_view_in_the_html_export(browser, workspace, tmp_path, scheme):
    db, run_id, rp = workspace
    html = html_export.export_html(db, run_id, tmp_path / "ws.html")
    ctx = browser.new_context(viewport={"width": 1300, "height": 900}, color_scheme=scheme,
                              reduced_motion="reduce")
    try:
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(html.resolve().as_uri())
        r = Replayer(page)
        r.wait_ready()
        _check_every_step(r, rp)
        _check_plan_and_files(r, rp)
        # the view takes the theme: dark text on light, light text on dark
        assert (_luminance(_shown(r)["colour"]) < 0.5) == (scheme == "light")
        assert not errors
    finally:
        ctx.close()


def test_a_run_without_state_shows_no_state_view(browser, tmp_path):
    from langchain.agents import create_agent
    from tracer_kit import get_weather, two_lap_model

    db = tmp_path / "plain.db"
    trace = TraceMiddleware(db=db)
    create_agent(two_lap_model(), [get_weather], middleware=[trace]).invoke(
        {"messages": [("user", "Weather in Oslo?")]})
    trace.flush()
    with TraceDB(db) as tdb:
        rid = tdb.runs()[0].id
    html = html_export.export_html(db, rid, tmp_path / "plain.html")
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        page.goto(html.resolve().as_uri())
        r = Replayer(page)
        r.wait_ready()
        assert _shown(r)["hidden"] is True
    finally:
        ctx.close()


@pytest.fixture(scope="module")
def app_url(workspace: tuple[Path, str, Replay]) -> Iterator[str]:
    with streamlit_server(workspace[0]) as url:
        yield url


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_state_view_in_the_app(browser, workspace, app_url, scheme):
    _db, run_id, rp = workspace
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme,
                              reduced_motion="reduce")
    try:
        page = ctx.new_page()
        page.goto(f"{app_url}/replay?run={run_id}")
        wait_connected(page)
        r = Replayer(page)
        r.wait_ready(timeout=60_000)
        r.wait_step(0, timeout=30_000)
        _check_plan_and_files(r, rp)
        got = _go(r, len(rp.steps) - 1)
        assert got["keys"] == sorted(rp.run.state.final())
        # the view takes the theme: dark text on light, light text on dark
        assert (_luminance(_shown(r)["colour"]) < 0.5) == (scheme == "light")
    finally:
        ctx.close()
