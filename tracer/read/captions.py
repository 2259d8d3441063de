"""Captions: each replay step in words, read from the record.

A view of the step model (``tracer.read.steps``), built only for what shows it: the
replayer JSON (the app and the HTML export), ``looptrace show``, the MCP server, the
compare page and the inspector's tool-call life. ``captions(replay)`` gives one caption
per step, built once per replay (``Replay.view``); the checks never build them.

Every statement is read from the record: what the hook is for (``tracer.vocab.hooks``), what
another middleware's hook does (``tracer.vocab.known_middleware``) and what it did at this
firing (``tracer.read.floorplan.describe``), how a tool call that raised ended, and, for a
step that left the standard edges, whether an event says a jump happened
(``tracer.read.graph_layout.jump_steps``).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tracer.vocab.calls import tool_names
from tracer.vocab.hooks import HOOK_BY_NAME
from tracer.vocab.known_middleware import GENERIC, find
from tracer.vocab.payloads import (
    ModelEnterPayload,
    RunEndPayload,
    ToolEnterPayload,
    read_payload,
)
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS
from tracer.vocab.words import plural

from .calls import call_at, call_of
from .floorplan import describe, hook_middleware
from .graph_layout import is_jump, jump_steps, passable_points, route
from .loader import Event, Run
from .steps import ForkEdit, Replay, is_create_agent, run_shape

__all__ = ["ERROR_PATHS", "PROPAGATED", "PROPAGATES", "RunFacts", "caption", "captions",
           "step_captions", "tracer_names"]

# How a tool call that came back as an error ToolMessage got there (the middleware
# records ``error_path``), and what becomes of an exception no layer turned into one.
ERROR_PATHS: dict[str, str] = {
    "validation": "its arguments failed the tool's schema, so it never ran: create_agent's "
                  "ToolNode returned the validation error as an error ToolMessage (its "
                  "default handler converts argument errors only), and the model gets it on "
                  "the next lap to correct its arguments",
    "handle_tool_error": "the tool raised a ToolException and sets handle_tool_error=True, so "
                         "LangChain turned it into this error ToolMessage and fed it back to "
                         "the model; without that flag the exception would have propagated "
                         "and failed the run",
    "handle_validation_error": "its arguments failed the tool's schema and the tool sets "
                               "handle_validation_error, so the tool itself answered with an "
                               "error ToolMessage",
    "unknown_tool": "the model asked for a tool the agent does not have, so ToolNode answered "
                    "with an error ToolMessage listing the tools it does have",
    "returned": "an error ToolMessage made by the tool itself or by a wrap_tool_call layer "
                "inside TraceMiddleware (e.g. ToolErrorMiddleware, or ToolRetryMiddleware when "
                "its retries ran out)",
}

PROPAGATES = ("By default create_agent's ToolNode turns only argument-validation errors into "
              "messages, so the exception propagates up through every wrap_tool_call layer: "
              "unless a middleware outside TraceMiddleware turns it into a ToolMessage, the "
              "run fails")
# Said where the record shows it happened (the run failed with the tool's exception).
PROPAGATED = ("By default create_agent's ToolNode turns only argument-validation errors into "
              "messages: this exception propagated up through every wrap_tool_call layer, "
              "nothing turned it into a ToolMessage, and the run failed with it")


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the captions may say about the run as a whole, read from the record once."""

    shape: str  # "agent" or "loop" (``run_shape``)
    handler: bool  # the callback handler recorded the run (runs.source = "callbacks")
    tracer: bool  # TraceMiddleware recorded model or tool calls in it
    status: str  # the run's status (completed, error, interrupted, running)
    decides: str  # where the "tool calls?" edge starts: "after_model", or "the model node"
    lap_opens: frozenset[int] = frozenset()  # the seq of each lap's first before_model
    # where the "tool calls?" edge goes when there are none: "after_agent" when the agent
    # has an after_agent node (a middleware on that hook), else "END"
    exit_node: str = "after_agent"
    top_level: bool = True  # the run has no parent run
    subagent_calls: frozenset[str] = frozenset()  # tool calls a subagent run ran inside
    fork: ForkEdit | None = None  # where this run, a fork, made its edit
    # an after_model firing that another after_model firing of the same lap follows (the
    # edge runs after the last one of the lap) -> the middleware of the one that follows
    then_after_model: Mapping[int, str] = field(default_factory=dict)

    @classmethod
    def of(cls, run: Run, used_hooks: frozenset[str], tracers: frozenset[str],
           after_agent: bool | None = None) -> RunFacts:
        tm = any(e.middleware in tracers and e.phase in ("enter", "exit")
                 and (e.hook in MODEL_HOOKS or e.hook in TOOL_HOOKS) for e in run.events)
        after_model = any(e.hook == "after_model" for e in run.events)
        firsts: dict[int, int] = {}
        then: dict[int, str] = {}
        last: Event | None = None  # the hook firing before (history and node events aside)
        for e in run.events:
            if e.hook == "before_model":
                firsts.setdefault(e.lap, e.seq)
            if e.hook in ("history", "node"):
                continue
            if (last is not None and last.hook == "after_model" and e.hook == "after_model"
                    and e.lap == last.lap and e.middleware):
                then[last.seq] = e.middleware
            last = e
        if after_agent is None:  # (without the replay's stack: what fired)
            after_agent = any(e.hook == "after_agent" for e in run.events)
        return cls(run_shape(run, used_hooks), run.summary.source == "callbacks", tm,
                   str(run.summary.status), "after_model" if after_model else "the model node",
                   frozenset(firsts.values()), "after_agent" if after_agent else "END",
                   run.summary.parent_id is None,
                   frozenset(str(c.parent_tool_call_id) for c in run.children
                             if c.parent_tool_call_id), None, then)


