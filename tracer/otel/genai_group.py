"""Spans into runs to write: the span tree, which span is what (``kind_of``), and the
plans (one per run) that ``tracer.otel.genai`` writes: agent runs, subagents tied to
their tool call, and loose model calls joined by conversation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracer.record.ingest import RunBuilder, Signature, extends, same, signature

from .genai_read import (
    CHAT_OPS,
    Chat,
    Problems,
    ToolRun,
    looks_like_chat,
    lower,
    read_chat,
    read_tool,
)
from .spans import Span

# span kinds, as ``tracer.otel.genai`` sorts them
AGENT, CHAT, TOOL, CHAIN, CREATE, OTHER, LOST = (
    "agent", "chat", "tool", "chain", "create", "other", "lost")


# -- sorting spans -------------------------------------------------------------------


def kind_of(s: Span) -> str:
    """What a span is to looptrace: agent, chat, tool, chain (OpenInference
    structure), create (``create_agent``) or other.

    Args:
        s: the span.

    Returns:
        One of ``AGENT``, ``CHAT``, ``TOOL``, ``CHAIN``, ``CREATE``, ``OTHER``.
    """
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
class SpanNode:
    span: Span | None  # None: stands for a root span that did not arrive
    kind: str
    trace_id: str
    parent: SpanNode | None = None
    children: list[SpanNode] = field(default_factory=list)
    missing_parent: str | None = None
    root: bool = False  # an agent invocation: a run of its own
    toolrun: bool = False  # a tool span holding model calls no agent span holds
    unit: SpanNode | None = None  # the run (root or toolrun node) it belongs to

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


def span_tree(spans: Sequence[Span]) -> tuple[list[SpanNode], list[SpanNode]]:
    """The spans as a tree. Spans whose parent did not arrive and that share that
    parent are put under one stand-in (``LOST``) for it.

    Args:
        spans: the spans of a batch.

    Returns:
        The top nodes, and every span's node.
    """
    nodes: dict[tuple[str, str], SpanNode] = {}
    for s in spans:
        nodes[(s.trace_id, s.span_id)] = SpanNode(s, kind_of(s), s.trace_id)
    tops: dict[tuple[str, str | None], list[SpanNode]] = {}
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
    out: list[SpanNode] = []
    for (trace_id, pid), group in tops.items():
        if pid is not None and pid != "cycle":
            for n in group:
                n.missing_parent = pid
        if pid is not None and pid != "cycle" and len(group) > 1:
            v = SpanNode(None, LOST, trace_id, children=group, missing_parent=pid)
            for n in group:
                n.parent = v
            out.append(v)
        else:
            out.extend(group)
    return out, list(nodes.values())


def walk(node: SpanNode) -> Iterable[SpanNode]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def mark(tops: list[SpanNode]) -> None:
    """Decide the runs: ``root`` (agent invocations) and ``toolrun`` (a tool span with
    model calls of its own), then ``unit`` (which run each span belongs to)."""
    # roots: an invoke_agent span anywhere; the top OpenInference chain of a trace, or of
    # what runs under a tool span; a lost root whose children are such chains
    stack: list[tuple[SpanNode, str]] = [(t, "none") for t in tops]
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
        for n in walk(t):
            if n.kind != CHAT:
                continue
            p = n.parent
            while p is not None and not p.root and p.kind != TOOL:
                p = p.parent
            if p is not None and p.kind == TOOL:
                p.toolrun = True
    # units
    ustack: list[tuple[SpanNode, SpanNode | None]] = [(t, None) for t in tops]
    while ustack:
        n, unit = ustack.pop()
        if n.root:
            n.unit = n
            below_unit: SpanNode | None = n
        else:
            n.unit = unit
            below_unit = n if n.toolrun else unit
        ustack.extend((c, below_unit) for c in n.children)


# -- runs ------------------------------------------------------------------------------


@dataclass(eq=False)
class Plan:
    """One run to write."""

    root: SpanNode | None  # its agent span, tool span (tool run) or lost root; None: loose calls
    chats: list[Chat] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)
    nodes: list[SpanNode] = field(default_factory=list)  # every span node of the run
    parent: Plan | None = None
    via_tool: SpanNode | None = None  # the tool span of the parent run it runs in
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


def read_chat_node(n: SpanNode, probs: Problems) -> Chat:
    assert n.span is not None
    try:
        c = read_chat(n.span, probs)
    except Exception as exc:  # noqa: BLE001 - a shape no reader foresaw: left out, said
        probs.add(n.span, f"unreadable ({type(exc).__name__}: {exc})")
        c = Chat(n.span, None, missing="unreadable")
    c.node = n
    return c


def read_tool_node(n: SpanNode, probs: Problems) -> ToolRun:
    assert n.span is not None
    try:
        t = read_tool(n.span, probs, n.parent.span if n.parent is not None else None)
    except Exception as exc:  # noqa: BLE001 - a shape no reader foresaw: left out, said
        probs.add(n.span, f"unreadable ({type(exc).__name__}: {exc})")
        t = ToolRun(n.span, "tool", None, None, None)
    t.node = n
    return t


def link_runs(plans: dict[int, Plan]) -> None:
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


def nested_chats(chats: list[Chat]) -> set[int]:
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


def seen_twice(loose: list[Chat], held: list[Chat]) -> set[int]:
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


def worth_a_run(plan: Plan) -> bool:
    """An agent span always makes a run (it ran, even if nothing of it was seen); the
    rest only with a model call or a tool run."""
    if plan.root is not None and plan.root.kind == AGENT:
        return True
    return bool(plan.chats or plan.tools)


def group_loose(chats: list[Chat], tools: list[ToolRun], existing: list[Plan]) -> list[Plan]:
    """Model calls no agent span holds, joined by conversation: a call continues the run
    (of this batch, or ``existing``) whose last call and reply its messages extend (the
    longest such; the same trace first). Calls without content go with a run of their
    trace; tool spans with the run whose call they answer.

    Args:
        chats: the model calls no agent span holds.
        tools: the tool spans no agent span holds.
        existing: loose runs of earlier batches that a call may continue.

    Returns:
        The runs given something (new ones, and existing ones that go on).
    """
    groups = list(existing)
    touched: list[Plan] = []
    by_trace: dict[str, list[Plan]] = {}

    def put(g: Plan, trace_id: str) -> None:
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
        best: Plan | None = None
        for g in groups:
            if g.expect and extends(g.expect, sigs) and (
                    best is None or len(g.expect) > len(best.expect) or (
                        len(g.expect) == len(best.expect)
                        and g.chats[-1].span.trace_id == c.span.trace_id)):
                best = g
        if best is None:
            best = Plan(None)
            groups.append(best)
        best.chats.append(c)
        best.expect = sigs + ([signature(c.reply)] if c.reply is not None else [])
        put(best, c.span.trace_id)
    for c in sorted((c for c in chats if c.messages is None), key=lambda c: c.span.start):
        same_trace = by_trace.get(c.span.trace_id)
        if same_trace:
            g = min(same_trace, key=lambda g: abs(g.chats[0].span.start - c.span.start))
        else:
            g = Plan(None)
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
