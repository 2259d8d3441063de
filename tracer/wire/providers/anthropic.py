"""Anthropic messages (``/v1/messages``): SSE stream of typed events."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

from tracer.errors import MalformedStream

from . import base as common
from .base import Msg, Reply, Request, ToolCall, WireFormat


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
            msgs.append(Msg("system", common.text_of(system)))
        for m in body.get("messages") or []:
            content = m.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text",
                                                                  "text": content or ""}]
            if m.get("role") == "assistant":
                calls = tuple(ToolCall(b.get("id") or "", b.get("name") or "",
                                       cast("dict[str, Any]", b.get("input")
                                            if isinstance(b.get("input"), dict) else {}))
                              for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use")
                msgs.append(Msg("assistant", common.text_of(blocks), calls))
                continue
            texts = []
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    msgs.append(Msg("tool", common.text_of(b.get("content")),
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
                    for p in common.pieces(reply.text)]
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
            # (cumulative, as the API sends it: langchain-anthropic reads the usage here)
            "usage": {"input_tokens": reply.input_tokens,
                      "output_tokens": reply.output_tokens}}))
        out.append(ev("message_stop", {}))
        return out

    def reassemble(self, chunks: Iterable[str]) -> dict[str, Any]:
        message: dict[str, Any] | None = None
        blocks: dict[int, dict[str, Any]] = {}
        partial: dict[int, str] = {}
        for block in chunks:
            event, data = common.sse_data(block)
            if not data:
                continue
            d = common.json_object(data, "Anthropic stream event")
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
                    blocks[idx]["input"] = common.loads_args(partial.pop(idx))
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
