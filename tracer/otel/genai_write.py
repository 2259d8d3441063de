"""A plan (``tracer.otel.genai_group``) written as a run through ``ingest.RunBuilder``:
its name, thread, metadata, model calls and tool calls."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from tracer.record.ingest import RunBuilder
from tracer.record.recorder import Recorder
from tracer.vocab.records import RunRecord

from .genai_group import AGENT, CHAIN, CREATE, LOST, TOOL, Plan, SpanNode, read_tool_node
from .genai_read import (
    Chat,
    Problems,
    ToolRun,
    error_of,
    finish_reason,
    first,
    to_int,
)

SOURCE = "otel"  # runs.source of what the spans made
_MAX_PROBLEMS = 20  # problems named in a run's metadata


def end_if_bare(g: Plan) -> None:
    """A loose run of model calls without content ends now, completed (its metadata
    says the content was not captured): no later call can continue it (a
    conversation is followed by its messages), and a run left ``running`` would be
    waited on for ever. Late log records of its trace bring it back (``_reread``)."""
    b = g.builder
    if b is None or b.run.ended or not g.chats or any(c.messages is not None for c in g.chats):
        return
    b.end("completed", ts=max((c.span.end or c.span.start) for c in g.chats))


def _agent_name(plan: Plan) -> str | None:
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


def _run_name(plan: Plan, agent: str | None) -> str:
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


def _thread_id(plan: Plan) -> str | None:
    spans = [n.span for n in plan.nodes if n.span is not None]
    if plan.root is not None and plan.root.span is not None:
        spans.insert(0, plan.root.span)
    for s in spans:
        v = first(s.attributes, "gen_ai.conversation.id", "session.id")
        if v:
            return str(v)
    return None


def _metadata(plan: Plan, probs: Problems, creates: list[SpanNode]) -> dict[str, Any]:
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


def write_plan(plan: Plan, rec: Recorder, probs: Problems, creates: list[SpanNode],
           used: set[int]) -> None:
    """Write (or, for a loose run given more calls, continue) the run of ``plan``.

    Args:
        plan: the run to write (its ``builder`` is set here on first write).
        rec: the recorder to write through.
        probs: what was unreadable, for the run's metadata.
        creates: the ``create_agent`` spans of the batch (where an agent's name is).
        used: ``id()`` of the ``create`` spans already used, shared across plans.
    """
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
                parent_call = read_tool_node(plan.via_tool, Problems()).call_id
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


def _metadata_uses(n: SpanNode, agent: str | None) -> bool:
    return bool(agent and n.span is not None and n.span.attributes.get("gen_ai.agent.name")
                == agent)


def _run_tool(b: RunBuilder, plan: Plan, t: ToolRun, pending: list[dict[str, Any]],
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


__all__ = ["SOURCE", "end_if_bare", "write_plan"]
