"""Loop findings: patterns across a whole run rather than one request.

- ``repeated-tool-call``: the model asks for the same tool with the same (or
  nearly the same) arguments ``Thresholds.repeat_calls`` times.
- ``repeated-tool-error`` / ``repeated-empty-result``: a tool fails, or returns
  nothing, that many times in a row.
- ``recursion-limit``: LangGraph's recursion limit (GraphRecursionError) ended
  the run.
- ``loop-bound-hit``: the run ended while the model was still asking for tools:
  a hand-rolled loop's iteration bound (MAX_ITERATIONS) or another stop ended it.
- ``no-final-answer``: the run finished without a final assistant answer.
- ``token-jump``: one lap costs far more tokens than the lap before.
- ``invalid-tool-call`` / ``unknown-tool``: the model produced a call whose
  arguments could not be parsed, or named a tool it was not offered.
"""

from __future__ import annotations

import itertools
import json
import re
from difflib import SequenceMatcher
from typing import Any

from tracer.read.calls import model_calls, tokens_by_lap
from tracer.read.loader import Message, Run
from tracer.read.steps import Replay, build_replay
from tracer.vocab.payloads import (
    ErrorPayload,
    NodePayload,
    ToolEnterPayload,
    read_payload,
)
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

from .base import Finding, ModelInput, Thresholds, own_messages

_RECURSION = re.compile(r"GraphRecursionError|Recursion limit of \d+ reached", re.IGNORECASE)
_EMPTY = {"", "[]", "{}", "null", "none", '""'}
# create_agent answers the call of a ToolStrategy response format with this.
STRUCTURED_PREFIX = "Returning structured response"


def structured_calls(run: Run) -> set[str]:
    """Ids of calls that returned a structured response (a final answer, not a tool)."""
    return {str(m.tool_call_id) for m in run.messages
            if m.type == "tool" and m.text.startswith(STRUCTURED_PREFIX)}


