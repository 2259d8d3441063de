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

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tracer.db.schema import connect
from tracer.record.recorder import Recorder

from .genai_group import (
    CHAT,
    CREATE,
    TOOL,
    Plan,
    SpanNode,
    group_loose,
    kind_of,
    link_runs,
    mark,
    nested_chats,
    read_chat_node,
    read_tool_node,
    seen_twice,
    span_tree,
    walk,
    worth_a_run,
)
from .genai_read import (
    Chat,
    Problems,
    ToolRun,
)
from .genai_sdk import attach_logs, from_sdk, log_event
from .genai_write import end_if_bare, write_plan
from .spans import Span


@dataclass
class GenaiResult:
    """What ``convert`` wrote and left out."""

    run_ids: list[str] = field(default_factory=list)
    skipped: int = 0  # spans that gave nothing looptrace can use
    unreadable: int = 0  # malformed pieces (attributes, messages) left out
    warnings: list[str] = field(default_factory=list)


def runs_from_spans(spans: list[Span], db_path: str) -> tuple[list[str], int]:
    """Write the runs ``spans`` show into ``db_path``.

    Args:
        spans: the spans of one batch, any order.
        db_path: the looptrace file to write into (created if missing).

    Returns:
        The run ids written, and how many spans were skipped plus malformed pieces
        left out.
    """
    result = convert(spans, db_path)
    return result.run_ids, result.skipped + result.unreadable


def convert(spans: Iterable[Span], db_path: str, *,
            recorder: Recorder | None = None) -> GenaiResult:
    """Write the runs ``spans`` show into ``db_path`` (see the module's docstring), in
    one pass: runs still waiting for their next model call are ended.

    Args:
        spans: the spans of one batch, any order.
        db_path: the looptrace file to write into.
        recorder: the recorder to write through (default: a new one on ``db_path``).

    Returns:
        What was written and what was left out (``GenaiResult``).
    """
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
        self.loose: dict[int, Plan] = {}
        self._by_trace: dict[str, dict[int, Plan]] = {}
        self._talking: dict[int, Plan] = {}
        self.traces: dict[str, list[str]] = {}  # trace id -> the runs its agent spans made
        self.written: set[tuple[str, str]] = set()  # loose calls and tools written
        self.lock = threading.Lock()

    def add(self, spans: Iterable[Span]) -> GenaiResult:
        """Write the runs ``spans`` show (see the module's docstring).

        Args:
            spans: the spans of one trace (or more), any order.

        Returns:
            What this call wrote and left out.
        """
        with self.lock:
            return self._add(spans)

    def forget(self, trace_ids: Iterable[str]) -> None:
        """Traces whose runs are final: the same trace id given again (late, or by
        another client) makes runs of its own, never replaces these.

        Args:
            trace_ids: the traces to let go of.
        """
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
        tops, nodes = span_tree(list(uniq.values()))
        mark(tops)
        given = {t.trace_id for t in tops}
        replaced = [rid for tid in given for rid in self.traces.pop(tid, ())]
        if replaced:
            self._delete(replaced)
        reread = self._reread(given)
        probs = Problems()
        plans: dict[int, Plan] = {}  # id(unit node) -> its plan
        loose_chats: list[Chat] = []
        loose_tools: list[ToolRun] = []
        creates: list[SpanNode] = []
        used: set[int] = set()
        every = [n for t in tops for n in walk(t)]
        for n in every:
            if n.root or n.toolrun:
                plans[id(n)] = Plan(n)
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
                c = read_chat_node(n, probs)
                (plan.chats if plan is not None else loose_chats).append(c)
            elif n.kind == TOOL:
                t = read_tool_node(n, probs)
                (plan.tools if plan is not None else loose_tools).append(t)
            elif n.kind == CREATE:
                creates.append(n)
        link_runs(plans)
        held = [c for p in plans.values() for c in p.chats]
        dropped = nested_chats([*loose_chats, *held]) | seen_twice(loose_chats, held)
        loose_chats = [c for c in loose_chats if id(c) not in dropped]
        for plan in plans.values():
            plan.chats = [c for c in plan.chats if id(c) not in dropped]
        self._drop_duplicated(held)
        near = {id(g): g for tid in given for g in self._by_trace.get(tid, {}).values()}
        loose = group_loose(loose_chats, loose_tools, [*self._talking.values(), *(
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
            if not worth_a_run(plan):
                continue
            new = plan.builder is None
            write_plan(plan, self.rec, probs, creates, used)
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
                end_if_bare(g)
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

    def _remember(self, g: Plan) -> None:
        """Keep loose run ``g`` (given spans now), indexed by its traces."""
        self.loose.setdefault(id(g), g)
        for n in g.nodes:
            self._by_trace.setdefault(n.trace_id, {})[id(g)] = g
        if g.expect:
            self._talking[id(g)] = g

    def _let_go(self, g: Plan) -> None:
        self.loose.pop(id(g), None)
        self._talking.pop(id(g), None)
        for tid in {n.trace_id for n in g.nodes} | {c.span.trace_id for c in g.chats}:
            runs = self._by_trace.get(tid)
            if runs is not None:
                runs.pop(id(g), None)
                if not runs:
                    del self._by_trace[tid]

    def _reread(self, traces: set[str]) -> list[Plan]:
        """Traces given again (late spans, or late log records carrying the content):
        what loose runs took of them without writing it (calls without content, tool
        spans answering no call) is taken out, to be read again from the spans given
        now. A loose run left with nothing is deleted; the others are returned (their
        metadata is to be written again)."""
        def stale(n: SpanNode) -> bool:
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
            if calls and g.builder is not None and len(seen_twice(calls, held)) == len(calls):
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


__all__ = ["GenaiResult", "SpanImporter", "attach_logs", "convert", "from_sdk", "kind_of",
           "log_event", "runs_from_spans"]
