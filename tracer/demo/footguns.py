"""The hand-rolled loop's footguns, each recorded as a run that ``looptrace check`` catches.

The seed's loop has five guards: a bound, the assistant message appended, one
result per call matched by its id, an unknown-tool guard, and an exception
turned into an ``Error: ...`` result. ``run_tool`` is the last two; the loops
below each drop one guard, the way people do:

    footgun-no-bound          ``while True``: the model asks again and again with
                              nearly the same arguments, until the provider's
                              rate limit stops it (check: runaway-loop)
    footgun-wrong-id          results carry an id the loop made up instead of the
                              call's (check: orphan result, dangling call)
    footgun-swallowed-error   ``except Exception: pass``: the tool failed and the
                              model was told nothing (check: swallowed-tool-error)

One of two parallel results not sent back is ``sdk-loop-missing-result`` (a loop
on the ``anthropic`` SDK, through the proxy; ``tracer.demo.providers``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import chain
from langchain_core.tools import tool

from tracer.record.callbacks import TraceCallbackHandler

from .models import ScriptedChatModel, call


def run_tool(tools: dict[str, Any], tc: dict[str, Any]) -> str:
    """The result text of one tool call: never raises, so the model always hears.

    The loop writes the result message, with the call's id, itself."""
    tool_ = tools.get(tc["name"])
    if tool_ is None:
        return f"Error: unknown tool {tc['name']!r}"
    try:
        return str(tool_.invoke(tc["args"]))
    except Exception as exc:  # noqa: BLE001 - the model must hear about it
        return f"Error: {type(exc).__name__}: {exc}"


@tool
def search_docs(query: str) -> str:
    """Search the product documentation."""
    return "No page matches exactly. Try the account settings page."


@tool
def get_forecast(city: str) -> str:
    """Tomorrow's forecast for a city."""
    if city not in ("Oslo", "Bergen"):
        msg = f"no forecast for {city!r}"
        raise ValueError(msg)
    return f"{city}: rain, 6°C."


def _record(db: str, name: str, loop: Callable[[str], list[BaseMessage]], question: str) -> None:
    handler = TraceCallbackHandler(db=db)
    try:
        chain(loop).with_config(run_name=name).invoke(question,
                                                      config={"callbacks": [handler]})
    except RuntimeError:
        pass  # the run failed, as such a loop does; the record says how
    finally:
        handler.close()


def no_bound(db: str) -> None:
    """``while True``: nothing but the provider's rate limit ever stops it."""
    queries = ["reset password steps", "Reset password steps.", "reset password steps!"]

    def script(messages: Sequence[BaseMessage]) -> AIMessage:
        n = sum(1 for m in messages if isinstance(m, AIMessage))
        if n >= 8:
            msg = "RateLimitError: 429 token budget for this key exhausted"
            raise RuntimeError(msg)
        return AIMessage("Let me search once more.", tool_calls=[
            call("search_docs", {"query": queries[n % 3]}, f"call_search_{n + 1}")])

    llm = ScriptedChatModel(model_name="scripted-unbounded", script=script).bind_tools(
        [search_docs])
    tools = {"search_docs": search_docs}

    def loop(question: str) -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(question)]
        while True:  # the footgun: no bound
            ai = llm.invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                return messages
            for tc in ai.tool_calls:
                messages.append(ToolMessage(run_tool(tools, tc), tool_call_id=tc["id"]))

    _record(db, "footgun-no-bound", loop, "How do I reset my password?")


def _forecaster(city: str, answer: str) -> Any:
    """A scripted model that asks for Oslo's and ``city``'s forecast at once, then
    answers ``answer`` (whatever the results said)."""

    def script(messages: Sequence[BaseMessage]) -> AIMessage:
        if not any(isinstance(m, AIMessage) for m in messages):
            return AIMessage("", tool_calls=[
                call("get_forecast", {"city": "Oslo"}, "call_fc_oslo"),
                call("get_forecast", {"city": city}, f"call_fc_{city.lower()}")])
        return AIMessage(answer)

    return ScriptedChatModel(model_name="scripted-forecast", script=script).bind_tools(
        [get_forecast])


def wrong_id(db: str) -> None:
    """Results sent back with an id the loop made up, not the call's."""

    llm = _forecaster("Bergen", "Rain in both cities tomorrow.")
    tools = {"get_forecast": get_forecast}

    def loop(question: str) -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(question)]
        for _ in range(5):
            ai = llm.invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                return messages
            for i, tc in enumerate(ai.tool_calls):  # the footgun: the id is made up
                messages.append(ToolMessage(run_tool(tools, tc), tool_call_id=f"call_{i}"))
        return messages

    _record(db, "footgun-wrong-id", loop, "Will it rain in Oslo and Bergen tomorrow?")


def swallowed_error(db: str) -> None:
    """``except Exception: pass``: a tool fails and the model hears nothing."""

    llm = _forecaster("Atlantis", "Oslo: rain, 6°C. Atlantis: no news is good news, "
                                  "probably sunny.")
    tools = {"get_forecast": get_forecast}

    def loop(question: str) -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(question)]
        for _ in range(5):
            ai = llm.invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                return messages
            for tc in ai.tool_calls:
                result = ""
                try:
                    result = str(tools[tc["name"]].invoke(tc["args"]))
                except Exception:  # noqa: BLE001, S110 - the footgun: swallowed
                    pass
                messages.append(ToolMessage(result, tool_call_id=tc["id"]))
        return messages

    _record(db, "footgun-swallowed-error", loop, "Forecast for Oslo and Atlantis?")


FOOTGUNS: dict[str, Callable[[str], None]] = {
    "footgun-no-bound": no_bound,
    "footgun-wrong-id": wrong_id,
    "footgun-swallowed-error": swallowed_error,
}