def captions(replay: Replay) -> tuple[str, ...]:
    """One caption per step of ``replay``, built once per replay.

    Args:
        replay: the step model of a run (``tracer.read.steps.build_replay``).

    Returns:
        ``captions(replay)[i]`` says what step ``i`` is for and what happened there.
    """
    return replay.view(_build)


# (the public name: ``from tracer import step_captions``; ``tracer.read.captions`` is the module)
step_captions = captions


def _build(replay: Replay) -> tuple[str, ...]:
    run = replay.run
    tracers = tracer_names(run)
    facts = replace(RunFacts.of(run, replay.used_hooks, tracers,
                                after_agent=bool(hook_middleware(replay)["after_agent"])),
                    fork=replay.fork_edit)
    offers = _tool_offers(run)
    said: list[str] = []
    last_ai_calls = 0
    for st in replay.steps:
        ev = st.event
        if ev.hook in MODEL_HOOKS and ev.phase == "exit":
            last_ai_calls = int((ev.payload or {}).get("tool_calls") or 0)
        said.append(caption(ev, run, last_ai_calls, tracers=tracers, facts=facts,
                            offers=offers))
    _caption_moves(replay, facts, said)
    return tuple(said)


def _caption_moves(replay: Replay, facts: RunFacts, said: list[str]) -> None:
    """Captions that need the whole run: a step that left the standard edges (a jump
    only where an event says a jump happened, ``graph_layout.jump_steps``; otherwise
    the move as the record shows it), and the first step when the conversation is
    not recorded yet."""
    steps = replay.steps
    if steps and steps[0].event.hook == "run" and steps[0].event.phase == "start":
        said[0] = _start_caption(replay, facts, said[0])
    if replay.run.observed:  # no hook to name, and the loop's own moves are no jumps
        return
    passable = passable_points(replay)
    jumped = jump_steps(replay)
    for i, st in enumerate(steps):
        if not st.edge:
            continue
        edges = route(*st.edge, passable, facts.shape)
        if len(edges) != 1 or not is_jump(edges[0], facts.shape):
            continue
        a, b = st.edge
        if i in jumped:
            moved = f"{jumped[i]} jumped from {a} straight to {b}."
        elif facts.shape == "loop" and a == "tools" and b == "END":
            moved = ("The loop ended right after its tools ran, without calling the model "
                    "again: the loop's own code stopped it (a bound or a break), not the "
                    "model's answer.")
        elif facts.shape == "loop":
            moved = f"The loop went from {a} to {b}."
        elif st.event.hook == "run" and (
                (end := read_payload(RunEndPayload, st.event.payload)).get("stopped")
                or end.get("handoff")):
            continue  # (the step's own caption says why: a stopped stream, a handoff)
        else:
            moved = (f"The run went from {a} straight to {b}; no recorded event says why "
                    + ("(no hook recorded a jump_to)." if facts.handler else
                       "(attach the callback handler to see the other middleware's hooks)."))
        said[i] = f"{moved} {said[i]}".strip()


