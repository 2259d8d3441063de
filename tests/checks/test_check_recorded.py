"""Broken histories recorded for real: agents driven by scripted models, traced
to SQLite, loaded back and checked. No mocks: the middlewares and loops below
break the history the way real code does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import chain
from langchain_core.tools import tool
from langgraph.errors import GraphRecursionError

from tracer import TraceCallbackHandler, TraceMiddleware
from tracer.checks.run import check_run
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.loader import Run, TraceDB


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"


def _two_cities() -> ScriptedChatModel:
    """Asks for two cities at once, and answers once any result came back."""

    def script(messages: Any) -> AIMessage:
        if any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage("Sunny in both.", id="ai-2")
        return AIMessage("", id="ai-1", tool_calls=[
            call("get_weather", {"city": "Oslo"}, "c1"), call("get_weather", {"city": "Rome"}, "c2")])

    return ScriptedChatModel(script=script)


def _only_run(db: Path) -> Run:
    with TraceDB(db) as tdb:
        (summary,) = tdb.runs()
        return tdb.run(summary.id)


def _rules(run: Run, providers: Any = ("openai", "anthropic", "ollama")) -> set[tuple[str, Any]]:
    return {(f.rule, f.provider) for f in check_run(run, providers=providers)}


class DropResult(AgentMiddleware):  # type: ignore[type-arg]
    """Rewrites each model request without the result of call c2 (a buggy filter)."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        kept = [m for m in request.messages if getattr(m, "tool_call_id", None) != "c2"]
        return handler(request.override(messages=kept))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        kept = [m for m in request.messages if getattr(m, "tool_call_id", None) != "c2"]
        return await handler(request.override(messages=kept))


