"""``diff`` aligns the whole state too: the first divergence may be a state key, not a
message (two real runs whose conversations are the same and whose state is not)."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.diff import diff_runs, format_text
from tracer.read.loader import TraceDB


class NotesState(AgentState):  # type: ignore[type-arg]
    notes: NotRequired[list[str]]


class Notes(AgentMiddleware):  # type: ignore[type-arg]
    state_schema = NotesState


def _record(db: str, name: str, note: str) -> str:
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


def test_the_first_divergence_is_a_state_key(store_db):
    db = store_db
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
    seq_a = d.a.steps[first.index_a].event.seq
    assert [v.key for v in ra.state.changed_at(seq_a)] == ["notes"]
    assert [x.kind for x in d.differences] == ["state"]  # the messages are the same
    assert diff_runs(ra, rs).identical


class PairState(AgentState):  # type: ignore[type-arg]
    first: NotRequired[str]
    second: NotRequired[str]


class Pair(AgentMiddleware):  # type: ignore[type-arg]
    state_schema = PairState


def _record_parallel(db: str, name: str, late: str, second: str) -> str:
    """Two tool calls in parallel, each writing a key by ``Command``; ``late`` finishes
    last (they run in ToolNode's threads: the order they end in is not the call order)."""
    import threading

    other_done = {"first": threading.Event(), "second": threading.Event()}

    def write(key: str, value: str, tool_call_id: str) -> Any:
        if key == late:  # wait for the other call to end first
            other_done["second" if key == "first" else "first"].wait(5)
        other_done[key].set()
        return Command(update={key: value, "messages": [
            ToolMessage("written", tool_call_id=tool_call_id)]})

    @tool
    def write_first(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Write the first key."""
        return write("first", "one", tool_call_id)

    @tool
    def write_second(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Write the second key."""
        return write("second", second, tool_call_id)

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", id="a1", tool_calls=[call("write_first", {}, "c1"),
                                           call("write_second", {}, "c2")]),
        AIMessage("Both written.", id="a2")]))
    trace = TraceMiddleware(db=db, run_name=name)
    agent = trace.attach(create_agent(model, [write_first, write_second],
                                      middleware=[trace, Pair()]))
    agent.invoke({"messages": [("user", "Write both.")]})
    trace.flush()
    with TraceDB(db) as tdb:
        return next(r.id for r in tdb.runs() if r.name == name)


def test_parallel_calls_ending_in_another_order_hold_the_same_state(store_db):
    """Found on the deep-workspace sample: a fresh recording whose parallel calls ended
    in the other order was reported as a state divergence. The state of a block of
    parallel calls is compared once, over the block; a real difference is still found."""
    db = store_db
    a = _record_parallel(db, "a", late="second", second="two")
    b = _record_parallel(db, "b", late="first", second="two")
    c = _record_parallel(db, "c", late="first", second="TWO")
    with TraceDB(db) as tdb:
        ra, rb, rc = tdb.run(a), tdb.run(b), tdb.run(c)
    ends = [[e.tool_call_id for e in r.events if e.hook == "wrap_tool_call"
             and e.phase == "exit"] for r in (ra, rb)]
    assert ends == [["c1", "c2"], ["c2", "c1"]]  # (the calls did end in other orders)
    assert diff_runs(ra, rb).identical, format_text(diff_runs(ra, rb))
    d = diff_runs(ra, rc)
    assert [x.kind for x in d.differences] == ["state"], format_text(d)
    assert "state key second" in d.differences[0].description


def test_the_compare_page_shows_the_state_key_and_its_two_values(store_db, monkeypatch, app_pool):
    """The Compare page says the first divergence is a state key and shows that key's
    value in each run side by side, with the diff of the two (AppTest, real runs)."""
    from app_kit import app_test

    db = store_db
    a = _record(db, "a", "the meeting is at 10")
    b = _record(db, "b", "the meeting is at <b>11</b>")
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    at = app_test("compare", a=a, b=b)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("First divergence" in w.value for w in at.warning)
    texts = [t.value for t in at.text]
    assert ("The runs part in their state, not in their messages: the state key notes "
            "differs. Its value in each run at that step:") in texts
    assert "A: the state key notes" in texts and "B: the state key notes" in texts
    # A's value, then B's (in the page's order: A's column first)
    assert [c.value for c in at.code if c.language == "json"] == [
        '[\n "the meeting is at 10"\n]', '[\n "the meeting is at <b>11</b>"\n]']
    diffs = [c.value for c in at.code if c.language == "diff"]
    assert any('- "the meeting is at 10"' in x and '+ "the meeting is at <b>11</b>"' in x
               for x in diffs), diffs
    # the markup is text (code), never markdown
    assert not any("<b>" in m.value for m in at.markdown)



def _record_store(db: str, name: str, value: str) -> str:
    """A tool that writes to the LangGraph store (the same words back to the model in
    every run; the item it puts differs)."""
    from langgraph.store.memory import InMemoryStore

    @tool
    def pin(place: str, runtime: ToolRuntime) -> str:
        """Pin a place."""
        runtime.store.put(("pins",), place, {"note": value})
        return "pinned"

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", id="a1", tool_calls=[call("pin", {"place": "oslo"}, "c1")]),
        AIMessage("Pinned.", id="a2")]))
    trace = TraceMiddleware(db=db, run_name=name)
    agent = create_agent(model, [pin], middleware=[trace], store=InMemoryStore())
    agent.invoke({"messages": [("user", "Pin Oslo.")]})
    trace.flush()
    with TraceDB(db) as tdb:
        return next(r.id for r in tdb.runs() if r.name == name)


def test_the_first_divergence_may_be_a_store_item(store_db, monkeypatch, app_pool):
    """A write to the LangGraph store is compared like a state key: two runs that put
    other values part there (and Compare shows the item's two values)."""
    from app_kit import app_test

    db = store_db
    a = _record_store(db, "a", "fjord view")
    b = _record_store(db, "b", "harbour view")
    same = _record_store(db, "same", "fjord view")
    with TraceDB(db) as tdb:
        ra, rb, rs = tdb.run(a), tdb.run(b), tdb.run(same)
    d = diff_runs(ra, rb)
    assert [x.kind for x in d.differences] == ["state"], format_text(d)
    first = d.first_divergence
    assert first is not None and ": store item pins:oslo is " in first.description, first

    assert "fjord view" in first.detail and "harbour view" in first.detail
    assert diff_runs(ra, rs).identical, format_text(diff_runs(ra, rs))

    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    at = app_test("compare", a=a, b=b)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    assert "A: the store item pins:oslo" in texts and "B: the store item pins:oslo" in texts
    assert [c.value for c in at.code if c.language == "json"] == [
        '{\n "note": "fjord view"\n}', '{\n "note": "harbour view"\n}']