def _start_caption(replay: Replay, facts: RunFacts, said: str) -> str:
    """The first step: what starts, and where its input shows when it is not recorded
    yet (looptrace reads the conversation at the first hook or model call)."""
    if replay.run.observed:
        start = said
    elif facts.shape == "loop":
        start = ("The run starts: the loop's code is called (no graph and no middleware "
                 "hooks: the callback handler records its model and tool calls).")
    elif not replay.used_hooks and is_create_agent(replay.run):
        start = ("The run starts: the agent's graph is invoked (a create_agent graph with no "
                 "middleware hook: the callback handler records its model and tool calls, "
                 "and the hooks it has none on are drawn as points it passes).")
    else:
        start = "The run starts: the agent's graph is invoked."
    if replay.messages_at(0):
        return start
    later = next((st for st in replay.steps if replay.state_at(st.event.seq)), None)
    if later is None:
        return f"{start} No message of it was recorded."
    where = "the first model call" if later.kind == "model" else f"{later.event.hook}"
    return (f"{start} Its input is not recorded yet: the messages show from step "
            f"{later.index + 1} ({where}), where looptrace first "
            f"{'sees' if replay.run.observed else 'reads'} the conversation.")


_SEEN_BY = {"wire": "its HTTP traffic, recorded by looptrace proxy",
            "otel": "its OpenTelemetry spans"}


def _observed_caption(ev: Event, p: dict[str, Any], run: Run) -> str | None:
    """Captions for a run seen from outside (``tracer/record/ingest.py``): say what the
    observer saw and what it cannot know, never a hook it did not see."""
    seen = _SEEN_BY.get(run.observed or "", f"what {run.observed} recorded")
    if ev.hook == "run" and ev.phase == "start":
        if p.get("continued"):
            return ("The conversation goes on: the next request extends the finished one "
                    "(a follow-up), so it is the same run.")
        return (f"A loop seen from outside, through {seen}: model calls and the tool "
                "results sent back are known; hooks and middleware are not, so the graph "
                "is the loop alone.")
    if ev.hook == "run" and ev.phase == "end":
        return ("The model answered without asking for a tool and no later call extends "
                "this conversation: the loop is done. No field of the API says \"done\": "
                "the loop decides by the absence of tool calls, not by the stop reason.")
    if ev.hook in MODEL_HOOKS and ev.phase == "enter":
        n = p.get("messages", "?")
        sys_note = " and a system prompt" if _has_system(run, ev) else ""
        said = (f"The model is called with {n} message{'' if n == 1 else 's'}{sys_note} "
                f"(lap {ev.lap}).")
        if ev.lap > 1:
            said = (f"The model is called with the whole history again, {plural(n, 'message')}"
                    f"{sys_note} (lap {ev.lap}): the API keeps no state between calls.")
        if p.get("previous_response_id"):
            said = (f"The model is called with {n} new items and previous_response_id "
                    f"{p['previous_response_id']} (lap {ev.lap}): the server holds the "
                    "earlier turns, so they are not on the wire.")
        if p.get("changed"):
            said += f" Changed since the previous call: {', '.join(p['changed'])}."
        return said
    if ev.hook in MODEL_HOOKS and ev.phase == "exit":
        k = int(p.get("tool_calls") or 0)
        stop = f" (stop reason: {p['stop_reason']})" if p.get("stop_reason") else ""
        if k:
            names = _names(run, ev)
            return (f"The model answered asking for {k} tool call{'s' if k > 1 else ''}"
                    f"{': ' + names if names else ''}{stop}. The loop runs "
                    f"{'them' if k > 1 else 'it'} and sends one result per call back, each "
                    "with the call's id.")
        return (f"The model answered in plain text{stop}: no tool calls, so the loop "
                "stops here.")
    if ev.hook in TOOL_HOOKS and p.get("observed"):
        return (f"The result for tool call {ev.tool_call_id} was sent back with the next "
                "request. The wire shows when it was sent, not when or how long the tool "
                "ran.")
    return None


def _names(run: Run, ev: Event) -> str:
    calls: list[str] = []
    for m in run.messages_by_seq.get(ev.seq, ()):
        calls.extend(c.get("name", "?") for c in m.tool_calls)
    return ", ".join(calls)


def _answered_by(run: Run, ev: Event, p: dict[str, Any]) -> str:
    """" The reply came from backup, not primary ..." when a model call's reply names
    another model than the one the call asked (a fallback); "" otherwise (a dated version
    of the model asked is the same model)."""
    by = p.get("model")
    if not isinstance(by, str) or not by:
        return ""
    evs = run.events
    i = ev.seq if 0 <= ev.seq < len(evs) and evs[ev.seq].seq == ev.seq else next(
        (k for k, e in enumerate(evs) if e.seq == ev.seq), -1)
    asked = None
    for e in reversed(evs[:max(i, 0)]):
        if e.hook == ev.hook and e.phase == "enter":
            asked = read_payload(ModelEnterPayload, e.payload).get("model")
            break
    if not isinstance(asked, str) or not asked or by.startswith(asked):
        return ""
    return f" The reply came from {by}, not {asked}, the model this call asked."


