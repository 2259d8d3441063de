"""What one span says: the messages, call and result a chat or tool span carries.

Every convention ``genai`` reads ends here as the same few things: a model
call (``Chat``: the messages sent, as LangChain messages with the system prompt
apart, the reply, the error, the tools offered, the model) and a tool run
(``ToolRun``: name, call id, arguments, result, status). The readers:

* GenAI, current: ``gen_ai.input.messages`` / ``gen_ai.output.messages`` /
  ``gen_ai.system_instructions`` (role + parts), as attributes or on the
  ``gen_ai.client.inference.operation.details`` event;
* GenAI, older: one event per message (``gen_ai.user.message`` ...
  ``gen_ai.choice``), its fields in the body (``body``), in
  ``gen_ai.event.content`` (JSON) or in attributes; older still, the
  ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events;
* flattened attributes: OpenInference's ``llm.input_messages.N.message.*``,
  OpenLLMetry's ``gen_ai.prompt.N.*``;
* tool spans: ``gen_ai.tool.*`` or OpenInference's ``tool.name`` +
  ``input.value`` / ``output.value`` (a serialised LangChain ToolMessage).

A piece that should be JSON and is not, or a message of no known shape, is left
out and noted in ``Problems`` (per span), never raised.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tracer.vocab.content import OTEL, content_text

from .spans import Span, SpanEvent


def _text(content: object) -> str:
    """A span's message content as text (``tracer.vocab.content.OTEL``)."""
    return content_text(content, OTEL)

CHAT_OPS = frozenset({"chat", "text_completion", "generate_content", "completion"})
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                  "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
CHOICE_EVENT = "gen_ai.choice"
_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user",
          "assistant": "assistant", "ai": "assistant", "model": "assistant", "bot": "assistant",
          "tool": "tool", "function": "tool", "ipython": "tool"}


def lower(v: object) -> str | None:
    return v.lower() if isinstance(v, str) else None


def looks_like_chat(s: Span) -> bool:
    """A model call of an instrumentation that sets no operation name."""
    if lower(s.attributes.get("llm.request.type")) in ("chat", "completion"):
        return True
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.", "gen_ai.input.messages"))
           for k in s.attributes):
        return True
    return any(e.name in MESSAGE_EVENTS or e.name in (CHOICE_EVENT, DETAILS_EVENT)
               for e in s.events)


class Problems:
    """Malformed pieces, per span."""

    def __init__(self) -> None:
        self.count = 0
        self.by_span: dict[str, list[str]] = {}

    def add(self, span: Span, what: str) -> None:
        self.count += 1
        self.by_span.setdefault(span.span_id, []).append(what)


@dataclass
class _Msg:
    """One message, whatever convention carried it."""

    role: str  # system / user / assistant / tool
    content: Any = ""  # text, or a list of content blocks
    calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, args}
    tool_call_id: str | None = None
    name: str | None = None
    status: str | None = None


def _structured(v: object, span: Span, what: str, probs: Problems) -> Any:
    """A JSON attribute's value (a string, or already structured); None if malformed."""
    if v is None or isinstance(v, list | dict):
        return v
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            probs.add(span, f"{what} is not JSON")
            return None
    probs.add(span, f"{what} is a {type(v).__name__}, not JSON")
    return None


