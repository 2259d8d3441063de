"""One replay per opened run (issue 22): the app's run view replays a run once, and its
findings, floor plan, captions and replayer JSON all read that replay; the checks never
build captions (they are a view, built only by what shows them)."""

from __future__ import annotations

import pytest

from tracer.checks.run import check_run
from tracer.read import captions as captions_mod
from tracer.read import steps as replay_mod
from tracer.read.floorplan import floor_plan, run_stack
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay


class Count:
    """Counts the calls of a function and passes each on to it unchanged."""

    def __init__(self, fn):  # type: ignore[no-untyped-def]
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.calls += 1
        return self.fn(*args, **kwargs)


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> Count:
    """Count every ``build_replay``, wherever a module took the name from."""
    import sys

    original = replay_mod.build_replay
    counter = Count(original)
    for name, mod in list(sys.modules.items()):
        if (name.startswith(("tracer", "app")) and mod is not None
                and getattr(mod, "build_replay", None) is original):
            monkeypatch.setattr(mod, "build_replay", counter)
    return counter


def test_an_opened_run_is_replayed_once(sample_store: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from app.data.run_view import build_run_view

    with TraceDB(sample_store) as db:
        summary = next(r for r in db.runs() if r.name == "support-desk")
        run = db.run(summary.id)
    rp = build_replay(run)
    built = _count_replays(monkeypatch)
    view = build_run_view(rp)  # (a small run: its findings are found at once)
    assert view.findings_error is None and not view.findings_pending
    assert view.findings == check_run(run)  # (the same findings as a replay of its own)
    data = view.json()
    floor_plan(rp, 3)
    assert built.calls == 1  # check_run's own replay above, and nothing else
    # the captions the JSON carries are the replay's, built once, as are its stack
    assert [s["c"] for s in data["steps"]] == list(captions_mod.captions(rp))
    assert captions_mod.captions(rp) is captions_mod.captions(rp)
    assert run_stack(rp) is run_stack(rp)


def test_the_checks_build_no_captions(sample_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    said = Count(captions_mod.caption)
    monkeypatch.setattr(captions_mod, "caption", said)
    with TraceDB(sample_store) as db:
        runs = [db.run(r.id) for r in db.runs()]
    found = [check_run(run) for run in runs]
    assert any(found) and said.calls == 0
    rp = build_replay(runs[0])
    assert said.calls == 0  # the step model builds none either
    captions_mod.captions(rp)
    assert said.calls == len(rp.steps)  # what shows them does, once per step
