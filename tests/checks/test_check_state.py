"""The checks that read the state, on real agents (the crafted cases with their clean
twins are in tests/check_corpus: todo-left-in-progress, file-never-read,
structured-response-missing, jump-key-never-changed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NotRequired

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain_core.messages import AIMessage
from langgraph.errors import GraphRecursionError
from tracer_kit import get_weather
from truth.run import run_truth

from tracer import TraceMiddleware
from tracer.checks.run import check_run
from tracer.demo.models import ScriptedChatModel, call
from tracer.read.loader import Run, TraceDB


def _root(db: Path) -> Run:
    with TraceDB(db) as tdb:
        (root,) = [r for r in tdb.runs() if r.parent_id is None]
        return tdb.run(root.id)


def _rules(tmp_path: Path, name: str) -> set[str]:
    db = tmp_path / f"{name}.db"
    trace = TraceMiddleware(db=db)
    run_truth(name, [trace], position="first", callbacks=[trace.callback_handler()])
    trace.flush()
    return {f.rule for f in check_run(_root(db))}


STATE_RULES = {"todo-left-in-progress", "file-never-read", "structured-response-missing",
               "jump-key-never-changed"}


@pytest.mark.parametrize(("name", "expected"), [
    ("todo", {"todo-left-in-progress"}),  # "Write the summary" is still in_progress
    ("deep_workspace", set()),  # the plan completed, the file read back
    ("structured", set()),
    ("custom_jump", set()),  # its counter changes (the jump fires)
    ("command_update", set()),
])
def test_state_findings_on_the_truth_agents(tmp_path, name, expected):
    assert _rules(tmp_path, name) & STATE_RULES == expected


class StuckState(AgentState):  # type: ignore[type-arg]
    attempts: NotRequired[int]


class StuckCounter(AgentMiddleware):  # type: ignore[type-arg]
    """Meant to give up after three laps; its counter never goes up (the bug)."""

    state_schema = StuckState

    @hook_config(can_jump_to=["end"])
    def after_model(self, state: Any, runtime: Any) -> dict[str, Any]:
        attempts = int(state.get("attempts") or 0)
        if attempts >= 3:
            return {"jump_to": "end"}
        return {"attempts": attempts}  # (should be attempts + 1)


def test_a_counter_that_never_changes_is_found(store_db):
    db = store_db
    trace = TraceMiddleware(db=db)
    n = iter(range(1000))
    model = ScriptedChatModel(script=lambda msgs: AIMessage("", tool_calls=[
        call("get_weather", {"city": f"Oslo {next(n)}"}, f"c{next(n)}")]))
    agent = trace.attach(create_agent(model, [get_weather], middleware=[trace, StuckCounter()]))
    with pytest.raises(GraphRecursionError):
        agent.invoke({"messages": [("user", "Weather?")]}, config={"recursion_limit": 16})
    trace.flush()
    run = _root(db)
    found = {f.rule: f for f in check_run(run)}
    assert "jump-key-never-changed" in found
    f = found["jump-key-never-changed"]
    assert "StuckCounter.after_model wrote attempts" in f.message and "always 0" in f.message