def _args(raw: object) -> dict[str, Any]:
    """Tool call arguments as a dict (what the model wrote, kept when it is not JSON)."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"__raw__": raw}
    else:
        value = raw
    return value if isinstance(value, dict) else {"__value__": value}


def _content(texts: list[str], blocks: list[dict[str, Any]]) -> Any:
    if not blocks:
        return "".join(texts)
    out: list[Any] = [dict(b) for b in blocks]
    out.extend({"type": "text", "text": t} for t in texts if t)
    return out


def _read_call(c: object) -> dict[str, Any] | None:
    if not isinstance(c, dict):
        return None
    fn: Any = c.get("function") if isinstance(c.get("function"), dict) else c
    name = fn.get("name")
    if not isinstance(name, str):
        return None
    args = fn.get("arguments", fn.get("args", fn.get("input")))
    cid = c.get("id") or c.get("tool_call_id") or c.get("call_id")
    return {"id": str(cid) if cid else "", "name": name, "args": _args(args)}


def _read_message(d: object, span: Span, what: str, probs: Problems) -> list[_Msg]:
    """One message dict (GenAI role + parts, or OpenAI-like role + content + tool_calls)
    -> the messages it holds (a message may hold several tool results)."""
    if not isinstance(d, dict):
        probs.add(span, f"{what} is not a message object")
        return []
    role = _ROLES.get(str(d.get("role") or "").lower())
    if role is None:
        probs.add(span, f"{what} has no known role ({d.get('role')!r})")
        return []
    name = d.get("name") if isinstance(d.get("name"), str) else None
    texts: list[str] = []
    blocks: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    results: list[_Msg] = []
    parts = d.get("parts")
    if isinstance(parts, list):
        for j, p in enumerate(parts):
            typ = p.get("type") if isinstance(p, dict) else None
            if not isinstance(p, dict) or not isinstance(typ, str):
                probs.add(span, f"{what} part {j} is not a part object")
            elif typ == "text":
                texts.append(str(p.get("content") if p.get("content") is not None
                                 else p.get("text") or ""))
            elif typ == "tool_call":
                call = _read_call(p)
                if call is None:
                    probs.add(span, f"{what} part {j} is a tool call without a name")
                else:
                    calls.append(call)
            elif typ == "tool_call_response":
                resp = p.get("response", p.get("result"))
                results.append(_Msg("tool", resp if isinstance(resp, str) else _text(resp),
                                    tool_call_id=str(p["id"]) if p.get("id") else None,
                                    name=name))
            elif typ in ("reasoning", "thinking"):
                blocks.append({"type": "reasoning", "reasoning": p.get("content") or ""})
            else:
                blocks.append(p)
    elif "parts" in d and parts is not None:
        probs.add(span, f"{what} parts is not a list")
        return []
    else:
        content = d.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for b in content:
                if isinstance(b, str):
                    texts.append(b)
                elif isinstance(b, dict) and b.get("type") in ("text", "output_text",
                                                               "input_text"):
                    texts.append(str(b.get("text") or b.get("content") or ""))
                elif isinstance(b, dict):
                    blocks.append(b)
        elif content is not None:
            texts.append(_text(content))
        raw_calls = d.get("tool_calls")
        if isinstance(raw_calls, str):
            raw_calls = _structured(raw_calls, span, f"{what} tool_calls", probs)
        for j, c in enumerate(raw_calls if isinstance(raw_calls, list) else []):
            call = _read_call(c)
            if call is None:
                probs.add(span, f"{what} tool call {j} has no name")
            else:
                calls.append(call)
    if role == "tool":
        if results:
            return results
        tcid = d.get("tool_call_id") or d.get("id")
        return [_Msg("tool", _content(texts, blocks), tool_call_id=str(tcid) if tcid else None,
                     name=name)]
    out = list(results)  # a user message carrying tool results (Anthropic's shape)
    if texts or blocks or calls or not results:
        out.append(_Msg(role, _content(texts, blocks), calls, name=name))
    return out


def _read_messages(value: Any, span: Span, what: str, probs: Problems) -> list[_Msg] | None:
    value = _structured(value, span, what, probs)
    if value is None:
        return None
    if isinstance(value, dict):
        value = [value]
    out: list[_Msg] = []
    for i, d in enumerate(value):
        out.extend(_read_message(d, span, f"{what}[{i}]", probs))
    return out


def _read_system(value: Any, span: Span, probs: Problems) -> list[str]:
    """``gen_ai.system_instructions``: a list of parts (or a plain string)."""
    if isinstance(value, str) and not value.lstrip().startswith(("[", "{")):
        return [value]
    value = _structured(value, span, "gen_ai.system_instructions", probs)
    if isinstance(value, dict):
        value = [value]
    out = []
    for p in value if isinstance(value, list) else []:
        if isinstance(p, str):
            out.append(p)
        elif isinstance(p, dict):
            out.append(str(p.get("content") if p.get("content") is not None
                           else p.get("text") or ""))
    return out


@dataclass
class _Content:
    """What one chat span says was sent and answered."""

    inputs: list[_Msg] | None = None
    outputs: list[_Msg] | None = None
    system: list[str] = field(default_factory=list)
    convention: str = ""
    finish: str | None = None
    missing: str | None = None  # why there is none


def _content_of(span: Span, probs: Problems) -> _Content:
    a = span.attributes
    # 1. the current convention: attributes, or the inference details event
    for where, attrs in [("gen_ai", a), *[("gen_ai (event)", e.attributes)
                                            for e in span.events if e.name == DETAILS_EVENT]]:
        if "gen_ai.input.messages" in attrs or "gen_ai.output.messages" in attrs:
            c = _Content(convention=where)
            if "gen_ai.input.messages" in attrs:
                c.inputs = _read_messages(attrs["gen_ai.input.messages"], span,
                                          "gen_ai.input.messages", probs)
            if "gen_ai.output.messages" in attrs:
                c.outputs = _read_messages(attrs["gen_ai.output.messages"], span,
                                           "gen_ai.output.messages", probs)
            if "gen_ai.system_instructions" in attrs:
                c.system = _read_system(attrs["gen_ai.system_instructions"], span, probs)
            return c
    # 2. the older per-message events (span events, or log records put on the span)
    if any(e.name in MESSAGE_EVENTS or e.name == CHOICE_EVENT for e in span.events):
        return _from_events(span, probs)
    # 3. older still: one prompt event and one completion event of OpenAI-like messages
    prompt = [e for e in span.events if e.name == "gen_ai.content.prompt"]
    if prompt:
        c = _Content(convention="gen_ai (prompt events)")
        c.inputs = _read_messages(prompt[0].attributes.get("gen_ai.prompt"), span,
                                  "gen_ai.prompt", probs)
        done = [e for e in span.events if e.name == "gen_ai.content.completion"]
        if done:
            c.outputs = _read_messages(done[0].attributes.get("gen_ai.completion"), span,
                                       "gen_ai.completion", probs)
        return c
    # 4. flattened attributes: OpenInference, OpenLLMetry
    if any(k.startswith(("llm.input_messages", "llm.output_messages")) for k in a):
        return _Content(_flat(a, "llm.input_messages", span, probs),
                        _flat(a, "llm.output_messages", span, probs), convention="openinference")
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in a):
        return _Content(_flat(a, "gen_ai.prompt", span, probs),
                        _flat(a, "gen_ai.completion", span, probs), convention="openllmetry")
    if "gen_ai.input.messages.ref" in a or "gen_ai.output.messages.ref" in a:
        return _Content(missing="stored elsewhere (gen_ai.input.messages.ref: "
                        f"{a.get('gen_ai.input.messages.ref')})")
    return _Content(missing="not captured")


def _event_payload(e: SpanEvent, span: Span, probs: Problems) -> dict[str, Any]:
    """An older GenAI event's fields: in its body, in ``gen_ai.event.content`` (JSON),
    or as attributes."""
    attrs = e.attributes
    out: dict[str, Any] = {}
    body = attrs.get("body", attrs.get("event.body"))
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            body = {"content": body}
    if isinstance(body, dict):
        out.update(body)
    if "gen_ai.event.content" in attrs:
        extra = _structured(attrs["gen_ai.event.content"], span,
                            f"{e.name} gen_ai.event.content", probs)
        if isinstance(extra, dict):
            out.update(extra)
    for k in ("content", "tool_calls", "id", "tool_call_id", "message", "finish_reason",
              "index", "role"):
        if k in attrs and k not in out:
            out[k] = attrs[k]
    if isinstance(out.get("message"), str):
        out["message"] = _structured(out["message"], span, f"{e.name} message", probs)
    return out


def _from_events(span: Span, probs: Problems) -> _Content:
    c = _Content(inputs=[], convention="gen_ai (events)")
    assert c.inputs is not None
    captured = True
    for i, e in enumerate(span.events):
        if e.name in MESSAGE_EVENTS:
            role = MESSAGE_EVENTS[e.name]
            p = _event_payload(e, span, probs)
            if role != "assistant" and "content" not in p:
                captured = False
            if role == "assistant" and not _args_seen(p.get("tool_calls")) and "content" not in p:
                captured = False
            d = {**p, "role": role}
            if role == "tool":
                d["tool_call_id"] = p.get("id") or p.get("tool_call_id")
            c.inputs.extend(_read_message(d, span, f"event {i} ({e.name})", probs))
        elif e.name == CHOICE_EVENT:
            p = _event_payload(e, span, probs)
            if c.outputs is not None and p.get("index") not in (None, 0):
                continue  # one reply per call: the first choice
            msg: Any = p.get("message") if isinstance(p.get("message"), dict) else {}
            if "content" not in msg and not _args_seen(msg.get("tool_calls")):
                captured = False
            c.outputs = _read_message({"role": "assistant", **msg}, span,
                                      f"event {i} ({e.name})", probs)
            if isinstance(p.get("finish_reason"), str):
                c.finish = p["finish_reason"]
    system = [m for m in c.inputs if m.role == "system"]
    c.system = [_text(m.content) for m in system]
    c.inputs = [m for m in c.inputs if m.role != "system"]
    if not captured:
        return _Content(missing="not captured")
    return c


def _args_seen(calls: object) -> bool:
    """Whether tool calls carry their arguments (content capture on)."""
    if not isinstance(calls, list) or not calls:
        return False
    for c in calls:
        fn = c.get("function") if isinstance(c, dict) else None
        fn = fn if isinstance(fn, dict) else c
        if isinstance(fn, dict) and "arguments" in fn:
            return True
    return False


def _unflatten(attrs: Mapping[str, Any], prefix: str) -> dict[Any, Any]:
    """``prefix.0.message.role`` ... -> {0: {"message": {"role": ...}}}."""
    root: dict[Any, Any] = {}
    n = len(prefix) + 1
    for k, v in attrs.items():
        if not k.startswith(prefix + "."):
            continue
        path = [int(p) if p.isdigit() else p for p in k[n:].split(".")]
        node = root
        for seg in path[:-1]:
            nxt = node.get(seg)
            if not isinstance(nxt, dict):
                nxt = node[seg] = {}
            node = nxt
        node[path[-1]] = v
    return root


def _items(d: object) -> list[Any]:
    """The values of a flattened list ({0: ..., 1: ...}) in order."""
    if isinstance(d, list):
        return d
    if not isinstance(d, dict):
        return []
    return [d[k] for k in sorted(k for k in d if isinstance(k, int))]


def _content_block(c: dict[Any, Any]) -> dict[str, Any] | None:
    """OpenInference's ``message.contents.K.message_content.*`` as a content block."""
    b = c.get("message_content", c)
    b = b if isinstance(b, dict) else {}
    typ = b.get("type") or ("text" if b.get("text") is not None else None)
    if typ == "text":
        return {"type": "text", "text": str(b.get("text") or "")}
    return {str(k): v for k, v in b.items() if v is not None} if typ else None


