"""Render a recorded model call as each provider's request, offline.

The request body is built from the recorded LangChain messages by the
adapter's own request builder, exactly the code that runs before the adapter
sends anything: ``ChatOpenAI._get_request_payload``,
``ChatAnthropic._get_request_payload``, and ``ChatOllama._chat_params`` passed
through the ``ollama`` client's ``ChatRequest`` as ``Client.chat`` does. These
builders are private: each is looked up defensively and a missing one gives a
clear ``RenderError``. Nothing touches the network (the clients are built
against an unroutable local URL and never called).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from tracer.errors import RenderError
from tracer.read import calls
from tracer.read.loader import Event, Run
from tracer.read.steps import Replay
from tracer.vocab.calls import CallRequest
from tracer.vocab.payloads import ModelEnterPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS

from .providers import DEFAULT_MODELS, PROVIDERS

_OFFLINE_URL = "http://127.0.0.1:9"  # discard port: never contacted


@dataclass
class ModelCall:
    """What a recorded model call sent, in LangChain terms."""

    run_id: str
    seq: int  # the enter event
    index: int  # 0-based n-th model call of the run
    lap: int
    messages: list[BaseMessage]  # system prompt excluded
    system: str | None
    tools: list[dict[str, Any]]  # OpenAI function-tool format
    model: str | None
    provider: str | None
    tool_choice: Any = None

    def lc_messages(self) -> list[BaseMessage]:
        sys = [SystemMessage(self.system)] if self.system else []
        return [*sys, *self.messages]


def model_call_events(run: Run) -> list[Event]:
    """The enter event of every model call, in order (one per call)."""
    out: list[Event] = []
    for ev in run.events:
        if ev.hook in MODEL_HOOKS and ev.phase == "enter":
            # A middleware enter and a callback enter for the same call: keep the first.
            if out and out[-1].hook != ev.hook and not _closed_between(run, out[-1], ev):
                continue
            out.append(ev)
    return out


def _closed_between(run: Run, a: Event, b: Event) -> bool:
    return any(e.hook in MODEL_HOOKS and e.phase in ("exit", "error") and a.seq < e.seq < b.seq
               for e in run.events)


def call_at(run: Run, seq: int) -> Event | None:
    """The model call at or before event ``seq`` (None before the first one)."""
    found = None
    for ev in model_call_events(run):
        if ev.seq <= seq:
            found = ev
    return found


def _to_openai_tool(t: Any) -> dict[str, Any]:
    if isinstance(t, dict):
        if t.get("type") == "function" and "function" in t:
            return t
        if "input_schema" in t:  # Anthropic format (from a callback-only run)
            return {"type": "function", "function": {
                "name": t.get("name"), "description": t.get("description", ""),
                "parameters": t.get("input_schema") or {}}}
        if "name" in t and "parameters" in t:
            return {"type": "function", "function": t}
    return {"type": "function", "function": {"name": str(t.get("name") if isinstance(t, dict)
                                                         else t), "parameters": {}}}


def model_call(replay: Replay, enter: Event) -> ModelCall:
    """Rebuild the LangChain side of the model call that ``enter`` opened."""
    run = replay.run
    call = calls.call_at(run, enter.seq)  # (the system prompt and tools, carried forward)
    req = call.request if call is not None else CallRequest()
    otools = [_to_openai_tool(t) for t in req.tools]
    step = next((s.index for s in replay.steps if s.event.seq == enter.seq), None)
    msgs = replay.messages_at(step) if step is not None else list(run.messages)
    keys = read_payload(ModelEnterPayload, enter.payload).get("message_keys")
    if isinstance(keys, list):
        by_key = {m.key: m for m in run.messages}
        msgs = [by_key[k] for k in keys if k in by_key]
    lc = []
    for m in msgs:
        try:
            lc.append(m.to_langchain())
        except Exception:  # noqa: BLE001, S112 - an unreadable message is skipped
            continue
    lc = [m for m in lc if not isinstance(m, SystemMessage)]
    seqs = [e.seq for e in model_call_events(run)]
    index = seqs.index(enter.seq) if enter.seq in seqs else 0
    return ModelCall(run.id, enter.seq, index, enter.lap, lc, req.system, otools,
                     req.model or run.summary.model, run.summary.provider, req.tool_choice)


def model_for(provider: str, call: ModelCall) -> str:
    if call.provider == provider and call.model:
        return call.model
    return DEFAULT_MODELS[provider]


def render_request(provider: str, messages: Sequence[BaseMessage], *, model: str,
                   tools: Sequence[dict[str, Any]] = (), stream: bool = False) -> dict[str, Any]:
    """The JSON body ``provider``'s LangChain adapter would send for ``messages``."""
    if provider not in PROVIDERS:
        msg = f"unknown provider {provider!r}"
        raise RenderError(msg)
    try:
        return _RENDERERS[provider](list(messages), model, list(tools), stream)
    except RenderError:
        raise
    except ImportError as exc:
        msg = f"cannot render {provider}: {exc.name or exc} is not installed"
        raise RenderError(msg) from None
    except Exception as exc:  # noqa: BLE001 - a builder changed or rejected the input
        msg = f"cannot render {provider}: {type(exc).__name__}: {exc}"
        raise RenderError(msg) from None