def _has_system(run: Run, ev: Event) -> bool:
    """Whether the model call begun at ``ev`` had a system prompt."""
    call = call_at(run, ev.seq)
    return call is not None and bool(call.request.system)


def _layer_caption(ev: Event, p: dict[str, Any]) -> str:
    """A step of the onion (``TraceMiddleware.around``): what one layer did."""
    layer = ev.middleware or "a layer"
    call = "model call" if ev.hook in MODEL_HOOKS else f"tool call {ev.tool_call_id}"
    what = p.get("what")
    changed = ", ".join(str(c) for c in p.get("changed") or ()) or "nothing"
    if what == "request":
        detail = ""
        if "model" in p:
            detail += f" Model: {p['model']}."
        names = tool_names(p)
        if names is not None:
            detail += f" Tools offered: {', '.join(names)}."
        if "args" in p:
            detail += " New arguments."
        return (f"{layer} changed the {call} on its way in ({changed}); the layers inside "
                f"it and the {'model' if ev.hook in MODEL_HOOKS else 'tool'} get this "
                f"version.{detail}")
    if what == "attempt":
        on = f" with {p['model']}" if p.get("model") else ""
        return (f"{layer} called the rest of the onion again: attempt {p.get('attempt')}"
                f"{on} (a retry or a fallback).")
    if what == "error":
        return (f"{p.get('error', 'An exception')} came up out of the layers inside "
                f"{layer}, into {layer}: it may retry, fall back or turn it into a "
                "result; if it does not, the call fails.")
    if what == "short-circuit":
        inside = "model" if ev.hook in MODEL_HOOKS else "tool"
        return (f"{layer} answered the {call} itself, without calling the layers inside it "
                f"or the {inside} (a cache, a guard, a canned reply).")
    if what == "response" and "recovered" in (p.get("changed") or ()):
        return (f"{layer} turned the exception ({p.get('recovered', '?')}) into a result "
                "instead of failing the call: the layers outside it get a normal answer"
                f"{' with status ' + str(p['status']) if p.get('status') else ''}.")
    if what == "response":
        return (f"{layer} changed the {call}'s result on its way out ({changed}): the "
                "layers outside it, and the state, get this version.")
    return f"{layer}: a step of the {call}."


_NODE_WHO = {
    "tools": "The tools node (a wrap_tool_call layer outside TraceMiddleware, e.g. Deep "
             "Agents' eviction of a large result to a file, or the tool's own Command)",
    "model": "The model node (a wrap_model_call layer outside TraceMiddleware, e.g. Deep "
             "Agents' summarisation offloading old results)",
}


def _history_caption(p: dict[str, Any], facts: RunFacts) -> str:
    by = p.get("by")
    who = _NODE_WHO.get(str(by), str(by)) if by else (
        "A hook or wrap layer that looptrace does not wrap")
    parts = []
    if p.get("replaced"):
        n = len(p["replaced"])
        parts.append(f"replaced {n} message{'s' if n > 1 else ''} by a new version "
                     "(same id, other content)")
    if p.get("removed"):
        n = len(p["removed"])
        parts.append(f"removed {n} message{'s' if n > 1 else ''}")
    if isinstance(p.get("keys"), list) and not p.get("removed"):
        parts.append("rewrote the order of the history")
    if not parts:
        parts.append("rewrote the history (summarised or trimmed)")
    tail = "" if p.get("by") or facts.handler else " (attach the callback handler to name it)"
    return f"{who} {' and '.join(parts)}: the conversation from here on is the new one{tail}."


def tracer_names(run: Run) -> frozenset[str]:
    """The names looptrace's own middleware recorded under in ``run`` (it alone records
    the model and tool calls' enter and exit)."""
    return frozenset({"TraceMiddleware", "LeanTraceMiddleware"} | {
        e.middleware for e in run.events if e.middleware and e.phase in ("enter", "exit")
        and (e.hook in MODEL_HOOKS or e.hook in TOOL_HOOKS)})


def _known_sentence(ev: Event, tracers: frozenset[str], top_level: bool = True) -> str | None:
    """What another middleware's hook does (``tracer.vocab.known_middleware``) and what it did
    at this firing; None for looptrace's own hooks and for events of no middleware."""
    if not ev.middleware or ev.middleware in tracers or ev.hook not in HOOK_BY_NAME:
        return None
    k = find(ev.middleware, ev.hook)
    role = (k.roles.get(ev.hook) if k else None) or GENERIC[ev.hook]
    who = (f"{k.source}{chr(39) if k.source.endswith('s') else chr(39) + 's'} "
           f"{ev.middleware}" if k else ev.middleware)
    said = f"{ev.hook} of {who}: it {role}."
    if ev.phase not in ("interrupt", "error", "layer"):
        said += f" Here it {describe(ev)}."
    if k is not None and k.top_level and top_level and ev.hook == "after_agent":
        said += f" {k.top_level}"
    elif k is not None and k.note:
        said += f" ({k.note})"
    return said