def _flat(attrs: Mapping[str, Any], prefix: str, span: Span,
          probs: Problems) -> list[_Msg] | None:
    if isinstance(attrs.get(prefix), list | str):  # one attribute holding them all
        return _read_messages(attrs[prefix], span, prefix, probs)
    tree = _unflatten(attrs, prefix)
    if not tree:
        return None
    out: list[_Msg] = []
    for i, entry in enumerate(_items(tree)):
        m = entry.get("message", entry) if isinstance(entry, dict) else entry
        if not isinstance(m, dict):
            probs.add(span, f"{prefix}.{i} is not a message")
            continue
        d: dict[str, Any] = {"role": m.get("role"), "name": m.get("name"),
                             "tool_call_id": m.get("tool_call_id")}
        if "content" in m:
            d["content"] = m["content"]
        elif "contents" in m:
            blocks = [_content_block(c) for c in _items(m["contents"]) if isinstance(c, dict)]
            d["content"] = [b for b in blocks if b is not None]
        calls = []
        for c in _items(m.get("tool_calls")):
            c = c.get("tool_call", c) if isinstance(c, dict) else c
            calls.append(c)
        d["tool_calls"] = calls
        out.extend(_read_message(d, span, f"{prefix}.{i}", probs))
    return out


# -- model calls and tool runs --------------------------------------------------------


