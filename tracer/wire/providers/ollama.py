"""Ollama chat (``/api/chat``): NDJSON stream, arguments as objects."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from tracer.errors import MalformedStream

from . import base as common
from .base import Msg, Reply, Request, ToolCall, WireFormat


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
                                       common.loads_args((c.get("function") or {}).get("arguments")))
                              for c in m.get("tool_calls") or [])
                msgs.append(Msg("assistant", common.text_of(m.get("content")), calls))
            elif role == "tool":
                msgs.append(Msg("tool", common.text_of(m.get("content")),
                                tool_call_id=m.get("tool_call_id") or None))
            elif role == "system":
                msgs.append(Msg("system", common.text_of(m.get("content"))))
            else:
                msgs.append(Msg("user", common.text_of(m.get("content"))))
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

        out = [line({"content": p}) for p in common.pieces(reply.text)]
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
            part = common.json_object(ln, f"Ollama NDJSON line {n + 1}")
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
