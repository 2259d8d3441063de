"""A run as text a person or a coding agent reads: ``looptrace show`` and the MCP server.

``overview(db, run)`` is a run's summary with its findings, each at its step;
``step_view(db, run, n)`` one step: the hook, the caption, and the messages as the
model received them there (at a model call) or the conversation as it stood, long
contents cut with a note of how to get the rest (``message_text`` pages through one
message). Both return plain JSON-able dicts; ``render_overview`` and ``render_step``
print them. Steps are counted from 1, as the replay shows them ("Step N / M") and
``looptrace diff`` counts them. Built on ``TraceDB``, ``build_replay`` and
``check_run``; nothing here writes to the database.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from decimal import Decimal
from typing import Any

from tracer.errors import StepOutOfRange
from tracer.read.calls import call_of
from tracer.read.captions import captions
from tracer.read.loader import Message, Run, RunSummary, TraceDB, tokens_text
from tracer.read.steps import Replay, build_replay
from tracer.read.usage_why import usage_why
from tracer.vocab.content import content_text
from tracer.vocab.records import MODEL_HOOKS
from tracer.vocab.terminal import safe_text
from tracer.vocab.words import plural

__all__ = [
    "DEFAULT_CUT",
    "StepOutOfRange",
    "message_text",
    "notes_of",
    "open_replay",
    "overview",
    "render_notes",
    "render_overview",
    "render_step",
    "step_of_seq",
    "step_view",
]

DEFAULT_CUT = 2000  # characters of a message's content shown before it is cut


def open_replay(db: TraceDB, run_ref: str) -> tuple[Run, Replay]:
    """The run (an id or a unique prefix) and its replay."""
    run = db.run(db.resolve(run_ref))
    return run, build_replay(run)


def step_of_seq(replay: Replay, seq: int | None) -> int | None:
    """The step (counted from 1) of the event ``seq`` (``Replay.index_of_seq``, the
    app's rule too)."""
    i = replay.index_of_seq(seq)
    return None if i is None else i + 1


def _summary(s: RunSummary) -> dict[str, Any]:
    d = asdict(s)
    d["duration_s"] = s.duration_s
    return d


def findings_of(db: TraceDB, run: Run, replay: Replay | None = None) -> list[Any]:
    """The run's findings (``check_run``), read back where ``looptrace check`` kept them;
    none are kept from here (read-only). ``replay``: the run's, already built (the run
    is then not replayed again to be checked)."""
    from tracer.checks.run import findings_for

    replays = {run.id: replay} if replay is not None else None
    return findings_for(db, [run.id], keep=False, replays=replays)[run.id]


def notes_of(db: TraceDB, run: Run) -> dict[str, Any]:
    """The run's notes (each with its step; ``tracer.db.notes``) and, for a fork or a
    replay, the run it came from with how many notes that run has: a fork copies no
    notes, it points at them."""
    from tracer.read.fork_links import origin_of

    out: dict[str, Any] = {"notes": [n.to_dict() for n in db.notes(run.id)]}
    origin = origin_of(run.metadata)
    if origin is not None:
        of, step = origin
        out["source"] = {"run": of, "step": step, "notes": len(db.notes(of))}
    return out


def cost_of(db: TraceDB, run: Run, replay: Replay) -> dict[str, Any]:
    """The run's cost (``tracer.read.cost``): with its subagent runs and its own, by
    model, and each of its own model calls at its step."""
    from tracer.read.cost import run_costs

    c = run_costs(db, [run.id])[run.id]
    return {**c.to_dict(), "text": c.text(),
            "model_calls": [{**k.to_dict(), "step": step_of_seq(replay, k.seq),
                             "text": k.text(),
                             "tokens": [(k.usage or {}).get("input_tokens"),
                                        (k.usage or {}).get("output_tokens")]}
                            for k in c.calls]}


def overview(db: TraceDB, run_ref: str) -> dict[str, Any]:
    """A run's summary, its subagent runs, its cost, its findings with their steps and
    its notes (``notes_of``)."""
    run, replay = open_replay(db, run_ref)
    found = findings_of(db, run, replay)
    findings = []
    for f in found:
        d = f.to_dict()
        d["step"] = step_of_seq(replay, f.seq)
        findings.append(d)
    from tracer.checks.run import health

    return {
        "run": {**_summary(run.summary), "models": db.models([run.id])[run.id],
                "answered_calls": sum(1 for e in run.events
                                      if e.hook in MODEL_HOOKS and e.phase == "exit")},
        "steps": len(replay.steps),
        "metadata": run.metadata,
        "subagent_runs": [{"id": c.id, "name": c.name, "status": c.status,
                           "parent_tool_call_id": c.parent_tool_call_id}
                          for c in run.children],
        "health": health(found),
        "debugger_edits": debugger_edits(replay),
        "findings": findings,
        "cost": cost_of(db, run, replay),
        "usage_why": usage_why(db.wire(run.id)) if run.summary.total_tokens is None else None,
        **asked_and_answered(run),
        **notes_of(db, run),
    }


ASKED_CUT = 200  # characters of the question and of the answer in the summary


def asked_and_answered(run: Run) -> dict[str, str | None]:
    """What the run was asked (its first human message) and what it answered (its last
    AI message with no tool call), each cut to ``ASKED_CUT`` characters; None where the
    run has none."""
    msgs = run.messages
    asked = next((m for m in msgs if m.type == "human"), None)
    last_ai = next((m for m in reversed(msgs) if m.type == "ai"), None)
    answered = last_ai if last_ai is not None and not last_ai.tool_calls else None

    def cut(m: Message | None) -> str | None:
        if m is None:
            return None
        text = " ".join(m.text.split())
        return text if len(text) <= ASKED_CUT else text[: ASKED_CUT - 1] + "…"

    return {"asked": cut(asked), "answered": cut(answered)}


def _cut(text: str, limit: int, more: str) -> tuple[str, dict[str, Any] | None]:
    if limit <= 0 or len(text) <= limit:
        return text, None
    return text[:limit], {"shown": limit, "total": len(text), "rest": more}


def _message(m: Message, i: int, limit: int, rest_hint: str,
             replay: Replay) -> dict[str, Any]:
    text, cut = _cut(content_text(m.content), limit, rest_hint.format(index=i))
    d: dict[str, Any] = {"index": i, "type": m.type, "key": m.key, "content": text}
    if cut:
        d["cut"] = cut
    if m.name:
        d["name"] = m.name
    if m.tool_call_id:
        d["tool_call_id"] = m.tool_call_id
    if m.status:
        d["status"] = m.status
    calls = []
    for c in m.tool_calls:
        args = json.dumps(c.get("args"), ensure_ascii=False, default=str)
        a, acut = _cut(args, limit, rest_hint.format(index=i))
        calls.append({"id": c.get("id"), "name": c.get("name"), "args": a,
                      **({"args_cut": acut} if acut else {})})
    if calls:
        d["tool_calls"] = calls
    note = replay.version_note(m)
    if note:
        d["version"] = note
    return d


def step_view(db: TraceDB, run_ref: str, step: int, *, cut: int = DEFAULT_CUT,
              offset: int = 0, limit: int | None = None,
              rest_hint: str = "") -> dict[str, Any]:
    """Step ``step`` (from 1) of a run: the event (hook, phase, middleware, lap, tool
    call), its caption, the tool calls still without a result, and the messages there
    (``offset``/``limit`` page through them; contents longer than ``cut`` are cut)."""
    run, replay = open_replay(db, run_ref)
    total = len(replay.steps)
    if not 1 <= step <= total:
        msg = (f"run {run.id[:12]} has steps 1 to {total}, not {step}" if total
               else f"run {run.id[:12]} has no steps")
        raise StepOutOfRange(msg)
    s = replay.steps[step - 1]
    ev = s.event
    msgs = replay.messages_at(s.index)
    model_call = ev.hook in ("wrap_model_call", "model") and ev.phase in ("enter", "sent")
    hint = rest_hint or f"looptrace show {run.id[:12]} --step {step} --full"
    shown = msgs[offset: None if limit is None else offset + max(0, limit)]
    return {
        "run_id": run.id,
        "step": step,
        "steps": total,
        "hook": ev.hook,
        "phase": ev.phase,
        "middleware": ev.middleware,
        "lap": ev.lap,
        "tool_call_id": ev.tool_call_id,
        "node": s.node,
        "kind": s.kind,
        "caption": captions(replay)[s.index],
        "messages_are": ("what the model received at this call" if model_call
                         else "the conversation as it stood at this step"),
        "pending_tool_calls": sorted(replay.pending_calls(s.index)),
        # (at a model call: the rest of what the model received, resolved)
        **({"request": call.request.to_dict()} if model_call and (
            call := call_of(run, ev.seq)) is not None else {}),
        **_edit_of(ev),
        "notes": [n.to_dict() for n in db.notes(run.id) if n.step == step],
        "messages_total": len(msgs),
        "messages_offset": offset,
        "messages": [_message(m, offset + i, cut, hint, replay)
                     for i, m in enumerate(shown)],
    }


def _edit_of(ev: Any) -> dict[str, Any]:
    """At a debugger's ``debug`` step that changed something: ``{"edit": {"change",
    "before", "after"}}`` (what the person changed, as recorded); else nothing."""
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if ev.phase != "debug" or p.get("outcome") != "edited":
        return {}
    return {"edit": {"change": p.get("change"), "before": p.get("before"),
                     "after": p.get("after")}}


def debugger_edits(replay: Replay) -> list[dict[str, Any]]:
    """The changes made in the debugger during the run, in order: ``{"step", "hook",
    "tool_call_id", "change"}`` (a tool result typed in by hand among them)."""
    out = []
    for s in replay.steps:
        ev = s.event
        edit = _edit_of(ev).get("edit")
        if edit is not None:
            out.append({"step": s.index + 1, "hook": ev.hook, "tool_call_id": ev.tool_call_id,
                        "change": edit["change"]})
    return out


def message_text(db: TraceDB, run_ref: str, step: int, index: int, *, offset: int = 0,
                 limit: int = 8000) -> dict[str, Any]:
    """The content of message ``index`` at step ``step``, ``limit`` characters from
    ``offset`` (and its tool calls' arguments in full when they fit)."""
    run, replay = open_replay(db, run_ref)
    total = len(replay.steps)
    if not 1 <= step <= total:
        msg = f"run {run.id[:12]} has steps 1 to {total}, not {step}"
        raise StepOutOfRange(msg)
    msgs = replay.messages_at(step - 1)
    if not 0 <= index < len(msgs):
        msg = f"step {step} of run {run.id[:12]} has messages 0 to {len(msgs) - 1}, not {index}"
        raise StepOutOfRange(msg)
    m = msgs[index]
    text = content_text(m.content)
    if m.tool_calls:
        text += "\n[tool_calls] " + json.dumps(m.tool_calls, ensure_ascii=False, default=str)
    part = text[offset: offset + limit]
    end = offset + len(part)
    return {"run_id": run.id, "step": step, "index": index, "type": m.type,
            "total_chars": len(text), "offset": offset, "text": part,
            "next_offset": end if end < len(text) else None}


# -- text ----------------------------------------------------------------------------------
def _when(ts: float | None) -> str:
    if ts is None:
        return "-"
    import time

    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def render_overview(d: dict[str, Any]) -> str:
    r = d["run"]
    dur = f"{r['duration_s']:.2f} s" if r.get("duration_s") is not None else "-"
    lines = [
        f"run {r['id']}  {r.get('name') or ''}",
        f"  status {r['status']}   started {_when(r.get('started_at'))}   took {dur}",
        (f"  {plural(r['laps'], 'lap')}, {plural(r['model_calls'], 'model call')}, "
         f"{plural(r['tool_calls'], 'tool call')}, {plural(r['errors'], 'error')}, "
         f"{tokens_text(r.get('total_tokens'), unit=True)}, {plural(d['steps'], 'step')}"),
    ]
    if d.get("asked") is not None:
        lines.append(f"  asked: {d['asked']}")
    if "answered" in d:
        lines.append(f"  answered: {d['answered']}" if d["answered"] is not None
                     else "  answered: (no final answer: the run did not end in plain text)")
    models = r.get("models") or []
    if models or r.get("model") or r.get("provider"):
        # the models that answered (a fallback's), else the model asked: and whether
        # it answered with no name in its replies, or did not answer at all
        said = (f"model{'s' if len(models) > 1 else ''} {', '.join(models)}" if models
                else f"model {r.get('model') or '-'} (asked; no model name in its replies)"
                if r.get("answered_calls") else
                f"model {r.get('model') or '-'} (asked; none answered)")
        lines.append(f"  {said} ({r.get('provider') or '-'})"
                     f"   source {r.get('source') or '-'}")
    cost = d.get("cost")
    if cost:
        lines.append(f"  cost {cost['text']}")
        if len(cost.get("models") or {}) > 1:
            lines.extend(f"    {m}: {_cost_text(c)}" for m, c in cost["models"].items())
    if r.get("parent_id"):
        lines.append(f"  subagent run of {r['parent_id'][:12]} "
                     f"(tool call {r.get('parent_tool_call_id')})")
    if r.get("error"):
        lines.append(f"  error: {r['error']}")
    meta = d.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("looptrace"), dict):
        lt = meta["looptrace"]
        lines.append(f"  recorded through {lt.get('through')}; not seen: {lt.get('not_seen')}")
    for c in d["subagent_runs"]:
        lines.append(f"  subagent run {c['id'][:12]} {c.get('name') or ''} ({c['status']}),"
                     f" from tool call {c.get('parent_tool_call_id')}")
    calls = (cost or {}).get("model_calls") or []
    if calls:
        lines.append(f"model calls ({len(calls)}):")
        for k in calls:
            i, o = k["tokens"]
            tokens = "usage not reported" if i is None and o is None else f"{i} in, {o} out"
            lines.append(f"  step {k['step']}  {k['model'] or '-'}  {tokens}  {k['text']}")
    if d.get("usage_why"):
        lines.append(f"  usage not reported: {d['usage_why']}")
    lines.append(f"health: {d['health']}")
    for e in d.get("debugger_edits") or []:
        call = f" (tool call {e['tool_call_id']})" if e.get("tool_call_id") else ""
        lines.append(f"  changed in the debugger at step {e['step']}, {e['hook']}{call}: "
                     f"{e.get('change') or 'an edit'} (not what the agent did by itself)")
    for f in d["findings"]:
        where = f"step {f['step']}" if f.get("step") else "the run"
        lines.append(f"  {f['severity'].upper():7} {f['rule']} [{f['provider'] or 'all'}] "
                     f"at {where}")
        lines.append(f"          {f['message']}")
        if f.get("message_keys"):
            lines.append(f"          messages: {', '.join(f['message_keys'])}")
    src = d.get("source")
    if src:
        what = f"forks run {src['run'][:12]} at step {src['step']}" if src.get("step") else (
            f"reruns run {src['run'][:12]}")
        lines.append(f"this run {what}; notes on the source run: {src['notes']}"
                     + (f" (looptrace note {src['run'][:12]})" if src["notes"] else ""))
    if d.get("notes"):
        lines.append(f"notes ({len(d['notes'])}):")
        lines.append(render_notes(d["notes"]).rstrip("\n"))
    if d["findings"]:
        lines.append(f"(looptrace show {r['id'][:12]} --step N: the messages at a step)")
    return safe_text("\n".join(lines), keep_newlines=True) + "\n"


