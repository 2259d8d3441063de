"""The State view's data (tracer/replayer/state_view.py), folded as replayer.js folds it:
at every step, whole or in a window of a large run, it is ``Replay.values_at``."""

from __future__ import annotations

from typing import Any

import pytest
from truth.run import run_truth

from tracer import TraceMiddleware
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay
from tracer.replayer import replay_json


@pytest.fixture(scope="module")
def rp(tmp_path_factory: pytest.TempPathFactory) -> Replay:
    db = tmp_path_factory.mktemp("sv") / "ws.db"
    trace = TraceMiddleware(db=db)
    run_truth("deep_workspace", [trace], position="first", callbacks=[trace.callback_handler()])
    trace.flush()
    with TraceDB(db) as tdb:
        (root,) = [r for r in tdb.runs() if r.parent_id is None]
        return build_replay(tdb.run(root.id))


def fold(data: dict[str, Any]) -> list[tuple[dict[str, Any], set[str]]]:
    """What replayer.js's stateAt gives at each step of ``data``: (state, changed keys)."""
    st, out = data["state"], []
    now: dict[str, int] = {}
    for row in st["steps"]:
        changed = set()
        for c in row or []:
            if len(c) == 1:
                now = {}
                continue
            if c[1] < 0:
                now.pop(c[0], None)
            else:
                now[c[0]] = c[1]
            if len(c) > 2:
                changed.add(c[0])
        out.append(({k: st["values"][i] for k, i in now.items()}, changed))
    return out


def _changed(rp: Replay, i: int) -> set[str]:
    prev = rp.steps[i - 1].event.seq if i else -1
    return {v.key for v in rp.run.state.between(prev, rp.steps[i].event.seq)
            if not v.key.startswith("@")}


def test_every_step_shows_the_state_of_then(rp):
    folded = fold(replay_json(rp))
    assert len(folded) == len(rp.steps)
    for i, (state, changed) in enumerate(folded):
        assert state == rp.values_at(rp.steps[i].event.seq), i
        assert changed == _changed(rp, i) or (i == 0 and changed <= _changed(rp, i))


@pytest.mark.parametrize("start", [1, 7, 20, 33])
def test_a_window_starts_from_the_whole_state(rp, start):
    data = replay_json(rp, window=(start, start + 9))
    assert data["steps"] and data["state"]["steps"][0][0] == ["*"]
    for k, (state, _) in enumerate(fold(data)):
        assert state == rp.values_at(rp.steps[start + k].event.seq), start + k


def test_each_value_is_sent_once(rp):
    values = replay_json(rp)["state"]["values"]
    texts = [repr(v) for v in values]
    assert len(texts) == len(set(texts))
