"""Spans of other instrumentations into runs: the GenAI conventions and OpenInference.

``runs_from_spans(spans, db)`` reads the spans an instrumentation other than
looptrace wrote and writes the loops they show as runs, through
``ingest.RunBuilder`` (so they replay, check, diff and export like any other).
It understands:

* the OpenTelemetry GenAI semantic conventions, current and older:
  ``gen_ai.operation.name`` = ``invoke_agent`` / ``chat`` / ``execute_tool``,
  messages as the attributes ``gen_ai.input.messages`` /
  ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` (role + parts),
  as the ``gen_ai.client.inference.operation.details`` event, or as the older
  per-message events (``gen_ai.user.message`` ... ``gen_ai.choice``) whose
  content is in their body. ``opentelemetry-instrumentation-openai-v2`` sends
  those events as *log records* tied to the chat span, not as span events:
  ``from_sdk(spans, logs)`` / ``attach_logs`` put them on their span.
  Older still: ``gen_ai.content.prompt`` events and OpenLLMetry's flat
  ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes;
* OpenInference (Phoenix, ``openinference-instrumentation-*``):
  ``openinference.span.kind`` AGENT / CHAIN / LLM / TOOL with the flattened
  ``llm.input_messages.N.message.*`` attributes.

Grouping: one run per agent invocation, i.e. an ``invoke_agent`` span, or the
top OpenInference CHAIN / AGENT span of a trace (or of what runs under a tool
span). An agent invocation inside a tool span of another run is a subagent:
a child run tied to that tool call. Model calls no agent span holds (a
hand-rolled loop on an instrumented SDK sends one trace per call) are joined by
conversation, as ``wire.traffic`` joins HTTP exchanges: a call whose messages
extend an earlier call's messages and reply continues its run. Model calls
inside a tool span without an agent span of their own make a child run of
that tool call. A trace whose root span did not arrive still gives a run of
what did, and says so in its metadata.

``runs_from_spans`` / ``convert`` take one batch. A receiver that imports trace by
trace keeps one ``SpanImporter``: a loop's later calls (later traces) continue
its run, a trace given again replaces its runs, and a model call seen by two
instrumentations whose spans did not nest is written once.

What the spans do not say is not made up. A chat span without content (the
instrumentation was not asked to capture it) gives no model call: it is
counted as skipped and the run's metadata says content was not captured.
Spans of anything else (HTTP, databases ...) are skipped and counted; an
attribute that should be JSON and is not, or a message of no known shape, is
left out and counted, and the run's metadata names it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from ..ingest import RunBuilder, Signature, extends, same, signature
from ..recorder import Recorder
from ..records import RunRecord
from ..schema import connect
from .genai_read import (
    CHAT_OPS,
    Chat,
    Problems,
    ToolRun,
    error_of,
    finish_reason,
    first,
    looks_like_chat,
    lower,
    read_chat,
    read_tool,
    to_int,
)
from .spans import Span, SpanEvent

SOURCE = "otel"
_MAX_PROBLEMS = 20

# span kinds, as this module sorts them
AGENT, CHAT, TOOL, CHAIN, CREATE, OTHER, LOST = (
    "agent", "chat", "tool", "chain", "create", "other", "lost")


@dataclass
class GenaiResult:
    """What ``convert`` wrote and left out."""

    run_ids: list[str] = field(default_factory=list)
    skipped: int = 0  # spans that gave nothing looptrace can use
    unreadable: int = 0  # malformed pieces (attributes, messages) left out
    warnings: list[str] = field(default_factory=list)


def runs_from_spans(spans: list[Span], db_path: str) -> tuple[list[str], int]:
    """Write the runs ``spans`` show into ``db_path``; return (run ids, spans skipped
    plus malformed pieces left out)."""
    result = convert(spans, db_path)
    return result.run_ids, result.skipped + result.unreadable


# -- the SDK's spans and log records -------------------------------------------------


def from_sdk(spans: Iterable[Any], logs: Iterable[Any] = ()) -> list[Span]:
    """The SDK's ``ReadableSpan``s (an ``InMemorySpanExporter``'s, a span processor's)
    as ``Span``s; ``logs`` (the SDK's log records, e.g. an ``InMemoryLogExporter``'s)
    that belong to one of them become span events on it (``attach_logs``)."""
    out = [_sdk_span(s) for s in spans]
    attach_logs(out, (_sdk_log(r) for r in logs))
    return out


def log_event(name: str | None, time: float, attributes: Mapping[str, Any] | None,
              body: Any) -> SpanEvent:
    """A log record (an OpenTelemetry *event*: ``event_name`` + body) as a span event:
    its attributes, and its body under ``body``."""
    attrs = dict(attributes or {})
    name = name or attrs.get("event.name") or "log"
    if body is not None:
        attrs["body"] = body
    return SpanEvent(str(name), time, attrs)


def attach_logs(spans: list[Span], logs: Iterable[tuple[str, str | None, SpanEvent]]) -> int:
    """Put each log event ``(trace_id, span_id, event)`` on its span; return how many
    found no span (no span id, or a span not in ``spans``)."""
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    lost = 0
    touched: set[int] = set()
    for trace_id, span_id, ev in logs:
        span = by_id.get((trace_id, span_id or ""))
        if span is None:
            lost += 1
            continue
        span.events.append(ev)
        touched.add(id(span))
    for s in spans:
        if id(s) in touched:
            s.events.sort(key=lambda e: e.time)
    return lost


def _plain(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


def _sdk_span(s: Any) -> Span:
    ctx = s.context
    parent = s.parent
    status = s.status
    scope = getattr(s, "instrumentation_scope", None)
    return Span(
        trace_id=f"{ctx.trace_id:032x}", span_id=f"{ctx.span_id:016x}",
        parent_id=f"{parent.span_id:016x}" if parent is not None else None,
        name=s.name, start=(s.start_time or 0) / 1e9,
        end=s.end_time / 1e9 if s.end_time is not None else None,
        attributes=_plain(dict(s.attributes or {})),
        events=[SpanEvent(e.name, (e.timestamp or 0) / 1e9, _plain(dict(e.attributes or {})))
                for e in s.events or ()],
        status=status.status_code.name.lower() if status is not None else "unset",
        status_message=getattr(status, "description", None) or None,
        kind=s.kind.name.lower() if s.kind is not None else "internal",
        resource=_plain(dict(s.resource.attributes)) if s.resource is not None else {},
        scope=scope.name if scope is not None else None)


def _sdk_log(item: Any) -> tuple[str, str | None, SpanEvent]:
    rec = getattr(item, "log_record", item)
    ts = rec.timestamp or rec.observed_timestamp or 0
    ev = log_event(getattr(rec, "event_name", None), ts / 1e9,
                   _plain(dict(rec.attributes or {})), _plain(rec.body))
    span_id = f"{rec.span_id:016x}" if rec.span_id else None
    return f"{rec.trace_id or 0:032x}", span_id, ev


# -- sorting spans -------------------------------------------------------------------


def kind_of(s: Span) -> str:
    """What a span is to looptrace: agent, chat, tool, chain (OpenInference
    structure), create (``create_agent``) or other."""
    op = lower(s.attributes.get("gen_ai.operation.name"))
    oi = (lower(s.attributes.get("openinference.span.kind")) or "").upper()
    if op == "invoke_agent":
        return AGENT
    if op in CHAT_OPS or oi == "LLM":
        return CHAT
    if op == "execute_tool" or oi == "TOOL":
        return TOOL
    if op == "create_agent":
        return CREATE
    if oi in ("CHAIN", "AGENT"):
        return CHAIN
    if op is None and not oi and looks_like_chat(s):
        return CHAT
    return OTHER


@dataclass(eq=False)
class _Node:
    span: Span | None  # None: stands for a root span that did not arrive
    kind: str
    trace_id: str
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    missing_parent: str | None = None
    root: bool = False  # an agent invocation: a run of its own
    toolrun: bool = False  # a tool span holding model calls no agent span holds
    unit: _Node | None = None  # the run (root or toolrun node) it belongs to

    @property
    def start(self) -> float:
        if self.span is not None:
            return self.span.start
        return min((c.start for c in self.children), default=0.0)

    @property
    def end(self) -> float:
        if self.span is not None:
            return self.span.end if self.span.end is not None else self.span.start
        return max((c.end for c in self.children), default=self.start)


def _tree(spans: Sequence[Span]) -> tuple[list[_Node], list[_Node]]:
    """(top nodes, all span nodes). Spans whose parent did not arrive and that share
    that parent are put under one stand-in (``LOST``) for it."""
    nodes: dict[tuple[str, str], _Node] = {}
    for s in spans:
        nodes[(s.trace_id, s.span_id)] = _Node(s, kind_of(s), s.trace_id)
    tops: dict[tuple[str, str | None], list[_Node]] = {}
    for n in nodes.values():
        assert n.span is not None
        pid = n.span.parent_id if n.span.parent_id != n.span.span_id else None
        pid = pid or None
        p = nodes.get((n.trace_id, pid)) if pid else None
        if p is not None and p is not n:
            n.parent = p
            p.children.append(n)
        else:
            tops.setdefault((n.trace_id, pid), []).append(n)
    # a parent cycle (malformed ids) leaves nodes unreachable from the tops: cut it
    seen: set[int] = set()
    stack = [n for group in tops.values() for n in group]
    while stack:
        n = stack.pop()
        seen.add(id(n))
        stack.extend(n.children)
    for n in nodes.values():
        if id(n) not in seen and n.parent is not None:
            n.parent.children.remove(n)
            n.parent = None
            tops.setdefault((n.trace_id, "cycle"), []).append(n)
            stack = [n]
            while stack:
                m = stack.pop()
                seen.add(id(m))
                stack.extend(m.children)
    out: list[_Node] = []
    for (trace_id, pid), group in tops.items():
        if pid is not None and pid != "cycle":
            for n in group:
                n.missing_parent = pid
        if pid is not None and pid != "cycle" and len(group) > 1:
            v = _Node(None, LOST, trace_id, children=group, missing_parent=pid)
            for n in group:
                n.parent = v
            out.append(v)
        else:
            out.extend(group)
    return out, list(nodes.values())


def _walk(node: _Node) -> Iterable[_Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _mark(tops: list[_Node]) -> None:
    """Decide the runs: ``root`` (agent invocations) and ``toolrun`` (a tool span with
    model calls of its own), then ``unit`` (which run each span belongs to)."""
    # roots: an invoke_agent span anywhere; the top OpenInference chain of a trace, or of
    # what runs under a tool span; a lost root whose children are such chains
    stack: list[tuple[_Node, str]] = [(t, "none") for t in tops]
    while stack:
        n, ctx = stack.pop()
        if n.kind == AGENT:
            n.root, below = True, "chain"
        elif n.kind == LOST:
            n.root = any(c.kind == CHAIN for c in n.children)
            below = "chain" if n.root else ctx
        elif n.kind == CHAIN:
            n.root = ctx in ("none", "tool")
            below = "chain"
        elif n.kind == TOOL:
            below = "tool"
        else:
            below = ctx
        stack.extend((c, below) for c in n.children)
    # tool runs: a tool span with a model call below it and no agent span between
    for t in tops:
        for n in _walk(t):
            if n.kind != CHAT:
                continue
            p = n.parent
            while p is not None and not p.root and p.kind != TOOL:
                p = p.parent
            if p is not None and p.kind == TOOL:
                p.toolrun = True
    # units
    ustack: list[tuple[_Node, _Node | None]] = [(t, None) for t in tops]
    while ustack:
        n, unit = ustack.pop()
        if n.root:
            n.unit = n
            below_unit: _Node | None = n
        else:
            n.unit = unit
            below_unit = n if n.toolrun else unit
        ustack.extend((c, below_unit) for c in n.children)


# -- runs ------------------------------------------------------------------------------


@dataclass(eq=False)
class _Plan:
    """One run to write."""

    root: _Node | None  # its agent span, tool span (tool run) or lost root; None: loose calls
    chats: list[Chat] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)
    nodes: list[_Node] = field(default_factory=list)  # every span node of the run
    parent: _Plan | None = None
    via_tool: _Node | None = None  # the tool span of the parent run it runs in
    builder: RunBuilder | None = None
    call_ids: dict[int, str] = field(default_factory=dict)  # id(tool node) -> its call id
    expect: list[Signature] = field(default_factory=list)  # loose calls: what comes next
    pending: list[Any] = field(default_factory=list)  # calls not yet seen run
    done: set[int] = field(default_factory=set)  # id() of the calls and tools written

    @property
    def start(self) -> float:
        times = [c.span.start for c in self.chats] + [t.span.start for t in self.tools]
        if self.root is not None:
            times.append(self.root.start)
        return min(times, default=0.0)

    @property
    def depth(self) -> int:
        d, p = 0, self.parent
        while p is not None:
            d, p = d + 1, p.parent
        return d


def convert(spans: Iterable[Span], db_path: str, *,
            recorder: Recorder | None = None) -> GenaiResult:
    """Write the runs ``spans`` show into ``db_path`` (see the module's docstring), in
    one pass: runs still waiting for their next model call are ended."""
    importer = SpanImporter(db_path, recorder=recorder)
    result = importer.add(spans)
    importer.close()
    return result


class SpanImporter:
    """Spans into runs for as long as it lives: a receiver keeps one, and gives it each
    trace as it completes (``add``).

    A hand-rolled loop on an instrumented SDK sends one trace per model call: a call
    that continues a conversation seen in an earlier ``add`` goes to the same run (a
    loose run stays ``running`` until its model answers without tool calls, or until
    ``close``). A trace given again (late spans) replaces the runs its agent spans
    made before; calls already written are not written twice, and what was not
    written (a call whose content had not arrived: late log records) is read again,
    the loose run that held only that being replaced. A loose run whose calls
    all turn out to be calls of an agent run (a second instrumentation whose spans
    did not nest: openai-v2 under OpenInference's LangChain spans) is deleted.

    Example:
        ```python
        importer = SpanImporter("looptrace.db")
        for trace in traces:
            importer.add(trace)
        importer.close()
        ```
    """

    def __init__(self, db_path: str | os.PathLike[str], *, recorder: Recorder | None = None,
                 keep: int = 500) -> None:
        self.path = os.fspath(db_path)
        self.rec = recorder or Recorder(self.path)
        self.keep = keep  # loose runs remembered (to continue, or to find duplicated)
        # loose runs remembered, oldest first (by id()); and indexes of them: by the
        # traces their spans came in, and those a later call can continue (they have
        # a conversation to extend): each trace given costs the same however many
        # runs are remembered (content-less calls, one trace each, make many)
        self.loose: dict[int, _Plan] = {}
        self._by_trace: dict[str, dict[int, _Plan]] = {}
        self._talking: dict[int, _Plan] = {}
        self.traces: dict[str, list[str]] = {}  # trace id -> the runs its agent spans made
        self.written: set[tuple[str, str]] = set()  # loose calls and tools written
        self.lock = threading.Lock()

    def add(self, spans: Iterable[Span]) -> GenaiResult:
        """Write the runs ``spans`` show (see the module's docstring)."""
        with self.lock:
            return self._add(spans)

    def forget(self, trace_ids: Iterable[str]) -> None:
        """Traces whose runs are final: the same trace id given again (late, or by
        another client) makes runs of its own, never replaces these."""
        with self.lock:
            for tid in trace_ids:
                self.traces.pop(tid, None)

    def close(self) -> None:
        """End the loose runs still waiting for their next model call."""
        with self.lock:
            for g in self.loose.values():
                b = g.builder
                if b is not None and not b.run.ended:
                    b.end("completed" if b.calls else "error")
            self.rec.writer.flush()

    def _add(self, spans: Iterable[Span]) -> GenaiResult:
        uniq: dict[tuple[str, str], Span] = {}
        for s in spans:
            uniq[(s.trace_id, s.span_id)] = s  # a span sent twice counts once
        result = GenaiResult()
        tops, nodes = _tree(list(uniq.values()))
        _mark(tops)
        given = {t.trace_id for t in tops}
        replaced = [rid for tid in given for rid in self.traces.pop(tid, ())]
        if replaced:
            self._delete(replaced)
        reread = self._reread(given)
        probs = Problems()
        plans: dict[int, _Plan] = {}  # id(unit node) -> its plan
        loose_chats: list[Chat] = []
        loose_tools: list[ToolRun] = []
        creates: list[_Node] = []
        used: set[int] = set()
        every = [n for t in tops for n in _walk(t)]
        for n in every:
            if n.root or n.toolrun:
                plans[id(n)] = _Plan(n)
        for n in every:
            plan = plans.get(id(n.unit)) if n.unit is not None else None
            if n.span is None:
                continue
            if plan is not None:
                plan.nodes.append(n)
            if plan is None and n.kind in (CHAT, TOOL) and (
                    n.trace_id, n.span.span_id) in self.written:
                used.add(id(n))  # written when its trace came before
            elif n.kind == CHAT:
                c = _read_chat(n, probs)
                (plan.chats if plan is not None else loose_chats).append(c)
            elif n.kind == TOOL:
                t = _read_tool(n, probs)
                (plan.tools if plan is not None else loose_tools).append(t)
            elif n.kind == CREATE:
                creates.append(n)
        _link(plans)
        held = [c for p in plans.values() for c in p.chats]
        dropped = _nested_chats([*loose_chats, *held]) | _seen_twice(loose_chats, held)
        loose_chats = [c for c in loose_chats if id(c) not in dropped]
        for plan in plans.values():
            plan.chats = [c for c in plan.chats if id(c) not in dropped]
        self._drop_duplicated(held)
        near = {id(g): g for tid in given for g in self._by_trace.get(tid, {}).values()}
        loose = _group_loose(loose_chats, loose_tools, [*self._talking.values(), *(
            g for k, g in near.items() if k not in self._talking)] if loose_chats or
            loose_tools else [])
        loose += [g for g in reread if g not in loose]  # (their metadata, said again)
        # a run under a tool span no agent span holds: its parent is the run that tool joined
        joined = {id(t.node): g for g in loose for t in g.tools}
        for plan in plans.values():
            if plan.parent is None and plan.via_tool is not None:
                plan.parent = joined.get(id(plan.via_tool))
        ordered = sorted([*plans.values(), *loose], key=lambda p: (p.depth, p.start))
        written: set[int] = {id(g) for g in loose if g.builder is not None}
        for plan in ordered:
            if plan.parent is not None and id(plan.parent) not in written:
                plan.parent = None  # its parent wrote no run: a run of its own
            if not _worth_a_run(plan):
                continue
            new = plan.builder is None
            _write(plan, self.rec, probs, creates, used)
            written.add(id(plan))
            if plan.builder is not None and (new or plan.root is None):
                result.run_ids.append(plan.builder.id)
            if plan.root is not None and plan.builder is not None:
                self.traces.setdefault(plan.root.trace_id, []).append(plan.builder.id)
        for g in loose:
            if g.builder is not None:
                self.written.update((n.trace_id, n.span.span_id) for n in g.nodes
                                    if n.span is not None and id(n) in used)
                self._remember(g)
                _end_if_bare(g)
        self._forget()
        self.rec.writer.flush()
        result.run_ids = list(dict.fromkeys(result.run_ids))
        result.skipped = sum(1 for n in nodes if id(n) not in used)
        result.unreadable = probs.count
        bare = [c for c in [*loose_chats, *held] if c.messages is None]
        if bare:
            why = ", ".join(sorted({c.missing or "not captured" for c in bare}))
            result.warnings.append(f"{len(bare)} model calls carried no messages ({why}): "
                                   "left out, and said so in their run's metadata")
        if probs.count:
            result.warnings.append(f"{probs.count} malformed pieces left out (each run's "
                                   "metadata 'unreadable' names its own)")
        return result

    def _remember(self, g: _Plan) -> None:
        """Keep loose run ``g`` (given spans now), indexed by its traces."""
        self.loose.setdefault(id(g), g)
        for n in g.nodes:
            self._by_trace.setdefault(n.trace_id, {})[id(g)] = g
        if g.expect:
            self._talking[id(g)] = g

    def _let_go(self, g: _Plan) -> None:
        self.loose.pop(id(g), None)
        self._talking.pop(id(g), None)
        for tid in {n.trace_id for n in g.nodes} | {c.span.trace_id for c in g.chats}:
            runs = self._by_trace.get(tid)
            if runs is not None:
                runs.pop(id(g), None)
                if not runs:
                    del self._by_trace[tid]

    def _reread(self, traces: set[str]) -> list[_Plan]:
        """Traces given again (late spans, or late log records carrying the content):
        what loose runs took of them without writing it (calls without content, tool
        spans answering no call) is taken out, to be read again from the spans given
        now. A loose run left with nothing is deleted; the others are returned (their
        metadata is to be written again)."""
        def stale(n: _Node) -> bool:
            return (n.trace_id in traces and n.span is not None
                    and (n.trace_id, n.span.span_id) not in self.written)

        kept: list[Any] = []
        gone: list[Any] = []
        near = {id(g): g for tid in traces for g in self._by_trace.get(tid, {}).values()}
        for g in near.values():
            if not any(stale(n) for n in g.nodes):
                continue
            g.chats = [c for c in g.chats if not stale(c.node)]
            g.tools = [t for t in g.tools if not stale(t.node)]
            g.nodes = [n for n in g.nodes if not stale(n)]
            (kept if g.chats or g.tools else gone).append(g)
        if gone:
            self._delete([g.builder.id for g in gone if g.builder is not None])
            for g in gone:
                self._let_go(g)
                for tid in traces:  # (its nodes of these traces were taken out above)
                    self._by_trace.get(tid, {}).pop(id(g), None)
        return kept

    def _drop_duplicated(self, held: list[Chat]) -> None:
        """Delete the loose runs of earlier traces that are calls ``held`` holds."""
        if not held:
            return
        dup = []
        for g in self.loose.values():
            calls = [c for c in g.chats if c.messages is not None]
            if calls and g.builder is not None and len(_seen_twice(calls, held)) == len(calls):
                dup.append(g)
        if dup:
            self._delete([g.builder.id for g in dup if g.builder is not None])
            for g in dup:
                self._let_go(g)

    def _delete(self, run_ids: list[str]) -> None:
        self.rec.writer.flush()
        conn = connect(self.path)
        try:
            with conn:
                for rid in run_ids:
                    for table, key in (("events", "run_id"), ("messages", "run_id"),
                                       ("wire", "run_id"), ("runs", "id")):
                        conn.execute(f"DELETE FROM {table} WHERE {key} = ?", [rid])
        finally:
            conn.close()

    def _forget(self) -> None:
        """Keep the newest ``keep`` loose runs (and every one still running), and the
        runs of the newest ``20 * keep`` traces."""
        if len(self.loose) > self.keep + self.keep // 4:  # (now and then: a scan of them all)
            extra = len(self.loose) - self.keep
            old = [g for g in self.loose.values()
                   if g.builder is not None and g.builder.run.ended]
            gone = old[:extra]
            for g in gone:
                self.written.difference_update((n.trace_id, n.span.span_id) for n in g.nodes
                                               if n.span is not None)
                self._let_go(g)
        while len(self.traces) > 20 * self.keep:
            del self.traces[next(iter(self.traces))]


def _end_if_bare(g: _Plan) -> None:
    """A loose run of model calls without content ends now, completed (its metadata
    says the content was not captured): no later call can continue it (a
    conversation is followed by its messages), and a run left ``running`` would be
    waited on for ever. Late log records of its trace bring it back (``_reread``)."""
    b = g.builder
    if b is None or b.run.ended or not g.chats or any(c.messages is not None for c in g.chats):
        return
    b.end("completed", ts=max((c.span.end or c.span.start) for c in g.chats))


def _read_chat(n: _Node, probs: Problems) -> Chat:
    assert n.span is not None
    try:
        c = read_chat(n.span, probs)
    except Exception as exc:  # noqa: BLE001 - a shape no reader foresaw: left out, said
        probs.add(n.span, f"unreadable ({type(exc).__name__}: {exc})")
        c = Chat(n.span, None, missing="unreadable")
    c.node = n
    return c


def _read_tool(n: _Node, probs: Problems) -> ToolRun:
    assert n.span is not None
    try:
        t = read_tool(n.span, probs, n.parent.span if n.parent is not None else None)
    except Exception as exc:  # noqa: BLE001 - a shape no reader foresaw: left out, said
        probs.add(n.span, f"unreadable ({type(exc).__name__}: {exc})")
        t = ToolRun(n.span, "tool", None, None, None)
    t.node = n
    return t


def _link(plans: dict[int, _Plan]) -> None:
    """Each run's parent: the run of the span above it, through the nearest tool span."""
    for plan in plans.values():
        assert plan.root is not None
        if plan.root.toolrun and not plan.root.root:
            plan.parent = plans.get(id(plan.root.unit)) if plan.root.unit else None
            plan.via_tool = plan.root
            continue
        p = plan.root.parent
        while p is not None and p.kind != TOOL and not (p.root or p.toolrun):
            p = p.parent
        if p is not None and p.kind == TOOL and p.toolrun:
            plan.parent = plans.get(id(p))  # a run inside a tool run: no call of its own
        elif p is not None and p.kind == TOOL:
            plan.via_tool = p
            plan.parent = plans.get(id(p.unit)) if p.unit is not None else None
        elif p is not None:
            plan.parent = plans.get(id(p))


def _nested_chats(chats: list[Chat]) -> set[int]:
    """One model call seen by two instrumentations (OpenInference's LLM span over
    openai-v2's chat span) is one call: keep the outer span, or the inner one when
    only it has the messages. Returns the ids of the ``Chat``s to leave out."""
    by_node = {id(c.node): c for c in chats}
    drop: set[int] = set()
    for c in chats:
        p = c.node.parent
        while p is not None and id(p) not in by_node and not p.root:
            p = p.parent
        outer = by_node.get(id(p)) if p is not None else None
        if outer is None:
            continue
        if outer.messages is None and c.messages is not None:
            drop.add(id(outer))
        else:
            drop.add(id(c))
    return drop


def _seen_twice(loose: list[Chat], held: list[Chat]) -> set[int]:
    """Loose calls that are a call an agent run holds, seen by a second
    instrumentation that did not nest its span (OpenInference's LangChain spans are
    not the current context, so openai-v2's chat span starts a trace of its own):
    within that call's time, the same reply to the same messages."""
    out: set[int] = set()
    held = sorted((h for h in held if h.reply is not None and h.messages is not None),
                  key=lambda h: h.span.start)
    for c in loose:
        if c.reply is None or c.messages is None or c.span.end is None:
            continue
        for h in held:
            if h.span.start > c.span.start:
                break
            assert h.reply is not None and h.messages is not None  # (held is filtered so)
            if (h.span.end is not None and c.span.end <= h.span.end
                    and same(signature(h.reply), signature(c.reply))
                    and len(h.messages) == len(c.messages)
                    and all(same(signature(a), signature(b))
                            for a, b in zip(h.messages, c.messages, strict=True))):
                out.add(id(c))
                break
    return out


def _worth_a_run(plan: _Plan) -> bool:
    """An agent span always makes a run (it ran, even if nothing of it was seen); the
    rest only with a model call or a tool run."""
    if plan.root is not None and plan.root.kind == AGENT:
        return True
    return bool(plan.chats or plan.tools)


def _group_loose(chats: list[Chat], tools: list[ToolRun], existing: list[_Plan]) -> list[_Plan]:
    """Model calls no agent span holds, joined by conversation: a call continues the run
    (of this batch, or ``existing``) whose last call and reply its messages extend (the
    longest such; the same trace first). Calls without content go with a run of their
    trace; tool spans with the run whose call they answer. Returns the runs given
    something (new ones, and existing ones that go on)."""
    groups = list(existing)
    touched: list[_Plan] = []
    by_trace: dict[str, list[_Plan]] = {}

    def put(g: _Plan, trace_id: str) -> None:
        if g not in touched:
            touched.append(g)
        if g not in by_trace.setdefault(trace_id, []):
            by_trace[trace_id].append(g)

    for g in existing:
        for c in g.chats:
            if g not in by_trace.setdefault(c.span.trace_id, []):
                by_trace[c.span.trace_id].append(g)
    for c in sorted((c for c in chats if c.messages is not None), key=lambda c: c.span.start):
        assert c.messages is not None
        sigs = [signature(m) for m in c.messages]
        best: _Plan | None = None
        for g in groups:
            if g.expect and extends(g.expect, sigs) and (
                    best is None or len(g.expect) > len(best.expect) or (
                        len(g.expect) == len(best.expect)
                        and g.chats[-1].span.trace_id == c.span.trace_id)):
                best = g
        if best is None:
            best = _Plan(None)
            groups.append(best)
        best.chats.append(c)
        best.expect = sigs + ([signature(c.reply)] if c.reply is not None else [])
        put(best, c.span.trace_id)
    for c in sorted((c for c in chats if c.messages is None), key=lambda c: c.span.start):
        same_trace = by_trace.get(c.span.trace_id)
        if same_trace:
            g = min(same_trace, key=lambda g: abs(g.chats[0].span.start - c.span.start))
        else:
            g = _Plan(None)
            groups.append(g)
        g.chats.append(c)
        put(g, c.span.trace_id)
    for t in tools:
        found = None
        if t.call_id:
            found = next((g for g in reversed(groups) for c in g.chats if c.reply is not None
                          and any(tc["id"] == t.call_id for tc in c.reply.tool_calls)), None)
        if found is None:
            before = [(c.span.start, g) for g in by_trace.get(t.span.trace_id, ())
                      for c in g.chats if c.span.start <= t.span.start]
            found = max(before, key=lambda x: x[0])[1] if before else None
        if found is not None:
            found.tools.append(t)
            put(found, t.span.trace_id)
    for g in touched:
        have = {id(n) for n in g.nodes}
        g.nodes.extend(n for n in [*(c.node for c in g.chats), *(t.node for t in g.tools)]
                       if id(n) not in have)
    return touched


def _agent_name(plan: _Plan) -> str | None:
    root = plan.root
    if root is None or root.kind not in (AGENT, CHAIN, LOST):
        return None  # (a tool span's names are its caller's)
    spans = [root.span] if root.span is not None else [c.span for c in root.children
                                                      if c.span is not None]
    for s in spans:
        a = s.attributes
        name = first(a, "gen_ai.agent.name", "agent.name")
        if isinstance(name, str):
            return name
        meta = a.get("metadata")
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except ValueError:
                meta = None
        if isinstance(meta, dict) and meta.get("lc_agent_name"):
            return str(meta["lc_agent_name"])
    return None


def _run_name(plan: _Plan, agent: str | None) -> str:
    root = plan.root
    if agent:
        return agent
    if root is not None and root.span is not None:
        if root.kind == AGENT:
            return root.span.name.removeprefix("invoke_agent").strip() or root.span.name
        if root.kind == TOOL:
            name = first(root.span.attributes, "gen_ai.tool.name", "tool.name")
            return str(name or root.span.name.removeprefix("execute_tool").strip())
        return root.span.name
    if root is not None:
        return f"trace {root.trace_id[:8]} (root span missing)"
    opening = next((c for c in plan.chats if c.messages), None)
    provider = next((c.provider for c in plan.chats if c.provider), None) or "model"
    users = [m for m in opening.messages or [] if isinstance(m, HumanMessage)] if opening else []
    text = users[0].text.strip().replace("\n", " ") if users else ""
    short = text[:48] + ("..." if len(text) > 48 else "")
    return f"{provider}: {short}" if short else f"{provider} calls"


def _thread_id(plan: _Plan) -> str | None:
    spans = [n.span for n in plan.nodes if n.span is not None]
    if plan.root is not None and plan.root.span is not None:
        spans.insert(0, plan.root.span)
    for s in spans:
        v = first(s.attributes, "gen_ai.conversation.id", "session.id")
        if v:
            return str(v)
    return None


def _metadata(plan: _Plan, probs: Problems, creates: list[_Node]) -> dict[str, Any]:
    spans = [n.span for n in plan.nodes if n.span is not None]
    root = plan.root
    traces = sorted({s.trace_id for s in spans} | ({root.trace_id} if root else set()))
    meta: dict[str, Any] = {}
    if root is None:  # loose calls: one trace each, often
        meta["trace_ids"] = traces
    elif traces:
        meta["trace_id"] = traces[0]
    if root is not None and root.span is not None:
        meta["span_id"] = root.span.span_id
    scopes = sorted({s.scope for s in spans if s.scope})
    if scopes:
        meta["instrumentation"] = scopes
    conventions = sorted({c.convention for c in plan.chats if c.convention})
    if conventions:
        meta["conventions"] = conventions
    provider = next((c.provider for c in plan.chats if c.provider), None)
    if provider:
        meta["provider"] = provider
    service = next((s.resource.get("service.name") for s in spans
                    if s.resource.get("service.name")), None)
    if service:
        meta["service"] = service
    missing = [c for c in plan.chats if c.messages is None]
    if missing:
        why = sorted({c.missing or "not captured" for c in missing})
        hint = (" (set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, or your "
                "instrumentation's equivalent, to record them)" if "not captured" in why
                else "")
        meta["content"] = (f"{'; '.join(why)}: {len(missing)} of {len(plan.chats)} model "
                           f"calls carried no messages and are left out{hint}")
        meta["uncaptured_calls"] = [_call_summary(c) for c in missing[:_MAX_PROBLEMS]]
    lost = sorted({n.missing_parent for n in [*plan.nodes, *([root] if root else [])]
                   if n.missing_parent})
    if lost:
        meta["incomplete"] = (
            f"parent span {', '.join(lost[:5])} did not arrive (the trace's root span, or a "
            "span of a service that sent none): this run is what arrived")
    if any(c.made_up_ids for c in plan.chats):
        meta["ids"] = "made up by looptrace: the spans carried no tool call ids"
    agent = _agent_name(plan)
    for n in creates:
        assert n.span is not None
        a = n.span.attributes
        if agent and a.get("gen_ai.agent.name") == agent and a.get("gen_ai.agent.description"):
            meta["agent_description"] = a["gen_ai.agent.description"]
    problems = [f"span {s.span_id}: {p}" for s in spans for p in probs.by_span.get(
        s.span_id, ())]
    if problems:
        meta["unreadable"] = problems[:_MAX_PROBLEMS]
        if len(problems) > _MAX_PROBLEMS:
            meta["unreadable"].append(f"... and {len(problems) - _MAX_PROBLEMS} more")
    return meta


def _call_summary(c: Chat) -> dict[str, Any]:
    """What is known of a model call whose messages are not: when, which model, tokens."""
    a = c.span.attributes
    end = c.span.end
    out = {"span_id": c.span.span_id, "model": c.model, "ts": c.span.start,
           "duration_ms": round((end - c.span.start) * 1000, 3) if end is not None else None,
           "input_tokens": to_int(first(a, "gen_ai.usage.input_tokens",
                                       "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")),
           "output_tokens": to_int(first(a, "gen_ai.usage.output_tokens",
                                        "gen_ai.usage.completion_tokens",
                                        "llm.token_count.completion")),
           "finish_reason": finish_reason(a), "error": c.error}
    return {k: v for k, v in out.items() if v is not None}


def _write(plan: _Plan, rec: Recorder, probs: Problems, creates: list[_Node],
           used: set[int]) -> None:
    """Write (or, for a loose run given more calls, continue) the run of ``plan``."""
    root = plan.root
    agent = _agent_name(plan)
    meta = _metadata(plan, probs, creates)
    b = plan.builder
    if b is None:
        parent_state = plan.parent.builder.run if plan.parent and plan.parent.builder else None
        parent_call = None
        if plan.via_tool is not None and plan.parent is not None:
            parent_call = plan.parent.call_ids.get(id(plan.via_tool))
            if parent_call is None and plan.via_tool.span is not None:
                parent_call = _read_tool(plan.via_tool, Problems()).call_id
        b = RunBuilder(rec, name=_run_name(plan, agent), source=SOURCE, observed="otel",
                       started_at=plan.start, thread_id=_thread_id(plan), parent=parent_state,
                       parent_tool_call_id=parent_call, agent_name=agent, metadata=meta)
        plan.builder = b
    else:  # (computed whole again: what no longer holds, such as content missing, goes)
        _renote(b, meta)
    if root is not None and root.span is not None:
        used.add(id(root))
    for n in plan.nodes:
        if n.kind in (CHAIN, CREATE) or n is root:
            used.add(id(n))
    for n in creates:
        if _metadata_uses(n, agent):
            used.add(id(n))
    chats = sorted((c for c in plan.chats if c.messages is not None),
                   key=lambda c: c.span.start)
    items: list[tuple[float, int, Any]] = [(c.span.start, 1, c) for c in chats
                                           if id(c) not in plan.done]
    items += [(t.span.start, 0, t) for t in plan.tools if id(t) not in plan.done]
    items.sort(key=lambda x: (x[0], x[1]))
    for _, _, item in items:
        plan.done.add(id(item))
        if isinstance(item, Chat):
            assert item.messages is not None
            if root is None and b.run.ended:  # the conversation goes on: same run
                b.reopen()
            b.call(item.messages, ts=item.span.start, end_ts=item.span.end, reply=item.reply,
                   error=item.error, system=item.system, tools=item.tools, model=item.model,
                   extra={"provider": item.provider} if item.provider else None)
            used.add(id(item.node))
            plan.pending = list(item.reply.tool_calls) if item.reply is not None else []
            if root is None and item.error is not None:  # as wire.traffic ends them
                b.end("error", ts=item.span.end, error=item.error)
            elif root is None and item.reply is not None and not item.reply.tool_calls:
                b.end("completed", ts=item.span.end)
        elif _run_tool(b, plan, item, plan.pending, chats):
            used.add(id(item.node))
    if root is None:
        return  # a loose run ends with its answer (above), or when the importer closes
    error = error_of(root.span) if root.span is not None else None
    if error is None and root.kind != AGENT and chats:
        error = chats[-1].error  # (an agent span says itself how its run ended)
    status = "completed" if error is None else "error"
    b.end(status, ts=max(root.end, b.last_ts), error=error)


def _renote(b: RunBuilder, meta: dict[str, Any]) -> None:
    """Replace the run's metadata with ``meta`` (keeping what says who observed it)."""
    new = {**meta, "observed": b.metadata.get("observed")}
    if new != b.metadata:
        b.metadata = new
        b.rec.writer.put(RunRecord(b.run.id, {"metadata": new}))


def _metadata_uses(n: _Node, agent: str | None) -> bool:
    return bool(agent and n.span is not None and n.span.attributes.get("gen_ai.agent.name")
                == agent)


def _run_tool(b: RunBuilder, plan: _Plan, t: ToolRun, pending: list[dict[str, Any]],
              chats: list[Chat]) -> bool:
    """Record a tool span as the run of its tool call; False if it answers no call
    looptrace can name (no id, and no unanswered call of its name)."""
    cid = t.call_id
    call = next((c for c in pending if c["id"] == cid), None) if cid else None
    if cid is None:
        same = [c for c in pending if c["name"] == t.name]
        if t.args is not None:
            same = [c for c in same if c["args"] == t.args] or same
        call = same[0] if same else None
        cid = call["id"] if call else None
    if cid is None:
        return False
    if call is not None:
        pending.remove(call)
    plan.call_ids[id(t.node)] = cid
    # the result as the model got it (the same object, so it is one message): in the
    # first later call that sent it back
    msg = None
    for c in chats:
        if c.span.start >= t.span.start:
            msg = c.results().get(cid)
            if msg is not None:
                break
    if msg is None:
        content = t.result if t.result is not None else ""
        msg = ToolMessage(content, tool_call_id=cid, name=t.name,
                          status="error" if t.status == "error" else "success")
    else:  # what the call's messages do not say of it, the tool span does
        if not msg.name:
            msg.name = t.name
        if t.status == "error":
            msg.status = "error"
    args = call["args"] if call is not None else t.args
    b.tool(msg, ts=t.span.start, end_ts=t.span.end, name=t.name, args=args, error=t.error)
    return True


__all__ = ["GenaiResult", "SpanImporter", "attach_logs", "convert", "from_sdk", "kind_of",
           "log_event", "runs_from_spans"]
