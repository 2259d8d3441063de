"""A run that failed is recorded as failed, wherever the exception was raised.

``TraceMiddleware`` alone (no ``attach``) must see a failure anywhere in the graph:
another middleware's node hook, another middleware's wrap hook (outside the tracer's,
which then never sees the exception, or inside it), a tool without error handling,
the model itself. Each sync and async, with and without a checkpointer, with and
without ``attach``, the tracer first and last in the list: the run is ``error`` with
the exception's type and text, and the replay's last step is the failure, at the
graph node where it surfaced (``tracer.record.watch``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from tracer_kit import make_agent, rows

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay


class Boom(Exception):
    pass


@tool
def forecast(city: str) -> str:
    """The weather forecast (raises: no handle_tool_error)."""
    raise Boom("the forecast service is down")


@tool
def weather(city: str) -> str:
    """The weather now."""
    return f"Sunny in {city}"


class NodeFails(AgentMiddleware):  # type: ignore[type-arg]
    """Another middleware whose after_model raises."""

    def after_model(self, state: Any, runtime: Any) -> None:
        raise Boom("after_model broke")

    async def aafter_model(self, state: Any, runtime: Any) -> None:
        raise Boom("after_model broke")


class WrapFails(AgentMiddleware):  # type: ignore[type-arg]
    """Another middleware whose wrap_model_call raises before calling the model."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        raise Boom("the request guard refused")

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        raise Boom("the request guard refused")


class ModelDown(ScriptedChatModel):
    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        raise Boom("503 from the provider")


def _model(tool_name: str = "weather") -> ScriptedChatModel:
    return ScriptedChatModel(script=turn_script([
        AIMessage("", id="ai-1", tool_calls=[call(tool_name, {"city": "Oslo"}, "c1")]),
        AIMessage("It is sunny.", id="ai-2"),
    ]))


# kind -> (model, tools, the other middleware, the error's text, the graph node
# where it surfaces: the replay's node of the last step)
KINDS: dict[str, Any] = {
    "node-hook": (lambda: _model(), [weather], NodeFails, "Boom: after_model broke",
                  "after_model"),
    "wrap-hook": (lambda: _model(), [weather], WrapFails, "Boom: the request guard refused",
                  "model"),
    "tool": (lambda: _model("forecast"), [forecast], None, "Boom: the forecast service is down",
             "tools"),
    "model": (lambda: ModelDown(script=None), [weather], None, "Boom: 503 from the provider",
              "model"),
}


def _run(db: Any, kind: str, mode: str, checkpointer: bool, attach: bool,
         position: str) -> TraceMiddleware:
    make_model, tools, other, _, _ = KINDS[kind]
    trace = TraceMiddleware(db=db)
    extra = [other()] if other is not None else []
    stack = [trace, *extra] if position == "first" else [*extra, trace]
    agent = make_agent(make_model(), tools, stack,
                       checkpointer=InMemorySaver() if checkpointer else None)
    if attach:
        agent = trace.attach(agent)
    config = {"configurable": {"thread_id": "t-1"}} if checkpointer else {}
    inp = {"messages": [("user", "What is the weather in Oslo?")]}
    with pytest.raises(Boom):
        if mode == "sync":
            agent.invoke(inp, config)
        else:
            async def go() -> None:
                with blockbuster_ctx():
                    await agent.ainvoke(inp, config)
            asyncio.run(go())
    trace.flush()
    return trace


