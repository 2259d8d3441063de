"""The State view of the one replayer (tracer/replayer: replayer.js, state_view.py) in a
real browser, on a Deep Agents run with a plan (``todos``) and files: at every step the
keys shown are ``Replay.values_at``'s, the keys changed at the step are highlighted with
who changed them, ``todos`` is a checklist, ``files`` a file tree with the file written at
the step marked. The HTML export in light and dark; the app's replay page below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from replayer_driver import Replayer
from truth_kit import run_truth

from tracer import TraceMiddleware, html_export
from tracer.loader import TraceDB
from tracer.replay import Replay, build_replay

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


def _shown(page: Page) -> dict[str, Any]:
    return page.evaluate("""() => {
      const root = document.querySelector('[data-testid="lt-replayer"]');
      const box = root.querySelector('[data-testid="lt-state"]');
      return {hidden: box.hidden,
        keys: [...box.querySelectorAll('.lt-state-key')].map(e => e.dataset.key),
        changed: [...box.querySelectorAll('.lt-state-key.changed')].map(e => e.dataset.key),
        by: [...box.querySelectorAll('.lt-state-by')].map(e => e.textContent),
        todos: [...box.querySelectorAll('li.lt-todo')].map(e => e.dataset.status),
        files: [...box.querySelectorAll('li.lt-file')].map(e => e.dataset.path),
        written: [...box.querySelectorAll('li.lt-file.written')].map(e => e.dataset.path),
        bg: getComputedStyle(root).color};
    }""")


def _check_every_step(page: Page, r: Replayer, rp: Replay) -> None:
    for i in range(len(rp.steps)):
        r.seek(i + 1)
        r.wait_step(i)
        got = _shown(page)
        want = rp.run.state.at(rp.steps[i].event.seq)
        assert got["keys"] == sorted(want), f"step {i + 1}: {got['keys']} != {sorted(want)}"


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
        _check_every_step(page, r, rp)
        # the plan, as written by call-ws-plan: a checklist, highlighted with who wrote it
        i = _step_of(rp, "todos")
        r.seek(i + 1)
        r.wait_step(i)
        got = _shown(page)
        assert "todos" in got["changed"]
        assert any("call-ws-plan" in b and "tools" in b for b in got["by"]), got["by"]
        assert got["todos"] == ["in_progress", "pending"]
        # the file written by call-ws-write, marked in the tree
        i = _step_of(rp, "files", 1)
        r.seek(i + 1)
        r.wait_step(i)
        got = _shown(page)
        assert got["files"] == ["/notes.md"] and got["written"] == ["/notes.md"]
        assert any("call-ws-write" in b for b in got["by"])
        # one step later the file is there, not written again
        r.seek(i + 2)
        r.wait_step(i + 1)
        assert _shown(page)["written"] == []
        # the end: the plan completed
        r.seek(len(rp.steps))
        r.wait_step(len(rp.steps) - 1)
        assert _shown(page)["todos"] == ["completed", "completed"]
        file_text = page.locator('li.lt-file[data-path="/notes.md"] pre')
        page.locator('li.lt-file[data-path="/notes.md"] summary').click()
        expect(file_text).to_contain_text("Q3 revenue: 13")
        light = scheme == "light"
        colour = _shown(page)["bg"]
        assert (colour == "rgb(31, 35, 40)") == light, colour  # the theme's text colour
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
        Replayer(page).wait_ready()
        assert _shown(page)["hidden"] is True
    finally:
        ctx.close()
