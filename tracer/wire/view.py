"""One model call seen on the three providers' wires, side by side.

``call_view(replay, enter_event, wire_rows)`` gives, for each provider, the
request body (``captured`` when that provider's exchange was recorded for this
model call, else ``rendered`` offline by the adapter's own builder) and a
response body (captured, or the recorded reply written in that provider's
response shape), each with its annotations. Pure: the app only draws it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

from tracer.errors import RenderError
from tracer.read.loader import Event, Run
from tracer.read.steps import Replay
from tracer.vocab.records import MODEL_HOOKS

from .annotate import ASPECTS, Annotation, annotate_request, annotate_response
from .providers import PROVIDERS, Reply, ToolCall, get_format
from .render import (
    ModelCall,
    call_at,
    model_call,
    model_call_events,
    model_for,
    render_request,
)

CAPTURED = "captured"
RENDERED = "rendered"
RECORDED = "recorded"  # the LangChain column: the messages as the run recorded them
UNAVAILABLE = "unavailable"
LANGCHAIN = "langchain"


@dataclass
class ProviderBody:
    provider: str
    source: str  # captured / rendered / unavailable
    model: str
    request: dict[str, Any] | None = None
    response: Any = None
    response_source: str = UNAVAILABLE
    request_notes: list[Annotation] = field(default_factory=list)
    response_notes: list[Annotation] = field(default_factory=list)
    wire: dict[str, Any] | None = None  # the captured row (status, url, error, headers ...)
    error: str | None = None  # a render error, or the captured exchange's error

    @property
    def chunks(self) -> list[str]:
        raw = (self.wire or {}).get("chunks")
        try:
            val = json.loads(raw) if raw else []
        except ValueError:
            return []
        return val if isinstance(val, list) else []


@dataclass
class CallView:
    call: ModelCall
    enter: Event
    bodies: dict[str, ProviderBody]
    step: int | None = None  # the step of ``enter``, counted from 1 (what a person reads)

    def aspects(self) -> list[tuple[str, str, dict[str, list[Annotation]]]]:
        """Every aspect with each provider's annotations for it (request, then response)."""
        out = []
        for key, title in ASPECTS.items():
            per = {p: [a for a in (*b.request_notes, *b.response_notes) if a.aspect == key]
                   for p, b in self.bodies.items()}
            if any(per.values()):
                out.append((key, title, per))
        return out


def _json(text: Any) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text  # a malformed body is shown as it came


def _exit_event(run: Run, enter: Event) -> Event | None:
    for ev in run.events:
        if ev.seq > enter.seq and ev.hook in MODEL_HOOKS and ev.phase in ("exit", "error"):
            return ev
    return None


def _reply_of(run: Run, enter: Event, model: str) -> Reply | None:
    """The recorded answer of this model call as a neutral ``Reply``."""
    ex = _exit_event(run, enter)
    if ex is None or ex.phase != "exit":
        return None
    ai = next((m for m in run.messages if m.seq == ex.seq and m.type == "ai"), None)
    if ai is None:
        return None
    content = ai.content
    text = content if isinstance(content, str) else "".join(
        str(b.get("text", "")) for b in content or [] if isinstance(b, dict)
        and b.get("type") == "text")
    usage = ai.body.get("usage_metadata") or {}
    calls = tuple(ToolCall(str(c.get("id") or ""), str(c.get("name") or ""),
                           cast("dict[str, Any]",
                                c.get("args") if isinstance(c.get("args"), dict) else {}))
                  for c in ai.tool_calls)
    return Reply(text=text, tool_calls=calls, input_tokens=int(usage.get("input_tokens") or 0),
                 output_tokens=int(usage.get("output_tokens") or 0), model=model,
                 id=(ai.msg_id or "recorded").replace("lc_run--", "").replace("-", "")[:24],
                 created=int(ex.ts))