def _tool_error_caption(ev: Event, p: dict[str, Any], what: str, run: Run,
                        facts: RunFacts) -> str:
    """A tool call that raised: what became of the exception, as the record shows it."""
    err = str(p.get("error", ""))
    if "matching ToolMessage in Command.update" in err:
        what += (" The tool returned a Command whose update has no ToolMessage answering this "
                 "call: every tool call must be answered (same tool_call_id), so ToolNode "
                 "raised.")
    if p.get("handle_tool_error") is False:
        what += (" The tool sets no handle_tool_error (which would catch a ToolException "
                 "only).")
    later = [e for e in run.events if e.seq > ev.seq]
    went_on = any(e.hook in MODEL_HOOKS or e.hook in TOOL_HOOKS for e in later)
    answer = next((m for m in run.messages if m.tool_call_id == ev.tool_call_id
                   and m.seq >= ev.seq), None) if ev.tool_call_id else None
    if facts.shape == "loop":
        if not went_on and facts.status == "error":
            return f"{what} The exception left the loop: the run failed."
        if answer is None:
            sent = "No result for this call was sent back"
        elif not answer.text.strip():
            sent = ("The result sent back for this call is empty, so the model is told "
                    "nothing of the error")
        else:
            sent = "A result for this call was sent back (the tool message)"
        return (f"{what} The loop's code caught the exception and went on"
                f"{' (the run ' + facts.status + ')' if facts.status != 'running' else ''}. "
                f"{sent}.")
    if facts.status == "error" and not went_on:
        return f"{what} {PROPAGATED}."
    if facts.status == "running" and not went_on:
        return f"{what} {PROPAGATES}."
    if answer is not None and _given_in_debugger(run, ev, after=True) is not None:
        return (f"{what} The debugger gave this call's result instead (typed in by hand at "
                "the pause), so the run went on.")
    if answer is not None:
        return (f"{what} A layer outside TraceMiddleware turned the exception into a "
                "ToolMessage for this call, so the run went on.")
    return f"{what} The run went on without a result for this call recorded."