@dataclass(eq=False)
class Chat:
    """One model call as a span says it was (``messages`` None: no content)."""

    span: Span
    messages: list[BaseMessage] | None
    system: str | None = None
    reply: AIMessage | None = None
    error: str | None = None
    tools: list[Any] | None = None
    model: str | None = None
    provider: str | None = None
    convention: str = ""
    missing: str | None = None
    made_up_ids: bool = False
    node: Any = None  # the caller's handle on the span
    _results: dict[str, ToolMessage] | None = None

    def results(self) -> dict[str, ToolMessage]:
        """The tool results this call sent, by call id."""
        if self._results is None:
            self._results = {}
            for m in self.messages or ():
                if isinstance(m, ToolMessage):
                    self._results.setdefault(m.tool_call_id, m)
        return self._results


@dataclass(eq=False)
class ToolRun:
    """One tool run as a span says it was (``result`` None: not captured)."""

    span: Span
    name: str
    call_id: str | None
    args: Any
    result: Any  # text or content blocks; None: not captured
    status: str = "success"
    error: str | None = None
    node: Any = None


def first(a: Mapping[str, Any], *keys: str) -> Any:
    for k in keys:
        v = a.get(k)
        if v is not None and v != "":
            return v
    return None


def to_int(v: Any) -> int | None:
    try:
        return int(v) if v is not None and not isinstance(v, bool) else None
    except (TypeError, ValueError):
        return None