def render_notes(notes: list[dict[str, Any]]) -> str:
    """Notes (``Note.to_dict``) as text, one a paragraph: where (the run, or its step),
    the tags, who and its number, then the text indented; terminal controls made
    visible."""
    lines: list[str] = []
    for n in notes:
        where = f"step {n['step']}" if n.get("step") is not None else "the run"
        tags = f" [{', '.join(n['tags'])}]" if n.get("tags") else ""
        who = f" by {n['author']}" if n.get("author") else ""
        lines.append(f"  {where}{tags}{who} (note {n['id']}):")
        lines.extend("      " + ln for ln in str(n["text"]).splitlines() or [""])
    return safe_text("\n".join(lines), keep_newlines=True) + "\n" if lines else ""


def _cost_text(c: dict[str, Any]) -> str:
    from tracer.read.cost import Cost

    return Cost(Decimal(str(c["priced_usd"])), c["calls"], c["priced_calls"]).text()


def render_step(d: dict[str, Any]) -> str:
    who = f" {d['middleware']}" if d.get("middleware") else ""
    lines = [f"step {d['step']} / {d['steps']} of run {d['run_id'][:12]}: "
             f"{d['hook']} {d['phase']}{who}   lap {d.get('lap') or 0}"
             + (f"   tool call {d['tool_call_id']}" if d.get("tool_call_id") else ""),
             f"  {d['caption']}"]
    if d["pending_tool_calls"]:
        lines.append(f"  tool calls without a result yet: {', '.join(d['pending_tool_calls'])}")
    if d.get("edit"):
        lines.append(f"  changed in the debugger: {d['edit'].get('change') or 'an edit'}")
        for side in ("before", "after"):
            shown = json.dumps(d["edit"].get(side), ensure_ascii=False, indent=2, default=str)
            lines.append(f"  {side}:")
            lines.extend("    " + ln for ln in shown.splitlines())
    if d.get("notes"):
        lines.append(f"notes at this step ({len(d['notes'])}):")
        lines.append(render_notes(d["notes"]).rstrip("\n"))
    lines.append(f"messages ({d['messages_total']}, {d['messages_are']}):")
    for m in d["messages"]:
        head = f"[{m['index']}] {m['type']}"
        if m.get("tool_call_id"):
            head += f" (tool_call_id {m['tool_call_id']}{', ' + m['status'] if m.get('status') else ''})"
        if m.get("version"):
            head += f"  <{m['version']}>"
        lines.append(head)
        if m["content"]:
            lines.extend("    " + ln for ln in m["content"].splitlines() or [""])
        if m.get("cut"):
            c = m["cut"]
            lines.append(f"    ... cut at {c['shown']} of {c['total']} characters "
                         f"(all of it: {c['rest']})")
        for c in m.get("tool_calls", ()):
            lines.append(f"    -> {c['name']}({c['args']})  id {c['id']}")
            if c.get("args_cut"):
                lines.append(f"       ... arguments cut at {c['args_cut']['shown']} of "
                             f"{c['args_cut']['total']} characters (all of it: "
                             f"{c['args_cut']['rest']})")
    return safe_text("\n".join(lines), keep_newlines=True) + "\n"
