"""Record the weather and shopping scenarios through the three real adapters.

``record_provider_demos(db)`` starts the emulator on 127.0.0.1, points the
real ``ChatOpenAI``, ``ChatAnthropic`` and ``ChatOllama`` at it, and runs each
scenario inside ``create_agent`` with ``TraceMiddleware``: the trace has the
LangChain side and the ``wire`` table the HTTP side of every model call. The
weather runs use ``invoke`` (JSON responses; Ollama always streams NDJSON);
the shopping runs stream with ``stream_mode="messages"`` (SSE / NDJSON), so
both shapes ship in the sample traces. No key, no network.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from tracer.record.middleware import TraceMiddleware
from tracer.wire.providers import DEFAULT_MODELS, PROVIDERS
from tracer.wire.proxy import WireServer
from tracer.wire.scenarios import SHOPPING_PROMPT, SHOPPING_SYSTEM, WEATHER_PROMPT, WEATHER_SYSTEM

from .roots import root_ids


def chat_model(provider: str, url: str, model: str | None = None) -> Any:
    """The real LangChain adapter for ``provider``, pointed at a local server ``url``."""
    model = model or DEFAULT_MODELS[provider]
    if provider == "openai":
        from langchain_openai import ChatOpenAI

        # (the stub misses pydantic's coercion of str to SecretStr)
        return ChatOpenAI(model=model, base_url=url + "/v1",
                          api_key="sk-fake-emulator-key-0001",  # type: ignore[arg-type]
                          max_retries=0)
    if provider == "anthropic":
        from langchain_anthropic import ChatAnthropic

        # (the stub misses the ``model`` alias, and pydantic's coercion of str to SecretStr)
        return ChatAnthropic(model=model, base_url=url,  # type: ignore[call-arg]
                             api_key="sk-ant-fake-emulator-0001",  # type: ignore[arg-type]
                             max_retries=0)
    if provider == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(model=model, base_url=url)
    msg = f"unknown provider {provider!r}"
    raise ValueError(msg)


def scenario_tools(scenario: str) -> list[Any]:
    from .tools import apply_discount, get_price, get_weather

    return {"weather": [get_weather], "shopping": [get_price, apply_discount]}[scenario]


SCENARIO_INPUT = {"weather": (WEATHER_PROMPT, WEATHER_SYSTEM),
                  "shopping": (SHOPPING_PROMPT, SHOPPING_SYSTEM)}


def run_scenario(db: str, provider: str, scenario: str, url: str, *, stream: bool = False,
                 model: Any = None) -> str:
    """Run one scenario through one adapter; return the new root run id."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    prompt, system = SCENARIO_INPUT[scenario]
    tm = TraceMiddleware(db=db, run_name=f"{provider}-{scenario}")
    agent = create_agent(model or chat_model(provider, url), tools=scenario_tools(scenario),
                         middleware=[tm], system_prompt=system, name=f"{provider}-{scenario}")
    agent = tm.attach(agent)
    before = root_ids(db)
    inputs = {"messages": [HumanMessage(prompt)]}
    if stream:
        for _ in agent.stream(inputs, stream_mode="messages"):
            pass
    else:
        agent.invoke(inputs)
    tm.flush()
    new = sorted(root_ids(db) - before)
    return new[0] if new else ""


def record_provider_demos(db_path: str | os.PathLike[str],
                          providers: Iterable[str] = PROVIDERS) -> list[str]:
    """Record weather (invoke) and shopping (streamed) through each adapter; return run ids."""
    db = os.fspath(db_path)
    out: list[str] = []
    with WireServer(mode="emulate", script="auto", db=db) as srv:
        for provider in providers:
            for scenario, stream in (("weather", False), ("shopping", True)):
                run_id = run_scenario(db, provider, scenario, srv.url, stream=stream)
                if run_id:
                    out.append(run_id)
    return out


def sdk_loop(db: str, sdk: str = "openai", *, stream: bool = True, drop: bool = False) -> None:
    """The seed's hand-rolled loop on a provider's own SDK (no LangChain, no tracer),
    through the proxy: looptrace sees it only as traffic, and makes a run of it."""
    from tracer.wire.loops import LOOPS

    with WireServer(mode="emulate", script="weather", db=db) as srv:
        try:
            LOOPS[sdk](srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM, stream=stream, drop=drop)
        except Exception as exc:  # the footgun's 400, raised by the SDK: the run records it
            if not drop or "400" not in str(exc):
                raise
