"""Shared helpers for the tracer tests: scripted agents, spy middlewares, db reads."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from pydantic import BaseModel

from tracer.demo.models import ScriptedChatModel, call, turn_script


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}, 21 C"


@tool
def get_price(item: str) -> str:
    """Price of an item."""
    return f"{item}: 10 EUR"


def two_lap_model() -> ScriptedChatModel:
    """Lap 1 asks for the weather, lap 2 answers."""
    return ScriptedChatModel(script=turn_script([
        AIMessage(content="", id="ai-1", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage(content="It is sunny in Oslo.", id="ai-2"),
    ]))


def parallel_model(laps: int, width: int, tool_name: str = "get_price") -> ScriptedChatModel:
    """``laps`` turns of ``width`` parallel tool calls each, then an answer."""
    turns: list[AIMessage] = []
    for lap in range(laps):
        turns.append(AIMessage(content=f"lap {lap}", id=f"ai-{lap}", tool_calls=[
            call(tool_name, {"item": f"item-{lap}-{j}"}, f"c{lap}-{j}") for j in range(width)]))
    turns.append(AIMessage(content="Done.", id=f"ai-{laps}"))
    return ScriptedChatModel(script=turn_script(turns))


class Spy(AgentMiddleware):  # type: ignore[type-arg]
    """A middleware with all six hooks (sync and async) that logs each firing."""

    def __init__(self, name: str, log: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self._name = name
        self.log = log
        self._lock = threading.Lock()

    @property
    def name(self) -> str:  # type: ignore[override]
        return self._name

    def _add(self, hook: str, phase: str) -> None:
        with self._lock:
            self.log.append((self._name, hook, phase))

    def before_agent(self, state: Any, runtime: Any) -> None:
        self._add("before_agent", "fire")

    def before_model(self, state: Any, runtime: Any) -> None:
        self._add("before_model", "fire")

    def after_model(self, state: Any, runtime: Any) -> None:
        self._add("after_model", "fire")

    def after_agent(self, state: Any, runtime: Any) -> None:
        self._add("after_agent", "fire")

    async def abefore_agent(self, state: Any, runtime: Any) -> None:
        self._add("before_agent", "fire")

    async def abefore_model(self, state: Any, runtime: Any) -> None:
        self._add("before_model", "fire")

    async def aafter_model(self, state: Any, runtime: Any) -> None:
        self._add("after_model", "fire")

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        self._add("after_agent", "fire")

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self._add("wrap_model_call", "enter")
        r = handler(request)
        self._add("wrap_model_call", "exit")
        return r

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self._add("wrap_model_call", "enter")
        r = await handler(request)
        self._add("wrap_model_call", "exit")
        return r

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        self._add("wrap_tool_call", "enter")
        r = handler(request)
        self._add("wrap_tool_call", "exit")
        return r

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        self._add("wrap_tool_call", "enter")
        r = await handler(request)
        self._add("wrap_tool_call", "exit")
        return r


def rows(db: str | Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` (``?`` parameters) read straight from the store, SQLite or
    PostgreSQL (psycopg, not looptrace's own connection)."""
    if str(db).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(str(db)) as pg:
            # (a literal % is psycopg's placeholder mark: doubled)
            text = sql.replace("%", "%%").replace("?", "%s")
            return [tuple(r) for r in pg.execute(text, list(params))]
    conn = sqlite3.connect(str(db))
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def events(db: str | Path, run_id: str) -> list[tuple[Any, ...]]:
    """(seq, hook, phase, middleware, lap, tool_call_id) of one run, in seq order."""
    return rows(db, "SELECT seq, hook, phase, middleware, lap, tool_call_id FROM events"
                    " WHERE run_id = ? ORDER BY seq", [run_id])


def run_ids(db: str | Path) -> list[str]:
    return [r[0] for r in rows(db, "SELECT id FROM runs ORDER BY started_at")]


def assert_gapless(db: str | Path, run_id: str) -> list[int]:
    seqs = [r[0] for r in rows(db, "SELECT seq FROM events WHERE run_id = ? ORDER BY seq",
                               [run_id])]
    assert seqs == list(range(len(seqs))), f"seq of {run_id} has gaps: {seqs}"
    return seqs


def make_agent(model: Any, tools: list[Any], middleware: list[Any], **kw: Any) -> Any:
    return create_agent(model, tools=tools, middleware=middleware, **kw)


def strip_ids(messages: list[BaseMessage]) -> list[tuple[str, Any, Any]]:
    return [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in messages]