def _canon(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.lower().split())
    if isinstance(value, dict):
        return {str(k): _canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _args_text(args: Any) -> str:
    try:
        return json.dumps(_canon(args), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(args)


def _similar_text(a: str, b: str, th: Thresholds) -> bool:
    if a == b:
        return True
    if min(len(a), len(b)) < th.near_min_chars or th.near_args_ratio >= 1.0:
        return False
    sm = SequenceMatcher(None, a, b, autojunk=False)
    r = th.near_args_ratio
    return sm.real_quick_ratio() >= r and sm.quick_ratio() >= r and sm.ratio() >= r


def _near(a: Any, b: Any, th: Thresholds) -> bool:
    """Whether two (normalised) argument values are the same or nearly so."""
    if a == b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_near(a[k], b[k], th) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_near(x, y, th) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str):
        return _similar_text(a, b, th)
    return False


def _ai_messages(run: Run) -> list[Message]:
    """The run's own replies (not the earlier turns' of its thread), in order."""
    return sorted((m for m in own_messages(run) if m.type in ("ai", "AIMessageChunk")),
                  key=lambda m: (m.seq, m.position))


def _shape(value: Any, th: Thresholds) -> Any:
    """What two values must share to be nearly the same (``_near``): everything but
    the text of strings long enough to be compared by similarity."""
    if isinstance(value, dict):
        return ("{", *sorted(((str(k), _shape(v, th)) for k, v in value.items()),
                             key=lambda kv: kv[0]))
    if isinstance(value, list):
        return ("[", *(_shape(v, th) for v in value))
    if isinstance(value, str) and len(value) >= th.near_min_chars and th.near_args_ratio < 1.0:
        return ("~",)  # (any long string may be near another)
    try:
        hash(value)
    except TypeError:
        return ("?",)  # (nothing to tell it by: compared with every such value)
    return ("=", value)


def repeated_calls(run: Run, th: Thresholds) -> list[Finding]:
    """The same tool with the same or nearly the same arguments, repeatedly.

    Each call joins the first group (in order of creation) whose first arguments
    are near its own. Calls are compared only where they can be near: arguments
    seen before go straight to their group, and others are compared with the
    groups of the same shape (``_shape``) alone."""
    clusters: dict[str, list[tuple[Any, list[Message]]]] = {}
    exact: dict[tuple[str, str], list[Message]] = {}  # (name, args) -> their group
    shapes: dict[tuple[str, Any], list[tuple[Any, list[Message]]]] = {}
    out: list[Finding] = []
    for m in _ai_messages(run):
        for c in m.tool_calls:
            name = str(c.get("name") or "?")
            args = _canon(c.get("args"))
            text = _args_text(args)
            msgs = exact.get((name, text))
            if msgs is None:
                shape = shapes.setdefault((name, _shape(args, th)), [])
                msgs = next((g for first_args, g in shape if _near(first_args, args, th)), None)
                if msgs is None:
                    msgs = []
                    clusters.setdefault(name, []).append((args, msgs))
                    shape.append((args, msgs))
                exact[(name, text)] = msgs
            msgs.append(m)
    for name, group in clusters.items():
        for first_args, msgs in group:
            first = _args_text(first_args)
            if len(msgs) < th.repeat_calls:
                continue
            hit = msgs[th.repeat_calls - 1]
            out.append(Finding(
                "repeated-tool-call", "warning", None,
                f"The model asked for {name} with the same or nearly the same arguments "
                f"{len(msgs)} times (threshold {th.repeat_calls}): {first[:120]}. The loop is "
                "probably not making progress: the tool result does not give the model what "
                "it needs, or the model ignores it.",
                run.id, hit.seq, tuple(dict.fromkeys(x.key for x in msgs))))
    return out


def _result_failures(run: Run) -> list[tuple[int, str, str, str]]:
    """(seq, tool name, kind, message key) per tool outcome, in order.

    kind is "error", "empty" or "ok"."""
    names: dict[str, str] = {}
    owner: dict[str, str] = {}  # call id -> key of the AI message that asked for it
    for m in run.messages:
        for c in m.tool_calls:
            if c.get("id"):
                names[str(c["id"])] = str(c.get("name") or "?")
                owner[str(c["id"])] = m.key
    out: list[tuple[int, str, str, str]] = []
    answered: set[str] = set()
    for m in sorted((x for x in own_messages(run) if x.type == "tool"), key=lambda x: x.seq):
        name = m.name or names.get(m.tool_call_id or "", "?")
        if m.status == "error":
            kind = "error"
        elif isinstance(m.content, (str, type(None))) and (
                str(m.content or "").strip().lower() in _EMPTY) or isinstance(m.content, list) and not m.content:
            kind = "empty"
        else:
            kind = "ok"
        out.append((m.seq, name, kind, m.key))
        if m.tool_call_id:
            answered.add(m.tool_call_id)
    for ev in run.events:
        if ev.hook in TOOL_HOOKS and ev.phase == "error" and ev.tool_call_id not in answered:
            p = read_payload(ErrorPayload, ev.payload)
            name = p.get("name") or names.get(ev.tool_call_id or "", "?")
            out.append((ev.seq, str(name), "error",
                        owner.get(str(ev.tool_call_id), "t:" + str(ev.tool_call_id))))
    out.sort()
    return out


def repeated_failures(run: Run, th: Thresholds) -> list[Finding]:
    out: list[Finding] = []
    streak: dict[tuple[str, str], list[tuple[int, str]]] = {}
    reported: set[tuple[str, str]] = set()
    for seq, name, kind, key in _result_failures(run):
        for k in ("error", "empty"):
            if k != kind:
                streak.pop((name, k), None)
        if kind == "ok":
            continue
        s = streak.setdefault((name, kind), [])
        s.append((seq, key))
        limit = th.repeat_errors if kind == "error" else th.repeat_empty
        if len(s) >= limit and (name, kind) not in reported:
            reported.add((name, kind))
            if kind == "error":
                out.append(Finding(
                    "repeated-tool-error", "warning", None,
                    f"The tool {name} failed {limit} times in a row. The model keeps calling "
                    "it although it errors: fix the tool or its arguments, or stop after a "
                    "failure.", run.id, seq, tuple(k for _, k in s)))
            else:
                out.append(Finding(
                    "repeated-empty-result", "warning", None,
                    f"The tool {name} returned an empty result {limit} times in a row; the "
                    "model is probably searching in circles.", run.id, seq,
                    tuple(k for _, k in s)))
    return out


def _final_messages(run: Run, replay: Replay | None = None) -> list[Message]:
    replay = replay or build_replay(run)
    return replay.messages_at(len(replay) - 1) if len(replay) else list(run.messages)


def endings(run: Run, replay: Replay | None = None) -> list[Finding]:
    """Recursion limit, loop bound, no final answer (``replay``: the run's, if built)."""
    out: list[Finding] = []
    s = run.summary
    last_seq = run.events[-1].seq if run.events else None
    rec_seq: int | None = None
    rec_text = s.error if s.error and _RECURSION.search(s.error) else None
    for ev in run.events:
        # (any event's: a run's, a hook's, a layer's error, each under ``error``)
        err = read_payload(ErrorPayload, ev.payload).get("error")
        if isinstance(err, str) and _RECURSION.search(err):
            rec_seq = ev.seq if rec_seq is None else rec_seq
            rec_text = rec_text or err
    if rec_text:
        out.append(Finding(
            "recursion-limit", "error", None,
            "LangGraph's recursion limit ended the run before the agent finished "
            f"({rec_text[:160]}). The loop kept going round: look for repeated calls, or "
            "raise recursion_limit if the task really needs more steps.",
            run.id, rec_seq if rec_seq is not None else last_seq, ()))
        return out
    if s.status in ("running", "interrupted", "handoff", "stopped"):  # (no answer is due)
        return out
    final = _final_messages(run, replay)
    if not final:
        return out
    model_made = {ev.seq for ev in run.events if ev.hook in MODEL_HOOKS and ev.phase == "exit"}
    # (by key: the final state may hold a later version of a reply, e.g. redacted)
    made_keys = {m.key for m in run.messages if m.seq in model_made}
    ais = [m for m in final if m.type in ("ai", "AIMessageChunk")]
    last_model_ai = next((m for m in reversed(ais) if m.key in made_keys), None)
    structured = structured_calls(run)
    asking = last_model_ai is not None and bool(last_model_ai.tool_calls) and not all(
        str(c.get("id")) in structured for c in last_model_ai.tool_calls)
    if s.status == "completed" and last_model_ai is not None and asking:
        tail = final[final.index(last_model_ai):]
        stopper = next((m for m in tail if m.type in ("ai", "AIMessageChunk")
                        and m is not last_model_ai), None)
        jump = next((ev for ev in run.events if ev.seq > last_model_ai.seq and read_payload(
            NodePayload, ev.payload).get("jump_to") == "end"), None)
        how = (f"{jump.middleware or 'a middleware'} ended it" if jump is not None else
               "an iteration bound (e.g. MAX_ITERATIONS in a hand-rolled loop) or another stop "
               "condition cut the loop off")
        said = f' with "{stopper.text.strip()[:100]}"' if stopper is not None else ""
        names = ", ".join(str(c.get("name")) for c in last_model_ai.tool_calls)
        out.append(Finding(
            "loop-bound-hit", "error", None,
            "The run ended while the model was still asking for tools: its last reply calls "
            f"{names} and no model call followed; {how}{said}. The task was not finished: "
            "look for a loop that makes no progress, or raise the bound.",
            run.id, jump.seq if jump is not None else (
                stopper.seq if stopper is not None else last_model_ai.seq),
            tuple(m.key for m in tail)))
        return out
    last = final[-1]
    text = last.text.strip() if isinstance(last.text, str) else ""
    if last.type == "tool" and str(last.tool_call_id) in structured:
        return out
    if not (last.type in ("ai", "AIMessageChunk") and not last.tool_calls and text):
        out.append(Finding(
            "no-final-answer", "warning", None,
            f"The run ended without a final answer: its last message is {_describe(last)}"
            + (f", and the run failed ({s.error[:160]})" if s.status == "error" and s.error
               else (", and the run failed" if s.status == "error" else "")) + ".",
            run.id, last.seq if last.seq is not None else last_seq, (last.key,)))
    return out


def _describe(m: Message) -> str:
    if m.type in ("ai", "AIMessageChunk"):
        return ("an assistant message asking for tools" if m.tool_calls
                else "an empty assistant message")
    return {"tool": "a tool result", "human": "a user message",
            "system": "a system message"}.get(m.type, f"a {m.type} message")


def token_jumps(run: Run, th: Thresholds) -> list[Finding]:
    laps = {lap: t.total for lap, t in tokens_by_lap(run).items()}
    first_seq: dict[int, int] = {}
    for c in model_calls(run):
        if c.ended == "exit" and c.end_seq is not None:
            first_seq.setdefault(c.lap, c.end_seq)
    out: list[Finding] = []
    order = sorted(laps)
    for a, b in itertools.pairwise(order):
        prev, cur = laps[a], laps[b]
        if prev > 0 and cur >= th.token_jump_ratio * prev and cur - prev >= th.token_jump_min:
            out.append(Finding(
                "token-jump", "warning", None,
                f"Lap {b} used {cur} tokens, {cur / prev:.1f}x lap {a} ({prev}): a large tool "
                "result or a growing history entered the context.",
                run.id, first_seq[b], ()))
    return out


def model_replies(run: Run, calls: list[ModelInput]) -> list[Finding]:
    """Invalid tool calls and calls to tools that were not offered."""
    out: list[Finding] = []
    by_key = run.message_by_key
    seen: set[str] = structured_calls(run)
    for mc in calls:
        for key in mc.reply_keys:
            m = by_key.get(key)
            if m is None:
                continue
            for c in m.invalid_tool_calls:
                out.append(Finding(
                    "invalid-tool-call", "warning", None,
                    f"The model produced a call to {c.get('name')} whose arguments could not "
                    f"be parsed ({str(c.get('error') or 'invalid JSON')[:120]}). It does not "
                    "run as asked: create_agent answers it with an error result, a hand-rolled "
                    "loop usually drops it.", run.id, m.seq, (m.key,)))
            if mc.offered is None:
                continue
            for c in m.tool_calls:
                name = str(c.get("name") or "?")
                if name not in mc.offered and str(c.get("id")) not in seen:
                    seen.add(str(c.get("id")))
                    out.append(_unknown(run, name, mc.offered, m, c))
    for ev in run.events:
        p = read_payload(ToolEnterPayload, ev.payload)
        if ev.hook in TOOL_HOOKS and ev.phase == "enter" and p.get("known_tool") is False:
            if str(ev.tool_call_id) in seen:
                continue
            seen.add(str(ev.tool_call_id))
            ai = next((m for m in run.messages
                       if any(c.get("id") == ev.tool_call_id for c in m.tool_calls)), None)
            out.append(_unknown(run, str(p.get("name")), None, ai,
                                {"id": ev.tool_call_id}, ev.seq))
    return out


def _unknown(run: Run, name: str, offered: frozenset[str] | None, m: Message | None,
             c: dict[str, Any], seq: int | None = None) -> Finding:
    names = f" (offered: {', '.join(sorted(offered)) or 'none'})" if offered is not None else ""
    keys = tuple(k for k in ((m.key if m else None), "t:" + str(c.get("id")))
                 if k and (k in run.message_by_key))
    return Finding(
        "unknown-tool", "warning", None,
        f"The model called {name}, a tool it was not offered{names}. create_agent answers "
        "with an error result and the model can recover; repeated, it means the prompt or "
        "the tool list misleads the model.",
        run.id, m.seq if m is not None else seq, keys)