def _bound_kwargs(llm: Any, tools: list[dict[str, Any]]) -> dict[str, Any]:
    if not tools:
        return {}
    return dict(llm.bind_tools(tools).kwargs)


@functools.lru_cache(maxsize=16)
def _adapter(provider: str, model: str) -> Any:
    """One adapter instance per (provider, model): building one creates HTTP
    clients (an SSL context: ~0.1 s), and the request builders do not mutate it."""
    if provider == "openai":
        from langchain_openai import ChatOpenAI

        # (the stub misses pydantic's coercion of str to SecretStr)
        return ChatOpenAI(model=model, api_key="sk-offline-render",  # type: ignore[arg-type]
                          base_url=_OFFLINE_URL + "/v1", max_retries=0)
    if provider == "anthropic":
        from langchain_anthropic import ChatAnthropic

        # (the stub misses the ``model`` alias, and pydantic's coercion of str to SecretStr)
        return ChatAnthropic(model=model,  # type: ignore[call-arg]
                             api_key="offline-render",  # type: ignore[arg-type]
                             base_url=_OFFLINE_URL, max_retries=0)
    from langchain_ollama import ChatOllama

    return ChatOllama(model=model, base_url=_OFFLINE_URL)


def _openai(msgs: list[BaseMessage], model: str, tools: list[dict[str, Any]],
            stream: bool) -> dict[str, Any]:
    llm = _adapter("openai", model)
    kwargs = _bound_kwargs(llm, tools)
    if stream:
        kwargs["stream"] = True
    body = llm._get_request_payload(msgs, **kwargs)
    body.setdefault("stream", stream)
    return _jsonable(body)


def _anthropic(msgs: list[BaseMessage], model: str, tools: list[dict[str, Any]],
               stream: bool) -> dict[str, Any]:
    llm = _adapter("anthropic", model)
    kwargs = _bound_kwargs(llm, tools)
    body = llm._get_request_payload(msgs, **kwargs)
    if stream:
        body["stream"] = True
    return _jsonable(body)


def _ollama(msgs: list[BaseMessage], model: str, tools: list[dict[str, Any]],
            stream: bool) -> dict[str, Any]:
    import importlib

    oc = importlib.import_module("ollama._client")  # the package shadows it with a Client
    ChatRequest = importlib.import_module("ollama._types").ChatRequest

    llm = _adapter("ollama", model)
    kwargs = _bound_kwargs(llm, tools)
    params = llm._chat_params(msgs, **kwargs)
    req = ChatRequest(
        model=params.get("model") or model,
        messages=list(oc._copy_messages(params.get("messages"))),
        tools=list(oc._copy_tools(params.get("tools"))),
        stream=params.get("stream", True),
        think=params.get("think"), format=params.get("format"),
        options=params.get("options"), keep_alive=params.get("keep_alive"),
        logprobs=params.get("logprobs"), top_logprobs=params.get("top_logprobs"),
    )
    return _jsonable(req.model_dump(exclude_none=True))


def _jsonable(body: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(body, default=_default))
    if not isinstance(out, dict):
        msg = "the adapter built a request that is not a JSON object"
        raise RenderError(msg)
    return out


def _default(o: Any) -> Any:
    if hasattr(o, "model_dump"):
        return o.model_dump(exclude_none=True)
    return str(o)


_RENDERERS = {"openai": _openai, "anthropic": _anthropic, "ollama": _ollama}
