"""Endings that are no failure (issue 39, items 1 and 2): an agent that hands off to its
parent graph with ``Command(goto=..., graph=Command.PARENT)`` (LangGraph's multi-agent
handoff) ends ``handoff``, saying to whom; a caller who stops reading ``agent.stream()``
leaves a run ``stopped``. Both were recorded as ``error`` (``ParentCommand: ...``,
``GeneratorExit: ``), with error counts and a "the run failed" finding."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command
from tracer_kit import get_weather, rows

from tracer import TraceMiddleware, build_replay, check_run, step_captions
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.loader import TraceDB


@tool
def transfer_to_billing(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Hand the conversation to billing."""
    return Command(goto="billing", graph=Command.PARENT, update={"messages": [
        ToolMessage("Transferred to billing", tool_call_id=tool_call_id)]})


def _parent(middleware: list[Any]) -> Any:
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("transfer_to_billing", {}, "c1")]), AIMessage("never")]))
    triage = create_agent(model, tools=[transfer_to_billing], middleware=middleware,
                          name="triage")
    g = StateGraph(MessagesState)
    g.add_node("triage", triage, destinations=("billing",))
    g.add_node("billing", lambda state: {"messages": [AIMessage("Billing here.")]})
    g.add_edge(START, "triage")
    g.add_edge("billing", END)
    return g.compile()


def _only_run(db: Path) -> Any:
    with TraceDB(db) as tdb:
        (s,) = tdb.runs()
        return tdb.run(s.id)


def test_a_handoff_to_the_parent_graph_is_a_handoff_not_an_error(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=str(db))
    out = _parent([trace]).invoke({"messages": [HumanMessage("I was charged twice")]})
    trace.flush()
    assert [m.content for m in out["messages"]][-1] == "Billing here."  # (unchanged)
    run = _only_run(db)
    assert (run.summary.status, run.summary.error, run.summary.errors) == ("handoff", None, 0)
    ends = [e for e in run.events if e.hook == "run"]
    assert [(e.phase, e.payload) for e in ends[-1:]] == [
        ("end", {"handoff": {"goto": ["billing"], "graph": "parent"}})]
    assert not [e for e in run.events if e.phase == "error"]
    assert [f.rule for f in check_run(run)] == []  # (no "no-final-answer ... the run failed")
    replay = build_replay(run)
    assert "The run hands off to billing in the parent graph" in step_captions(replay)[-1]


def test_a_caller_who_stops_reading_the_stream_leaves_the_run_stopped(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=str(db))
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage("Snow.")]))
    agent = create_agent(model, tools=[get_weather], middleware=[trace])
    stream = agent.stream({"messages": [HumanMessage("weather?")]}, stream_mode="updates")
    first = next(iter(stream))
    stream.close()  # (what a `for ...: break` does when the generator is collected)
    assert first
    trace.flush()
    run = _only_run(db)
    assert (run.summary.status, run.summary.error, run.summary.errors) == ("stopped", None, 0)
    assert run.events[-1].hook == "run" and run.events[-1].payload == {
        "stopped": "the caller stopped reading the run's stream"}
    assert [f.rule for f in check_run(run)] == []
    assert step_captions(build_replay(run))[-1].startswith("The run stops: its caller stopped")
    assert rows(db, "SELECT count(*) FROM events WHERE phase = 'error'") == [(0,)]