@pytest.mark.parametrize("position", ["first", "last"])
@pytest.mark.parametrize("attach", [False, True], ids=["alone", "attached"])
@pytest.mark.parametrize("checkpointer", [False, True], ids=["no-saver", "saver"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_failure_is_recorded_as_error_where_it_surfaced(db_path, kind, mode, checkpointer,
                                                        attach, position):
    _, _, _, text, node = KINDS[kind]
    _run(db_path, kind, mode, checkpointer, attach, position)
    ((run_id, status, error),) = rows(db_path, "SELECT id, status, error FROM runs")
    assert (status, error) == ("error", text)
    with TraceDB(db_path) as tdb:
        replay = build_replay(tdb.run(run_id))
    last = replay.steps[-1]
    assert (last.event.hook, last.event.phase, last.kind) == ("run", "error", "error")
    assert last.event.payload["error"] == text
    assert last.node == node, [(s.event.hook, s.event.phase, s.node) for s in replay.steps]
    # the step before it is the failure at the node it surfaced in
    before = replay.steps[-2]
    assert before.event.phase == "error" and before.node == node
    assert text in str(before.event.payload)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_paused_run_is_interrupted_and_a_finished_one_completed(db_path, mode):
    """The graph's own end decides: an interrupt() pause with a checkpointer is
    ``interrupted`` with the interrupt, at once (not when the invocation is
    garbage-collected), and the same thread resumed to the end is ``completed``."""
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.types import Command

    trace = TraceMiddleware(db=db_path)
    agent = make_agent(_model(), [weather], [
        trace, HumanInTheLoopMiddleware(interrupt_on={"weather": True})],
        checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t-hitl"}}
    inp = {"messages": [("user", "Weather in Oslo?")]}
    resume = Command(resume={"decisions": [{"type": "approve"}]})
    if mode == "sync":
        out = agent.invoke(inp, config)
        assert out["__interrupt__"]
        trace.flush()
        paused = rows(db_path, "SELECT status FROM runs")
        agent.invoke(resume, config)
    else:
        async def go() -> Any:
            with blockbuster_ctx():
                out = await agent.ainvoke(inp, config)
                assert out["__interrupt__"]
                await asyncio.to_thread(trace.flush)
                paused = await asyncio.to_thread(rows, db_path, "SELECT status FROM runs")
                await agent.ainvoke(resume, config)
                return paused
        paused = asyncio.run(go())
    trace.flush()
    assert paused == [("interrupted",)]
    assert rows(db_path, "SELECT status, error FROM runs") == [("completed", None)]
    hooks = [h for (h,) in rows(db_path, "SELECT hook FROM events WHERE phase IN"
                                         " ('interrupt', 'fire') AND hook IN"
                                         " ('interrupt', 'resume') ORDER BY seq")]
    assert hooks == ["interrupt", "resume"]


def test_outer_after_agent_failing_after_the_tracers_is_an_error(db_path):
    """The tracer's after_agent ran (it used to end the run as completed there); an
    outer middleware's after_agent, which runs after it, then raised."""

    class LateFail(AgentMiddleware):  # type: ignore[type-arg]
        def after_agent(self, state: Any, runtime: Any) -> None:
            raise Boom("could not save the conversation")

    trace = TraceMiddleware(db=db_path)
    agent = make_agent(_model(), [weather], [LateFail(), trace])
    with pytest.raises(Boom):
        agent.invoke({"messages": [("user", "hi")]})
    trace.flush()
    assert rows(db_path, "SELECT status, error FROM runs") == [
        ("error", "Boom: could not save the conversation")]
    assert rows(db_path, "SELECT hook, phase, middleware FROM events ORDER BY seq DESC"
                         " LIMIT 3") == [("run", "error", None),
                                         ("after_agent", "error", "LateFail"),
                                         ("after_agent", "fire", "TraceMiddleware")]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_lean_mode_records_the_failure_too(db_path, mode):
    """Lean mode has no node hook: its first hook is the model call's wrap."""
    trace = TraceMiddleware(db=db_path, lean=True)
    agent = make_agent(_model(), [weather], [trace, NodeFails()])
    with pytest.raises(Boom):
        if mode == "sync":
            agent.invoke({"messages": [("user", "hi")]})
        else:
            asyncio.run(agent.ainvoke({"messages": [("user", "hi")]}))
    trace.flush()
    assert rows(db_path, "SELECT status, error FROM runs") == [("error", "Boom: after_model broke")]
    assert rows(db_path, "SELECT hook, phase, middleware FROM events ORDER BY seq DESC"
                         " LIMIT 2") == [("run", "error", None), ("after_model", "error", "NodeFails")]


def test_the_watcher_is_in_a_run_only_while_a_tracer_lives():
    """In a fresh process: LangChain's callback managers hold the watcher while a
    ``TraceMiddleware`` is alive, and not before nor after."""
    import subprocess
    import sys

    code = (
        "import gc\n"
        "from langchain_core.callbacks import CallbackManager\n"
        "from tracer import TraceMiddleware\n"
        "from tracer.record.watch import WATCHER\n"
        "def has(): return WATCHER in CallbackManager.configure().handlers\n"
        "before = has()\n"
        "trace = TraceMiddleware(db=':memory:')\n"
        "during = has()\n"
        "del trace; gc.collect()\n"
        "print(before, during, has())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert out.stdout.split() == ["False", "True", "False"], out.stderr
