"""The provider wire formats: OpenAI chat completions and responses, Anthropic messages,
Ollama chat.

Each ``WireFormat`` knows, for its provider: the endpoint path and the default
upstream; how to read a request into a provider-neutral conversation (for the
emulator's scripts); how to write a scripted reply as a JSON response or as
the raw chunks of a stream (SSE for OpenAI and Anthropic, NDJSON for Ollama);
how to split a recorded stream into chunks and reassemble them into the final
response body. Pure functions over dicts and strings: no I/O.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from ..errors import InvalidOption, MalformedStream
from ..provider_names import PROVIDERS  # noqa: F401 - (re-exported: the names are vocabulary)

# The model named in a request rendered, or a demo run, for a provider when none was recorded.
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "ollama": "llama3.1"}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Msg:
    """One message of a conversation, whatever provider carried it."""

    role: str  # system / user / assistant / tool
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool | None = None


@dataclass(frozen=True)
class Reply:
    """What a scripted model answers: text, tool calls, token counts."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = "emulated"
    id: str = "emu"
    # The emulator answers on a fixed clock so that recordings are reproducible.
    created: int = 1767225600  # 2026-01-01T00:00:00Z

    @property
    def stopped_for_tools(self) -> bool:
        return bool(self.tool_calls)


@dataclass
class Request:
    """A provider request read into neutral form."""

    provider: str
    model: str
    messages: list[Msg]
    tools: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False
    # OpenAI Responses API: the client continues a conversation the server
    # stored, so the history before it is not in this request.
    previous_response_id: str | None = None


