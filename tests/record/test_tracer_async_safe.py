"""Async agents under blockbuster (as LangChain's own tests, ``langgraph dev`` and LangGraph
Studio run them): the tracer makes no blocking call on the event loop, in any hook,
callback or constructor, and nothing it does reaches the agent as an exception."""

from __future__ import annotations

import asyncio
import gc
import sqlite3

import pytest
from blockbuster import blockbuster_ctx
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from test_tracer_hitl import DECISIONS, delete_file, script, send_email
from tracer_kit import get_price, get_weather, make_agent, parallel_model, two_lap_model

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel
from tracer.read.loader import TraceDB


def _in_loop(coro_fn):
    """Run ``coro_fn()`` on a fresh event loop with blockbuster on."""
    async def main():
        with blockbuster_ctx():
            return await coro_fn()
    return asyncio.run(main())


def _statuses(db):
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT status FROM runs ORDER BY started_at")]
    finally:
        conn.close()


@pytest.mark.parametrize("lean", [False, True])
@pytest.mark.parametrize("attach", [False, True])
def test_agent_built_and_run_on_the_loop(tmp_path, attach, lean):
    db = tmp_path / "t.db"

    async def go():
        # built inside the coroutine: the constructor runs on the event loop too
        trace = TraceMiddleware(db=db, lean=lean)
        agent = make_agent(parallel_model(2, 3), [get_price], [trace])
        agent = trace.attach(agent) if attach else agent
        out = await agent.ainvoke({"messages": [("user", "price these")]})
        return trace, out

    trace, out = _in_loop(go)
    trace.flush()
    assert out["messages"][-1].content == "Done."
    assert _statuses(db) == ["completed"]
    with TraceDB(db) as tdb:
        (summary,) = tdb.runs()
        assert summary.tool_calls == 6
        assert len(tdb.run(summary.id).messages) == len(out["messages"])


def test_relative_path_on_the_loop_is_the_same_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    TraceMiddleware(db="rel.db").flush()  # off the loop: the working directory is read here

    async def go():
        trace = TraceMiddleware(db="rel.db")
        await make_agent(two_lap_model(), [get_weather], [trace]).ainvoke(
            {"messages": [("user", "weather?")]})
        return trace

    _in_loop(go).flush()
    assert _statuses(tmp_path / "rel.db") == ["completed"]


def test_a_foreign_file_opened_on_the_loop_warns_and_the_agent_runs(tmp_path):
    db = tmp_path / "foreign.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()

    async def go():
        trace = TraceMiddleware(db=db)  # no file I/O on the loop: checked by the writer
        out = await make_agent(two_lap_model(), [get_weather], [trace]).ainvoke(
            {"messages": [("user", "weather?")]})
        return trace, out

    with pytest.warns(RuntimeWarning, match="not a looptrace"):
        trace, out = _in_loop(go)
        trace.flush()
    assert out["messages"][-1].content == "It is sunny in Oslo."
    conn = sqlite3.connect(db)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["customers"]
    conn.close()


@pytest.mark.parametrize("attach", [False, True])
@pytest.mark.parametrize("fresh_tracer", [False, True])
def test_pause_and_resume_on_the_loop(tmp_path, attach, fresh_tracer):
    """A resume finds the paused run in memory, or (a new tracer, as after a server
    restart) in the file, which it reads off the loop."""
    db = tmp_path / "hitl.db"
    config = {"configurable": {"thread_id": "t1"}}
    saver = InMemorySaver()

    def build():
        trace = TraceMiddleware(db=db)
        hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True, "delete_file": True})
        agent = make_agent(ScriptedChatModel(script=script), [send_email, delete_file],
                           [trace, hitl], checkpointer=saver)
        return trace, (trace.attach(agent) if attach else agent)

    trace, agent = build()

    async def first():
        return await agent.ainvoke({"messages": [HumanMessage("Email, then delete.")]},
                                   config=config)

    assert "__interrupt__" in _in_loop(first)
    gc.collect()
    trace.flush()
    assert _statuses(db) == ["interrupted"]
    if fresh_tracer:
        trace, agent = build()

    async def second():
        return await agent.ainvoke(Command(resume=DECISIONS), config=config)

    final = _in_loop(second)
    trace.flush()
    assert final["messages"][-1].content == "Emailed; the draft stays."
    if attach and fresh_tracer:
        # callbacks cannot read the file on the loop: the resumed part is a run of its own
        assert sorted(_statuses(db)) == ["completed", "interrupted"]
    else:
        assert _statuses(db) == ["completed"]
