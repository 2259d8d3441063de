"""A middleware that rewrites the history (trims, summarises, rewrites a request).

The middleware's message bookkeeping runs on the writer thread, in order with
the events; the agent's thread only notices that the history was rewritten and
gives the ``history`` event its place. These tests pin that down: the history
event lands right before the model call that saw the new history, the seqs stay
gapless, and the replay shows exactly the conversation the agent ended with.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from tracer_kit import (
    assert_gapless,
    get_price,
    make_agent,
    no_tracer_warnings,  # noqa: F401
    run_ids,
)

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")


class Trimmer(AgentMiddleware):  # type: ignore[type-arg]
    """Before each model call past the second, keep a summary and the last two messages."""

    def __init__(self) -> None:
        super().__init__()
        self.rewrites = 0

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        msgs = state["messages"]
        if len(msgs) <= 3:
            return None
        self.rewrites += 1
        summary = HumanMessage(content=f"(summary {self.rewrites} of {len(msgs) - 2} messages)",
                               id=f"summary-{self.rewrites}")
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *msgs[-2:]]}


class Injector(AgentMiddleware):  # type: ignore[type-arg]
    """Sends the model a rewritten request (the state is left alone)."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        note = HumanMessage(content="(be brief)", id=f"note-{len(request.messages)}")
        return handler(request.override(messages=[*request.messages[-2:], note]))


def counted_model(laps: int) -> ScriptedChatModel:
    """``laps`` tool calls, then an answer, in call order (a trimmed history cannot
    tell which turn it is, so this model counts its calls instead)."""
    turns = iter([AIMessage(content=f"lap {i}", id=f"ai-{i}", tool_calls=[
        call("get_price", {"item": f"item-{i}"}, f"c{i}")]) for i in range(laps)]
        + [AIMessage(content="All priced.", id="ai-final")])
    return ScriptedChatModel(script=lambda _msgs: next(turns).model_copy(deep=True))


def _run(db, middleware, *, attach=False, trace=None):
    agent = make_agent(counted_model(3), [get_price], middleware)
    if attach:
        agent = trace.attach(agent)
    out = agent.invoke({"messages": [("user", "Price three things")]})
    trace.flush()
    (run_id,) = run_ids(db)
    with TraceDB(db) as tdb:
        return out, tdb.run(run_id)


def _key(m):
    return "t:" + m.tool_call_id if getattr(m, "tool_call_id", None) else m.id


@pytest.mark.parametrize("mode", ["full", "lean", "attached"])
def test_history_rewrite_is_recorded_in_place(db_path, mode):
    trace = TraceMiddleware(db=db_path, lean=mode == "lean")
    trimmer = Trimmer()
    out, run = _run(db_path, [trimmer, trace], attach=mode == "attached", trace=trace)
    assert trimmer.rewrites >= 2
    assert_gapless(db_path, run.id)

    history = [e for e in run.events if e.hook == "history"]
    assert len(history) == trimmer.rewrites
    for h in history:
        # right before the model call that saw the rewritten history, in its lap
        later = [e for e in run.events if e.seq > h.seq and e.hook == "wrap_model_call"]
        assert later and later[0].phase == "enter"
        assert h.lap == later[0].lap
        between = [e for e in run.events if h.seq < e.seq < later[0].seq]
        assert all(e.hook in ("before_model",) for e in between), between
        keys = h.payload["keys"]
        assert keys[0].startswith("summary-")
        assert h.payload["previous"] >= 3  # (lean mode syncs only at the model calls)

    # every summary stored once, at the history event that brought it
    summaries = [m for m in run.messages if m.msg_id and m.msg_id.startswith("summary-")]
    assert sorted(m.msg_id for m in summaries) == [
        f"summary-{i}" for i in range(1, trimmer.rewrites + 1)]
    by_seq = {h.seq: h for h in history}
    assert all(m.seq in by_seq and m.position == 0 for m in summaries)

    # the replay ends on exactly the conversation the agent ended with
    replay = build_replay(run)
    final = [m.key for m in replay.messages_at(len(replay) - 1)]
    assert final == [_key(m) for m in out["messages"]]
    assert run.summary.status == "completed"


@pytest.mark.parametrize("lean", [False, True])
def test_rewritten_request_lists_what_the_model_got(db_path, lean):
    trace = TraceMiddleware(db=db_path, lean=lean)
    out, run = _run(db_path, [Injector(), trace], trace=trace)
    enters = [e for e in run.events if e.hook == "wrap_model_call" and e.phase == "enter"]
    assert len(enters) == 4
    state_keys: list[str] = []
    for e in enters:
        keys = e.payload["message_keys"]
        assert keys[-1] == f"note-{e.payload['messages'] - 1}" or keys[-1].startswith("note-")
        inline = e.payload["inline_messages"]
        # the note is new to the run each time: it is sent inline, not stored as a message
        assert [m["data"]["id"] for m in inline] == [keys[-1]]
        state_keys = keys
    assert len(state_keys) <= 3
    assert not [m for m in run.messages if (m.msg_id or "").startswith("note-")]
    assert [m.key for m in run.messages] == [_key(m) for m in out["messages"]]
