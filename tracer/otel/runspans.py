"""A recorded run as spans in the OpenTelemetry GenAI semantic conventions.

One trace per exported run tree:

``invoke_agent {agent}``   one per run (a subagent run nested under the
                           ``execute_tool`` span of the parent's tool call that
                           started it)
``chat {model}``           one per model call (``wrap_model_call`` / ``model``)
``execute_tool {tool}``    one per tool call (``wrap_tool_call`` / ``tool``)

Node hooks (``before_model`` ...), ``history``, ``interrupt`` and ``resume``
become span events on the run's span, named after the hook; a wrap layer's
events (``wrap_model_call`` phase ``layer``) become span events on its call's
span. Times are the recorded ones. Messages use the current GenAI message
schema (role + parts: ``text``, ``tool_call``, ``tool_call_response``).

The view is built from exactly the rows ``looptrace export`` writes
(``tracer.interop.exchange.export_lines``), and those rows ride along (``rows.py``), so
the receiving side can rebuild the run bit for bit. Each span also carries its
run's ``runs`` row (a few hundred bytes), so a trace cut in the middle (its
root span lost) still imports as a run with what arrived.

Ids are derived from the run ids (the trace id is the root run's id when it is
32 hex digits): exporting the same run twice gives the same spans, which a
backend de-duplicates and ``looptrace collect`` replaces.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from tracer.db.tables import SCHEMA_VERSION
from tracer.interop.exchange import export_lines
from tracer.read.loader import TraceDB, content_text
from tracer.vocab.calls import Requests, Usage
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

from . import display
from .rows import A_FORMAT, A_ROWS, A_RUN, A_SCHEMA, FORMAT_TAG, row_event
from .spans import Span, SpanEvent

Rows = list[tuple[str, dict[str, Any]]]
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
_CALL_END = ("exit", "error", "interrupt")


def run_rows(db: TraceDB, run_id: str) -> Rows:
    """The stored rows of a run and its subagent runs, exactly as the JSONL export has them."""
    lines = export_lines(db, run_id)
    next(lines)  # the header
    return [(rec["table"], rec["row"]) for rec in map(json.loads, lines)]


def run_spans(db: TraceDB, run_id: str, service: str | None = None) -> list[Span]:
    """The spans of one run tree (``run_id`` and its subagent runs), one trace;
    ``service`` names the service (and Phoenix's project) in the spans' resource."""
    return spans_from_rows(run_rows(db, run_id), service)


def trace_id_for(run_id: str) -> str:
    rid = run_id.lower().replace("-", "")
    if _HEX32.match(rid) and rid != "0" * 32:
        return rid
    return hashlib.blake2b(run_id.encode(), digest_size=16).hexdigest()


def span_id_for(run_id: str, what: str) -> str:
    sid = hashlib.blake2b(f"{run_id}/{what}".encode(), digest_size=8).hexdigest()
    return sid if sid != "0" * 16 else "1" * 16


def spans_from_rows(rows: Rows, service: str | None = None) -> list[Span]:
    """Build the spans of a run tree from its rows (parents before their subagent runs)."""
    runs: dict[str, _RunRows] = {}
    for table, row in rows:
        rid = row["id"] if table == "runs" else row["run_id"]
        runs.setdefault(rid, _RunRows()).add(table, row)
    root = next((r for t, r in rows if t == "runs"), None)
    if root is None:
        return []
    trace_id = trace_id_for(root["id"])
    tool_spans: dict[tuple[Any, Any], str] = {}
    built: dict[str, _Run] = {}
    spans: list[Span] = []
    b: _Run | None
    for rid, rr in runs.items():
        if rr.run is None:
            continue
        parent = rr.run.get("parent_id")
        parent_span = tool_spans.get((parent, rr.run.get("parent_tool_call_id"))) or (
            built[parent].invoke.span_id if parent in built else None)
        b = _Run(trace_id, rr, parent_span, display.resource(service))
        built[rid] = b
        for tcid, span in b.tools.items():
            tool_spans[(rid, tcid)] = span.span_id
        spans.extend(b.spans)
    # the rows themselves, each on the span it describes, in one event per span
    loads: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
    for index, (table, row) in enumerate(rows):
        rid = row["id"] if table == "runs" else row["run_id"]
        b = built.get(rid)
        if b is None:  # rows of a run whose runs row is missing: on the root span
            b = next(iter(built.values()))
        span = b.home(table, row)
        loads.setdefault(span.span_id, []).append((index, table, row))
        if table == "runs":  # every span of the run carries it: any part of a trace is a run
            for other in b.spans[1:]:
                loads.setdefault(other.span_id, []).append((index, table, row))
    carriers = [s for s in spans if s.span_id in loads]
    for ordinal, span in enumerate(carriers):
        span.events.append(row_event(ordinal, loads[span.span_id], span.end or span.start))
    first = spans[0]
    first.attributes[A_FORMAT] = FORMAT_TAG
    first.attributes[A_SCHEMA] = SCHEMA_VERSION
    first.attributes[A_ROWS] = len(carriers)
    return spans


class _RunRows:
    def __init__(self) -> None:
        self.run: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.wire: list[dict[str, Any]] = []
        self.state: list[dict[str, Any]] = []  # (carried as they are: tracer.record.state_keys)
        self.state_values: list[dict[str, Any]] = []
        self.notes: list[dict[str, Any]] = []  # (a person's notes: not sent as spans)

    def add(self, table: str, row: dict[str, Any]) -> None:
        if table == "runs":
            self.run = row
        else:
            getattr(self, table).append(row)


class _Run:
    """The spans of one run."""

    def __init__(self, trace_id: str, rr: _RunRows, parent: str | None,
                 resource: dict[str, Any]) -> None:
        assert rr.run is not None
        run = rr.run
        self.id = str(run["id"])
        self.trace_id = trace_id
        self.run = run
        self.messages = rr.messages
        self.wire_provider = {w.get("seq"): w.get("provider") for w in rr.wire}
        self.ts = {e["seq"]: e["ts"] for e in rr.events}
        start = _num(run.get("started_at")) or min(self.ts.values(), default=0.0)
        end = _num(run.get("ended_at")) or max(self.ts.values(), default=start)
        agent = run.get("agent_name") or run.get("name") or "agent"
        attrs = _clean({
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": run.get("thread_id"),
            "gen_ai.provider.name": run.get("provider"),
            "gen_ai.request.model": run.get("model"),
            # no gen_ai.usage here: backends add up the chat spans' (Phoenix counts a
            # parent's usage on top of its children's, MLflow takes the topmost span's)
            A_RUN: self.id,
            "looptrace.run.name": run.get("name"),
            "looptrace.run.status": run.get("status"),
            "looptrace.run.source": run.get("source"),
        })
        self.invoke = Span(trace_id, span_id_for(self.id, "run"), parent,
                           f"invoke_agent {agent}", start, max(end, start), attrs,
                           resource=resource, scope="looptrace")
        if run.get("status") == "error":
            self.invoke.status = "error"
            self.invoke.status_message = run.get("error")
            self.invoke.attributes["error.type"] = _error_type(run.get("error"))
        self.spans = [self.invoke]
        self.tools: dict[str, Span] = {}
        self.by_seq: dict[int, Span] = {}
        self._requests = Requests()  # (each chat's whole request, in record order)
        self._build(rr.events)
        first_model = next((s for s in self.spans if s.attributes.get(
            "gen_ai.operation.name") == "chat"), None)
        if first_model is not None:
            for key in ("gen_ai.input.messages", "gen_ai.system_instructions"):
                if key in first_model.attributes:
                    self.invoke.attributes[key] = first_model.attributes[key]
        last = next((s for s in reversed(self.spans) if "gen_ai.output.messages"
                     in s.attributes), None)
        if last is not None and run.get("status") != "error":  # a failed run answered nothing
            self.invoke.attributes["gen_ai.output.messages"] = last.attributes[
                "gen_ai.output.messages"]
        self._io()

    def _io(self) -> None:
        """The run's question and final answer, as backends list a run."""
        final = [genai_message(m) for m in self._conversation(1 << 62)]
        answer = next((m for m in reversed(final) if m.get("role") == "assistant"), None)
        self.invoke.attributes.update(display.io("input", display.question(final)))
        if answer is not None and self.run.get("status") != "error":
            self.invoke.attributes.update(display.io("output", display.reply(answer)))

    # -- events -> spans ----------------------------------------------------------
    def _build(self, events: list[dict[str, Any]]) -> None:
        models: list[Span] = []
        open_tools: dict[str, Span] = {}
        for ev in events:
            seq, hook, phase = ev["seq"], ev.get("hook"), ev.get("phase")
            payload = _payload(ev.get("payload"))
            if hook in MODEL_HOOKS:
                if phase == "enter":
                    span = self._chat(ev, payload)
                    models.append(span)
                else:
                    span = models[-1] if models else self.invoke
                    if phase in _CALL_END and models:
                        models.pop()
                        self._chat_end(span, ev, payload)
                    else:
                        span.events.append(self._hook_event(ev, payload))
            elif hook in TOOL_HOOKS:
                key = ev.get("tool_call_id") or ""
                if phase == "enter":
                    span = self._tool(ev, payload)
                    open_tools[key] = span
                elif phase in _CALL_END and key and key not in open_tools and (
                        key not in self.tools):
                    # a call seen only as its result (a loop seen through the proxy)
                    span = self._tool(ev, self._call_of(key))
                    self._tool_end(span, ev, payload)
                else:
                    span = open_tools.get(key) or self.tools.get(key) or self.invoke
                    if phase in _CALL_END and key in open_tools:
                        open_tools.pop(key)
                        self._tool_end(span, ev, payload)
                    else:
                        span.events.append(self._hook_event(ev, payload))
            else:
                span = self.invoke
                if hook != "run":
                    span.events.append(self._hook_event(ev, payload))
            self.by_seq[seq] = span
        for span in [*models, *open_tools.values()]:  # calls the record never saw end
            span.end = self.invoke.end

    def _span(self, what: str, name: str, ev: dict[str, Any], kind: str,
              attrs: dict[str, Any]) -> Span:
        attrs.update(_clean({A_RUN: self.id, "looptrace.seq": ev["seq"],
                             "looptrace.lap": ev.get("lap"),
                             "looptrace.middleware": ev.get("middleware")}))
        span = Span(self.trace_id, span_id_for(self.id, what), self.invoke.span_id, name,
                    ev["ts"], ev["ts"], attrs, kind=kind, resource=self.invoke.resource,
                    scope=self.invoke.scope)
        self.spans.append(span)
        return span

    def _chat(self, ev: dict[str, Any], p: dict[str, Any]) -> Span:
        req = self._requests.read(p)
        model = req.model or self.run.get("model")
        history = self._conversation(ev["seq"])
        if isinstance(p.get("messages"), int):
            history = history[: p["messages"]]
        attrs = _clean({
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.wire_provider.get(ev["seq"]) or self.run.get("provider"),
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": self.run.get("thread_id"),
            "gen_ai.input.messages": _json([genai_message(m) for m in history]),
            "gen_ai.system_instructions": (_json([{"type": "text", "content": req.system}])
                                           if req.system else None),
            "gen_ai.tool.definitions": (_json(display.tool_definitions(req.tools))
                                        if req.tools else None),
        })
        if "gen_ai.input.messages" in attrs:
            attrs.update({"input.value": attrs["gen_ai.input.messages"],
                          "input.mime_type": display.JSON})
        return self._span(f"model/{ev['seq']}", f"chat {model or ''}".strip(), ev, "client",
                          attrs)

    def _chat_end(self, span: Span, ev: dict[str, Any], p: dict[str, Any]) -> None:
        span.end = max(ev["ts"], span.start)
        usage = Usage.of(p)
        out = [m for m in self.messages if m.get("seq") == ev["seq"] and not m.get("version")
               and m.get("type") == "ai"]
        meta = _body(out[-1]).get("response_metadata") if out else None
        meta = meta if isinstance(meta, dict) else {}
        finish = p.get("stop_reason") or meta.get("finish_reason") or meta.get("stop_reason")
        outputs = [{**genai_message(m), "finish_reason": finish or "stop"} for m in out]
        span.attributes.update(_clean({
            "gen_ai.response.model": meta.get("model_name") or meta.get("model"),
            "gen_ai.response.id": meta.get("id") if isinstance(meta.get("id"), str) else None,
            "gen_ai.usage.input_tokens": usage.input,
            "gen_ai.usage.output_tokens": usage.output,
            "gen_ai.response.finish_reasons": [str(finish)] if finish else None,
            "gen_ai.output.messages": _json(outputs) if outputs else None,
        }))
        if outputs:
            span.attributes.update(_clean(display.io("output", display.reply(outputs[-1]))))
        if ev.get("phase") == "exit":
            span.attributes.update(_cost_attributes(
                usage.recorded, span.attributes.get("gen_ai.request.model"),
                span.attributes.get("gen_ai.provider.name"), ev.get("ts")))
        if ev.get("phase") == "error":
            _fail(span, p)

    def _tool(self, ev: dict[str, Any], p: dict[str, Any]) -> Span:
        name = p.get("name") or "tool"
        tcid = ev.get("tool_call_id")
        attrs = _clean({
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": tcid,
            "gen_ai.tool.call.arguments": _json(p["args"]) if "args" in p else None,
            "gen_ai.conversation.id": self.run.get("thread_id"),
        })
        if "args" in p:
            attrs.update(_clean(display.io("input", p["args"])))
        span = self._span(f"tool/{ev['seq']}", f"execute_tool {name}", ev, "internal", attrs)
        if tcid:
            self.tools[tcid] = span
        return span

    def _tool_end(self, span: Span, ev: dict[str, Any], p: dict[str, Any]) -> None:
        span.end = max(ev["ts"], span.start)
        tcid = span.attributes.get("gen_ai.tool.call.id")
        result = next((m for m in self.messages if tcid and m.get("tool_call_id") == tcid
                       and m.get("type") == "tool" and not m.get("version")), None)
        if result is not None:
            body = _body(result)
            content = body.get("content")
            span.attributes["gen_ai.tool.call.result"] = _text(
                content if isinstance(content, str) else content_text(content))
            span.attributes.update(_clean(display.io(
                "output", span.attributes["gen_ai.tool.call.result"])))
            if body.get("status") == "error":
                span.status = "error"
                span.status_message = _text(content_text(content))[:1000]
        if ev.get("phase") == "error" or p.get("status") == "error":
            _fail(span, p)

    def _call_of(self, tool_call_id: str) -> dict[str, Any]:
        """The name and arguments of a tool call, from the assistant message that made it."""
        for m in self.messages:
            for call in _body(m).get("tool_calls") or []:
                if isinstance(call, dict) and call.get("id") == tool_call_id:
                    return {"name": call.get("name"), "args": call.get("args")}
        return {}

    def _hook_event(self, ev: dict[str, Any], p: Any) -> SpanEvent:
        attrs = _clean({"looptrace.phase": ev.get("phase"), "looptrace.seq": ev["seq"],
                        "looptrace.lap": ev.get("lap"),
                        "looptrace.middleware": ev.get("middleware"),
                        "looptrace.duration_ms": ev.get("duration_ms")})
        if isinstance(p, dict) and isinstance(p.get("what"), str):
            attrs["looptrace.what"] = p["what"]
        return SpanEvent(str(ev.get("hook")), ev["ts"], attrs)

    def _conversation(self, seq: int) -> list[dict[str, Any]]:
        """The messages as they stood at event ``seq`` (later versions applied)."""
        state: dict[int, dict[str, Any]] = {}
        for m in sorted((m for m in self.messages if (m.get("seq") or 0) <= seq),
                        key=lambda m: (m.get("seq") or 0, m.get("version") or 0)):
            state[m["position"]] = m
        return [state[p] for p in sorted(state)]

    # -- where a row rides ----------------------------------------------------------
    def home(self, table: str, row: dict[str, Any]) -> Span:
        if table == "runs":
            return self.invoke
        seq = row.get("seq")
        return self.by_seq.get(seq, self.invoke) if isinstance(seq, int) else self.invoke


# -- the GenAI message schema ---------------------------------------------------------

def _cost_attributes(usage: Any, model: Any, provider: Any, ts: Any) -> dict[str, Any]:
    """A model call's price (``tracer.read.cost``) where the backends read one; nothing
    when it is not known (a backend may then price the call itself). On chat spans only:
    the backends add the spans of a trace up.

    - Langfuse: ``langfuse.observation.cost_details`` (JSON: input, output, total),
      else ``gen_ai.usage.cost`` (the total), read by its OTel ingestion
      (langfuse/langfuse ``packages/shared/src/server/otel/OtelIngestionProcessor.ts``,
      ``extractCostDetails``).
    - MLflow: ``mlflow.llm.cost`` (JSON: input_cost, output_cost, total_cost in USD;
      ``mlflow.tracing.constant.SpanAttributeKey.LLM_COST``, mlflow 3.17); its OTLP
      translation computes its own only where this is missing
      (``mlflow/tracing/otel/translation/__init__.py``).
    - OpenInference: ``llm.cost.prompt``, ``llm.cost.completion``, ``llm.cost.total``
      (``openinference.semconv.trace.SpanAttributes.LLM_COST_*``). Phoenix 20 keeps them
      as attributes but prices its cost column from its own model table
      (``phoenix/server/cost_tracking``), not from these.
    """
    from tracer.read.cost import default_prices

    total, inp, out, _why, _by = default_prices().price(
        usage if isinstance(usage, dict) else None, model if isinstance(model, str) else None,
        provider if isinstance(provider, str) else None, _num(ts))
    if total is None or inp is None or out is None:
        return {}
    t, i, o = float(total), float(inp), float(out)
    return {"gen_ai.usage.cost": t,
            "langfuse.observation.cost_details": _json({"input": i, "output": o, "total": t}),
            "mlflow.llm.cost": _json({"input_cost": i, "output_cost": o, "total_cost": t}),
            "llm.cost.prompt": i, "llm.cost.completion": o, "llm.cost.total": t}


def genai_message(m: dict[str, Any]) -> dict[str, Any]:
    """A stored message row as a GenAI-convention message (role + parts)."""
    data = _loads(m.get("data"))
    typ = data.get("type") or m.get("type")
    body = data.get("data") if isinstance(data.get("data"), dict) else {}
    parts: list[dict[str, Any]] = []
    if typ == "tool":
        content = body.get("content")
        parts.append({"type": "tool_call_response", "id": body.get("tool_call_id"),
                      "response": content if isinstance(content, str) else content_text(content)})
    else:
        parts.extend(content_parts(body.get("content")))
        for call in body.get("tool_calls") or []:
            parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"),
                          "arguments": call.get("args")})
    out: dict[str, Any] = {"role": _ROLES.get(str(typ), str(typ)), "parts": parts}
    if body.get("name") and typ != "tool":
        out["name"] = body["name"]
    return out


