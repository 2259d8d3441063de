"""The hand-rolled loop, written on each provider's own SDK, as people write it.

No LangChain, no tracer: ``openai``, ``anthropic`` and ``ollama`` clients
pointed at a proxy (``looptrace proxy``), which is how looptrace sees them
(``traffic.py`` turns the exchanges into runs). Each loop is the seed's:
bounded by ``max_iterations``, appends the assistant message as the API
returned it, runs every tool call, sends one result per call matched by its
id, guards against an unknown tool, turns a tool's exception into an
``Error: ...`` result, and says so when it hits the bound. ``stream`` reads the
reply as a stream and assembles it, as a streaming client must.

``drop`` makes the classic mistake for demos and tests: the results of
parallel calls after the first are not sent back (the API answers 400).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    if not city.strip():
        raise ValueError("city must not be empty")
    return {"Oslo": "Light snow, -3°C, wind 4 m/s from the north."}.get(
        city, f"Sunny, 21°C in {city}.")


TOOLS: dict[str, Callable[..., str]] = {"get_weather": get_weather}
WEATHER_SCHEMA = {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]},
}


def run_tool(name: str, args: dict[str, Any]) -> str:
    """One tool call's result text; never raises (the model gets the error)."""
    fn = TOOLS.get(name)
    if fn is None:
        return f"Error: unknown tool {name!r}"
    try:
        return str(fn(**args))
    except Exception as exc:  # noqa: BLE001 - the model must hear about it
        return f"Error: {type(exc).__name__}: {exc}"


def _answered(calls: list[Any], drop: bool) -> list[Any]:
    return calls[:1] if drop else calls


# -- OpenAI chat completions ---------------------------------------------------------


def openai_loop(base_url: str, question: str, *, system: str | None = None,
                model: str = "gpt-4o-mini", stream: bool = False, max_iterations: int = 5,
                drop: bool = False) -> str:
    from openai import OpenAI

    client = OpenAI(base_url=base_url.rstrip("/") + "/v1", api_key="sk-looptrace-demo",
                    max_retries=0)
    tools: list[Any] = [{"type": "function", "function": WEATHER_SCHEMA}]
    messages: list[Any] = ([{"role": "system", "content": system}] if system else [])
    messages.append({"role": "user", "content": question})
    for _ in range(max_iterations):
        if stream:
            msg = _openai_streamed(client.chat.completions.create(
                model=model, messages=messages, tools=tools, stream=True,
                stream_options={"include_usage": True}))
        else:
            reply = client.chat.completions.create(model=model, messages=messages, tools=tools)
            msg = reply.choices[0].message.model_dump(exclude_none=True)
        messages.append(msg)
        calls = msg.get("tool_calls") or []
        if not calls:
            return str(msg.get("content") or "")
        for c in _answered(calls, drop):
            fn = c["function"]
            messages.append({"role": "tool", "tool_call_id": c["id"],
                             "content": run_tool(fn["name"], json.loads(fn["arguments"] or "{}"))})
    return f"Stopped after {max_iterations} iterations without a final answer."


def _openai_streamed(chunks: Any) -> dict[str, Any]:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            d = choice.delta
            if d.content:
                text.append(d.content)
            for tc in d.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": "", "type": "function",
                                                "function": {"name": "", "arguments": ""}})
                c["id"] = tc.id or c["id"]
                if tc.function and tc.function.name:
                    c["function"]["name"] += tc.function.name
                if tc.function and tc.function.arguments:
                    c["function"]["arguments"] += tc.function.arguments
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


# -- OpenAI Responses API -----------------------------------------------------------


