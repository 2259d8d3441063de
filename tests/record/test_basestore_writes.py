"""Writes to the LangGraph store are events (issue 26): Deep Agents' ``StoreBackend``
writes its files to ``runtime.store``; a tool or a hook may ``put`` / ``delete``.

A real Deep Agents agent with a ``StoreBackend`` on an ``InMemoryStore``, driven by a
scripted model, recorded into a real SQLite file; what the record says was written is
held to what the store holds at the end, and to the write each tool call and hook
made, written out by hand.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore
from store_kit import FS, store_agent, store_seeded
from tracer_kit import no_tracer_warnings, whole_state  # noqa: F401

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.loader import Run, TraceDB
from tracer.read.state_at import store_item

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")


def _record(tmp_path: Path, *, use_async: bool = False) -> tuple[Run, InMemoryStore, Any]:
    db = tmp_path / "store.db"
    store = store_seeded()
    trace = TraceMiddleware(db=db)
    agent = trace.attach(store_agent(store, [trace]))
    inp = {"messages": [HumanMessage("Write the Q3 notes.", id="human-store")]}
    out = asyncio.run(agent.ainvoke(inp)) if use_async else agent.invoke(inp)
    trace.flush()
    with TraceDB(db) as tdb:
        roots = [r for r in tdb.runs() if r.parent_id is None]
        assert len(roots) == 1
        return tdb.run(roots[0].id), store, out


def _writes(run: Run) -> list[tuple[tuple[tuple[str, ...], str] | None, str | None, str | None,
                                    bool]]:
    return [(store_item(v.key), v.by, v.tool_call_id, v.hash is None)
            for v in run.state.store_writes()]


NOTES = (FS, "/notes.md")
SCRATCH = (FS, "/scratch.md")
EXPECTED = [
    ((("memo",), "seen"), "Seeder.before_agent", None, False),
    (NOTES, "tools", "call-st-write", False),
    # (the two calls of one turn run in parallel: either may end first)
    {(NOTES, "tools", "call-st-edit", False), (SCRATCH, "tools", "call-st-scratch", False)},
    (SCRATCH, "tools", "call-st-forget", True),
]


def _in_order(got: list[Any]) -> list[Any]:
    return [got[0], got[1], set(got[2:4]), got[4]]


def test_each_write_is_recorded_with_the_call_or_hook_that_made_it(tmp_path):
    run, _, _ = _record(tmp_path)
    got = _writes(run)
    assert len(got) == 5, got
    assert _in_order(got) == EXPECTED


def test_the_recorded_values_are_what_the_store_holds_at_the_end(tmp_path):
    run, store, _ = _record(tmp_path)
    end = run.state.store_at(run.state.versions[-1].seq)
    held = {(tuple(i.namespace), i.key): i.value
            for ns in (FS, ("memo",)) for i in store.search(ns)}
    # what the run wrote and did not delete; /old.md was there before the run
    assert held.pop((FS, "/old.md")) == {"content": "before the run\n"}
    assert end == held
    assert set(end) == {NOTES, (("memo",), "seen")}
    assert end[NOTES]["content"] == "Q3 revenue: 13\nQ3 cost: 7\n"
    assert store.get(*SCRATCH) is None


def test_each_version_is_shown_where_its_tool_call_ended(tmp_path):
    run, _, _ = _record(tmp_path)
    exits = {tcid: seq for seq, hook, phase, tcid in (
        (e.seq, e.hook, e.phase, e.tool_call_id) for e in run.events)
        if hook == "wrap_tool_call" and phase == "exit"}
    for v in run.state.store_writes():
        if v.tool_call_id:
            assert v.seq == exits[v.tool_call_id], v
    # before the edit ended, the notes are as first written
    first = run.state.store_at(exits["call-st-edit"] - 1)[NOTES]["content"]
    assert first == "Q3 revenue: 12\nQ3 cost: 7\n"


def test_the_tracer_changes_nothing_the_store_or_the_agent_holds(tmp_path):
    _, traced_store, traced_out = _record(tmp_path)
    plain_store = store_seeded()
    plain_out = store_agent(plain_store, []).invoke(
        {"messages": [HumanMessage("Write the Q3 notes.", id="human-store")]})

    def items(store: InMemoryStore) -> Any:
        return whole_state(sorted(((tuple(i.namespace), i.key, i.value)
                                   for ns in (FS, ("memo",)) for i in store.search(ns)),
                                  key=lambda t: (t[0], t[1])))

    assert items(traced_store) == items(plain_store)
    assert whole_state(traced_out) == whole_state(plain_out)


def test_async_writes_are_recorded_the_same(tmp_path):
    run, _, _ = _record(tmp_path, use_async=True)
    assert _in_order(_writes(run)) == EXPECTED


def test_a_write_outside_any_traced_run_is_not_recorded_and_works(tmp_path):
    run, store, _ = _record(tmp_path)
    n = len(run.state.store_writes())
    store.put(FS, "/later.md", {"content": "after\n"})
    assert store.get(FS, "/later.md").value == {"content": "after\n"}
    with TraceDB(tmp_path / "store.db") as tdb:
        again = tdb.run(run.id)
    assert len(again.state.store_writes()) == n
    assert (FS, "/later.md") not in again.state.store_at(10**9)


def test_a_write_by_a_tool_that_then_raises_is_kept(tmp_path):
    """The call wrote, then failed the run: its write is recorded at its error (the
    run has no later hook where it could be)."""
    @tool
    def save_then_fail(text: str, runtime: ToolRuntime) -> str:
        """Save a text, then fail."""
        runtime.store.put(("drafts",), "d1", {"text": text})
        raise ValueError("disk quota exceeded")

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", id="ai-f-1", tool_calls=[call("save_then_fail", {"text": "v1"}, "call-f")]),
        AIMessage("unreachable", id="ai-f-2")]))
    db = tmp_path / "fail.db"
    store = InMemoryStore()
    trace = TraceMiddleware(db=db)
    agent = create_agent(model, [save_then_fail], middleware=[trace], store=store)
    with pytest.raises(ValueError, match="disk quota"):
        agent.invoke({"messages": [HumanMessage("Save v1.")]})
    trace.flush()
    with TraceDB(db) as tdb:
        run = tdb.run(tdb.runs()[0].id)
    errors = [e.seq for e in run.events if e.phase == "error" and e.tool_call_id == "call-f"]
    assert [(v.seq, store_item(v.key), v.tool_call_id) for v in run.state.store_writes()] == [
        (errors[0], (("drafts",), "d1"), "call-f")]
    assert run.state.store_at(errors[0]) == {(("drafts",), "d1"): {"text": "v1"}}
