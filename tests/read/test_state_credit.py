"""Who changed a state key, as the State view says it (issue 39 item 10): ``jump_to`` is
an ephemeral channel that LangGraph clears after one step, so its removal is credited to
LangGraph, never to the node that happened to run last (the tracer's own after_agent,
which removes nothing)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tracer.read.loader import TraceDB
from tracer.read.state_at import load_state
from tracer.read.steps import build_replay
from tracer.replayer import replay_json
from tracer.vocab.graph_shape import EPHEMERAL_BY


def _stuck_search(db: Path):  # type: ignore[no-untyped-def]
    with TraceDB(db) as t:
        s = next(r for r in t.runs() if r.name == "stuck-search")
        return build_replay(t.run(s.id))


def test_jump_to_is_set_by_its_hook_and_cleared_by_langgraph(sample_store: str) -> None:
    rp = _stuck_search(sample_store)
    (set_, gone) = rp.run.state.history("jump_to")
    assert set_.hash is not None and set_.by == "ModelCallLimitMiddleware.before_model"
    assert gone.hash is None and gone.by == EPHEMERAL_BY
    # the file still holds what the recorder saw last (a later run's record can say it
    # better; the read side credits it either way)
    with TraceDB(sample_store) as t:
        ((by,),) = t.query("SELECT by FROM state WHERE run_id = ? AND key = 'jump_to' AND "
                           "hash IS NULL", [rp.run.id])
    assert by == "TraceMiddleware.after_agent"


def test_the_state_view_says_who_cleared_it(sample_store: str) -> None:
    data = replay_json(_stuck_search(sample_store))
    changes = [c for row in data["state"]["steps"] for c in row or []
               if len(c) > 2 and c[0] == "jump_to"]
    assert [c[1] < 0 for c in changes] == [False, True]
    assert changes[1][2] == EPHEMERAL_BY
    assert "TraceMiddleware.after_agent" not in str(changes)


def test_a_key_a_hook_removed_keeps_its_hook() -> None:
    """Only the ephemeral keys are credited to LangGraph: every other removal keeps the
    name the record gives (the state table, in a real SQLite file in memory)."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE state (run_id, seq, key, hash, by, tool_call_id)")
    conn.execute("CREATE TABLE state_values (run_id, hash, data)")
    conn.executemany("INSERT INTO state VALUES ('r', ?, ?, ?, ?, NULL)", [
        (1, "todos", "h1", "TodoListMiddleware.after_model"),
        (2, "todos", None, "Cleaner.after_model"),
        (3, "jump_to", None, "TraceMiddleware.after_agent")])
    log = load_state(lambda sql, p: conn.execute(sql, p).fetchall(), "r")
    assert [(v.key, v.by) for v in log.versions] == [
        ("todos", "TodoListMiddleware.after_model"), ("todos", "Cleaner.after_model"),
        ("jump_to", EPHEMERAL_BY)]