_MADE_UP_ID = re.compile(r"(?:lc_run--)?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?"
                         r"[0-9a-f]{12}(?:-\d+)?")
_WALL_CLOCK = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


def whole_state(values: Any) -> Any:
    """A final state made comparable with another run's, losing nothing that matters:
    every state key (private ones included, when given), every field of every message
    (its class, content, name, tool calls and invalid tool calls, tool_call_id,
    status, artifact, additional_kwargs, response_metadata, usage_metadata, id). Only
    what two identical runs make up at random is normalised: uuid-like ids (LangGraph
    and LangChain give one to a message created without) are numbered in order of
    first appearance, ISO wall-clock times (Deep Agents stamps its files) are
    ``<time>``, and an object JSON cannot hold is named by its type (its repr
    carries a memory address, or may raise)."""
    ids: dict[str, str] = {}

    def canon(m: re.Match[str]) -> str:
        return ids.setdefault(m.group(0), f"<id{len(ids)}>")

    def norm(v: Any) -> Any:
        if isinstance(v, BaseMessage):
            return {"class": type(v).__name__, **norm(v.model_dump())}
        if isinstance(v, BaseModel):
            return {"class": type(v).__name__, **norm(v.model_dump())}
        if isinstance(v, dict):
            return {norm(k): norm(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [norm(x) for x in v]
        if isinstance(v, str):
            return _MADE_UP_ID.sub(canon, _WALL_CLOCK.sub("<time>", v))
        if v is None or isinstance(v, (bool, int, float)):
            return v
        return f"<{type(v).__module__}.{type(v).__qualname__}>"

    return norm(values)


import pytest


@pytest.fixture
def no_tracer_warnings(recwarn):  # type: ignore[no-untyped-def]
    """Fail the test if the tracer warned (it only warns when it failed at something)."""
    yield recwarn
    bad = [str(w.message) for w in recwarn.list if "looptrace" in str(w.message)]
    assert not bad, bad


def record_weather_run(db: str | Path, name: str = "weather-notes") -> str:
    """Record one two-lap weather run (a real agent, a scripted model) into ``db``; its id."""
    from tracer import TraceMiddleware

    trace = TraceMiddleware(db=db, run_name=name)
    agent = make_agent(two_lap_model(), [get_weather], [trace])
    agent.invoke({"messages": [("user", "Weather in Oslo?")]})
    trace.flush()
    (rid,) = [r[0] for r in rows(db, "SELECT id FROM runs WHERE name = ?", [name])]
    return str(rid)


THREE_TURN_QUESTIONS = ("Weather in Oslo?", "Sunglasses?", "Weather in Oslo?")


def record_three_turn_thread(db: str | Path, thread_id: str = "trip") -> list[str]:
    """Record a conversation of three turns under ``thread_id`` (a real agent with a
    checkpointer, a scripted model): the weather in Oslo (a tool call), sunglasses (an
    answer), the weather in Oslo again (a tool call). The run ids, in order."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from tracer import TraceMiddleware

    trace = TraceMiddleware(db=db, run_name="trip")
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", id="t-a1", tool_calls=[call("get_weather", {"city": "Oslo"}, "t-c1")]),
        AIMessage("Sunny in Oslo.", id="t-a2"),
        AIMessage("Yes, take sunglasses.", id="t-a3"),
        AIMessage("", id="t-a4", tool_calls=[call("get_weather", {"city": "Oslo"}, "t-c2")]),
        AIMessage("Still sunny in Oslo.", id="t-a5"),
    ]))
    agent = make_agent(model, [get_weather], [trace], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": thread_id}}
    for i, q in enumerate(THREE_TURN_QUESTIONS):
        agent.invoke({"messages": [HumanMessage(q, id=f"t-h{i + 1}")]}, config)
    trace.flush()
    return [str(r[0]) for r in rows(db, "SELECT id FROM runs WHERE thread_id = ?"
                                    " ORDER BY started_at", [thread_id])]


def record_hitl_thread(db: str | Path) -> str:
    """Record ``truth.scenarios``' ``hitl_edit`` (an interrupt before ``send_email``, resumed with an
    ``edit`` decision; thread ``truth-hitl``) through ``TraceMiddleware``; the run id."""
    from truth.run import run_truth

    from tracer import TraceMiddleware

    trace = TraceMiddleware(db=db)
    run_truth("hitl_edit", [trace], position="last")
    trace.flush()
    (rid,) = [r[0] for r in rows(db, "SELECT id FROM runs WHERE thread_id = 'truth-hitl'")]
    return str(rid)
