"""The floor plan: the six hooks against the run's real middleware stack.

``floor_plan(replay, step)`` gives one row per hook (``tracer.vocab.hooks.HOOKS``), each
listing the middleware on that hook in execution order: ``before_*`` in list
order, ``after_*`` in reverse, the wrap hooks outermost first (the first in the
list wraps all the others). Each cell says whether that middleware fired there at
this step, before it, later, never, or cannot be seen in this run, and what it
did (from the events) and is for (``tracer.vocab.known_middleware``).

The stack (``run_stack``) is the one the run's start recorded
(``TraceMiddleware.attach`` reads it from the compiled graph, ``tracer.record.agent_stack``),
else what the events show: every middleware that fired a node hook (the callback
handler sees all of them), every wrap layer ``trace.around`` recorded, and the
tracer itself, in the order the firings imply. A middleware that never fired is
then unknown. What can be seen: the tracer's own hooks always; another
middleware's node hooks with the callback handler attached; its wrap hooks only
with ``trace.around`` (wrap hooks are not graph nodes), and then only when it
changed something. Pure functions; the app draws the rows.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracer.vocab.hooks import HOOK_BY_NAME, HOOKS, merge_orders
from tracer.vocab.known_middleware import GENERIC, Known, find
from tracer.vocab.payloads import HistoryPayload, LayerPayload, RunStartPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

if TYPE_CHECKING:
    from .loader import Event
    from .steps import Replay

NODE_HOOKS = tuple(h.name for h in HOOKS if h.kind == "node")
WRAP_HOOKS = tuple(h.name for h in HOOKS if h.kind == "wrap")
TRACERS = frozenset({"TraceMiddleware", "LeanTraceMiddleware"})
ORDER = {"before_agent": "list order", "before_model": "list order",
         "wrap_model_call": "outermost first", "after_model": "reverse list order",
         "wrap_tool_call": "outermost first", "after_agent": "reverse list order"}

# Cell states
NOW, ACTIVE, FIRED, LATER, NEVER, UNSEEN = "now", "active", "fired", "later", "never", "unseen"
STATE_LABEL = {NOW: "fires here", ACTIVE: "call runs through it", FIRED: "fired before",
               LATER: "fires later", NEVER: "never fires", UNSEEN: "not recorded"}


@dataclass(frozen=True, slots=True)
class StackEntry:
    name: str
    cls: str | None
    module: str | None
    hooks: tuple[str, ...]
    known: Known | None
    tracer: bool  # looptrace's own recorder


@dataclass
class RunStack:
    entries: list[StackEntry]
    recorded: bool  # the run's start listed the stack (else: inferred from the events)
    callbacks: bool  # other middleware's node hooks were recorded (callback handler)
    layered: bool  # wrap layers were recorded one by one (``trace.around``)
    # (middleware name, hook) -> indexes of the steps where it fired
    firings: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    # ... and where it did something: its firings and the history changes it made
    doings: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def on(self, hook: str) -> list[StackEntry]:
        """The middleware on ``hook`` in execution order."""
        got = [e for e in self.entries if hook in e.hooks]
        return got[::-1] if hook in ("after_model", "after_agent") else got


@dataclass(frozen=True, slots=True)
class Cell:
    middleware: str
    position: int  # 1-based place in the middleware list (0: unknown)
    state: str  # NOW, ACTIVE, FIRED, LATER, NEVER, UNSEEN
    fired: int  # times it fired (or changed something) on this hook up to this step
    role: str  # what it is for on this hook (the known-middleware table, or generic)
    known: bool  # the table knows it
    did: str  # what it did the last time up to this step ("" when nothing recorded)
    note: str = ""


@dataclass(frozen=True, slots=True)
class Row:
    hook: str
    kind: str  # "node" or "wrap"
    can: tuple[str, ...]
    order: str
    active: bool  # the current step is on this hook
    cells: tuple[Cell, ...]


def _hook_of(ev: Event) -> str | None:
    """The middleware hook an event is a firing of (None: not a middleware's)."""
    if ev.hook in HOOK_BY_NAME and ev.middleware:
        return ev.hook
    if ev.hook == "history":
        by = str(read_payload(HistoryPayload, ev.payload).get("by") or "")
        hook = by.rsplit(".", 1)[-1] if "." in by else ""
        return hook if hook in HOOK_BY_NAME else None
    return None


def _who(ev: Event) -> str | None:
    if ev.hook == "history":
        by = str(read_payload(HistoryPayload, ev.payload).get("by") or "")
        return by.rsplit(".", 1)[0] if "." in by else None
    return ev.middleware


def _recorded_stack(events: list[Event]) -> list[dict[str, Any]] | None:
    for ev in events:
        if ev.hook == "run" and ev.phase == "start":
            stack = read_payload(RunStartPayload, ev.payload).get("stack")
            if isinstance(stack, list) and stack:
                return [s for s in stack if isinstance(s, dict) and s.get("name")]
    return None


def _inferred(events: list[Event]) -> list[dict[str, Any]]:
    """The stack as the events imply it (only middleware that did something)."""
    seen: dict[str, set[str]] = {}
    orders: dict[str, list[str]] = {h: [] for h in HOOK_BY_NAME}
    tracers: list[str] = []
    for ev in events:
        hook, who = _hook_of(ev), _who(ev)
        if hook is None or not who:
            continue
        seen.setdefault(who, set()).add(hook)
        if ev.hook in MODEL_HOOKS | TOOL_HOOKS and ev.phase in ("enter", "exit"):
            if who not in tracers:
                tracers.append(who)
        elif who not in orders[hook] and ev.hook != "history" and (ev.phase != "layer" or (
                read_payload(LayerPayload, ev.payload).get("what") in (
                    "request", "attempt", "short-circuit"))):
            orders[hook].append(who)  # (a layer's request: outer layers first)
    seqs = [orders["before_agent"], orders["before_model"], orders["after_model"][::-1],
            orders["after_agent"][::-1]]
    # the tracer's own wraps are outermost among the layers it recorded (``around``)
    seqs += [tracers + [n for n in orders[h] if n not in tracers] for h in WRAP_HOOKS]
    names = merge_orders(seqs + [list(seen)])
    out = []
    for name in names:
        hooks = set(seen[name])
        k = find(name, next(iter(sorted(hooks))) if hooks else None)
        lean = name in tracers and not hooks & set(NODE_HOOKS)
        if k is not None and hooks <= set(k.roles) and not lean:
            hooks |= set(k.roles)  # the class's other hooks: facts of the table
        if name in tracers:  # (a lean one, under the same name, has its wrap hooks only)
            hooks |= set(WRAP_HOOKS)
        out.append({"name": name, "class": k.cls if k else None,
                    "module": k.module if k else None,
                    "hooks": [h for h in HOOK_BY_NAME if h in hooks],
                    "tracer": name in tracers})
    return out


def run_stack(replay: Replay) -> RunStack:
    """The run's middleware stack, and where each one fired (see the module docstring);
    built once per replay (``Replay.view``)."""
    return replay.view(_run_stack)


def _run_stack(replay: Replay) -> RunStack:
    run = replay.run
    events = run.events
    raw = _recorded_stack(events)
    recorded = raw is not None
    if raw is None:
        raw = [] if run.observed else _inferred(events)
    entries = []
    for s in raw:
        hooks = tuple(h for h in HOOK_BY_NAME if h in (s.get("hooks") or ()))
        cls, module = s.get("class"), s.get("module")
        k = find(str(s["name"]), hooks[0] if hooks else None, cls=cls, module=module)
        tracer = bool(s.get("tracer")) or cls in TRACERS
        entries.append(StackEntry(str(s["name"]), cls, module, hooks, k, tracer))
    firings: dict[tuple[str, str], list[int]] = {}
    doings: dict[tuple[str, str], list[int]] = {}
    for st in replay.steps:
        hook, who = _hook_of(st.event), _who(st.event)
        if hook is not None and who:
            doings.setdefault((who, hook), []).append(st.index)
            if st.event.hook != "history":
                firings.setdefault((who, hook), []).append(st.index)
    tracers = {x.name for x in entries if x.tracer}
    callbacks = run.summary.source == "callbacks" or any(
        e.hook in NODE_HOOKS and e.middleware and e.middleware not in tracers for e in events)
    layered = any(s.get("probed") for s in raw) or any(e.phase == "layer" for e in events)
    return RunStack(entries, recorded, callbacks, layered, firings, doings)


def describe(ev: Event, tracer: bool = False) -> str:
    """What one firing did, in words (from what the event recorded)."""
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if ev.hook == "history":
        parts = []
        if p.get("replaced"):
            parts.append(f"replaced {len(p['replaced'])} message(s) by a new version")
        if p.get("removed"):
            parts.append(f"removed {len(p['removed'])} message(s)")
        return "; ".join(parts) or "rewrote the history"
    if ev.phase == "error":
        return f"raised {p.get('error', 'an error')}"
    if ev.phase == "interrupt":
        return "paused the run for a human (interrupt)"
    if ev.phase == "layer":
        what = p.get("what")
        changed = ", ".join(map(str, p.get("changed") or ())) or "it"
        return {"request": f"changed the request ({changed})",
                "attempt": f"called the layers inside again (attempt {p.get('attempt')})",
                "error": f"got {p.get('error', 'an exception')} from inside",
                "short-circuit": "answered the call itself (short-circuit)",
                "response": f"changed the result ({changed})"}.get(str(what), str(what))
    if tracer:
        return "recorded it (changes nothing)"
    if p.get("jump_to") or p.get("goto"):
        return f"jumped to {p.get('jump_to') or p.get('goto')}"
    keys = [str(k) for k in p.get("update_keys") or () if k != "jump_to"]
    if keys:
        return f"updated the state: {', '.join(keys)}"
    return "returned nothing: no change"


def _spans(replay: Replay, hooks: frozenset[str]) -> list[tuple[int, int]]:
    """(enter step, end step) of each call of ``hooks`` (model or tool calls); a call
    never ended runs to the last step."""
    open_: dict[str | None, list[int]] = {}
    out = []
    for st in replay.steps:
        e = st.event
        if e.hook not in hooks:
            continue
        if e.phase == "enter":
            open_.setdefault(e.tool_call_id, []).append(st.index)
        elif e.phase in ("exit", "error", "interrupt") and open_.get(e.tool_call_id):
            out.append((open_[e.tool_call_id].pop(), st.index))
    out += [(a, len(replay.steps) - 1) for starts in open_.values() for a in starts]
    return sorted(out)


def floor_plan(replay: Replay, step: int) -> list[Row]:
    """The six hooks at step ``step``: who is on each, in execution order, and what
    each did (see the module docstring)."""
    info = run_stack(replay)
    i = replay.clamp(step)
    cur = replay.steps[i].event if replay.steps else None
    cur_hook = _hook_of(cur) if cur is not None else None
    cur_who = _who(cur) if cur is not None else None
    calls = {"wrap_model_call": _spans(replay, MODEL_HOOKS),
             "wrap_tool_call": _spans(replay, TOOL_HOOKS)}
    positions = {e.name: n + 1 for n, e in enumerate(info.entries)}
    rows = []
    for hook in HOOKS:
        spans = calls.get(hook.name, [])
        started = sum(1 for a, _ in spans if a <= i)  # calls through this hook so far
        in_call = any(a <= i <= b for a, b in spans)
        cells = []
        for e in info.on(hook.name):
            steps = info.firings.get((e.name, hook.name), [])
            n = bisect.bisect_right(steps, i)
            role = (e.known.roles.get(hook.name, "") if e.known else "") or GENERIC[hook.name]
            done = info.doings.get((e.name, hook.name), [])
            k = bisect.bisect_right(done, i)
            did = describe(replay.steps[done[k - 1]].event, e.tracer) if k else ""
            note = ""
            if hook.kind == "wrap":
                # Every call goes through every layer: it fired as often as calls started.
                fired = max(n, started) if not e.tracer else started
                state = (NOW if cur_hook == hook.name and cur_who == e.name else
                         ACTIVE if in_call else FIRED if started else
                         LATER if spans else NEVER)
                if not e.tracer and not n:
                    # (said of this layer alone, in its own cell: another layer on this
                    # hook may have changed the call at this very step)
                    note = (f"every call passes through {e.name}; it changed nothing "
                            "looptrace saw up to this step" if info.layered else
                            "a wrap hook is not a graph node: record what this layer "
                            "does with trace.around(...)")
            else:
                seeable = e.tracer or info.callbacks
                fired = n
                state = (NOW if cur_hook == hook.name and cur_who == e.name else
                         FIRED if n else LATER if steps else NEVER if seeable else UNSEEN)
                if state == UNSEEN:
                    note = ("another middleware's node hook: attach the callback handler "
                            "(trace.attach(agent)) to record it")
            cells.append(Cell(e.name, positions.get(e.name, 0), state, fired, role,
                              e.known is not None, did, note))
        active = cur is not None and (cur_hook == hook.name or (hook.kind == "wrap" and in_call))
        rows.append(Row(hook.name, hook.kind, hook.can, ORDER[hook.name], active,
                        tuple(cells)))
    return rows


def hook_middleware(replay: Replay) -> dict[str, list[str]]:
    """For each hook, the names of the middleware on it, in execution order (the
    graph's labels: the app's component and the HTML export draw the same)."""
    info = run_stack(replay)
    return {h.name: [e.name for e in info.on(h.name)] for h in HOOKS}


__all__ = ["ACTIVE", "FIRED", "LATER", "NEVER", "NOW", "STATE_LABEL", "UNSEEN", "Cell", "Row",
           "RunStack", "StackEntry", "describe", "floor_plan", "hook_middleware", "run_stack"]
