"""OpenAI chat completions (``/v1/chat/completions``): SSE stream of deltas."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tracer.errors import MalformedStream

from . import base as common
from .base import Msg, Reply, Request, ToolCall, WireFormat


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
                msgs.append(Msg("system", common.text_of(m.get("content"))))
            elif role == "assistant":
                calls = tuple(
                    ToolCall(c.get("id") or "", (c.get("function") or {}).get("name") or "",
                             common.loads_args((c.get("function") or {}).get("arguments")))
                    for c in m.get("tool_calls") or [])
                msgs.append(Msg("assistant", common.text_of(m.get("content")), calls))
            elif role == "tool":
                msgs.append(Msg("tool", common.text_of(m.get("content")),
                                tool_call_id=m.get("tool_call_id")))
            else:
                msgs.append(Msg("user", common.text_of(m.get("content"))))
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
        out += [chunk({"content": p}) for p in common.pieces(reply.text)]
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
            _event, data = common.sse_data(block)
            if not data:
                continue
            if data.strip() == "[DONE]":
                saw_done = True
                continue
            c = common.json_object(data, "OpenAI stream chunk")
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
