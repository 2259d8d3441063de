"""One agent, one name, however it is traced (issue 47, untrue 10): the same
``create_agent`` or ``create_deep_agent`` agent was named ``agent`` when traced with
``TraceMiddleware`` alone and ``LangGraph`` (its graph's name) with ``trace.attach``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deepagents import create_deep_agent
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from tracer import TraceMiddleware
from tracer.read.loader import TraceDB
from tracer.testing import ScriptedChatModel, tool_call


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"


def model() -> ScriptedChatModel:
    return ScriptedChatModel(script=[
        AIMessage("", tool_calls=[tool_call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage("Sunny in Oslo.")])


def make(kind: str, trace: TraceMiddleware, **kw: Any) -> Any:
    if kind == "deep":
        return create_deep_agent(model=model(), tools=[get_weather], middleware=[trace], **kw)
    return create_agent(model(), tools=[get_weather], middleware=[trace], **kw)


@pytest.mark.parametrize("kind", ["create_agent", "deep"])
@pytest.mark.parametrize(("given", "want"), [(None, "LangGraph"), ("forecaster", "forecaster")])
def test_a_run_is_named_the_same_with_and_without_attach(
        tmp_path: Path, kind: str, given: str | None, want: str) -> None:
    db = tmp_path / "t.db"
    kw = {"name": given} if given else {}
    alone = TraceMiddleware(db=db)
    make(kind, alone, **kw).invoke({"messages": [("user", "Weather in Oslo?")]})
    alone.flush()
    attached = TraceMiddleware(db=db)
    attached.attach(make(kind, attached, **kw)).invoke(
        {"messages": [("user", "Weather in Oslo?")]})
    attached.flush()
    with TraceDB(db) as tdb:
        names = [r.name for r in sorted(tdb.runs(), key=lambda r: r.started_at)]
    assert names == [want, want]
