"""A Deep Agents run: the subagent's run is nested under the parent's ``task`` call."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.tools import tool
from tracer_kit import assert_gapless, no_tracer_warnings, rows  # noqa: F401

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, last_tool_results
from tracer.loader import TraceDB

deepagents = pytest.importorskip("deepagents")

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")


@tool
def lookup_fact(topic: str) -> str:
    """Look a fact up."""
    return "Oslo, about 720,000 people"


def script(messages: Sequence[BaseMessage]) -> AIMessage:
    system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
    n_ai = sum(1 for m in messages if isinstance(m, AIMessage))
    if "RESEARCHER" in system:
        if n_ai == 0:
            return AIMessage("", tool_calls=[call("lookup_fact", {"topic": "Norway"}, "c_look")])
        return AIMessage("The capital of Norway is Oslo.")
    if n_ai == 0:
        return AIMessage("Delegating.", tool_calls=[call(
            "task", {"description": "Find the capital of Norway.",
                     "subagent_type": "researcher"}, "c_task")])
    found = last_tool_results(messages)
    return AIMessage(f"Researcher says: {found[-1].content if found else 'nothing'}")


def build(db):
    model = ScriptedChatModel(script=script, model_name="scripted-deep")
    trace = TraceMiddleware(db=db)
    researcher = {"name": "researcher", "description": "Looks facts up.",
                  "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact],
                  "model": model}
    agent = deepagents.create_deep_agent(model=model, tools=[lookup_fact], middleware=[trace],
                                         subagents=[researcher], name="coordinator",
                                         system_prompt="Delegate with task.")
    return trace, trace.attach(agent)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_subagent_run_nested_under_parent(db_path, mode):
    trace, agent = build(db_path)
    inp = {"messages": [("user", "What is the capital of Norway?")]}
    if mode == "invoke":
        result = agent.invoke(inp)
    else:
        result = asyncio.run(agent.ainvoke(inp))
    assert result["messages"][-1].content.startswith("Researcher says: The capital of Norway")
    trace.flush()
    runs = rows(db_path, "SELECT id, parent_id, parent_tool_call_id, status, name, agent_name"
                         " FROM runs ORDER BY started_at")
    assert len(runs) == 2
    parent, child = runs
    assert parent[1] is None and parent[3] == "completed"
    assert child[1] == parent[0] and child[2] == "c_task" and child[3] == "completed"
    assert "researcher" in (child[4], child[5])
    for run_id in (parent[0], child[0]):
        assert_gapless(db_path, run_id)
    # The parent saw its task call (by the middleware); the child its own model and tool calls.
    ptools = rows(db_path, "SELECT phase, tool_call_id FROM events WHERE run_id = ? AND"
                           " hook = 'wrap_tool_call' ORDER BY seq", [parent[0]])
    assert ptools == [("enter", "c_task"), ("exit", "c_task")]
    ctools = rows(db_path, "SELECT hook, phase, tool_call_id FROM events WHERE run_id = ? AND"
                           " tool_call_id IS NOT NULL ORDER BY seq", [child[0]])
    assert [(p, t) for _, p, t in ctools] == [("enter", "c_look"), ("exit", "c_look")]
    cmodel = rows(db_path, "SELECT COUNT(*) FROM events WHERE run_id = ? AND phase = 'enter'"
                           " AND hook IN ('model', 'wrap_model_call')", [child[0]])[0][0]
    assert cmodel == 2
    # The subagent's events happened while the parent's task call was in flight.
    task_enter, task_exit = rows(db_path, "SELECT ts FROM events WHERE run_id = ? AND"
                                          " tool_call_id = 'c_task' ORDER BY seq", [parent[0]])
    child_ts = [t for (t,) in rows(db_path, "SELECT ts FROM events WHERE run_id = ?",
                                   [child[0]])]
    assert task_enter[0] <= min(child_ts) and max(child_ts) <= task_exit[0]
    # Messages: the parent's conversation, and the child's own, each stored once.
    ptypes = [t for (t,) in rows(db_path, "SELECT type FROM messages WHERE run_id = ?"
                                          " ORDER BY position", [parent[0]])]
    assert ptypes == [m.type for m in result["messages"]]
    ctypes = [t for (t,) in rows(db_path, "SELECT type FROM messages WHERE run_id = ?"
                                          " ORDER BY position", [child[0]])]
    assert ctypes == ["human", "ai", "tool", "ai"]
    with TraceDB(db_path) as tdb:
        run = tdb.run(parent[0])
    assert [c.id for c in run.children] == [child[0]]