def responses_loop(base_url: str, question: str, *, system: str | None = None,
                   model: str = "gpt-4o-mini", stream: bool = False, max_iterations: int = 5,
                   drop: bool = False) -> str:
    from openai import OpenAI

    client = OpenAI(base_url=base_url.rstrip("/") + "/v1", api_key="sk-looptrace-demo",
                    max_retries=0)
    tools: list[Any] = [{"type": "function", **WEATHER_SCHEMA}]
    extra: dict[str, Any] = {"instructions": system} if system else {}
    items: list[Any] = [{"role": "user", "content": question}]
    for _ in range(max_iterations):
        if stream:
            with client.responses.stream(model=model, input=items, tools=tools, **extra) as s:
                reply = s.get_final_response()
        else:
            reply = client.responses.create(model=model, input=items, tools=tools, **extra)
        output = [o.model_dump(exclude_none=True) for o in reply.output]
        items += output
        calls = [o for o in output if o.get("type") == "function_call"]
        if not calls:
            return reply.output_text
        for c in _answered(calls, drop):
            items.append({"type": "function_call_output", "call_id": c["call_id"],
                          "output": run_tool(c["name"], json.loads(c["arguments"] or "{}"))})
    return f"Stopped after {max_iterations} iterations without a final answer."


# -- Anthropic messages --------------------------------------------------------------


def anthropic_loop(base_url: str, question: str, *, system: str | None = None,
                   model: str = "claude-haiku-4-5", stream: bool = False,
                   max_iterations: int = 5, drop: bool = False) -> str:
    from anthropic import Anthropic

    client = Anthropic(base_url=base_url, api_key="sk-ant-looptrace-demo", max_retries=0)
    tools: list[Any] = [{"name": WEATHER_SCHEMA["name"],
                         "description": WEATHER_SCHEMA["description"],
                         "input_schema": WEATHER_SCHEMA["parameters"]}]
    extra: dict[str, Any] = {"system": system} if system else {}
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(max_iterations):
        if stream:
            with client.messages.stream(model=model, max_tokens=1024, messages=messages,
                                        tools=tools, **extra) as s:
                reply = s.get_final_message()
        else:
            reply = client.messages.create(model=model, max_tokens=1024, messages=messages,
                                           tools=tools, **extra)
        content = [b.model_dump(exclude_none=True) for b in reply.content]
        messages.append({"role": "assistant", "content": content})
        uses = [b for b in content if b.get("type") == "tool_use"]
        if not uses:
            return "".join(b.get("text", "") for b in content)
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b["id"],
             "content": run_tool(b["name"], b.get("input") or {})}
            for b in _answered(uses, drop)]})
    return f"Stopped after {max_iterations} iterations without a final answer."


# -- Ollama chat ---------------------------------------------------------------------


def ollama_loop(base_url: str, question: str, *, system: str | None = None,
                model: str = "llama3.1", stream: bool = False, max_iterations: int = 5,
                drop: bool = False) -> str:
    from ollama import Client

    client = Client(host=base_url)
    tools = [{"type": "function", "function": WEATHER_SCHEMA}]
    messages: list[dict[str, Any]] = ([{"role": "system", "content": system}] if system
                                      else [])
    messages.append({"role": "user", "content": question})
    for _ in range(max_iterations):
        if stream:
            text: list[str] = []
            calls: list[Any] = []
            for part in client.chat(model=model, messages=messages, tools=tools, stream=True):
                text.append(part.message.content or "")
                calls.extend(part.message.tool_calls or [])
            msg: dict[str, Any] = {"role": "assistant", "content": "".join(text)}
            if calls:
                msg["tool_calls"] = [c.model_dump() for c in calls]
        else:
            reply = client.chat(model=model, messages=messages, tools=tools)
            msg = reply.message.model_dump(exclude_none=True)
        messages.append(msg)
        calls = msg.get("tool_calls") or []
        if not calls:
            return str(msg.get("content") or "")
        # (the ollama client keeps no call ids: results answer the calls in order)
        for c in _answered(calls, drop):
            fn = c["function"]
            messages.append({"role": "tool", "tool_name": fn["name"],
                             "content": run_tool(fn["name"], dict(fn.get("arguments") or {}))})
    return f"Stopped after {max_iterations} iterations without a final answer."


LOOPS: dict[str, Callable[..., str]] = {"openai": openai_loop,
                                        "openai-responses": responses_loop,
                                        "anthropic": anthropic_loop, "ollama": ollama_loop}