def call_view(replay: Replay, enter: Event, wire_rows: list[dict[str, Any]]) -> CallView:
    run = replay.run
    call = model_call(replay, enter)
    captured: dict[str, dict[str, Any]] = {}
    row: dict[str, Any] | None
    for row in wire_rows:
        if row.get("seq") == enter.seq and row.get("provider") in PROVIDERS:
            captured[row["provider"]] = row  # the last attempt wins
    bodies: dict[str, ProviderBody] = {}
    for p in PROVIDERS:
        row = captured.get(p)
        if row is not None:
            req = _json(row.get("request_body"))
            resp = _json(row.get("response_body"))
            model = req.get("model") if isinstance(req, dict) else None
            b = ProviderBody(p, CAPTURED, str(model or model_for(p, call)),
                             request=req if isinstance(req, dict) else None, response=resp,
                             response_source=CAPTURED if resp is not None else UNAVAILABLE,
                             wire=row, error=row.get("error"))
        else:
            model = model_for(p, call)
            b = ProviderBody(p, RENDERED, model)
            try:
                b.request = render_request(p, call.lc_messages(), model=model, tools=call.tools)
            except RenderError as exc:
                b.source, b.error = UNAVAILABLE, str(exc)
            reply = _reply_of(run, enter, model)
            if reply is not None:
                b.response = get_format(p).response(reply)
                b.response_source = RENDERED
        b.request_notes = annotate_request(p, b.request)
        b.response_notes = annotate_response(p, b.response)
        bodies[p] = b
    bodies[LANGCHAIN] = _langchain_body(run, enter, call)
    at = replay.index_of_seq(enter.seq)
    return CallView(call, enter, bodies, None if at is None else at + 1)


def _lc(m: Any) -> dict[str, Any]:
    """A LangChain message as its normalised fields (what every adapter starts from)."""
    out: dict[str, Any] = {"type": m.type, "content": m.content}
    calls = getattr(m, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"name": c.get("name"), "args": c.get("args"), "id": c.get("id"),
                              "type": c.get("type", "tool_call")} for c in calls]
    if getattr(m, "tool_call_id", None):
        out["tool_call_id"] = m.tool_call_id
        out["status"] = getattr(m, "status", "success")
    return out


def _langchain_body(run: Run, enter: Event, call: ModelCall) -> ProviderBody:
    """The LangChain column: the call as LangChain holds it, before any adapter
    turns it into a provider's format (and the reply after the adapter read it)."""
    b = ProviderBody(LANGCHAIN, RECORDED, str(call.model or run.summary.model or ""))
    b.request = {"messages": [_lc(m) for m in call.lc_messages()]}
    if call.tools:
        b.request["tools"] = call.tools
    ex = _exit_event(run, enter)
    ai = next((m for m in run.messages if ex is not None and m.seq == ex.seq
               and m.type == "ai"), None)
    if ai is not None:
        reply = _lc(ai.to_langchain())
        for key in ("usage_metadata", "response_metadata"):
            if ai.body.get(key):
                reply[key] = ai.body[key]
        b.response, b.response_source = reply, RECORDED
    b.request_notes = annotate_request(LANGCHAIN, b.request)
    b.response_notes = annotate_response(LANGCHAIN, b.response)
    return b


def call_at_step(replay: Replay, step_index: int,
                 wire_rows: list[dict[str, Any]]) -> CallView | None:
    """The view of the model call at or before replay step ``step_index``."""
    if not replay.steps:
        return None
    step = replay.steps[replay.clamp(step_index)]
    enter = call_at(replay.run, step.event.seq)
    if enter is None:
        return None
    return call_view(replay, enter, wire_rows)


def turns(run: Run) -> list[Event]:
    """The model calls of ``run`` (their enter events), for a turn picker."""
    return model_call_events(run)


def call_label(view_or_enter: Any, index: int | None = None, step: int | None = None) -> str:
    """A short label for a model call: "call 2 · lap 2 · step 12" (the step counted from
    1, as the replay counts it; ``step`` for an enter event, a ``CallView`` knows its
    own)."""
    enter = view_or_enter.enter if isinstance(view_or_enter, CallView) else view_or_enter
    i = view_or_enter.call.index if isinstance(view_or_enter, CallView) else (index or 0)
    if isinstance(view_or_enter, CallView):
        step = view_or_enter.step
    return f"call {i + 1} · lap {enter.lap}" + (f" · step {step}" if step is not None else "")


def aspect_rows(view: CallView) -> list[dict[str, str]]:
    """The differences as a table: one row per aspect, one column per provider."""
    rows = []
    for _key, title, per in view.aspects():
        row = {"aspect": title}
        for p in (LANGCHAIN, *PROVIDERS):
            notes = per.get(p) or []
            row[p] = "\n".join(dict.fromkeys(f"{n.where}: {n.note}" for n in notes)) or "-"
        rows.append(row)
    return rows


def body_diff(a: Any, b: Any, name_a: str, name_b: str) -> str:
    """A unified diff of two bodies as indented JSON (keys in a stable order)."""
    import difflib

    def lines(x: Any) -> list[str]:
        return json.dumps(x, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return "\n".join(difflib.unified_diff(lines(a), lines(b), name_a, name_b, lineterm="", n=2))
