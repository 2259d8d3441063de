"""A run too big to send at once, in AppTest: which window of it the app gives the
replayer, and how a "window" event or a step outside the window moves it.

The window size is shrunk for the test (``app.panes.replayer_component.WINDOW_STEPS``) so
the shopping sample (34 steps) is "too big"; the real-browser side is
tests/browser/test_browser_window.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from app_kit import app_test, browser_sends, replayer, report_step

import app.panes.replayer_component as rc
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay


@pytest.fixture
def shopping(sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, int]:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    monkeypatch.setattr(rc, "WINDOW_STEPS", 8)
    monkeypatch.setattr(rc, "WHOLE_STEPS", 16)
    with TraceDB(sample_db) as t:
        run = next(r for r in t.runs() if r.name == "shopping")
        return run.id, len(build_replay(t.run(run.id)))


def test_window_at() -> None:
    assert rc.window_at(rc.WHOLE_STEPS, 5) is None  # small enough: the whole run
    n = rc.WHOLE_STEPS + 1
    w = rc.WINDOW_STEPS
    assert rc.window_at(n, 0) == (0, w)
    assert rc.window_at(n, n - 1) == (n - w, n)  # never past the end
    assert rc.window_at(n, w) == (w - w // 4, 2 * w - w // 4)  # a quarter before the step


def test_the_app_sends_the_window_around_the_step(shopping: tuple[str, int]) -> None:
    run_id, n = shopping
    at = app_test("replay", run=run_id, step="1").run()
    d = replayer(at)
    assert (d["run"]["offset"], d["run"]["total"], len(d["run"]["steps"])) == (0, n, 8)
    assert d["key"].endswith(":0") and d["step"] == 0
    # Steps inside the window keep it (and its key: nothing is sent again).
    report_step(at, 5)
    assert replayer(at)["key"] == d["key"] and at.session_state["lt_step"] == 5
    # The browser needs step 20: the window around it, the step with it.
    browser_sends(at, "window", f"{d['key']}|20")
    e = replayer(at)
    assert e["run"]["offset"] == 18 and e["step"] == 20 and e["key"].endswith(":18")
    assert e["goto"] == d["goto"]  # (the browser is waiting for it: not a move of the app's)
    # A window request for another run, or junk, changes nothing.
    for bad in (f"other:{n}:completed:0|3", f"{e['key']}|x", "junk"):
        browser_sends(at, "window", bad)
        assert replayer(at)["key"] == e["key"]
    # A deep link past the window's end: the window around the last step.
    at2 = app_test("replay", run=run_id, step=str(n)).run()
    f = replayer(at2)
    assert f["run"]["offset"] == n - 8 and f["step"] == n - 1


@pytest.mark.parametrize("together", [False, True], ids=["one-by-one", "in-one-rerun"])
def test_a_late_step_report_from_the_window_left_is_not_followed(
        shopping: tuple[str, int], together: bool) -> None:
    """The browser stepped in the window at the end, then jumped home: it asks for the
    first window, and the report of its last step in the old window (debounced, so sent
    after) reaches the app after the request, or in the same rerun. Followed, it sent the
    app back to the old window, which the browser already held: nothing was sent, and
    the browser waited for the first window for ever (CI met it in
    tests/browser/test_browser_long_run.py)."""
    from app_kit import browser_sends_all

    run_id, n = shopping
    at = app_test("replay", run=run_id, step="1").run()
    d = replayer(at)
    browser_sends(at, "window", f"{d['key']}|{n - 1}")
    end = replayer(at)
    assert end["run"]["offset"] == n - 8
    report_step(at, n - 2)
    assert at.session_state["lt_step"] == n - 2
    events = [("window", f"{end['key']}|0"), ("step", f"{end['key']}|{n - 3}")]
    if together:
        browser_sends_all(at, events)
    else:
        for e in events:
            browser_sends(at, *e)
    home = replayer(at)
    assert home["key"].endswith(":0") and home["key"] != end["key"]
    assert not home.get("held") and home["run"]["offset"] == 0  # (sent: not "held")
    assert at.session_state["lt_step"] == 0
