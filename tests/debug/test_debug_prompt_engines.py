"""The ``looptrace debug`` prompt on both engines (``store_db``): waiting for a pause, it
shows one as soon as an agent pauses, and its answer lets the agent go on. On
PostgreSQL the pause's NOTIFY wakes it (``tracer.debug.wake``); the tests set its
fallback (reading the pauses every ``PG_POLL_S``) and the agent's (``PG_WAIT_S``) to an
hour, so only a NOTIFY can make them pass in time."""

from __future__ import annotations

import io
import threading

import pytest
from debug_kit import Background
from tracer_kit import get_weather, make_agent, rows, two_lap_model

from tracer import TraceMiddleware
from tracer.cli import debug as debug_cli
from tracer.debug import Debugger, session

HOUR = 3600.0
QUESTION = {"messages": [("user", "Weather in Oslo?")]}


@pytest.fixture(autouse=True)
def _no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(debug_cli, "PG_POLL_S", HOUR)
    monkeypatch.setattr(session, "PG_WAIT_S", HOUR)
    monkeypatch.setattr(session, "PG_REREAD_S", HOUR)


def test_the_prompt_wakes_when_a_run_pauses_on_each_engine(store_db: str) -> None:
    """The prompt waits with nothing paused; an agent pauses before get_weather; the
    prompt shows it and answers ``c`` (its input); the agent ends. Without the pause's
    NOTIFY on PostgreSQL the prompt would sleep an hour and the agent never end."""
    trace = TraceMiddleware(db=store_db, debug=Debugger(["tool:get_weather"]))
    agent = make_agent(two_lap_model(), [get_weather], [trace])
    out = io.StringIO()
    prompt = debug_cli.Prompt(store_db, io.StringIO("c\n"), out)
    stop = threading.Event()
    served = Background(lambda: prompt.serve(lambda: not stop.is_set()))
    try:
        bg = Background(lambda: agent.invoke(QUESTION))
        answer = bg.result(timeout=60)
        assert answer["messages"][-1].content == "It is sunny in Oslo."
    finally:
        stop.set()
        prompt.wake()
    served.result(timeout=60)
    assert "looptrace debug: paused" in out.getvalue()
    assert "wrap_tool_call before (breakpoint tool:get_weather)" in out.getvalue()
    trace.flush()
    assert ("continued",) in rows(store_db, "SELECT outcome FROM debug_pauses")
    trace.close()
