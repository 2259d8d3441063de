"""Loop findings look at a run's own laps, not at the earlier turns of its thread.

Each turn of a thread (a checkpointer, one ``thread_id``) is a run of its own that
starts with the earlier turns' messages. Asking the same question three times in
three turns is no stuck loop; the same call three times inside one run is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from tracer_kit import make_agent

from tracer import TraceMiddleware
from tracer.checks.run import check_run
from tracer.demo.models import ScriptedChatModel, call
from tracer.read.loader import TraceDB

LOOP_RULES = {"repeated-tool-call", "repeated-tool-error", "runaway-loop"}


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"


@tool
def get_forecast(city: str) -> str:
    """Forecast for a city (its service is down: an error result)."""
    raise ToolException("the forecast service is down")


get_forecast.handle_tool_error = True


def _model(tool_name: str, calls_per_turn: int) -> ScriptedChatModel:
    """Per turn (after the latest user message): ``calls_per_turn`` times the same
    call, then an answer."""

    def script(messages: list[BaseMessage]) -> AIMessage:
        last_user = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        done = sum(isinstance(m, ToolMessage) for m in messages[last_user:])
        if done < calls_per_turn:
            return AIMessage("", tool_calls=[call(tool_name, {"city": "Oslo"},
                                                  f"call-{len(messages)}")])
        return AIMessage("Here is what I found.")

    return ScriptedChatModel(script=script)


def _turns(db: Path, tool_name: str, calls_per_turn: int, turns: int) -> list[set[str]]:
    """The loop rules ``check`` finds in each turn's run, in order."""
    trace = TraceMiddleware(db=db)
    tools = [get_weather, get_forecast]
    agent = make_agent(_model(tool_name, calls_per_turn), tools, [trace],
                       checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "same-question"}}
    for _ in range(turns):
        agent.invoke({"messages": [("user", "What's the weather in Oslo?")]}, config)
    trace.flush()
    out = []
    with TraceDB(db) as tdb:
        runs = sorted(tdb.runs(), key=lambda r: r.started_at)
        assert [r.status for r in runs] == ["completed"] * turns
        for summary in runs:
            run = tdb.run(summary.id)
            out.append({f.rule for f in check_run(run)} & LOOP_RULES)
    return out


@pytest.mark.parametrize(("tool_name", "rule"), [("get_weather", "repeated-tool-call"),
                                                 ("get_forecast", "repeated-tool-error")])
def test_the_same_question_in_three_turns_is_no_loop(store_db, tool_name, rule):
    found = _turns(store_db, tool_name, calls_per_turn=1, turns=3)
    assert found == [set(), set(), set()], found


@pytest.mark.parametrize(("tool_name", "rule"), [("get_weather", "repeated-tool-call"),
                                                 ("get_forecast", "repeated-tool-error")])
def test_a_stuck_loop_inside_one_run_is_still_found(store_db, tool_name, rule):
    found = _turns(store_db, tool_name, calls_per_turn=3, turns=2)
    assert [rule in f for f in found] == [True, True], found


def test_the_finding_names_the_runs_own_calls(store_db):
    """In a later turn the repeated calls named are the run's own, not the earlier
    turns' (which the run's messages also hold, as context)."""
    _turns(store_db, "get_weather", calls_per_turn=3, turns=2)
    with TraceDB(store_db) as tdb:
        first, second = sorted(tdb.runs(), key=lambda r: r.started_at)
        run = tdb.run(second.id)
        inherited = {m.key for m in tdb.run(first.id).messages}
    (finding,) = [f for f in check_run(run) if f.rule == "repeated-tool-call"]
    assert len(finding.message_keys) == 3
    assert not set(finding.message_keys) & inherited
    assert "3 times" in finding.message
