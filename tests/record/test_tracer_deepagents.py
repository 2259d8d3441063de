"""A Deep Agents run: the subagent's run is nested under the parent's ``task`` call."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import deepagents  # a dependency: a broken install fails, never skips
import pytest
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.tools import tool
from tracer_kit import assert_gapless, no_tracer_warnings, rows  # noqa: F401

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, last_tool_results
from tracer.read.loader import TraceDB

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


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def cleaner_script(messages: Sequence[BaseMessage]) -> AIMessage:
    system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
    n_ai = sum(1 for m in messages if isinstance(m, AIMessage))
    if "CLEANER" in system:
        if n_ai == 0:
            return AIMessage("", tool_calls=[call("delete_file", {"path": "/tmp/x"}, "c_del")])
        return AIMessage("Cleaned.")
    if n_ai == 0:
        return AIMessage("Delegating.", tool_calls=[call(
            "task", {"description": "Clean /tmp/x", "subagent_type": "cleaner"}, "c_task")])
    found = last_tool_results(messages)
    return AIMessage(f"Done: {found[-1].content if found else ''}")


def test_pause_inside_a_subagent_resumes_the_same_child_run(db_path):
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    model = ScriptedChatModel(script=cleaner_script)
    trace = TraceMiddleware(db=db_path)
    cleaner = {"name": "cleaner", "description": "Cleans.",
               "system_prompt": "You are the CLEANER.",
               "tools": [delete_file], "model": model, "interrupt_on": {"delete_file": True}}
    agent = trace.attach(deepagents.create_deep_agent(
        model=model, tools=[], middleware=[trace], subagents=[cleaner],
        checkpointer=InMemorySaver()))
    config = {"configurable": {"thread_id": "sub-pause"}}
    first = agent.invoke({"messages": [HumanMessage("clean up")]}, config=config)
    assert "__interrupt__" in first
    trace.flush()
    assert [r[0] for r in rows(db_path, "SELECT status FROM runs ORDER BY started_at")] == [
        "interrupted", "interrupted"]
    final = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config=config)
    assert final["messages"][-1].content == "Done: Cleaned."
    trace.flush()
    runs = rows(db_path, "SELECT id, parent_id, parent_tool_call_id, status FROM runs"
                         " ORDER BY started_at")
    assert len(runs) == 2  # the child went on in its own run, no third run
    parent, child = runs
    assert parent[3] == "completed" and child[3] == "completed"
    assert child[1] == parent[0] and child[2] == "c_task"
    for run_id in (parent[0], child[0]):
        assert_gapless(db_path, run_id)
    cevs = [(h, p) for h, p in rows(db_path, "SELECT hook, phase FROM events WHERE run_id = ?"
                                             " ORDER BY seq", [child[0]])]
    assert cevs.index(("interrupt", "fire")) < cevs.index(("resume", "fire")) < cevs.index(
        ("tool", "exit"))
    cmsgs = rows(db_path, "SELECT position, type, tool_call_id FROM messages WHERE run_id = ?"
                          " ORDER BY position", [child[0]])
    assert cmsgs == [(0, "human", None), (1, "ai", None), (2, "tool", "c_del"), (3, "ai", None)]
    # The parent's task call was re-entered on resume (LangGraph re-runs the paused call).
    ptask = rows(db_path, "SELECT phase FROM events WHERE run_id = ? AND tool_call_id = 'c_task'"
                          " ORDER BY seq", [parent[0]])
    assert [p for (p,) in ptask] == ["enter", "interrupt", "enter", "exit"]


def two_tasks_script(messages: Sequence[BaseMessage]) -> AIMessage:
    system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
    n_ai = sum(1 for m in messages if isinstance(m, AIMessage))
    if "RESEARCHER" in system:
        topic = str(messages[-1].content) if n_ai else ""
        if n_ai == 0:
            human = next(m for m in messages if m.type == "human")
            return AIMessage("", tool_calls=[call("lookup_fact", {"topic": str(human.content)},
                                                  f"c_look_{len(str(human.content))}")])
        return AIMessage(f"Found: {topic}")
    if n_ai == 0:
        return AIMessage("Two at once.", tool_calls=[
            call("task", {"description": "Norway", "subagent_type": "researcher"}, "c_t1"),
            call("task", {"description": "Sweden!", "subagent_type": "researcher"}, "c_t2")])
    return AIMessage("Both done.")


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_parallel_subagents_each_nested_under_their_call(db_path, mode):
    model = ScriptedChatModel(script=two_tasks_script)
    trace = TraceMiddleware(db=db_path)
    researcher = {"name": "researcher", "description": "Looks facts up.",
                  "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact],
                  "model": model}
    agent = trace.attach(deepagents.create_deep_agent(
        model=model, tools=[lookup_fact], middleware=[trace], subagents=[researcher]))
    inp = {"messages": [("user", "Norway and Sweden?")]}
    if mode == "invoke":
        agent.invoke(inp)
    else:
        asyncio.run(agent.ainvoke(inp))
    trace.flush()
    runs = rows(db_path, "SELECT id, parent_id, parent_tool_call_id, status FROM runs")
    assert len(runs) == 3
    (parent,) = [r for r in runs if r[1] is None]
    children = {r[2]: r for r in runs if r[1] == parent[0]}
    assert set(children) == {"c_t1", "c_t2"}
    for tcid, look in (("c_t1", "c_look_6"), ("c_t2", "c_look_7")):
        child = children[tcid]
        assert child[3] == "completed"
        assert_gapless(db_path, child[0])
        human = rows(db_path, "SELECT text FROM messages WHERE run_id = ? AND position = 0",
                     [child[0]])[0][0]
        assert human == ("Norway" if tcid == "c_t1" else "Sweden!")
        calls = rows(db_path, "SELECT DISTINCT tool_call_id FROM events WHERE run_id = ? AND"
                              " tool_call_id IS NOT NULL", [child[0]])
        assert calls == [(look,)]


def general_purpose_script(messages: Sequence[BaseMessage]) -> AIMessage:
    human = next((m for m in messages if m.type == "human"), None)
    n_ai = sum(1 for m in messages if isinstance(m, AIMessage))
    if human is not None and str(human.content).startswith("SUB:"):
        if n_ai == 0:
            return AIMessage("", tool_calls=[call("lookup_fact", {"topic": "Norway"}, "c_look")])
        return AIMessage("Oslo.")
    if n_ai == 0:
        return AIMessage("", tool_calls=[call(
            "task", {"description": "SUB: capital of Norway?",
                     "subagent_type": "general-purpose"}, "c_task")])
    return AIMessage("Done.")


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "astream-updates", "astream-messages",
                                  "invoke-langsmith"])
def test_an_attached_subagent_inside_an_attached_agent_is_one_nested_run(
        db_path, mode, monkeypatch):
    """Issue 47, untrue 11: Deep Agents' own suite, with a TraceMiddleware in every
    ``create_agent`` call and each agent attached, recorded each subagent twice: nested
    under the parent's task call (the parent's handler) and again top-level (the
    subagent's own tracer and handler). The general-purpose subagent here is made by
    ``create_deep_agent`` itself, so the tracer goes in where the suite put it."""
    import deepagents.graph as dg
    import deepagents.middleware.subagents as dsub
    import langchain.agents as la

    made: list[TraceMiddleware] = []
    real = la.create_agent

    def create_agent(*a, **kw):
        trace = TraceMiddleware(db=db_path)
        made.append(trace)
        kw["middleware"] = [trace, *(kw.get("middleware") or ())]
        return trace.attach(real(*a, **kw))

    for mod in (la, dg, dsub):
        monkeypatch.setattr(mod, "create_agent", create_agent)
    model = ScriptedChatModel(script=general_purpose_script, model_name="scripted-deep")
    agent = deepagents.create_deep_agent(model=model, tools=[lookup_fact])
    inp = {"messages": [("user", "What is the capital of Norway?")]}
    if mode == "invoke":
        agent.invoke(inp)
    elif mode == "ainvoke":
        asyncio.run(agent.ainvoke(inp))
    elif mode == "invoke-langsmith":
        # (LangSmith on, posting nowhere: its spans become the parents of the calls made
        # inside each middleware's wrap hooks, spans no callback handler sees start)
        from unittest.mock import MagicMock

        from langsmith import Client, tracing_context

        client = Client(session=MagicMock(), api_key="test", auto_batch_tracing=False)
        with tracing_context(client=client, enabled=True):
            agent.invoke(inp)
    else:
        async def stream() -> None:
            async for _ in agent.astream(inp, stream_mode=mode.split("-")[1]):
                pass
        asyncio.run(stream())
    for trace in made:
        trace.flush()
    runs = rows(db_path, "SELECT id, parent_id, parent_tool_call_id, status, name FROM runs"
                         " ORDER BY started_at")
    assert [(r[1] is None, r[2], r[3], r[4]) for r in runs] == [
        (True, None, "completed", "LangGraph"),
        (False, "c_task", "completed", "general-purpose")]
    parent, child = runs
    assert child[1] == parent[0]
    assert_gapless(db_path, child[0])
    # The child's own calls, each once: two model calls, one tool call.
    cmodel = rows(db_path, "SELECT COUNT(*) FROM events WHERE run_id = ? AND phase = 'enter'"
                           " AND hook IN ('model', 'wrap_model_call')", [child[0]])[0][0]
    assert cmodel == 2
    ctools = rows(db_path, "SELECT phase FROM events WHERE run_id = ? AND"
                           " tool_call_id = 'c_look' ORDER BY seq", [child[0]])
    assert [p for (p,) in ctools] == ["enter", "exit"]
    ctypes = [t for (t,) in rows(db_path, "SELECT type FROM messages WHERE run_id = ?"
                                          " ORDER BY position", [child[0]])]
    assert ctypes == ["human", "ai", "tool", "ai"]