def caption(ev: Event, run: Run, tool_calls: int = 0, *,
            tracers: frozenset[str] = frozenset({"TraceMiddleware"}),
            facts: RunFacts | None = None,
            offers: tuple[list[int], list[Any]] | None = None) -> str:
    """One or two sentences: what this hook is for and what happened here, each
    statement read from the record (``facts``: the run as a whole)."""
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if facts is None:
        used = frozenset(e.hook for e in run.events if e.hook in HOOK_BY_NAME and e.middleware)
        facts = RunFacts.of(run, used, tracers)
    loop = facts.shape == "loop"
    if run.observed:
        said = _observed_caption(ev, p, run)
        if said is not None:
            return said
    hook = HOOK_BY_NAME.get(ev.hook)
    purpose = f"{ev.hook} {hook.purpose}" if hook else ""
    dur = f" in {ev.duration_ms:.1f} ms" if ev.duration_ms is not None else ""
    who = f" ({ev.middleware})" if ev.middleware else ""
    known = _known_sentence(ev, tracers, facts.top_level)
    if ev.phase == "error" and ev.hook == "run":
        if loop:
            return (f"The run failed: {p.get('error', 'an exception')} came out of the loop "
                    "to its caller.")
        return (f"The run failed: {p.get('error', 'an exception')} came out of the graph to "
                "the caller of invoke(); nothing after it ran (no after_agent).")
    if ev.phase == "error":
        what = f"{ev.hook}{who} raised {p.get('error', 'an error')}{dur}."
        if ev.hook == "node" and p.get("node"):
            what = f"The {p['node']} node raised {p.get('error', 'an error')}{dur}."
        if ev.hook == "model":
            what = f"The model call failed{dur}: {p.get('error', 'an error')}."
        if ev.hook in TOOL_HOOKS:
            name = f" {p['name']}" if p.get("name") else ""
            if ev.hook == "tool":
                what = f"The tool{name} raised {p.get('error', 'an error')}{dur}."
            return _tool_error_caption(ev, p, what, run, facts)
        return f"{what} {known}" if known else what
    if ev.phase == "pause":
        return _pause_caption(ev, p)
    if ev.phase == "debug":
        return _debug_caption(ev, p)
    if ev.phase == "interrupt" or ev.hook == "interrupt":
        said = ("The run paused for a human: an interrupt() stopped the graph and the "
                "checkpointer saved its state. Resuming continues this same run.")
        return f"{said} {known}" if known else said
    if ev.hook == "resume":
        return ("The thread resumed with a human decision; the loop continues where it "
                "paused (no before_agent fires on resume).")
    if ev.hook == "history":
        f = facts.fork
        if f is not None and ev.seq == f.written:
            return (f"The fork's edit, made at step {f.index + 1} ({f.what}), is written into "
                    "the state here, as the model call ends: the fork's own layer "
                    "(looptrace's RerunMiddleware, outermost) keeps it, so the conversation "
                    "holds the edited version from here on.")
        return _history_caption(p, facts)
    if ev.phase == "layer":
        return f"{_layer_caption(ev, p)} {known}" if known else _layer_caption(ev, p)
    if ev.hook in MODEL_HOOKS and ev.phase == "sent":
        n = p.get("messages", "?")
        changed = len(p.get("inline_messages") or [])
        what = (f"; {changed} of them in another form than at TraceMiddleware's layer"
                if changed else "")
        sys_note = " and another system prompt" if "system" in p else ""
        return (f"What the model received: {plural(n, 'message')}{what}{sys_note}. The "
                "wrap_model_call layers inside TraceMiddleware (later in the middleware "
                "list) rewrote the request after TraceMiddleware saw it.")
    if ev.hook == "run" and ev.phase == "end" and p.get("handoff"):
        to = ", ".join(str(g) for g in p["handoff"].get("goto") or []) or "another node"
        return (f"The run hands off to {to} in the parent graph (a Command to "
                "Command.PARENT): it ends here without failing, and the parent graph goes on.")
    if ev.hook == "run" and ev.phase == "end" and p.get("stopped"):
        return ("The run stops: its caller stopped reading its stream before the end. Not a "
                "failure: nothing ran after this.")
    if ev.hook == "run":
        return {"start": "The run starts.",
                "end": ("The run ends: the loop's code returned." if loop else
                        "The run ends: the graph returned its final state."),
                "error": f"The run failed: {p.get('error', '')}"}.get(ev.phase, "")
    if ev.hook == "node":
        return f"Graph node {p.get('node', '?')} ran{dur}."
    if ev.hook in MODEL_HOOKS:
        if ev.phase == "enter":
            n = p.get("messages", "?")
            return (f"{purpose} The model is called with {plural(n, 'message')}"
                    f"{' and the system prompt' if _has_system(run, ev) else ''}"
                    f" (lap {ev.lap}).{_fork_note(ev, facts)}").strip()
        n = int(p.get("tool_calls") or 0)
        call = call_of(run, ev.seq)
        total = call.usage.total if call is not None and call.end_seq == ev.seq else None
        tok = f", {total} tokens" if total else ""
        by = _answered_by(run, ev, p)
        if n:
            names = _names(run, ev)
            asked = (f"The model answered{dur}{tok} asking for {plural(n, 'tool call')}"
                     f"{': ' + names if names else ''}.{by}")
            if loop:
                return (f"{asked} The loop runs {'them' if n > 1 else 'it'} and sends one "
                        "result per call back, each with the call's id.")
            return f"{asked} {_after_reply(run, ev, facts, n)}"
        if loop:
            return (f"The model answered in plain text{dur}{tok}: no tool calls, so the loop "
                    f"stops here.{by}")
        return (f"The model answered in plain text{dur}{tok}: no tool calls, so the loop "
                f"ends after {facts.decides}.{by}")
    if ev.hook in TOOL_HOOKS:
        name = p.get("name", "")
        if ev.phase == "enter":
            unknown = "" if p.get("known_tool", True) else " (not a tool the agent has!)"
            return (f"{purpose} Tool call {name}{unknown} starts with id {ev.tool_call_id}."
                    f"{_hidden_note(offers or _tool_offers(run), ev, str(name))}"
                    f"{_fork_note(ev, facts)}").strip()
        status = p.get("status")
        if status == "error":
            path = ERROR_PATHS.get(str(p.get("error_path")))
            said = f"The tool call {ev.tool_call_id} came back as an error ToolMessage{dur}"
            if path:
                return f"{said}: {path}."
            return f"{said}; the error is fed back to the model on the next lap."
        if p.get("command"):
            answered = any(m.tool_call_id == ev.tool_call_id for m in run.messages)
            sub = (" (the result of the subagent that ran inside this call arrives this way)"
                   if ev.tool_call_id in facts.subagent_calls else "")
            return (f"The tool returned a Command{dur} that updates the state{sub}"
                    + ("; its update carries the ToolMessage that answers this call (same "
                       "tool_call_id), as ToolNode requires: every tool call must be answered."
                       if answered else "."))
        if loop:
            answer = next((m for m in run.messages if m.tool_call_id == ev.tool_call_id),
                          None)
            if answer is not None and answer.seq > ev.seq:
                # (the loop appends the result itself: looptrace reads it when it is sent)
                at = next((k for k, e in enumerate(run.events) if e.seq >= answer.seq), None)
                when = f", at step {at + 1}" if at is not None else ""
                return (f"The tool call {ev.tool_call_id} returned{dur}. Its result is not in "
                        "the conversation yet (the call shows as pending): the loop appends "
                        "the ToolMessage itself, and looptrace reads it with the next model "
                        f"call{when}, which sends it back with the call's id.")
            return (f"The tool call {ev.tool_call_id} returned{dur}; "
                    + ("the loop sends its result back in a ToolMessage with the call's id."
                       if answer is not None else "no ToolMessage with this call's id was "
                       "sent back: the model cannot match a result to this call."))
        given = _given_in_debugger(run, ev)
        if given == "before":
            return (f"The debugger gave the result of tool call {ev.tool_call_id} (typed in "
                    "by hand at the pause: the tool never ran); its ToolMessage answers the "
                    "call with the same tool_call_id.")
        if given == "error":
            return (f"The tool call {ev.tool_call_id} raised, and the debugger gave its result "
                    "instead (typed in by hand at the pause); its ToolMessage answers the call "
                    "with the same tool_call_id.")
        if given == "after":
            return (f"The tool call {ev.tool_call_id} returned{dur}, and its result was changed "
                    "in the debugger; the ToolMessage answers the call with the same "
                    "tool_call_id.")
        return (f"The tool call {ev.tool_call_id} returned{dur}; its ToolMessage answers the "
                "call with the same tool_call_id.")
    if known:
        purpose, who = known, ""
    if ev.hook == "after_model" and ev.seq in facts.then_after_model:
        return (f"{purpose}{who} Next, {facts.then_after_model[ev.seq]}.after_model runs "
                "(after_model hooks run in reverse list order); the conditional edge comes "
                "after the lap's last one.")
    if ev.hook == "after_model":
        nxt = "tools" if tool_calls else facts.exit_node
        why = " (this agent has no after_agent hook)" if nxt == "END" else ""
        return f"{purpose}{who} Next, the conditional edge goes to {nxt}{why}."
    if ev.hook == "before_model" and ev.seq in facts.lap_opens:  # (its first, not each)
        return f"{purpose}{who} Lap {ev.lap} begins."
    return f"{purpose}{who}".strip()