def error_of(span: Span) -> str | None:
    if span.status != "error":
        return None
    for e in span.events:
        if e.name == "exception":
            typ, msg = e.attributes.get("exception.type"), e.attributes.get("exception.message")
            if typ or msg:
                return f"{typ}: {msg}" if typ and msg else str(typ or msg)
    return span.status_message or str(span.attributes.get("error.type") or "error")


def _lc_messages(msgs: Sequence[_Msg], base: int = 0) -> tuple[list[BaseMessage], bool]:
    """Neutral messages -> LangChain ones. A call without an id gets
    ``otel-<message>-<call>``; a result without one answers the next unanswered
    call of the assistant message before it (as the provider pairs them)."""
    out: list[BaseMessage] = []
    made_up = False
    waiting: list[str] = []
    for m in msgs:
        if m.role == "assistant":
            calls = []
            for j, c in enumerate(m.calls):
                cid = c["id"]
                if not cid:
                    cid, made_up = f"otel-{base + len(out)}-{j}", True
                calls.append({"name": c["name"], "args": c["args"], "id": cid,
                              "type": "tool_call"})
            waiting = [c["id"] for c in calls]
            out.append(AIMessage(m.content, tool_calls=calls,
                                 **({"name": m.name} if m.name else {})))
        elif m.role == "tool":
            tcid = m.tool_call_id
            if not tcid:
                tcid = waiting[0] if waiting else f"otel-{base + len(out)}-orphan"
                made_up = True
            if tcid in waiting:
                waiting.remove(tcid)
            out.append(ToolMessage(m.content, tool_call_id=tcid, status=m.status or "success",
                                   **({"name": m.name} if m.name else {})))
        elif m.role == "user":
            out.append(HumanMessage(m.content, **({"name": m.name} if m.name else {})))
    return out, made_up


