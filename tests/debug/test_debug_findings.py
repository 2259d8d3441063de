"""``finding:RULE`` breakpoints on a real paused agent (``tracer.debug.findings``): one
finding pauses the run once, however many hook firings follow; a finding the model's
reply makes pauses at that reply, before ``recursion_limit`` can cut the run ahead of
the next tool call."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from debug_kit import Background
from langchain_core.messages import AIMessage
from langgraph.errors import GraphRecursionError
from tracer_kit import get_price, get_weather, make_agent

from tracer import TraceMiddleware
from tracer.checks.run import check_run
from tracer.debug import Debugger, channel
from tracer.demo.models import ScriptedChatModel, call
from tracer.read.loader import TraceDB


def _stuck() -> ScriptedChatModel:
    """Asks for the weather in Oslo, again and again (call ids c1, c2, ...)."""
    return ScriptedChatModel(script=lambda msgs: AIMessage(
        "", tool_calls=[call("get_weather", {"city": "Oslo"},
                             f"c{sum(isinstance(m, AIMessage) for m in msgs) + 1}")]))


def _run_answering_every_pause(db: Path, limit: int, mode: str) -> list[dict[str, Any]]:
    """The stuck agent under ``finding:repeated-tool-call`` with ``recursion_limit``,
    each pause answered "continue" as it comes; the pauses, in order."""
    trace = TraceMiddleware(db=db, debug=Debugger(["finding:repeated-tool-call"]))
    agent = make_agent(_stuck(), [get_weather, get_price], [trace])
    question = {"messages": [("user", "Weather in Oslo?")]}
    config = {"recursion_limit": limit}
    if mode == "async":
        async def go() -> Any:
            return await agent.ainvoke(question, config)
        bg = Background(go, is_async=True)
    else:
        bg = Background(lambda: agent.invoke(question, config))
    pauses: list[dict[str, Any]] = []
    while bg.alive():
        for p in (channel.list_paused(db, with_pending=True) if db.exists() else []):
            pauses.append(p)
            channel.answer(db, p["run"], "continue", None)
            while bg.alive() and any(q["seq"] == p["seq"] for q in channel.list_paused(db)):
                time.sleep(0.01)
        time.sleep(0.01)
    with pytest.raises(GraphRecursionError):
        bg.result()
    trace.flush()
    return pauses


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_one_repeated_tool_call_finding_pauses_once(tmp_path: Path, mode: str) -> None:
    """One finding paused three times (after the third call's tool ran, at the next
    before_model, ...): the new findings stayed "new" until the next ``before``."""
    db = tmp_path / "dbg.db"
    pauses = _run_answering_every_pause(db, 25, mode)
    assert len(pauses) == 1
    (p,) = pauses
    assert (p["hook"], p["at"]) == ("wrap_model_call", "after")
    assert [c["id"] for c in p["pending"]["message"]["tool_calls"]] == ["c3"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_finding_pauses_before_recursion_limit_cuts_the_run(tmp_path: Path, mode: str) -> None:
    """With ``recursion_limit=12`` the third identical call is the model's last reply:
    LangGraph ends the run before its tool runs. ``looptrace check`` reports the finding;
    the breakpoint, looking only before a call, never paused."""
    db = tmp_path / "dbg.db"
    pauses = _run_answering_every_pause(db, 12, mode)
    with TraceDB(db) as t:
        found = {f.rule for f in check_run(t.run(t.runs()[0].id))}
    assert "repeated-tool-call" in found
    assert [(p["hook"], p["at"]) for p in pauses] == [("wrap_model_call", "after")]
    assert [c["id"] for c in pauses[0]["pending"]["message"]["tool_calls"]] == ["c3"]
