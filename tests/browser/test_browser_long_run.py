"""A long run in both hosts of the one replayer, with the app's default window (issue
29: the app sends a run of more than ``WHOLE_STEPS`` steps a window of
``WINDOW_STEPS`` at a time, so that a first visit parses a fraction of it; the HTML
export holds the whole run in one file, offline). ``test_browser_window.py`` runs
every way of leaving a window with a window shrunk to 60 steps; here the real default
is used on a real ``create_agent`` run of about 2,400 steps: open, scrub to the end,
step back, the first step, play and pause, each stop showing exactly what
``tracer.read.steps`` has at that step (``tests/replayer_driver.py``), message list
included."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_app import record  # (a real agent, scripted: laps x parallel calls)
from browser_support import collect_console_errors, streamlit_server, wait_connected
from replayer_driver import Replayer, steps_shown

from app.panes import replayer_component as rc
from tracer.interop.html_export import export_html
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay

LAPS = 400  # (about 6 steps a lap: 2,400 steps)


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Replay, Path]:
    folder = tmp_path_factory.mktemp("long")
    db = folder / "long.db"
    run_id = record(db, LAPS, 1)
    with TraceDB(db) as t:
        rp = build_replay(t.run(run_id))
    return db, rp, export_html(db, run_id, folder / "long.html")


def test_the_run_is_windowed_by_default(long_run: tuple[Path, Replay, Path]) -> None:
    assert "LOOPTRACE_REPLAY_WINDOW" not in os.environ
    n = len(long_run[1])
    assert rc.WHOLE_STEPS < n < rc.WHOLE_STEPS + 2 * rc.WINDOW_STEPS, n
    assert rc.window_at(n, 0) == (0, rc.WINDOW_STEPS)


@pytest.fixture(params=["app", "export"])
def opened(request: pytest.FixtureRequest, browser: Any,
           long_run: tuple[Path, Replay, Path]) -> Iterator[tuple[Replayer, str]]:
    db, rp, html = long_run
    with contextlib.ExitStack() as stack:  # (the page closed before the server stops)
        if request.param == "app":
            url = stack.enter_context(streamlit_server(db, env={"LOOPTRACE_REPLAY_WINDOW": ""}))
            link = f"{url}/replay?run={rp.run.id}&step=1"
        else:
            link = html.resolve().as_uri()
        context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                      reduced_motion="reduce")
        page = context.new_page()
        errors = collect_console_errors(page)
        try:
            page.goto(link)
            if request.param == "app":
                wait_connected(page, 60_000)
            r = Replayer(page)
            r.wait_ready(timeout=60_000)
            yield r, request.param
        finally:
            context.close()
        assert errors == []


def held(r: Replayer) -> tuple[int, int]:
    return (int(r.root.get_attribute("data-offset") or 0),
            int(r.root.get_attribute("data-held") or 0))


def test_scrub_to_the_end_step_and_play(opened: tuple[Replayer, str],
                                        long_run: tuple[Path, Replay, Path]) -> None:
    r, host = opened
    rp = long_run[1]
    n = len(rp)
    r.wait_step(0)
    assert r.root.get_attribute("data-steps") == str(n)  # the scrubber spans the whole run
    assert held(r) == ((0, rc.WINDOW_STEPS) if host == "app" else (0, n))
    r.assert_at(rp, 0)
    r.seek(n)  # the scrubber to its end (1-based)
    r.assert_at(rp, n - 1)
    first, count = held(r)
    assert first <= n - 1 < first + count
    for i in (n - 2, n - 3):
        r.press("ArrowLeft")
        r.assert_at(rp, i)
    r.press("Home")
    r.assert_at(rp, 0)
    mid = n // 2
    r.seek(mid + 1)
    r.assert_at(rp, mid)
    r.speed(4)
    r.record()
    r.play()
    # (each step shows 300 ms: wait in the page for "at least", not for one value)
    r.root.evaluate("""(e, t) => new Promise((done, fail) => {
      const end = performance.now() + 30000;
      const look = () => Number(e.dataset.step) >= t ? done()
        : performance.now() > end ? fail(new Error("stuck at " + e.dataset.step))
        : setTimeout(look, 20);
      look(); })""", mid + 4)
    r.pause()
    seen, _frames = r.recorded()
    shown = steps_shown(seen)
    assert shown == list(range(shown[0], shown[-1] + 1)), shown  # one step at a time
    assert shown[0] <= mid + 1 and shown[-1] >= mid + 4
    r.assert_at(rp, r.step())
