"""The debugger with a HITL agent and its checkpointer, and in a Deep Agents subagent."""

from __future__ import annotations

import deepagents
from debug_kit import Background, wait_paused
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.tools import tool
from truth.run import run_truth

from tracer import TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.demo.models import ScriptedChatModel, call, last_tool_results
from tracer.read.loader import TraceDB


def test_hitl_with_a_checkpointer_pauses_in_the_debugger_after_the_human_decision(tmp_path):
    db = tmp_path / "hitl.db"
    trace = TraceMiddleware(db=db, debug=Debugger(["tool:send_email"]))
    bg = Background(lambda: run_truth("hitl_edit", [trace], position="last"))
    p = wait_paused(db, alive=bg.alive)[0]
    # the human's edit (HITL's own interrupt and resume) came first: the args are edited
    assert p["pending"]["tool_call"]["name"] == "send_email"
    assert p["pending"]["tool_call"]["args"]["to"] == "boss@corp.test"
    channel.answer(db, p["run"], "continue", {"kind": "tool_result", "text": "queued"})
    truth = bg.result()
    trace.flush()
    assert truth.invocation_finals[-1][-1].content.endswith("Tool response:\nqueued")
    with TraceDB(db) as tdb:
        runs = tdb.runs()
        assert [r.status for r in runs] == ["completed"]  # one run: interrupted, resumed
        events = tdb.run(runs[0].id).events
    phases = [(e.hook, e.phase) for e in events]
    assert any("interrupt" in (h, ph) for h, ph in phases)  # HITL's pause, as recorded
    assert ("wrap_tool_call", "pause") in phases and ("wrap_tool_call", "debug") in phases
    # the debugger's pause comes after the thread resumed
    hooks = [h for h, _ in phases]
    assert hooks.index("resume") < phases.index(("wrap_tool_call", "pause"))


@tool
def lookup_fact(topic: str) -> str:
    """Look a fact up."""
    return f"{topic}: the capital is Oslo."


def _script(messages: list[BaseMessage]) -> AIMessage:
    system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
    n_ai = sum(isinstance(m, AIMessage) for m in messages)
    if "RESEARCHER" in system:
        if n_ai == 0:
            return AIMessage("", tool_calls=[call("lookup_fact", {"topic": "Norway"}, "c_look")])
        return AIMessage(f"Found: {last_tool_results(messages)[-1].content}")
    if n_ai == 0:
        return AIMessage("Delegating.", tool_calls=[call(
            "task", {"description": "Find the capital of Norway.",
                     "subagent_type": "researcher"}, "c_task")])
    return AIMessage(f"Researcher says: {last_tool_results(messages)[-1].content}")


def test_a_breakpoint_in_a_deep_agents_subagent_pauses_the_subagent_under_its_parent(tmp_path):
    db = tmp_path / "deep.db"
    model = ScriptedChatModel(script=_script, model_name="scripted-deep")
    trace = TraceMiddleware(db=db)
    # (its own TraceMiddleware, under the same name: nested under the parent's task call)
    sub_trace = TraceMiddleware(db=db, debug=Debugger(["tool:lookup_fact"]))
    researcher = {"name": "researcher", "description": "Looks facts up.",
                  "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact],
                  "model": model, "middleware": [sub_trace]}
    agent = trace.attach(deepagents.create_deep_agent(
        model=model, tools=[lookup_fact], middleware=[trace], subagents=[researcher],
        name="coordinator", system_prompt="Delegate with task."))
    bg = Background(lambda: agent.invoke({"messages": [("user", "Capital of Norway?")]}))
    p = wait_paused(db, alive=bg.alive)[0]
    with TraceDB(db) as tdb:
        top = [r for r in tdb.runs() if r.parent_id is None]
    assert p["parent_run"] == top[0].id  # the subagent's run, under its parent
    assert p["pending"]["tool_call"]["args"] == {"topic": "Norway"}
    channel.answer(db, p["run"], "continue", {"kind": "tool_args", "args": {"topic": "Sweden"}})
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content == (
        "Researcher says: Found: Sweden: the capital is Oslo.")


def test_after_a_deep_agents_task_call_the_pending_result_is_the_subagents_and_can_be_edited(
        tmp_path):
    # (issue 44, item 5: the task tool returns a Command; pending.message was null and a
    # result edit failed with "cannot unpack non-iterable Command object")
    db = tmp_path / "task.db"
    model = ScriptedChatModel(script=_script, model_name="scripted-deep")
    trace = TraceMiddleware(db=db, debug=Debugger(["hook:wrap_tool_call:after"]))
    researcher = {"name": "researcher", "description": "Looks facts up.",
                  "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact],
                  "model": model}
    agent = deepagents.create_deep_agent(
        model=model, tools=[lookup_fact], middleware=[trace], subagents=[researcher],
        name="coordinator", system_prompt="Delegate with task.")
    bg = Background(lambda: agent.invoke({"messages": [("user", "Capital of Norway?")]}))
    p = wait_paused(db, alive=bg.alive)[0]
    assert p["pending"]["kind"] == "tool_result"
    assert p["pending"]["message"]["text"] == "Found: Norway: the capital is Oslo."
    assert p["pending"]["message"]["tool_call_id"] == "c_task"
    channel.answer(db, p["run"], "continue", {"kind": "tool_result", "text": "Bergen."})
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content == "Researcher says: Bergen."
    with TraceDB(db) as tdb:
        run = tdb.run(next(r.id for r in tdb.runs() if r.parent_id is None))
    debug = [e.payload for e in run.events if e.phase == "debug"]
    assert [(d["outcome"], d["change"]) for d in debug] == [
        ("edited", "tool result given in the debugger")]
