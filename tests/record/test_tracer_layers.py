"""The onion, one layer at a time (``TraceMiddleware.around``): each change to a call is
attributed to the layer that made it, on the way in and on the way out, with every
retry and fallback; the probes add no graph node and change nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage
from tracer_kit import whole_state
from truth.model import call, make_tool, recording_model, turn_script
from truth.run import run_truth
from truth.scenarios import SCENARIOS

from tracer import TraceMiddleware
from tracer.read.captions import captions
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.record.layers import wraps_calls


def _replay(db):
    with TraceDB(db) as tdb:
        (summary,) = [r for r in tdb.runs() if r.parent_id is None]
        return build_replay(tdb.run(summary.id))


def layer_steps(replay, what=None):
    return [s for s in replay.steps if s.event.phase == "layer"
            and (what is None or s.event.payload.get("what") == what)]


def _layered(tmp_path, name):
    trace = TraceMiddleware(db=tmp_path / f"{name}.db")
    truth = run_truth(name, [trace], position="around")
    trace.flush()
    return truth, _replay(tmp_path / f"{name}.db")


def test_a_fallback_is_an_error_then_a_second_attempt(tmp_path):
    truth, replay = _layered(tmp_path, "model_fallback")
    errors = layer_steps(replay, "error")
    attempts = layer_steps(replay, "attempt")
    assert [s.event.middleware for s in errors] == ["ModelFallbackMiddleware"] * 2
    assert all("primary-model" not in captions(replay)[s.index] and "RuntimeError" in captions(replay)[s.index]
               or "Error" in captions(replay)[s.index] for s in errors)
    assert [(s.event.middleware, s.event.payload["attempt"], s.event.payload["model"])
            for s in attempts] == [("ModelFallbackMiddleware", 2, "fallback-model")] * 2
    assert [s.kind for s in errors] == ["error", "error"]
    # the run itself did not fail, and what the models answered is what the state got
    assert replay.run.summary.status == "completed"
    assert [m.model for m in truth.model_calls] == ["primary-model", "fallback-model"] * 2


def test_a_tool_retry_is_an_error_then_a_second_attempt_of_that_call_only(tmp_path):
    _truth, replay = _layered(tmp_path, "tool_retry")
    errors = layer_steps(replay, "error")
    attempts = layer_steps(replay, "attempt")
    assert [(s.event.middleware, s.event.tool_call_id) for s in errors] == [
        ("ToolRetryMiddleware", "call-retry-1")]
    assert "connection reset" in captions(replay)[errors[0].index]
    assert [(s.event.tool_call_id, s.event.payload["attempt"]) for s in attempts] == [
        ("call-retry-1", 2)]
    # a layer step is not the end of its tool call: it is still in flight there
    assert all("call-retry-1" in s.active_tools for s in errors + attempts)


def test_context_editing_is_a_change_of_the_request_at_its_layer(tmp_path):
    _truth, replay = _layered(tmp_path, "context_editing")
    changes = layer_steps(replay, "request")
    assert changes and {s.event.middleware for s in changes} == {"ContextEditingMiddleware"}
    assert all(s.event.payload["changed"] == ["messages"] for s in changes)
    last = replay.messages_at(changes[-1].index)
    assert "[cleared by context editing]" in [m.text for m in last if m.type == "tool"]
    # ... while the state at that step still has the original results
    state = replay.state_at(changes[-1].event.seq)
    assert "[cleared by context editing]" not in [m.text for m in state]
    assert any("changed the model call on its way in (messages)" in captions(replay)[s.index] for s in changes)


class SystemSetter(AgentMiddleware):  # type: ignore[type-arg]
    """Outer layer: another system prompt for the model."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(request.override(system_prompt="Be brief."))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request.override(system_prompt="Be brief."))