def _pieces(text: str, n: int = 3) -> list[str]:
    """Split ``text`` into up to ``n`` pieces (the deltas of a stream)."""
    if not text:
        return []
    words = text.split(" ")
    size = max(1, -(-len(words) // n))
    out = []
    for i in range(0, len(words), size):
        chunk = " ".join(words[i:i + size])
        out.append(chunk if i + size >= len(words) else chunk + " ")
    return out


# Content parts that carry text (the Responses API types its parts by direction).
_TEXT_PARTS = ("text", "input_text", "output_text", None)


def text_of(content: Any) -> str:
    """The text of a message's content in any provider's shape: a string, or a list of
    parts (``text``, ``input_text``, ``output_text``) whose texts are joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict) and b.get("type") in _TEXT_PARTS and "text" in b:
                parts.append(str(b["text"]))
        return "".join(parts)
    return str(content)


def loads_args(text: Any) -> dict[str, Any]:
    """Tool-call arguments as an object, whether the wire sent an object (Anthropic,
    Ollama) or a JSON string (OpenAI); what does not parse is kept under ``__raw__``."""
    if isinstance(text, dict):
        return text
    try:
        val = json.loads(text or "{}")
    except (TypeError, ValueError):
        return {"__raw__": text}
    return val if isinstance(val, dict) else {"__value__": val}


class WireFormat:
    name = ""
    # A proxy for a provider serves every format of that provider.
    provider = ""
    path = ""
    default_upstream = ""
    stream_content_type = "text/event-stream"

    # -- requests -------------------------------------------------------------
    def read_request(self, body: dict[str, Any]) -> Request:
        raise NotImplementedError

    # -- responses ------------------------------------------------------------
    def response(self, reply: Reply) -> dict[str, Any]:
        raise NotImplementedError

    def stream_chunks(self, reply: Reply, request: Request) -> list[str]:
        raise NotImplementedError

    def split_stream(self, raw: str) -> list[str]:
        """Raw stream text -> the chunks as framed on the wire (SSE blocks)."""
        blocks = raw.replace("\r\n", "\n").split("\n\n")
        return [b + "\n\n" for b in blocks if b.strip()]

    def reassemble(self, chunks: Iterable[str]) -> dict[str, Any]:
        raise NotImplementedError

    # -- where things are in a response ---------------------------------------
    usage_path: tuple[Any, ...] = ()
    stop_path: tuple[Any, ...] = ()


def _json_object(text: str, what: str) -> dict[str, Any]:
    """``text`` parsed as a JSON object, or ``MalformedStream`` saying what it was."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        msg = f"{what} is not JSON: {text[:80]!r} ({exc})"
        raise MalformedStream(msg) from None
    if not isinstance(value, dict):
        msg = f"{what} is not an object: {text[:80]!r}"
        raise MalformedStream(msg)
    return value


def _sse_data(block: str) -> tuple[str | None, str]:
    event = None
    data = []
    for line in block.splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return event, "\n".join(data)


# -- OpenAI -------------------------------------------------------------------
class OpenAIFormat(WireFormat):
    name = "openai"
    provider = "openai"
    path = "/v1/chat/completions"
    default_upstream = "https://api.openai.com"
    usage_path = ("usage",)
    stop_path = ("choices", 0, "finish_reason")

    def read_request(self, body: dict[str, Any]) -> Request:
        msgs: list[Msg] = []
        for m in body.get("messages") or []:
            role = m.get("role")
            if role in ("system", "developer"):
                msgs.append(Msg("system", text_of(m.get("content"))))
            elif role == "assistant":
                calls = tuple(
                    ToolCall(c.get("id") or "", (c.get("function") or {}).get("name") or "",
                             loads_args((c.get("function") or {}).get("arguments")))
                    for c in m.get("tool_calls") or [])
                msgs.append(Msg("assistant", text_of(m.get("content")), calls))
            elif role == "tool":
                msgs.append(Msg("tool", text_of(m.get("content")),
                                tool_call_id=m.get("tool_call_id")))
            else:
                msgs.append(Msg("user", text_of(m.get("content"))))
        tools = [(t.get("function") or {}).get("name", "") for t in body.get("tools") or []]
        opts = body.get("stream_options") or {}
        return Request("openai", str(body.get("model") or ""), msgs, tools,
                       bool(body.get("stream")), bool(opts.get("include_usage")))

    def _calls(self, reply: Reply) -> list[dict[str, Any]]:
        return [{"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.args)}}
                for c in reply.tool_calls]

    def _usage(self, reply: Reply) -> dict[str, Any]:
        return {"prompt_tokens": reply.input_tokens, "completion_tokens": reply.output_tokens,
                "total_tokens": reply.input_tokens + reply.output_tokens}

    def response(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None,
                                   "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = self._calls(reply)
        return {
            "id": f"chatcmpl-{reply.id}", "object": "chat.completion",
            "created": reply.created, "model": reply.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            "usage": self._usage(reply), "system_fingerprint": "fp_looptrace",
        }

    def stream_chunks(self, reply: Reply, request: Request) -> list[str]:
        base = {"id": f"chatcmpl-{reply.id}", "object": "chat.completion.chunk",
                "created": reply.created, "model": reply.model,
                "system_fingerprint": "fp_looptrace"}

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
            c = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                      "finish_reason": finish}], **extra}
            if request.include_usage:
                c["usage"] = None
            return "data: " + json.dumps(c) + "\n\n"

        out = [chunk({"role": "assistant", "content": "" if not reply.tool_calls or reply.text
                      else None, "refusal": None})]
        out += [chunk({"content": p}) for p in _pieces(reply.text)]
        for i, c in enumerate(reply.tool_calls):
            out.append(chunk({"tool_calls": [{"index": i, "id": c.id, "type": "function",
                                              "function": {"name": c.name, "arguments": ""}}]}))
            args = json.dumps(c.args)
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
        out.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        if request.include_usage:
            out.append("data: " + json.dumps({**base, "choices": [],
                                              "usage": self._usage(reply)}) + "\n\n")
        out.append("data: [DONE]\n\n")
        return out

    def reassemble(self, chunks: Iterable[str]) -> dict[str, Any]:
        final: dict[str, Any] = {}
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish = None
        role = "assistant"
        usage = None
        saw_done = False
        for block in chunks:
            _event, data = _sse_data(block)
            if not data:
                continue
            if data.strip() == "[DONE]":
                saw_done = True
                continue
            c = _json_object(data, "OpenAI stream chunk")
            for k in ("id", "created", "model", "system_fingerprint"):
                if k in c:
                    final[k] = c[k]
            if c.get("usage"):
                usage = c["usage"]
            for ch in c.get("choices") or []:
                d = ch.get("delta") or {}
                role = d.get("role") or role
                if d.get("content"):
                    text.append(d["content"])
                for tc in d.get("tool_calls") or []:
                    slot = calls.setdefault(int(tc.get("index", 0)), {
                        "id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                    if tc.get("id"):
                        slot["id"] = tc["id"]
                    fn = tc.get("function") or {}
                    if fn.get("name"):
                        slot["function"]["name"] += fn["name"]
                    if fn.get("arguments"):
                        slot["function"]["arguments"] += fn["arguments"]
                if ch.get("finish_reason"):
                    finish = ch["finish_reason"]
        if not final and not saw_done:
            msg = "OpenAI stream holds no chunk"
            raise MalformedStream(msg)
        message: dict[str, Any] = {"role": role, "content": "".join(text) or None}
        if calls:
            message["tool_calls"] = [calls[i] for i in sorted(calls)]
        out = {"id": final.get("id"), "object": "chat.completion", "created": final.get("created"),
               "model": final.get("model"),
               "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
        if usage is not None:
            out["usage"] = usage
        return out


# -- Anthropic ----------------------------------------------------------------
class AnthropicFormat(WireFormat):
    name = "anthropic"
    provider = "anthropic"
    path = "/v1/messages"
    default_upstream = "https://api.anthropic.com"
    usage_path = ("usage",)
    stop_path = ("stop_reason",)

    def read_request(self, body: dict[str, Any]) -> Request:
        msgs: list[Msg] = []
        system = body.get("system")
        if system:
            msgs.append(Msg("system", text_of(system)))
        for m in body.get("messages") or []:
            content = m.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text",
                                                                  "text": content or ""}]
            if m.get("role") == "assistant":
                calls = tuple(ToolCall(b.get("id") or "", b.get("name") or "",
                                       cast("dict[str, Any]", b.get("input")
                                            if isinstance(b.get("input"), dict) else {}))
                              for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use")
                msgs.append(Msg("assistant", text_of(blocks), calls))
                continue
            texts = []
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    msgs.append(Msg("tool", text_of(b.get("content")),
                                    tool_call_id=b.get("tool_use_id"),
                                    is_error=bool(b.get("is_error"))))
                elif isinstance(b, dict) and b.get("type") == "text":
                    texts.append(str(b.get("text", "")))
                elif isinstance(b, str):
                    texts.append(b)
            if texts:
                msgs.append(Msg("user", "".join(texts)))
        tools = [t.get("name", "") for t in body.get("tools") or []]
        return Request("anthropic", str(body.get("model") or ""), msgs, tools,
                       bool(body.get("stream")), True)

    def _blocks(self, reply: Reply) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.text:
            out.append({"type": "text", "text": reply.text})
        out += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}
                for c in reply.tool_calls]
        return out

    def response(self, reply: Reply) -> dict[str, Any]:
        return {
            "id": f"msg_{reply.id}", "type": "message", "role": "assistant",
            "model": reply.model, "content": self._blocks(reply),
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }

    def stream_chunks(self, reply: Reply, request: Request) -> list[str]:
        def ev(name: str, data: dict[str, Any]) -> str:
            return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n"

        msg = {**self.response(reply), "content": [], "stop_reason": None,
               "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1}}
        out = [ev("message_start", {"message": msg})]
        i = 0
        if reply.text:
            out.append(ev("content_block_start", {"index": i,
                                                  "content_block": {"type": "text", "text": ""}}))
            out += [ev("content_block_delta", {"index": i, "delta": {"type": "text_delta",
                                                                     "text": p}})
                    for p in _pieces(reply.text)]
            out.append(ev("content_block_stop", {"index": i}))
            i += 1
        for c in reply.tool_calls:
            out.append(ev("content_block_start", {"index": i, "content_block": {
                "type": "tool_use", "id": c.id, "name": c.name, "input": {}}}))
            args = json.dumps(c.args)
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                out.append(ev("content_block_delta", {"index": i, "delta": {
                    "type": "input_json_delta", "partial_json": part}}))
            out.append(ev("content_block_stop", {"index": i}))
            i += 1
        out.append(ev("message_delta", {
            "delta": {"stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                      "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens}}))
        out.append(ev("message_stop", {}))
        return out

    def reassemble(self, chunks: Iterable[str]) -> dict[str, Any]:
        message: dict[str, Any] | None = None
        blocks: dict[int, dict[str, Any]] = {}
        partial: dict[int, str] = {}
        for block in chunks:
            event, data = _sse_data(block)
            if not data:
                continue
            d = _json_object(data, "Anthropic stream event")
            kind = d.get("type")
            if kind == "message_start":
                message = dict(d.get("message") or {})
            elif kind == "content_block_start":
                blocks[int(d["index"])] = dict(d.get("content_block") or {})
            elif kind == "content_block_delta":
                idx = int(d["index"])
                delta = d.get("delta") or {}
                b = blocks.setdefault(idx, {"type": "text", "text": ""})
                if delta.get("type") == "text_delta":
                    b["text"] = b.get("text", "") + delta.get("text", "")
                elif delta.get("type") == "input_json_delta":
                    partial[idx] = partial.get(idx, "") + delta.get("partial_json", "")
            elif kind == "content_block_stop":
                idx = int(d["index"])
                if idx in partial:
                    blocks[idx]["input"] = loads_args(partial.pop(idx))
            elif kind == "message_delta":
                if message is None:
                    message = {}
                message.update(d.get("delta") or {})
                usage = dict(message.get("usage") or {})
                usage.update(d.get("usage") or {})
                message["usage"] = usage
            elif kind == "error":
                msg = f"Anthropic stream error event: {data[:200]}"
                raise MalformedStream(msg)
            elif kind not in ("message_stop", "ping"):
                msg = f"unexpected Anthropic stream event {event or kind!r}"
                raise MalformedStream(msg)
        if message is None:
            msg = "Anthropic stream holds no message_start event"
            raise MalformedStream(msg)
        message["content"] = [blocks[i] for i in sorted(blocks)]
        return message


# -- Ollama -------------------------------------------------------------------
class OllamaFormat(WireFormat):
    """Ollama's ``/api/chat``. The server has returned an ``id`` per tool call since
    0.12.10; ``ids=False`` answers like an older server (no ids at all). Whether a
    client keeps them is another matter: the ``ollama`` Python client 0.6.x drops
    them, so its requests carry none, and results pair with calls by order."""

    name = "ollama"
    provider = "ollama"
    path = "/api/chat"
    default_upstream = "http://127.0.0.1:11434"
    stream_content_type = "application/x-ndjson"
    usage_path = ("eval_count",)
    stop_path = ("done_reason",)

    def __init__(self, ids: bool = True) -> None:
        self.ids = ids

    def read_request(self, body: dict[str, Any]) -> Request:
        msgs: list[Msg] = []
        for m in body.get("messages") or []:
            role = m.get("role")
            if role == "assistant":
                calls = tuple(ToolCall(str(c.get("id") or ""),
                                       (c.get("function") or {}).get("name") or "",
                                       loads_args((c.get("function") or {}).get("arguments")))
                              for c in m.get("tool_calls") or [])
                msgs.append(Msg("assistant", text_of(m.get("content")), calls))
            elif role == "tool":
                msgs.append(Msg("tool", text_of(m.get("content")),
                                tool_call_id=m.get("tool_call_id") or None))
            elif role == "system":
                msgs.append(Msg("system", text_of(m.get("content"))))
            else:
                msgs.append(Msg("user", text_of(m.get("content"))))
        tools = [(t.get("function") or {}).get("name", "") for t in body.get("tools") or []]
        # Ollama streams unless told not to.
        return Request("ollama", str(body.get("model") or ""), msgs, tools,
                       body.get("stream", True) is not False)

    def _done(self, reply: Reply) -> dict[str, Any]:
        return {"done": True, "done_reason": "stop", "total_duration": 1_000_000,
                "load_duration": 100_000, "prompt_eval_count": reply.input_tokens,
                "prompt_eval_duration": 200_000, "eval_count": reply.output_tokens,
                "eval_duration": 700_000}

    def _calls(self, reply: Reply) -> list[dict[str, Any]]:
        if not self.ids:
            return [{"function": {"name": c.name, "arguments": c.args}}
                    for c in reply.tool_calls]
        return [{"id": c.id, "function": {"index": i, "name": c.name, "arguments": c.args}}
                for i, c in enumerate(reply.tool_calls)]

    def response(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message["tool_calls"] = self._calls(reply)
        return {"model": reply.model, "created_at": _iso(reply.created), "message": message,
                **self._done(reply)}

    def stream_chunks(self, reply: Reply, request: Request) -> list[str]:
        def line(message: dict[str, Any], **extra: Any) -> str:
            return json.dumps({"model": reply.model, "created_at": _iso(reply.created),
                               "message": {"role": "assistant", **message},
                               "done": False, **extra}) + "\n"

        out = [line({"content": p}) for p in _pieces(reply.text)]
        if reply.tool_calls:
            out.append(line({"content": "", "tool_calls": self._calls(reply)}))
        last = json.loads(line({"content": ""}))
        last.update(self._done(reply))
        out.append(json.dumps(last) + "\n")
        return out

    def split_stream(self, raw: str) -> list[str]:
        return [ln + "\n" for ln in raw.replace("\r\n", "\n").split("\n") if ln.strip()]

    def reassemble(self, chunks: Iterable[str]) -> dict[str, Any]:
        text: list[str] = []
        calls: list[Any] = []
        last: dict[str, Any] | None = None
        role = "assistant"
        for n, ln in enumerate(chunks):
            part = _json_object(ln, f"Ollama NDJSON line {n + 1}")
            if part.get("error"):
                msg = f"Ollama stream error: {part['error']}"
                raise MalformedStream(msg)
            m = part.get("message") or {}
            role = m.get("role") or role
            if m.get("content"):
                text.append(m["content"])
            calls.extend(m.get("tool_calls") or [])
            last = part
        if last is None:
            msg = "Ollama stream holds no line"
            raise MalformedStream(msg)
        message: dict[str, Any] = {"role": role, "content": "".join(text)}
        if calls:
            message["tool_calls"] = calls
        out = {k: v for k, v in last.items() if k != "message"}
        return {"model": out.pop("model", None), "created_at": out.pop("created_at", None),
                "message": message, **out}


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


# -- OpenAI Responses API -------------------------------------------------------
class ResponsesFormat(WireFormat):
    """OpenAI's Responses API (``POST /v1/responses``): a typed list of items.

    The input is a list of items rather than of messages: messages
    (``role`` user/system/developer/assistant), ``function_call`` items (the
    model's tool calls, replayed by the client) and ``function_call_output``
    items (the results, matched by ``call_id``), plus ``reasoning`` items
    whose content is opaque. ``instructions`` is the system prompt. The output
    is a list of items too: a ``message`` with ``output_text`` parts, then one
    ``function_call`` item per tool call; there is no finish reason (``status``
    is completed or incomplete, and a tool call is a function_call item).

    The server stores each response: a request with ``previous_response_id``
    continues from it and carries only the new items, not the history
    (``Request.previous_response_id``). The reply does not echo the request's
    parameters (instructions, tools, previous_response_id) as the real API
    does: a scripted reply does not know them.
    """

    name = "openai-responses"
    provider = "openai"
    path = "/v1/responses"
    default_upstream = "https://api.openai.com"
    usage_path = ("usage",)
    # completed / incomplete (then ``incomplete_details.reason`` says why).
    stop_path = ("status",)

    def read_request(self, body: dict[str, Any]) -> Request:
        msgs: list[Msg] = []
        if body.get("instructions"):
            msgs.append(Msg("system", text_of(body["instructions"])))
        for item in self._items(body):
            if isinstance(item, dict):
                self._read_item(item, msgs)
        tools = [str(t.get("name") or t.get("type") or "") for t in body.get("tools") or []]
        return Request(self.name, str(body.get("model") or ""), msgs, tools,
                       bool(body.get("stream")), True, body.get("previous_response_id"))

    def _read_item(self, item: dict[str, Any], msgs: list[Msg]) -> None:
        """Append what ``item`` says to ``msgs``: the tool calls of one model turn
        travel as consecutive function_call items, after its text if it had any.
        A client that puts each call's output right after it (call, output, call,
        output) reads as one turn per call: the items do not say which calls one
        response made."""
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = {"system": "system", "developer": "system",
                    "assistant": "assistant"}.get(cast("Any", item.get("role")), "user")
            msgs.append(Msg(role, text_of(item.get("content"))))
        elif kind == "function_call":
            call = ToolCall(str(item.get("call_id") or ""), str(item.get("name") or ""),
                            loads_args(item.get("arguments")))
            if msgs and msgs[-1].role == "assistant":
                last = msgs.pop()
                msgs.append(Msg("assistant", last.text, (*last.tool_calls, call)))
            else:
                msgs.append(Msg("assistant", "", (call,)))
        elif kind == "function_call_output":
            msgs.append(Msg("tool", text_of(item.get("output")),
                            tool_call_id=item.get("call_id")))

    def _items(self, body: dict[str, Any]) -> list[Any]:
        items = body.get("input")
        return [{"role": "user", "content": items}] if isinstance(items, str) else items or []

    def stored_items(self, body: dict[str, Any], response: dict[str, Any]) -> list[Any]:
        """What the server keeps of an exchange for a later ``previous_response_id``:
        the input items and the output items (not the instructions, which the API
        does not carry over)."""
        return [*self._items(body), *response.get("output", [])]

    def resume(self, body: dict[str, Any], stored: list[Any]) -> dict[str, Any]:
        """``body`` as if it carried the history itself: the stored items first."""
        return {**body, "input": [*stored, *self._items(body)]}

    def _part(self, text: str) -> dict[str, Any]:
        return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}

    def _output(self, reply: Reply) -> list[dict[str, Any]]:
        # A turn with neither text nor tool calls is still one (empty) message.
        out = [{"id": f"msg_{reply.id}", "type": "message", "status": "completed",
                "content": [self._part(reply.text)], "role": "assistant"}
               ] if reply.text or not reply.tool_calls else []
        return out + [{"id": f"fc_{reply.id}_{i}", "type": "function_call",
                       "status": "completed", "arguments": json.dumps(c.args),
                       "call_id": c.id, "name": c.name}
                      for i, c in enumerate(reply.tool_calls)]

    def response(self, reply: Reply) -> dict[str, Any]:
        return {
            "id": f"resp_{reply.id}", "object": "response", "created_at": reply.created,
            "status": "completed", "completed_at": reply.created, "error": None,
            "incomplete_details": None, "model": reply.model, "output": self._output(reply),
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": reply.input_tokens,
                      "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                      "output_tokens": reply.output_tokens,
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": reply.input_tokens + reply.output_tokens},
            "metadata": {},
        }

    def stream_chunks(self, reply: Reply, request: Request) -> list[str]:
        out: list[str] = []

        def ev(name: str, **data: Any) -> None:
            body = {"type": name, "sequence_number": len(out), **data}
            out.append(f"event: {name}\ndata: {json.dumps(body)}\n\n")

        final = self.response(reply)
        started = {**final, "status": "in_progress", "completed_at": None, "output": [],
                   "usage": None}
        ev("response.created", response=started)
        ev("response.in_progress", response=started)
        for n, item in enumerate(final["output"]):
            where = {"item_id": item["id"], "output_index": n}
            if item["type"] == "message":
                text = item["content"][0]["text"]
                ev("response.output_item.added", output_index=n,
                   item={**item, "status": "in_progress", "content": []})
                ev("response.content_part.added", **where, content_index=0, part=self._part(""))
                for p in _pieces(text):
                    ev("response.output_text.delta", **where, content_index=0, delta=p,
                       logprobs=[])
                ev("response.output_text.done", **where, content_index=0, text=text, logprobs=[])
                ev("response.content_part.done", **where, content_index=0, part=self._part(text))
            else:
                ev("response.output_item.added", output_index=n,
                   item={**item, "status": "in_progress", "arguments": ""})
                args = item["arguments"]
                half = len(args) // 2
                for part in (args[:half], args[half:]):
                    ev("response.function_call_arguments.delta", **where, delta=part)
                ev("response.function_call_arguments.done", **where, arguments=args)
            ev("response.output_item.done", output_index=n, item=item)
        ev("response.completed", response=final)
        return out

    def reassemble(self, chunks: Iterable[str]) -> dict[str, Any]:
        """The ``response.completed`` (or ``.incomplete``) event's response; a stream
        cut short is rebuilt from the item events, its status as last reported."""
        response: dict[str, Any] | None = None
        items: dict[int, dict[str, Any]] = {}
        for block in chunks:
            event, data = _sse_data(block)
            if not data or data.strip() == "[DONE]":
                continue
            d = _json_object(data, "Responses stream event")
            kind = str(d.get("type") or event or "")
            if kind in ("response.completed", "response.incomplete"):
                return dict(d.get("response") or {})
            if kind in ("response.created", "response.queued", "response.in_progress"):
                response = dict(d.get("response") or {})
            elif kind == "response.failed":
                err = (d.get("response") or {}).get("error") or {}
                msg = f"the response failed: {err.get('code')}: {err.get('message')}"
                raise MalformedStream(msg)
            elif kind == "error":
                msg = f"Responses stream error event: {d.get('code')}: {d.get('message')}"
                raise MalformedStream(msg)
            elif kind.startswith("response."):
                self._apply(kind, d, items)
            else:
                msg = f"unexpected Responses stream event {kind or data[:80]!r}"
                raise MalformedStream(msg)
        if response is None:
            msg = "Responses stream holds no response.created event"
            raise MalformedStream(msg)
        response["output"] = [items[i] for i in sorted(items)]
        return response

    def _apply(self, kind: str, d: dict[str, Any], items: dict[int, dict[str, Any]]) -> None:
        """Fold one item event into ``items`` (by output index); other events
        (reasoning summaries, annotations, built-in tools) need no folding."""
        try:
            if kind in ("response.output_item.added", "response.output_item.done"):
                items[int(d["output_index"])] = dict(d["item"])
                return
            item = items.get(int(d.get("output_index", -1)))
            if item is None:
                return
            if kind == "response.content_part.added":
                item.setdefault("content", []).append(dict(d["part"]))
            elif kind == "response.output_text.delta":
                item["content"][int(d["content_index"])]["text"] += d["delta"]
            elif kind == "response.function_call_arguments.delta":
                item["arguments"] = item.get("arguments", "") + d["delta"]
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            msg = f"Responses stream event {kind} does not fit its item: {exc!r}"
            raise MalformedStream(msg) from None


FORMATS: dict[str, WireFormat] = {f.name: f for f in (OpenAIFormat(), ResponsesFormat(),
                                                      AnthropicFormat(), OllamaFormat())}


def format_for_path(path: str) -> WireFormat | None:
    """The wire format whose endpoint ``path`` ends with (query string ignored)."""
    p = path.split("?", 1)[0].rstrip("/")
    for f in FORMATS.values():
        if p.endswith(f.path):
            return f
    return None


def get_format(provider: str) -> WireFormat:
    """The wire format named ``provider`` (a provider's name is its main format's)."""
    try:
        return FORMATS[provider]
    except KeyError:
        msg = f"unknown provider {provider!r} (expected one of {', '.join(FORMATS)})"
        raise InvalidOption(msg) from None


def formats_of(provider: str) -> list[WireFormat]:
    """Every wire format of ``provider`` (OpenAI has two endpoints)."""
    return [f for f in FORMATS.values() if f.provider == provider]
