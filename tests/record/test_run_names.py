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


def test_step_numbers_differ_by_the_run_start_as_the_guide_says(tmp_path: Path) -> None:
    """Issue 47, in the way 6: without ``attach`` a middleware-traced run has no run-start
    step, so its step numbers are one less than the same agent's under ``attach``; the
    tracing guide says so (step N there is step N + 1 here, the same hook firing)."""
    db = tmp_path / "t.db"
    alone = TraceMiddleware(db=db)
    make("create_agent", alone).invoke({"messages": [("user", "Weather in Oslo?")]})
    alone.flush()
    attached = TraceMiddleware(db=db)
    attached.attach(make("create_agent", attached)).invoke(
        {"messages": [("user", "Weather in Oslo?")]})
    attached.flush()
    with TraceDB(db) as tdb:
        a, b = sorted(tdb.runs(), key=lambda r: r.started_at)
        hooks_a = [(e.hook, e.phase) for e in tdb.run(a.id).events]
        hooks_b = [(e.hook, e.phase) for e in tdb.run(b.id).events]
    assert hooks_b[0] == ("run", "start") and hooks_a[0] == ("before_agent", "fire")
    assert hooks_b[1:7] == hooks_a[:6]  # step N alone is step N + 1 attached
    guide = " ".join((Path(__file__).resolve().parents[2] / "docs" / "guide" / "tracing.md")
                     .read_text().split())
    assert ("without `attach` every step of the same agent's run is numbered one less: "
            "step N there is step N + 1 under `attach`") in guide