class Shouter(AgentMiddleware):  # type: ignore[type-arg]
    """Inner layer: the model's reply in capitals, on the way out."""

    def _loud(self, response: Any) -> Any:
        msg = response.result[0]
        return type(response)(result=[msg.model_copy(update={"content": msg.content.upper()})],
                              structured_response=response.structured_response)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._loud(handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._loud(await handler(request))


def _two_layers(trace: TraceMiddleware | None) -> Any:
    model = recording_model(turn_script([
        AIMessage("", id="ai-1", tool_calls=[call("echo", {"text": "hi"}, "call-1")]),
        AIMessage("all done", id="ai-2"),
    ]), model_name="layer-model")

    def echo(text: str) -> str:
        """Echo."""
        return text

    mws = [SystemSetter(), Shouter()]
    return create_agent(model, tools=[make_tool(echo)],
                        middleware=trace.around(*mws) if trace else mws,
                        system_prompt="You echo.")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_change_is_attributed_to_its_own_layer(tmp_path, mode):
    trace = TraceMiddleware(db=tmp_path / "two.db")
    agent = _two_layers(trace)
    inp = {"messages": [("user", "echo hi")]}
    if mode == "sync":
        out = agent.invoke(inp)
    else:
        async def go():
            with blockbuster_ctx():
                return await agent.ainvoke(inp)
        out = asyncio.run(go())
    trace.flush()
    assert out["messages"][-1].content == "ALL DONE"
    replay = _replay(tmp_path / "two.db")
    requests = layer_steps(replay, "request")
    responses = layer_steps(replay, "response")
    assert [(s.event.middleware, s.event.payload["changed"], s.event.payload["system"])
            for s in requests] == [("SystemSetter", ["system"], "Be brief.")] * 2
    # (the first reply is empty: in capitals it is the same message, so no change)
    assert [(s.event.middleware, s.event.payload["changed"]) for s in responses] == [
        ("Shouter", ["messages"])]
    assert responses[-1].event.payload["inline_messages"][0]["data"]["content"] == "ALL DONE"
    # the final state holds the layer's version of the reply
    assert replay.messages_at(len(replay) - 1)[-1].text == "ALL DONE"


def test_probes_add_no_graph_node_and_change_nothing(tmp_path):
    plain = _two_layers(None)
    probed = _two_layers(TraceMiddleware(db=tmp_path / "g.db"))
    assert set(probed.get_graph().nodes) - set(plain.get_graph().nodes) == {
        "TraceMiddleware.before_agent", "TraceMiddleware.before_model",
        "TraceMiddleware.after_model", "TraceMiddleware.after_agent"}
    a = plain.invoke({"messages": [("user", "echo hi")]})
    b = probed.invoke({"messages": [("user", "echo hi")]})
    assert whole_state(a) == whole_state(b)  # every state key, every message field


def test_only_layers_that_wrap_calls_get_a_probe(tmp_path):
    from langchain.agents.middleware import PIIMiddleware, ToolRetryMiddleware

    trace = TraceMiddleware(db=tmp_path / "p.db")
    pii, retry = PIIMiddleware("email"), ToolRetryMiddleware()
    stack = trace.around(pii, retry)
    assert not wraps_calls(pii) and wraps_calls(retry)
    assert [type(m).__name__ for m in stack] == [
        "TraceMiddleware", "PIIMiddleware", "ToolRetryMiddleware", "LayerProbe"]
    assert len({m.name for m in stack}) == len(stack)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_layer_steps_have_captions_and_known_kinds(tmp_path, name):
    _truth, replay = _layered(tmp_path, name)
    for s in layer_steps(replay):
        assert s.event.payload["what"] in ("request", "attempt", "error", "response",
                                           "short-circuit")
        assert captions(replay)[s.index] and s.event.middleware
        assert s.node in ("model", "tools")


class Cache(AgentMiddleware):  # type: ignore[type-arg]
    """Answers the second model call from its cache: the model is not called."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def _hit(self) -> Any:
        from langchain.agents.middleware.types import ModelResponse

        return ModelResponse(result=[AIMessage("from the cache", id="ai-cached")])

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        self.calls += 1
        return self._hit() if self.calls == 2 else handler(request)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        self.calls += 1
        return self._hit() if self.calls == 2 else await handler(request)


class ErrorsAsResults(AgentMiddleware):  # type: ignore[type-arg]
    """Turns a tool's exception into an error ToolMessage."""

    def _answer(self, request: Any, exc: Exception) -> Any:
        from langchain_core.messages import ToolMessage

        return ToolMessage(f"tool failed: {exc}", tool_call_id=request.tool_call["id"],
                           name=request.tool_call["name"], status="error")

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            return handler(request)
        except ValueError as exc:
            return self._answer(request, exc)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        try:
            return await handler(request)
        except ValueError as exc:
            return self._answer(request, exc)


def test_a_short_circuit_and_a_recovery_are_named(tmp_path):
    model = recording_model(turn_script([
        AIMessage("", id="ai-1", tool_calls=[call("explode", {"n": 1}, "call-x")]),
        AIMessage("never reached: the cache answers", id="ai-2"),
    ]), model_name="sc-model")

    def explode(n: int) -> str:
        """Explode."""
        raise ValueError(f"boom {n}")

    trace = TraceMiddleware(db=tmp_path / "sc.db")
    agent = create_agent(model, tools=[make_tool(explode)],
                         middleware=trace.around(Cache(), ErrorsAsResults()))
    out = agent.invoke({"messages": [("user", "go")]})
    trace.flush()
    assert [m.content for m in out["messages"]][-2:] == ["tool failed: boom 1", "from the cache"]
    replay = _replay(tmp_path / "sc.db")
    got = [(s.event.middleware, s.event.payload["what"], s.event.payload.get("changed"))
           for s in layer_steps(replay)]
    assert got == [
        ("ErrorsAsResults", "error", None),  # the tool's exception came up into it ...
        ("ErrorsAsResults", "response", ["recovered"]),  # ... and it answered anyway
        ("Cache", "short-circuit", None),  # the second model call never reached the model
    ]
    recovered = layer_steps(replay, "response")[0]
    assert "turned the exception (ValueError: boom 1) into a result" in captions(replay)[recovered.index]
    assert recovered.event.payload["status"] == "error"
    assert "answered the model call itself" in captions(replay)[layer_steps(replay, "short-circuit")[0].index]
    # the model itself was called once (the recording model keeps what it was given)
    assert len(model.recorder.calls) == 1