def content_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            parts.append({"type": "text", "content": block})
        elif not isinstance(block, dict):
            continue
        elif block.get("type") == "text":
            parts.append({"type": "text", "content": block.get("text", "")})
        elif block.get("type") in ("thinking", "reasoning"):
            parts.append({"type": "reasoning", "content": block.get("thinking")
                          or block.get("reasoning") or block.get("text") or ""})
        elif block.get("type") in ("tool_use", "tool_call", "function_call"):
            continue  # the message's tool_calls carry them
        else:
            parts.append(dict(block))
    return parts


# -- small helpers ---------------------------------------------------------------------

def _payload(text: Any) -> dict[str, Any]:
    value = _loads(text)
    return value if isinstance(value, dict) else {}


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {}


def _body(m: dict[str, Any]) -> dict[str, Any]:
    data = _loads(m.get("data"))
    body = data.get("data") if isinstance(data, dict) else None
    return body if isinstance(body, dict) else {}


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _text(s: str) -> str:
    """A string protobuf can carry (lone surrogates replaced)."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace").decode("utf-8")
    return s


def _json(value: Any) -> str:
    return _text(json.dumps(value, ensure_ascii=False, default=str))


def _clean(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes without the unset ones (OTLP has no null attribute)."""
    return {k: (_text(v) if isinstance(v, str) else v) for k, v in attrs.items()
            if v is not None and v != ""}


def _error_type(error: Any) -> str:
    text = str(error or "error")
    head = text.split(":", 1)[0].strip()
    return head if head and " " not in head and len(head) < 80 else "error"


def _fail(span: Span, p: dict[str, Any]) -> None:
    span.status = "error"
    err = p.get("error") or p.get("message") or span.status_message or p.get("type")
    span.status_message = _text(str(err))[:1000] if err else None
    span.attributes["error.type"] = str(p.get("type") or _error_type(err))