def _after_reply(run: Run, ev: Event, facts: RunFacts, n: int) -> str:
    """What became of the ``n`` tool calls a model reply asked for, as the record shows it:
    the route to tools, a pause for a human first, and which of them ran (up to the next
    model call)."""
    asked = [str(c.get("id")) for m in run.messages_by_seq.get(ev.seq, ())
             for c in m.tool_calls if c.get("id")]
    ran: list[str] = []
    names: dict[str, str] = {}
    paused = ended = False
    for e in run.events:
        if e.seq <= ev.seq:
            continue
        if e.hook in MODEL_HOOKS and e.phase == "enter":
            break
        if e.phase == "interrupt" or e.hook == "interrupt":
            paused = paused or not ran
        if e.hook == "run" and e.phase in ("end", "error"):
            ended = True
        if e.hook in TOOL_HOOKS and e.phase == "enter" and e.tool_call_id in asked and (
                e.tool_call_id not in ran):
            ran.append(str(e.tool_call_id))
            p = read_payload(ToolEnterPayload, e.payload)
            names[str(e.tool_call_id)] = str(p.get("name") or e.tool_call_id)
    route = f"The conditional edge after {facts.decides} routes to tools"
    if paused:
        route = (f"Before any tool runs, the run pauses for a human (an interrupt at "
                 f"{facts.decides})")
        if not ran:
            return route + ("; no tool of this reply ran in this run." if ended or
                            any(e.seq > ev.seq for e in run.events if e.hook == "resume")
                            else ".")
    if len(ran) == len(asked) and ran:
        if paused:
            return f"{route}; after the resume, tools runs {'them all' if n > 1 else 'it'}."
        return route + (", which run them in parallel." if n > 1 else ".")
    if not ran:
        return (f"{route.replace('routes', 'would route')}, but no tool of this reply ran "
                "in this run.")
    which = ", ".join(names[c] for c in ran)
    then = "after the resume, " if paused else ""
    rest = [c for c in asked if c not in ran]
    answered = {m.tool_call_id for m in run.messages if m.tool_call_id in rest}
    one = len(rest) == 1
    what = (("the other was" if one else "the others were") + " answered without running"
            if len(answered) == len(rest) else
            ("the other got" if one else "the others got") + " no result from a tool")
    return f"{route}; {then}only {len(ran)} of the {n} ran ({which}): {what}."