def read_chat(span: Span, probs: Problems) -> Chat:
    """What a chat (LLM) span says of its model call, in whichever convention."""
    a = span.attributes
    c = _content_of(span, probs)
    model = first(a, "gen_ai.request.model", "llm.request.model_name", "llm.model_name",
                   "gen_ai.response.model")
    provider = first(a, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system")
    chat = Chat(span, None, model=str(model) if model else None,
                 provider=str(provider) if provider else None, convention=c.convention,
                 error=error_of(span))
    if c.missing is not None or c.inputs is None:
        chat.missing = c.missing or "input messages unreadable"
        return chat
    system = [*c.system, *(_text(m.content) for m in c.inputs if m.role == "system")]
    chat.system = "\n\n".join(s for s in system if s) or None
    msgs, made_up = _lc_messages([m for m in c.inputs if m.role != "system"])
    chat.messages = msgs
    outs = [m for m in c.outputs or () if m.role == "assistant"]
    if outs and chat.error is None:
        reply, made_up_reply = _lc_messages([outs[0]], base=len(msgs))
        made_up = made_up or made_up_reply
        finish = c.finish or finish_reason(a)
        meta = {k: v for k, v in {
            "model_name": first(a, "gen_ai.response.model", "llm.response.model_name",
                                 "llm.model_name"),
            "finish_reason": finish}.items() if v is not None}
        i = to_int(first(a, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens",
                        "llm.token_count.prompt"))
        o = to_int(first(a, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
                        "llm.token_count.completion"))
        usage = None
        if i is not None or o is not None:
            usage = {"input_tokens": i or 0, "output_tokens": o or 0,
                     "total_tokens": (i or 0) + (o or 0)}
        ai = reply[0]
        assert isinstance(ai, AIMessage)
        chat.reply = ai.model_copy(update={"usage_metadata": usage, "response_metadata": meta})
    elif chat.error is None and c.outputs is not None:
        chat.error = "no assistant message in the output"
    elif chat.error is None:
        chat.error = "no response recorded"
    chat.made_up_ids = made_up
    chat.tools = _tool_defs(span, probs)
    return chat


def finish_reason(a: Mapping[str, Any]) -> str | None:
    v = first(a, "gen_ai.response.finish_reasons", "llm.finish_reason")
    if isinstance(v, list):
        v = v[0] if v else None
    return str(v) if v is not None else None


def _tool_defs(span: Span, probs: Problems) -> list[Any] | None:
    a = span.attributes
    if "gen_ai.tool.definitions" in a:
        v = _structured(a["gen_ai.tool.definitions"], span, "gen_ai.tool.definitions", probs)
        return v if isinstance(v, list) else None
    tree = _unflatten(a, "llm.tools")
    out = []
    for i, t in enumerate(_items(tree)):
        raw = t.get("tool", t).get("json_schema") if isinstance(t, dict) else None
        v = _structured(raw, span, f"llm.tools.{i}.tool.json_schema", probs)
        if isinstance(v, dict):
            out.append(v)
    return out or None


def _tool_message_json(v: object) -> dict[str, Any] | None:
    """A LangChain ToolMessage as OpenInference serialises it (``output.value``)."""
    if not isinstance(v, dict):
        return None
    if v.get("type") == "tool" and isinstance(v.get("data"), dict):
        data: dict[str, Any] = v["data"]
        return data
    if v.get("lc") == 1 and isinstance(v.get("kwargs"), dict) and str(
            (v.get("id") or [""])[-1]).endswith("ToolMessage"):
        kwargs: dict[str, Any] = v["kwargs"]
        return kwargs
    if v.get("type") == "tool" and "tool_call_id" in v:
        return v
    return None


def read_tool(span: Span, probs: Problems, parent: Span | None = None) -> ToolRun:
    """What a tool span says of its run (``parent``: the span above it, where
    OpenInference on LangGraph keeps the tool call's id)."""
    a = span.attributes
    name = first(a, "gen_ai.tool.name", "tool.name") or span.name.removeprefix(
        "execute_tool ").strip() or "tool"
    cid = first(a, "gen_ai.tool.call.id", "tool_call.id", "tool.id")
    t = ToolRun(span, str(name), str(cid) if cid else None, None, None,
              error=error_of(span))
    if "gen_ai.tool.call.arguments" in a:
        v = a["gen_ai.tool.call.arguments"]
        t.args = _args(v)
    if "gen_ai.tool.call.result" in a:
        v = a["gen_ai.tool.call.result"]
        t.result = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    # OpenInference: input.value / output.value, JSON when their mime type says so
    if "input.value" in a and t.args is None:
        v = a["input.value"]
        if lower(a.get("input.mime_type")) == "application/json":
            v = _structured(v, span, "input.value", probs)
        t.args = v if isinstance(v, dict) else ({"input": v} if v is not None else None)
    if "output.value" in a and t.result is None:
        v = a["output.value"]
        if lower(a.get("output.mime_type")) == "application/json":
            v = _structured(v, span, "output.value", probs)
        tm = _tool_message_json(v)
        if tm is not None:
            content = tm.get("content", "")
            t.result = content if isinstance(content, str | list) else _text(content)
            t.call_id = t.call_id or (str(tm["tool_call_id"]) if tm.get("tool_call_id") else None)
            if tm.get("status") == "error":
                t.status = "error"
        elif v is not None:
            t.result = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False,
                                                               default=str)
    if t.call_id is None:
        t.call_id = _call_id_from_parent(parent, t.name)
    if t.error is not None:
        t.status = "error"
    return t


def _call_id_from_parent(parent: Span | None, name: str) -> str | None:
    """OpenInference on LangGraph: the ``tools`` chain span above a tool span has the
    tool call (with its id) as input."""
    if parent is None or str(parent.attributes.get("openinference.span.kind")).upper() not in (
            "CHAIN", "AGENT"):
        return None
    raw = parent.attributes.get("input.value")
    try:
        v = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    calls = v if isinstance(v, list) else [v]
    ids = [c.get("id") for c in calls if isinstance(c, dict) and c.get("type") == "tool_call"
           and c.get("name") == name and c.get("id")]
    return str(ids[0]) if len(ids) == 1 else None
