"""Each message stored once, at the right position; replay shows the right conversation."""

from __future__ import annotations

import sqlite3

import pytest
from tracer_kit import (
    get_price,
    get_weather,
    make_agent,
    no_tracer_warnings,  # noqa: F401
    parallel_model,
    rows,
    run_ids,
    two_lap_model,
)

from tracer import TraceMiddleware
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")


def _record(db, model, tools, attach=False, question="What's the weather in Oslo?"):
    trace = TraceMiddleware(db=db)
    agent = make_agent(model, tools, [trace])
    if attach:
        agent = trace.attach(agent)
    result = agent.invoke({"messages": [("user", question)]})
    trace.flush()
    (run_id,) = run_ids(db)
    return run_id, result


def test_messages_stored_once_with_positions(db_path):
    for attach in (False, True):
        db = db_path.with_name(f"m{attach}.db")
        run_id, result = _record(db, two_lap_model(), [get_weather], attach=attach)
        stored = rows(db, "SELECT position, type, msg_id, tool_call_id FROM messages"
                          " WHERE run_id = ? ORDER BY position", [run_id])
        final = result["messages"]
        assert len(stored) == len(final) == 4
        assert [s[0] for s in stored] == [0, 1, 2, 3]
        assert [s[1] for s in stored] == ["human", "ai", "tool", "ai"]
        assert [s[2] for s in stored] == [m.id for m in final]
        assert stored[2][3] == "c1"
        # No message was stored twice (by id or by tool_call_id).
        n = rows(db, "SELECT COUNT(*), COUNT(DISTINCT COALESCE(tool_call_id, msg_id))"
                     " FROM messages WHERE run_id = ?", [run_id])[0]
        assert n[0] == n[1] == 4
        with TraceDB(db) as tdb:
            run = tdb.run(run_id)
        assert [m.to_langchain() for m in run.messages] == final


def _seq_of(run, hook, phase, nth=0, middleware="TraceMiddleware"):
    found = [e.seq for e in run.events if e.hook == hook and e.phase == phase
             and (middleware is None or e.middleware == middleware)]
    return found[nth]


def test_replay_shows_conversation_at_each_step(db_path):
    run_id, result = _record(db_path, two_lap_model(), [get_weather])
    with TraceDB(db_path) as tdb:
        run = tdb.run(run_id)
    replay = build_replay(run)
    assert len(replay) == len(run.events)
    by_seq = {s.event.seq: s.index for s in replay.steps}

    def conv(hook, phase, nth=0):
        msgs = replay.messages_at(by_seq[_seq_of(run, hook, phase, nth)])
        return [(m.type, m.tool_call_id) for m in msgs]

    assert conv("before_agent", "fire") == [("human", None)]
    assert conv("wrap_model_call", "enter") == [("human", None)]
    assert conv("wrap_model_call", "exit") == [("human", None), ("ai", None)]
    assert conv("wrap_tool_call", "enter") == [("human", None), ("ai", None)]
    assert conv("wrap_tool_call", "exit") == [("human", None), ("ai", None), ("tool", "c1")]
    assert replay.pending_calls(by_seq[_seq_of(run, "wrap_tool_call", "enter")]) == {"c1"}
    assert replay.pending_calls(by_seq[_seq_of(run, "wrap_tool_call", "exit")]) == set()
    assert conv("wrap_model_call", "exit", 1) == [
        ("human", None), ("ai", None), ("tool", "c1"), ("ai", None)]
    last = replay.messages_at(len(replay) - 1)
    assert [m.to_langchain() for m in last] == result["messages"]
    # The new_keys of each step are exactly the messages first stored at it.
    assert sum(len(s.new_keys) for s in replay.steps) == 4
    # The model call records what the model got: system prompt once, tool schemas once.
    enters = [e for e in run.events if e.hook == "wrap_model_call" and e.phase == "enter"]
    assert enters[0].payload["tools"][0]["function"]["name"] == "get_weather"
    assert "tools" not in enters[1].payload
    assert enters[1].payload["tool_names"] == ["get_weather"]
    assert [e.payload["messages"] for e in enters] == [1, 3]


def test_ten_by_three_run_is_small(db_path):
    run_id, result = _record(db_path, parallel_model(10, 3), [get_price],
                             question="Price everything")
    assert len(result["messages"]) == 1 + 10 * 4 + 1
    stored = rows(db_path, "SELECT position, type, tool_call_id FROM messages WHERE run_id = ?"
                           " ORDER BY position", [run_id])
    assert [s[0] for s in stored] == list(range(42))
    # Tool results sit right after their AI message, in the order of its tool_calls.
    for lap in range(10):
        base = 1 + lap * 4
        assert stored[base][1] == "ai"
        assert [s[2] for s in stored[base + 1:base + 4]] == [f"c{lap}-{j}" for j in range(3)]
    size = run_bytes(db_path, run_id)
    conn = sqlite3.connect(db_path)
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    file_size = db_path.stat().st_size
    empty = empty_file_size(db_path.with_name("empty.db"))
    print(f"\n10x3 run: {size} bytes of row data; file after VACUUM {file_size} bytes,"
          f" {file_size - empty} more than an empty database")
    assert size < 40_000
    # at most ten 4 KiB pages (40 KiB): it was nine until each model call's exit named the
    # model that answered (issue 39 item 7: 28 bytes a call, and the events crossed a page)
    assert file_size - empty <= 40 * 1024


def empty_file_size(path) -> int:
    from tracer.db.schema import connect

    conn = connect(path)
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.stat().st_size


def run_bytes(db, run_id) -> int:
    """Sum of the stored sizes of one run's rows (every column, as SQLite holds them)."""
    total = 0
    for table, key in (("runs", "id"), ("events", "run_id"), ("messages", "run_id")):
        cols = [r[1] for r in rows(db, f"PRAGMA table_info({table})")]
        expr = " + ".join(f"COALESCE(LENGTH(CAST({c} AS BLOB)), 0)" for c in cols)
        total += rows(db, f"SELECT COALESCE(SUM({expr}), 0) FROM {table} WHERE {key} = ?",
                      [run_id])[0][0]
    return total