class TrimFirstAI(AgentMiddleware):  # type: ignore[type-arg]
    """A naive trimmer: before the second model call, drops the first AI message
    but keeps the tool results that answer it."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        msgs = state["messages"]
        if any(isinstance(m, ToolMessage) for m in msgs) and any(
                m.id == "ai-1" for m in msgs):
            return {"messages": [RemoveMessage(id="ai-1")]}
        return None


def test_clean_agent_run_has_no_findings(store_db: str) -> None:
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage("Sunny in Oslo."),
    ]))
    tm = TraceMiddleware(db=store_db)
    agent = tm.attach(create_agent(model, tools=[get_weather], middleware=[tm],
                                   system_prompt="Be brief."))
    agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]})
    tm.flush()
    assert check_run(_only_run(store_db)) == []


def test_middleware_dropping_a_result_is_a_dangling_call(store_db: str) -> None:
    tm = TraceMiddleware(db=store_db)
    # DropResult is outermost, so the tracer sees the request as rewritten.
    agent = create_agent(_two_cities(), tools=[get_weather], middleware=[DropResult(), tm])
    agent.invoke({"messages": [HumanMessage("Oslo and Rome?")]})
    tm.flush()
    run = _only_run(store_db)
    findings = check_run(run, providers=["openai", "anthropic"])
    assert {(f.rule, f.provider, f.severity) for f in findings} == {
        ("dangling-tool-call", "openai", "error"), ("dangling-tool-call", "anthropic", "error")}
    second = [e for e in run.events if e.hook == "wrap_model_call" and e.phase == "enter"][1]
    assert {f.seq for f in findings} == {second.seq}
    assert all(f.message_keys == ("ai-1",) and "c2" in f.message for f in findings)


def test_trimming_the_call_but_not_its_results_orphans_them(store_db: str) -> None:
    tm = TraceMiddleware(db=store_db)
    agent = create_agent(_two_cities(), tools=[get_weather], middleware=[TrimFirstAI(), tm])
    agent.invoke({"messages": [HumanMessage("Oslo and Rome?")]}, config={"recursion_limit": 12})
    tm.flush()
    run = _only_run(store_db)
    findings = [f for f in check_run(run, providers=["openai"])]
    assert [(f.rule, f.provider) for f in findings] == [("orphan-tool-result", "openai")] * 2
    assert {f.message_keys for f in findings} == {("t:c1",), ("t:c2",)}


def test_hand_rolled_loop_forgetting_a_result(store_db: str) -> None:
    llm = _two_cities()
    handler = TraceCallbackHandler(db=store_db)

    @chain
    def loop(question: str) -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(question)]
        for _ in range(3):
            ai = llm.invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                break
            results = [get_weather.invoke(tc) for tc in ai.tool_calls]
            messages.append(results[0])  # the bug: only the first result goes back
        return messages

    loop.invoke("Oslo and Rome?", config={"callbacks": [handler]})
    handler.close()
    run = _only_run(store_db)
    # The second result was recorded (the tool ran) but the model never got it.
    assert "t:c2" in run.message_by_key
    # (no Ollama-client warning: this run never talked to Ollama)
    assert _rules(run) == {("dangling-tool-call", "openai"), ("dangling-tool-call", "anthropic"),
                           ("dangling-tool-call", "ollama")}


def test_recursion_limit_ends_the_run(store_db: str) -> None:
    def again(messages: Any) -> AIMessage:
        n = sum(1 for m in messages if isinstance(m, AIMessage))
        return AIMessage("", tool_calls=[call("get_weather", {"city": f"City {n}"}, f"c{n}")])

    tm = TraceMiddleware(db=store_db)
    agent = tm.attach(create_agent(ScriptedChatModel(script=again), tools=[get_weather],
                                   middleware=[tm]))
    with pytest.raises(GraphRecursionError):
        agent.invoke({"messages": [HumanMessage("Weather?")]}, config={"recursion_limit": 8})
    tm.flush()
    run = _only_run(store_db)
    assert run.summary.status == "error"
    findings = check_run(run)
    assert [(f.rule, f.severity) for f in findings] == [("recursion-limit", "error")]


def test_real_adapter_requests_on_the_wire_are_clean(store_db: str) -> None:
    """The real ChatOpenAI / ChatAnthropic / ChatOllama requests, captured by the
    wire emulator, break no rule; only the warnings the messages give remain."""
    from tracer.checks.run import check_db
    from tracer.demo.providers import record_provider_demos

    ids = record_provider_demos(store_db)
    assert len(ids) == 6
    with TraceDB(store_db) as tdb:
        assert all(tdb.wire(rid) for rid in ids)
    results = check_db(store_db, ids)
    found = [f for fs in results.values() for f in fs]
    assert not [f for f in found if f.message.startswith("In the captured")]
    assert {(f.rule, f.provider) for f in found} == {
        ("ollama-unlinked-calls", "ollama"), ("unknown-tool", None)}


class Summarise(AgentMiddleware):  # type: ignore[type-arg]
    """From the second call on, sends a summary (a new message without an id)
    in place of the opening question."""

    def _rewrite(self, request: Any) -> Any:
        msgs = list(request.messages)
        if len(msgs) > 1:
            msgs = [HumanMessage("Summary: the user asked about Oslo and Rome."), *msgs[1:]]
        return request.override(messages=msgs)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return handler(self._rewrite(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(self._rewrite(request))


def test_rewritten_request_with_an_inline_message_is_rebuilt(store_db: str) -> None:
    from tracer.checks.base import model_inputs

    tm = TraceMiddleware(db=store_db)
    agent = create_agent(_two_cities(), tools=[get_weather], middleware=[Summarise(), tm])
    agent.invoke({"messages": [HumanMessage("Oslo and Rome?", id="q")]})
    tm.flush()
    run = _only_run(store_db)
    enters = [e for e in run.events if e.hook == "wrap_model_call" and e.phase == "enter"]
    assert enters[1].payload["message_keys"][0].startswith("o:")  # no id: matched by order
    first, second = model_inputs(run)
    assert [t.role for t in first.turns] == ["user"]
    assert [t.role for t in second.turns] == ["user", "assistant", "tool", "tool"]
    assert second.turns[0].key != "q"  # the summary, not the original question
    assert check_run(run, providers=["openai", "anthropic"]) == []


def test_structured_response_is_a_final_answer(store_db: str) -> None:
    """With ToolStrategy the last model reply is a call to the schema's tool,
    answered by create_agent itself: neither a loop bound nor an unknown tool."""
    from langchain.agents.structured_output import ToolStrategy
    from pydantic import BaseModel

    class Forecast(BaseModel):
        city: str
        celsius: int

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage("", tool_calls=[call("Forecast", {"city": "Oslo", "celsius": -3}, "s1")]),
    ]))
    tm = TraceMiddleware(db=store_db)
    agent = tm.attach(create_agent(model, tools=[get_weather], middleware=[tm],
                                   response_format=ToolStrategy(Forecast)))
    out = agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]})
    tm.flush()
    assert out["structured_response"].celsius == -3
    assert check_run(_only_run(store_db)) == []
