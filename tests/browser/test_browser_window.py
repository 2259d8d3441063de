"""A run too big to send at once, in a real browser: the app sends it a window at a time.

The server runs with ``LOOPTRACE_REPLAY_WINDOW=60`` (runs over 120 steps go as
windows of 60 steps) on a real ``create_agent`` run of about 330 steps, so every
way of leaving a window is exercised on a small run: the End and Home keys, steps
across a window's edge, a deep link into the middle, and playback running over
an edge (the replayer asks for the next window ahead of it). At each stop the
page must show exactly what ``tracer.read.steps`` has at that step (the same driver
as every other replay test: ``tests/replayer_driver.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_app import record  # (a real agent, scripted: laps x parallel calls)
from browser_support import collect_console_errors, guard_network, streamlit_server, wait_connected
from playwright.sync_api import expect
from replayer_driver import Replayer, steps_shown

from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay

WINDOW = 60


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Replay]:
    db = tmp_path_factory.mktemp("window") / "big.db"
    run_id = record(db, 40, 2)
    with TraceDB(db) as t:
        return db, build_replay(t.run(run_id))


@pytest.fixture(scope="module")
def server(big: tuple[Path, Replay]) -> Iterator[str]:
    with streamlit_server(big[0], env={"LOOPTRACE_REPLAY_WINDOW": str(WINDOW)}) as url:
        yield url


@pytest.fixture()
def page(browser: Any, server: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  reduced_motion="reduce")
    foreign = guard_network(context, server)
    p = context.new_page()
    errors = collect_console_errors(p)
    try:
        yield p
    finally:
        context.close()
    assert foreign == [] and errors == []


def open_at(page: Any, url: str, rp: Replay, step: int) -> Replayer:
    page.goto(f"{url}/replay?run={rp.run.id}&step={step + 1}")
    wait_connected(page)
    r = Replayer(page)
    r.wait_ready(timeout=60_000)
    r.wait_step(step, timeout=20_000)
    return r


def held(r: Replayer) -> tuple[int, int]:
    """The window the page holds: (first step, steps held)."""
    return (int(r.root.get_attribute("data-offset") or 0),
            int(r.root.get_attribute("data-held") or 0))


def test_the_run_is_big_enough_to_be_windowed(big: tuple[Path, Replay]) -> None:
    assert len(big[1]) > 2 * WINDOW * 2  # several windows


def test_keys_leave_the_window_and_show_the_exact_step(page: Any, server: str,
                                                       big: tuple[Path, Replay]) -> None:
    rp = big[1]
    n = len(rp)
    r = open_at(page, server, rp, 0)
    assert held(r) == (0, WINDOW)
    assert r.root.get_attribute("data-steps") == str(n)  # the scrubber spans the whole run
    r.assert_at(rp, 0)
    r.press("End")
    r.assert_at(rp, n - 1)
    first, count = held(r)
    assert first <= n - 1 < first + count and count == WINDOW
    expect(page).to_have_url(f"{server}/replay?run={rp.run.id}&step={n}", timeout=15_000)
    r.press("Home")
    r.assert_at(rp, 0)
    # Step by step over a window's edge: every step shown is the recorded one.
    edge = held(r)[0] + held(r)[1]
    r.seek(edge - 2)  # (1-based: step index edge - 3)
    r.assert_at(rp, edge - 3)
    for i in range(edge - 2, edge + 3):
        r.press("ArrowRight")
        r.assert_at(rp, i)
    assert held(r)[0] > 0


def test_a_deep_link_opens_a_window_around_its_step(page: Any, server: str,
                                                    big: tuple[Path, Replay]) -> None:
    rp = big[1]
    mid = len(rp) // 2
    r = open_at(page, server, rp, mid)
    first, count = held(r)
    assert first <= mid < first + count and first > 0
    r.assert_at(rp, mid)
    r.click("next-error") if r.button("next-error").is_enabled() else None
    r.press("ArrowLeft")
    r.assert_at(rp, r.step())


def test_playback_runs_over_a_window_edge_without_a_gap(page: Any, server: str,
                                                        big: tuple[Path, Replay]) -> None:
    """Playing at 4x from a few steps before a window's edge: the next window is asked
    for ahead of the edge and arrives in time, or playback waits for it; either way
    no step is skipped or shown twice, and playback goes on past the edge."""
    rp = big[1]
    r = open_at(page, server, rp, 0)
    edge = held(r)[0] + held(r)[1]
    r.seek(edge - 5)
    r.wait_step(edge - 6)
    r.speed(4)
    r.record()
    r.play()
    # (each step shows 300 ms: wait in the page for "at least", not for one value)
    r.root.evaluate("""(e, t) => new Promise((done, fail) => {
      const end = performance.now() + 30000;
      const look = () => Number(e.dataset.step) >= t ? done()
        : performance.now() > end ? fail(new Error("stuck at " + e.dataset.step))
        : setTimeout(look, 20);
      look(); })""", edge + 4)
    r.pause()
    seen, _frames = r.recorded()
    shown = steps_shown(seen)
    assert shown == list(range(shown[0], shown[-1] + 1)), shown  # one step at a time
    assert shown[0] <= edge - 5 and shown[-1] >= edge + 4
    r.assert_at(rp, r.step())
