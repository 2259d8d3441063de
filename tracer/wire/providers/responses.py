"""The OpenAI Responses API (``/v1/responses``): items in, items out, typed SSE events."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

from tracer.errors import MalformedStream

from . import base as common
from .base import Msg, Reply, Request, ToolCall, WireFormat


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
            msgs.append(Msg("system", common.text_of(body["instructions"])))
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
            msgs.append(Msg(role, common.text_of(item.get("content"))))
        elif kind == "function_call":
            call = ToolCall(str(item.get("call_id") or ""), str(item.get("name") or ""),
                            common.loads_args(item.get("arguments")))
            if msgs and msgs[-1].role == "assistant":
                last = msgs.pop()
                msgs.append(Msg("assistant", last.text, (*last.tool_calls, call)))
            else:
                msgs.append(Msg("assistant", "", (call,)))
        elif kind == "function_call_output":
            msgs.append(Msg("tool", common.text_of(item.get("output")),
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
                for p in common.pieces(text):
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
            event, data = common.sse_data(block)
            if not data or data.strip() == "[DONE]":
                continue
            d = common.json_object(data, "Responses stream event")
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
