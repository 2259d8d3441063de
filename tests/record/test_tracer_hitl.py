"""Human in the loop: a paused thread resumed with decisions continues the SAME run."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence

import pytest
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from tracer_kit import assert_gapless, make_agent, no_tracer_warnings, rows  # noqa: F401

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, last_tool_results
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")

SENT: list[str] = []


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    SENT.append(to)
    return f"sent to {to}"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    raise AssertionError("a rejected call must not run")


def script(messages: Sequence[BaseMessage]) -> AIMessage:
    if not last_tool_results(messages):
        return AIMessage("Emailing, then deleting.", id="ai-ask", tool_calls=[
            call("send_email", {"to": "team@example.com", "body": "hi"}, "c_email"),
            call("delete_file", {"path": "/draft.txt"}, "c_delete"),
        ])
    return AIMessage("Emailed; the draft stays.", id="ai-final")


DECISIONS = {"decisions": [{"type": "approve"},
                           {"type": "reject", "message": "Keep the draft."}]}


def build(db, attach: bool):
    trace = TraceMiddleware(db=db)
    hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True, "delete_file": True})
    agent = make_agent(ScriptedChatModel(script=script), [send_email, delete_file],
                       [trace, hitl], checkpointer=InMemorySaver())
    return trace, (trace.attach(agent) if attach else agent)


def status(db):
    return [r[0] for r in rows(db, "SELECT status FROM runs")]


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("attach", [False, True])
def test_interrupt_then_resume_is_one_run(db_path, attach, mode):
    SENT.clear()
    trace, agent = build(db_path, attach)
    config = {"configurable": {"thread_id": f"t-{attach}-{mode}"}}

    def go(inp):
        if mode == "invoke":
            return agent.invoke(inp, config=config)
        return asyncio.run(agent.ainvoke(inp, config=config))

    first = go({"messages": [HumanMessage("Email the team, delete the draft.")]})
    assert "__interrupt__" in first
    trace.flush()
    if not attach:
        # Without callbacks the middleware learns of the pause when the paused invocation
        # is collected (or when the thread resumes); with attach() it knows at once.
        first = None
        gc.collect()
        trace.flush()
    assert status(db_path) == ["interrupted"]
    (run_id,) = [r[0] for r in rows(db_path, "SELECT id FROM runs")]
    n_before = assert_gapless(db_path, run_id)[-1] + 1

    final = go(Command(resume=DECISIONS))
    trace.flush()
    assert SENT == ["team@example.com"]
    assert rows(db_path, "SELECT id, status, thread_id FROM runs") == [
        (run_id, "completed", config["configurable"]["thread_id"])]
    seqs = assert_gapless(db_path, run_id)
    assert len(seqs) > n_before  # seq continued in the same run
    hooks = rows(db_path, "SELECT seq, hook, phase FROM events WHERE run_id = ? AND hook IN"
                          " ('resume', 'interrupt', 'before_agent', 'after_agent')"
                          " ORDER BY seq", [run_id])
    names = [(h, p) for _, h, p in hooks]
    # One before_agent (at the start), one after_agent (at the very end), a resume between.
    assert names.count(("before_agent", "fire")) == 1
    assert names.count(("after_agent", "fire")) == 1
    assert ("resume", "fire") in names
    resume_seq = next(s for s, h, _ in hooks if h == "resume")
    assert resume_seq >= n_before
    payloads = [p for (p,) in rows(db_path, "SELECT payload FROM events WHERE run_id = ?"
                                            " AND hook = 'resume'", [run_id])]
    if attach:  # the decisions are only visible to callbacks (the resumed graph's input)
        assert any("approve" in (p or "") and "reject" in (p or "") for p in payloads)

    # Messages: every message of the final state once, in order (the rejection included).
    stored = rows(db_path, "SELECT position, type, tool_call_id FROM messages WHERE run_id = ?"
                           " ORDER BY position", [run_id])
    expected = [(m.type, getattr(m, "tool_call_id", None)) for m in final["messages"]]
    assert [(t, c) for _, t, c in stored] == expected
    assert [p for p, _, _ in stored] == list(range(len(expected)))
    with TraceDB(db_path) as tdb:
        run = tdb.run(run_id)
    assert [m.to_langchain().content for m in run.messages] == [
        m.content for m in final["messages"]]
    replay = build_replay(run)
    assert [m.key for m in replay.messages_at(len(replay) - 1)] == [m.key for m in run.messages]


def test_resume_after_restart_continues_the_run_from_the_file(db_path):
    """A new TraceMiddleware (a restarted process) resumes the thread's run from the file."""
    SENT.clear()
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "t-restart"}}

    def agent_with(trace):
        hitl = HumanInTheLoopMiddleware(interrupt_on={"send_email": True, "delete_file": True})
        return make_agent(ScriptedChatModel(script=script), [send_email, delete_file],
                          [trace, hitl], checkpointer=saver)

    t1 = TraceMiddleware(db=db_path)
    agent_with(t1).invoke({"messages": [HumanMessage("Email, delete.")]}, config=config)
    t1.flush()
    gc.collect()
    t1.flush()
    t2 = TraceMiddleware(db=db_path, name="TraceMiddleware2")
    final = agent_with(t2).invoke(Command(resume=DECISIONS), config=config)
    t2.flush()
    assert status(db_path) == ["completed"]
    (run_id,) = [r[0] for r in rows(db_path, "SELECT id FROM runs")]
    assert_gapless(db_path, run_id)
    stored = rows(db_path, "SELECT type FROM messages WHERE run_id = ? ORDER BY position",
                  [run_id])
    assert [t for (t,) in stored] == [m.type for m in final["messages"]]


def test_resume_before_the_pause_is_noticed_still_continues_the_run(db_path):
    """Middleware alone, nothing collected yet: the resume still joins the same run."""
    SENT.clear()
    trace, agent = build(db_path, attach=False)
    config = {"configurable": {"thread_id": "t-live"}}
    gc.disable()
    try:
        agent.invoke({"messages": [HumanMessage("Email, delete.")]}, config=config)
        final = agent.invoke(Command(resume=DECISIONS), config=config)
    finally:
        gc.enable()
    trace.flush()
    (run_id,) = [r[0] for r in rows(db_path, "SELECT id FROM runs")]
    assert status(db_path) == ["completed"]
    assert_gapless(db_path, run_id)
    stored = rows(db_path, "SELECT type FROM messages WHERE run_id = ? ORDER BY position",
                  [run_id])
    assert [t for (t,) in stored] == [m.type for m in final["messages"]]


@pytest.mark.parametrize("attach", [False, True])
def test_a_new_turn_on_the_same_thread_is_a_new_run(db_path, attach):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(ScriptedChatModel(script=lambda m: AIMessage("hello")), [send_email],
                       [trace], checkpointer=InMemorySaver())
    if attach:
        agent = trace.attach(agent)
    config = {"configurable": {"thread_id": "t-chat"}}
    agent.invoke({"messages": [HumanMessage("hi")]}, config=config)
    agent.invoke({"messages": [HumanMessage("hi again")]}, config=config)
    trace.flush()
    assert status(db_path) == ["completed", "completed"]
