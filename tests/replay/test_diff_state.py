"""``diff`` aligns the whole state too: the first divergence may be a state key, not a
message (two real runs whose conversations are the same and whose state is not)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, NotRequired

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.diff import diff_runs, format_text
from tracer.loader import TraceDB


class NotesState(AgentState):  # type: ignore[type-arg]
    notes: NotRequired[list[str]]


class Notes(AgentMiddleware):  # type: ignore[type-arg]
    state_schema = NotesState


def _record(db: Path, name: str, note: str) -> str:
    @tool
    def remember(fact: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Remember a fact."""
        # (the same words back to the model in both runs; the state differs)
        return Command(update={"notes": [note], "messages": [
            ToolMessage("remembered", tool_call_id=tool_call_id)]})

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", id="a1", tool_calls=[call("remember", {"fact": "10:00"}, "c1")]),
        AIMessage("Noted.", id="a2")]))
    trace = TraceMiddleware(db=db, run_name=name)
    agent = trace.attach(create_agent(model, [remember], middleware=[trace, Notes()]))
    agent.invoke({"messages": [("user", "Remember the meeting time.")]})
    trace.flush()
    with TraceDB(db) as tdb:
        return next(r.id for r in tdb.runs() if r.name == name)


def test_the_first_divergence_is_a_state_key(tmp_path):
    db = tmp_path / "d.db"
    a = _record(db, "a", "the meeting is at 10")
    b = _record(db, "b", "the meeting is at 11")
    same = _record(db, "same", "the meeting is at 10")
    with TraceDB(db) as tdb:
        ra, rb, rs = tdb.run(a), tdb.run(b), tdb.run(same)
    d = diff_runs(ra, rb)
    first = d.first_divergence
    assert first is not None and first.kind == "state", format_text(d)
    assert "state key notes" in first.description
    assert "at 10" in first.detail and "at 11" in first.detail
    # the step it names is where the record has the change, in both runs
    seq_a = d.a.steps[first.step_a].event.seq
    assert [v.key for v in ra.state.changed_at(seq_a)] == ["notes"]
    assert [x.kind for x in d.differences] == ["state"]  # the messages are the same
    assert diff_runs(ra, rs).identical