def _fork_note(ev: Event, facts: RunFacts) -> str:
    """At the call where a fork made its edit: the edit, said from the fork's record."""
    f = facts.fork
    if f is None or ev.seq != f.seq:
        return ""
    call = "model" if ev.hook in MODEL_HOOKS else "tool"
    return (f" This is where the fork made its edit (looptrace rerun --at): {f.what}. The "
            f"{call} call gets the edited version; the steps before it came from the record.")


def _tool_offers(run: Run) -> tuple[list[int], list[Any]]:
    """The seqs of the model calls that offered tools, and the signatures they gave
    (found once per run: a caption per tool call looks them up)."""
    seqs, offers = [], []
    for e in run.events:
        p = read_payload(ModelEnterPayload, e.payload)
        if e.hook in MODEL_HOOKS and e.phase == "enter" and isinstance(p.get("tools"), list):
            seqs.append(e.seq)
            offers.append(p.get("signatures"))
    return seqs, offers


def _hidden_note(found: tuple[list[int], list[Any]], ev: Event, name: str) -> str:
    """At a tool call's start: the parameters LangChain injects, which the schema the
    model saw leaves out (``tracer.vocab.tool_signatures``)."""
    seqs, offers = found
    k = bisect.bisect_right(seqs, ev.seq)  # (the tools offered last before this call)
    sigs = offers[k - 1] if k else None
    sig = sigs.get(name) if isinstance(sigs, dict) else None
    hidden = sig.get("hidden") if isinstance(sig, dict) else None
    if not hidden:
        return ""
    names = ", ".join(map(str, hidden))
    return (f" Its Python signature also takes {names}, which LangChain injects (a "
            f"ToolRuntime gives the call id, the state and the config): the schema the model "
            f"saw leaves {'them' if len(hidden) > 1 else 'it'} out.")


_AT = {"before": "before the call", "after": "after the call", "fire": "as it fires",
       "error": "where the call raised"}


def _given_in_debugger(run: Run, ev: Event, *, after: bool = False) -> str | None:
    """Where the debugger gave or changed the result of ``ev``'s tool call (the ``at``
    of its pause: ``before`` the tool ran, ``after`` it returned, at its ``error``), or
    None. ``after``: look at the pauses after ``ev`` (an error's, answered later)."""
    if not ev.tool_call_id:
        return None
    at = None
    for e in run.events:
        if e.tool_call_id != ev.tool_call_id or e.hook not in TOOL_HOOKS or (
                (e.seq > ev.seq) != after):
            continue
        p = e.payload if isinstance(e.payload, dict) else {}
        if e.phase == "pause":
            at = p.get("at")
        elif e.phase == "debug" and p.get("outcome") == "edited" and isinstance(
                p.get("edit"), dict) and p["edit"].get("kind") in ("tool_result", "result"):
            return str(at) if at else None
        elif after and e.phase in ("exit",):
            break
    return None


def _pause_caption(ev: Event, p: dict[str, Any]) -> str:
    """A pause of the debugger (``tracer.debug``)."""
    where = _AT.get(str(p.get("at")), str(p.get("at") or ""))
    what = ""
    call = p.get("tool_call")
    if isinstance(call, dict) and call.get("name"):
        what = {"before": f" The tool call {call['name']} waits to run.",
                "layer": f" The tool call {call['name']} waits to run.",
                "after": f" The tool call {call['name']} has returned; its result waits to "
                         "go on to the agent.",
                "error": f" The tool call {call['name']} raised; the exception waits to go "
                         "on (or a result given in the debugger instead)."}.get(
                    str(p.get("at")), "")
    return (f"Paused in the debugger at {ev.hook}, {where} (breakpoint: "
            f"{p.get('reason', '?')}).{what}")


def _debug_caption(ev: Event, p: dict[str, Any]) -> str:
    """How a pause of the debugger ended."""
    outcome = p.get("outcome")
    if outcome == "edited":
        return f"Changed in the debugger: {p.get('change', 'an edit')}; the run goes on."
    if outcome == "aborted":
        return "Aborted in the debugger: the run ends here as an error."
    if outcome == "timeout":
        return (f"Nobody answered the pause in {p.get('timeout_s')} s: the run continued "
                "unchanged.")
    if outcome == "rejected":
        return (f"The debugger's edit could not be made ({p.get('error', '?')}); the run "
                "pauses again.")
    return f"Continued in the debugger ({p.get('command', 'continue')}), nothing changed."
