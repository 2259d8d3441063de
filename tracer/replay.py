"""Replay steps: one step per recorded event, with everything a pane needs.

``build_replay(run)`` turns a loaded ``Run`` into ``Replay``: for each step the
graph node that is active, the edge just taken, the nodes visited so far, the
tool calls in flight, the messages as of that step and a caption that explains
the hook. Pure functions over loader records; the app only draws them.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from .hooks import HOOK_BY_NAME
from .loader import Event, Message, Run
from .records import MODEL_HOOKS, TOOL_HOOKS

# The loop as a graph: nodes in drawing order, and every edge the loop can take.
GRAPH_NODES: tuple[str, ...] = (
    "START", "before_agent", "before_model", "model", "after_model", "tools", "after_agent", "END",
)
GRAPH_EDGES: tuple[tuple[str, str], ...] = (
    ("START", "before_agent"),
    ("before_agent", "before_model"),
    ("before_model", "model"),
    ("model", "after_model"),
    ("after_model", "tools"),  # the conditional edge: tool calls asked for
    ("after_model", "after_agent"),  # the conditional edge: a plain answer
    ("tools", "before_model"),  # the back edge
    ("after_agent", "END"),
)

# Dispatch table: event hook -> graph node.
HOOK_NODE: dict[str, str] = {
    "before_agent": "before_agent",
    "before_model": "before_model",
    "wrap_model_call": "model",
    "model": "model",
    "after_model": "after_model",
    "wrap_tool_call": "tools",
    "tool": "tools",
    "after_agent": "after_agent",
}


STEP_KINDS = ("model", "tool", "error", "interrupt", "hook", "run")
NODE_HOOKS = frozenset(h.name for h in HOOK_BY_NAME.values() if h.kind == "node")


def run_shape(run: Run, used_hooks: frozenset[str]) -> str:
    """``"loop"`` for a run without any middleware hook (a hand-rolled loop or plain
    graph recorded by the callback handler, a loop seen through its traffic or
    spans), else ``"agent"`` (a ``create_agent`` graph with its hooks)."""
    if run.observed or not (used_hooks or any(e.hook in NODE_HOOKS for e in run.events)):
        return "loop"
    return "agent"


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the captions may say about the run as a whole, read from the record once."""

    shape: str  # "agent" or "loop" (``run_shape``)
    handler: bool  # the callback handler recorded the run (runs.source = "callbacks")
    tracer: bool  # TraceMiddleware recorded model or tool calls in it
    status: str  # the run's status (completed, error, interrupted, running)
    decides: str  # where the "tool calls?" edge starts: "after_model", or "the model node"

    @classmethod
    def of(cls, run: Run, used_hooks: frozenset[str], tracers: frozenset[str]) -> RunFacts:
        tm = any(e.middleware in tracers and e.phase in ("enter", "exit")
                 and (e.hook in MODEL_HOOKS or e.hook in TOOL_HOOKS) for e in run.events)
        after_model = any(e.hook == "after_model" for e in run.events)
        return cls(run_shape(run, used_hooks), run.summary.source == "callbacks", tm,
                   str(run.summary.status), "after_model" if after_model else "the model node")


def plural(n: Any, word: str, many: str | None = None) -> str:
    """``"1 message"``, ``"3 messages"`` (``many`` for an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a replay: an event, the graph node it lights and the edge taken to it,
    the tool calls in flight, the messages it added and its caption."""

    index: int
    event: Event
    node: str  # graph node active at this step
    edge: tuple[str, str] | None  # the edge just taken to reach it
    visited: frozenset[str]
    active_tools: tuple[str, ...]  # tool_call_ids in flight
    kind: str
    new_keys: tuple[str, ...]  # message keys that this step added
    caption: str


@dataclass
class Replay:
    """A run as a sequence of steps through the agent graph (``build_replay``), with the
    conversation at every step (``messages_at``)."""

    run: Run
    steps: list[Step]
    used_hooks: frozenset[str]  # hooks that some middleware used in this run

    def __len__(self) -> int:
        return len(self.steps)

    @cached_property
    def stack(self) -> Any:
        """The run's middleware stack and where each one fired (``tracer.floorplan``)."""
        from .floorplan import run_stack  # (it imports this module)

        return run_stack(self)

    def clamp(self, index: Any) -> int:
        """A valid step index from anything (a query string, None, out of range)."""
        try:
            i = int(str(index).strip())
        except (TypeError, ValueError):
            return 0
        return max(0, min(i, len(self.steps) - 1)) if self.steps else 0

    def messages_at(self, index: int) -> list[Message]:
        """The conversation as of step ``index`` (system prompt excluded): the state
        at that point, each message in its version of then; at a model call whose
        request a middleware rewrote, the messages the model received."""
        if not self.steps:
            return list(self.run.messages)
        ev = self.steps[self.clamp(index)].event
        p = ev.payload if isinstance(ev.payload, dict) else None
        if p is not None and isinstance(p.get("message_keys"), list) and (
                ev.hook in MODEL_HOOKS and ev.phase in ("enter", "sent", "layer")):
            return self.sent_at(ev)
        return self.state_at(ev.seq)

    def values_at(self, seq: int) -> dict[str, Any]:
        """Every other state key as it was once the event ``seq`` was recorded
        (``tracer.state_read``): todos, files, structured_response, custom keys."""
        return self.run.state.at(seq)

    def state_at(self, seq: int) -> list[Message]:
        """The conversation as it was once the event ``seq`` was recorded."""
        order: Event | None = None
        for ev in self._order_events:
            if ev.seq > seq:
                break
            order = ev
        msgs = self.run.messages
        if order is None:
            # Every message before the first whose running max seq passes ``seq`` is
            # in; after it, only up to where the smallest seq still to come passes it
            # (parallel tool results can be placed a little out of seq order).
            high, low = self._seq_bounds
            k = bisect.bisect_right(high, seq)
            end = bisect.bisect_right(low, seq, lo=k)
            base = msgs[:k] + [m for m in msgs[k:end] if m.seq <= seq]
        else:
            by_key = {m.key: m for m in msgs if m.seq <= seq}
            keys = order.payload["keys"]
            base = [by_key[k] for k in map(str, keys) if k in by_key]
            seen = {m.key for m in base}
            base += [m for m in msgs if order.seq < m.seq <= seq and m.key not in seen]
        versions = self._versions
        if not versions:
            return base
        return [self.version_at(m, seq) if m.key in versions else m for m in base]

    @cached_property
    def _seq_bounds(self) -> tuple[list[int], list[int]]:
        """For the messages in conversation order: the running maximum of their seqs,
        and the minimum of the seqs from each one on (both never decrease)."""
        seqs = [m.seq for m in self.run.messages]
        high, low = list(itertools.accumulate(seqs, max)), list(
            itertools.accumulate(reversed(seqs), min))[::-1]
        return high, low

    def version_at(self, m: Message, seq: int) -> Message:
        """Message ``m`` as it was at ``seq`` (its latest version recorded by then)."""
        for v in self._versions.get(m.key, ()):
            if v.seq > seq:
                break
            m = v
        return m

    def sent_at(self, ev: Event) -> list[Message]:
        """The messages a rewritten model request carried: its keys, each message in
        its version of then, or as sent where the request changed it (inline)."""
        p = ev.payload
        ikeys = p.get("inline_keys") if isinstance(p.get("inline_keys"), list) else []
        inline = [m for i, d in enumerate(p.get("inline_messages") or [])
                  if (m := inline_message(d, ev.seq, i,
                                          str(ikeys[i]) if i < len(ikeys) else None))]
        keys = [str(k) for k in p["message_keys"]]
        key_set = set(keys)
        by_key = self.run.message_by_key
        inline_by_key = {m.key: m for m in inline}
        # (a message without an id has no key that survives a round trip: by order)
        unmatched = [m for m in inline if m.key not in key_set and m.key not in by_key]
        out: list[Message] = []
        for k in keys:
            m = inline_by_key.get(k)
            inline_here = m is not None
            if m is None:
                m = by_key.get(k)
                m = self.version_at(m, ev.seq) if m is not None else None
            if m is None and unmatched:
                m = unmatched.pop(0)
                inline_here = True
            if m is not None:
                if inline_here and m.position != len(out):  # its place in the request
                    m = replace(m, position=len(out))
                out.append(m)
        return out

    def layers_of(self, index: int) -> list[Step]:
        """The onion of the model or tool call that step ``index`` belongs to: its
        ``layer`` steps, outermost first (``TraceMiddleware.around``)."""
        if not self.steps:
            return []
        i = self.clamp(index)
        ev = self.steps[i].event
        hooks = MODEL_HOOKS if ev.hook in MODEL_HOOKS else TOOL_HOOKS
        if ev.hook not in hooks:
            return []
        tcid = ev.tool_call_id if hooks is TOOL_HOOKS else None
        start = i
        while start > 0 and not (self.steps[start].event.hook in hooks and self.steps[
                start].event.phase == "enter" and self.steps[start].event.tool_call_id == tcid):
            start -= 1
        out = []
        for st in self.steps[start:]:
            e = st.event
            if e.hook in hooks and e.tool_call_id == tcid:
                if e.phase == "layer":
                    out.append(st)
                elif e.phase in ("exit", "error") and st.index >= i:
                    break
        return out

    def changed_at(self, index: int) -> tuple[str, ...]:
        """Keys of messages that step ``index`` replaced by a new version."""
        if not self.steps:
            return ()
        seq = self.steps[self.clamp(index)].event.seq
        return tuple(m.key for m in self.run.revisions if m.seq == seq)

    def version_note(self, m: Message) -> str | None:
        """What a shown message is, when it is not the message as first recorded:
        a later version (which one, and who made it), or the form a rewritten model
        request carried. None for a message as first recorded."""
        versions = self._versions.get(m.key, ())
        for i, v in enumerate(versions):
            if v is m:
                ev = self._event_by_seq.get(m.seq)
                return f"version {i + 2}, changed {_who(ev)}" if ev else f"version {i + 2}"
        if id(m) in self._first_ids:
            return None
        return "as the model received it: a layer of the model call changed it"

    @cached_property
    def _first_ids(self) -> frozenset[int]:
        return frozenset(id(m) for m in self.run.messages)

    @cached_property
    def _event_by_seq(self) -> dict[int, Event]:
        return {e.seq: e for e in self.run.events}

    @cached_property
    def _versions(self) -> dict[str, list[Message]]:
        out: dict[str, list[Message]] = {}
        for m in self.run.revisions:
            out.setdefault(m.key, []).append(m)
        return out

    @cached_property
    def _order_events(self) -> list[Event]:
        """History events that set the order of the conversation (they carry keys)."""
        return [e for e in self.run.events if e.hook == "history"
                and isinstance(e.payload, dict) and isinstance(e.payload.get("keys"), list)]

    def omitted_at(self, index: int) -> frozenset[str]:
        """Keys of recorded messages that the latest model call up to step ``index``
        did NOT receive (a hand-rolled loop that ran a tool but never sent its result)."""
        if not self.steps:
            return frozenset()
        seq = self.steps[self.clamp(index)].event.seq
        out: frozenset[str] = frozenset()
        for ev in self._omission_events:
            if ev.seq > seq:
                break
            out = frozenset(str(k) for k in ev.payload["omitted_keys"])
        return out

    @cached_property
    def _omission_events(self) -> list[Event]:
        return [e for e in self.run.events if isinstance(e.payload, dict)
                and isinstance(e.payload.get("omitted_keys"), list)]

    def pending_calls(self, index: int) -> set[str]:
        """Tool calls asked for and not answered as of step ``index``."""
        msgs = self.messages_at(index)
        asked: set[Any] = {c.get("id") for m in msgs for c in m.tool_calls if c.get("id")}
        answered = {m.tool_call_id for m in msgs if m.tool_call_id}
        return {a for a in asked if a not in answered}

    def find(self, index: int, kind: str, direction: int = 1) -> int | None:
        """The next (or previous) step of ``kind`` after ``index``."""
        rng = range(index + 1, len(self.steps)) if direction > 0 else range(index - 1, -1, -1)
        for i in rng:
            if self.steps[i].kind == kind:
                return i
        return None

    def system_prompt(self) -> str | None:
        for ev in self.run.events:
            if isinstance(ev.payload, dict) and isinstance(ev.payload.get("system"), str):
                return str(ev.payload["system"])
        return None


def inline_message(d: Any, seq: int, position: int, key: str | None = None) -> Message | None:
    """A message stored inline in an event payload (``{"type", "data"}``), with the
    writer's key when the payload gives it (``inline_keys``)."""
    if not isinstance(d, dict) or not isinstance(d.get("data"), dict):
        return None
    body = d["data"]
    typ = str(d.get("type") or body.get("type") or "unknown")
    return Message(position, seq, body.get("id"), typ, body.get("tool_call_id"),
                   str(body.get("content") or ""), d, key)


def _who(ev: Event) -> str:
    """Who changed the conversation at ``ev``, in words."""
    p = ev.payload if isinstance(ev.payload, dict) else {}
    if ev.hook == "history":
        if p.get("by"):
            return f"by {p['by']}"
        return "by a hook or wrap layer that ran before this step"
    if ev.middleware:
        return f"at {ev.middleware}.{ev.hook}"
    return f"at {ev.hook} {ev.phase}"


def _kind(ev: Event) -> str:
    if ev.phase == "error" or (ev.phase == "layer" and isinstance(ev.payload, dict)
                               and ev.payload.get("what") == "error"):
        return "error"
    if ev.phase == "interrupt" or ev.hook in ("interrupt", "resume"):
        return "interrupt"
    if ev.hook in MODEL_HOOKS:
        return "model"
    if ev.hook in TOOL_HOOKS:
        return "tool"
    if ev.hook == "run":
        return "run"
    return "hook"


def build_replay(run: Run) -> Replay:
    """The steps of ``run``, one per recorded event, walked through the agent graph."""
    steps: list[Step] = []
    visited: set[str] = set()
    active: dict[str, None] = {}
    node = "START"
    new_by_seq: dict[int, list[str]] = {}
    for m in run.messages:
        new_by_seq.setdefault(m.seq, []).append(m.key)
    used = frozenset(e.hook for e in run.events if e.hook in HOOK_BY_NAME and e.middleware)
    tracers = tracer_names(run)
    facts = RunFacts.of(run, used, tracers)
    last_ai_calls = 0
    for i, ev in enumerate(run.events):
        prev = node
        if ev.hook == "run":
            node = "START" if ev.phase == "start" else ("END" if ev.phase == "end" else node)
        else:
            node = HOOK_NODE.get(ev.hook, node)
            if ev.hook == "node" and isinstance(ev.payload, dict) and ev.payload.get(
                    "node") in ("model", "tools"):  # (the agent's own node: one that failed)
                node = ev.payload["node"]
        if ev.hook == "after_agent":
            pass
        if ev.tool_call_id and ev.hook in TOOL_HOOKS:
            if ev.phase == "enter":
                active[ev.tool_call_id] = None
            elif ev.phase in ("exit", "error", "interrupt"):
                active.pop(ev.tool_call_id, None)
        if ev.hook in MODEL_HOOKS and ev.phase == "exit":
            last_ai_calls = int((ev.payload or {}).get("tool_calls") or 0)
        edge = (prev, node) if prev != node else None
        visited.add(node)
        steps.append(Step(
            index=i, event=ev, node=node, edge=edge, visited=frozenset(visited),
            active_tools=tuple(active), kind=_kind(ev),
            new_keys=tuple(new_by_seq.get(ev.seq, ())),
            caption=caption(ev, run, last_ai_calls, tracers=tracers, facts=facts),
        ))
    replay = Replay(run, steps, used)
    _caption_moves(replay, facts)
    return replay


def _caption_moves(replay: Replay, facts: RunFacts) -> None:
    """Captions that need the whole run: a step that left the standard edges (a jump
    only where an event says a jump happened, ``graph_layout.jump_steps``; otherwise
    the move as the record shows it), and the first step when the conversation is
    not recorded yet."""
    from .graph_layout import is_jump, jump_steps, passable_points, route  # (imports us)

    steps = replay.steps
    if steps and steps[0].event.hook == "run" and steps[0].event.phase == "start":
        steps[0] = replace(steps[0], caption=_start_caption(replay, facts, steps[0].caption))
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
            said = f"{jumped[i]} jumped from {a} straight to {b}."
        elif facts.shape == "loop" and a == "tools" and b == "END":
            said = ("The loop ended right after its tools ran, without calling the model "
                    "again: the loop's own code stopped it (a bound or a break), not the "
                    "model's answer.")
        elif facts.shape == "loop":
            said = f"The loop went from {a} to {b}."
        else:
            said = (f"The run went from {a} straight to {b}; no recorded event says why "
                    + ("(no hook recorded a jump_to)." if facts.handler else
                       "(attach the callback handler to see the other middleware's hooks)."))
        steps[i] = replace(st, caption=f"{said} {st.caption}".strip())


def _start_caption(replay: Replay, facts: RunFacts, said: str) -> str:
    """The first step: what starts, and where its input shows when it is not recorded
    yet (looptrace reads the conversation at the first hook or model call)."""
    if replay.run.observed:
        start = said
    elif facts.shape == "loop":
        start = ("The run starts: the loop's code is called (no graph and no middleware "
                 "hooks: the callback handler records its model and tool calls).")
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
    """Captions for a run seen from outside (``tracer/ingest.py``): say what the
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
        sys_note = " and a system prompt" if p.get("system") or p.get("system_same") else ""
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
        if "tool_names" in p:
            detail += f" Tools offered: {', '.join(map(str, p['tool_names']))}."
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


def _known_sentence(ev: Event, tracers: frozenset[str]) -> str | None:
    """What another middleware's hook does (``tracer.known_middleware``) and what it did
    at this firing; None for looptrace's own hooks and for events of no middleware."""
    if not ev.middleware or ev.middleware in tracers or ev.hook not in HOOK_BY_NAME:
        return None
    from .floorplan import describe  # (it imports this module)
    from .known_middleware import GENERIC, find

    k = find(ev.middleware, ev.hook)
    role = (k.roles.get(ev.hook) if k else None) or GENERIC[ev.hook]
    who = (f"{k.source}{chr(39) if k.source.endswith('s') else chr(39) + 's'} "
           f"{ev.middleware}" if k else ev.middleware)
    said = f"{ev.hook} of {who}: it {role}."
    if ev.phase not in ("interrupt", "error", "layer"):
        said += f" Here it {describe(ev)}."
    if k is not None and k.note:
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
    from .tool_life import PROPAGATED, PROPAGATES

    if facts.status == "error" and not went_on:
        return f"{what} {PROPAGATED}."
    if facts.status == "running" and not went_on:
        return f"{what} {PROPAGATES}."
    if answer is not None:
        return (f"{what} A layer outside TraceMiddleware turned the exception into a "
                "ToolMessage for this call, so the run went on.")
    return f"{what} The run went on without a result for this call recorded."


def caption(ev: Event, run: Run, tool_calls: int = 0, *,
            tracers: frozenset[str] = frozenset({"TraceMiddleware"}),
            facts: RunFacts | None = None) -> str:
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
    known = _known_sentence(ev, tracers)
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
    if ev.phase == "interrupt" or ev.hook == "interrupt":
        said = ("The run paused for a human: an interrupt() stopped the graph and the "
                "checkpointer saved its state. Resuming continues this same run.")
        return f"{said} {known}" if known else said
    if ev.hook == "resume":
        return ("The thread resumed with a human decision; the loop continues where it "
                "paused (no before_agent fires on resume).")
    if ev.hook == "history":
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
                    f"{' and the system prompt' if p.get('system') or p.get('system_same') else ''}"
                    f" (lap {ev.lap}).").strip()
        n = int(p.get("tool_calls") or 0)
        usage = p.get("usage") or {}
        tok = f", {usage.get('total_tokens')} tokens" if usage.get("total_tokens") else ""
        if n:
            names = _names(run, ev)
            asked = (f"The model answered{dur}{tok} asking for {plural(n, 'tool call')}"
                     f"{': ' + names if names else ''}.")
            if loop:
                return (f"{asked} The loop runs {'them' if n > 1 else 'it'} and sends one "
                        "result per call back, each with the call's id.")
            return (f"{asked} The conditional edge after {facts.decides} will route to tools"
                    f"{', which run them in parallel' if n > 1 else ''}.")
        if loop:
            return (f"The model answered in plain text{dur}{tok}: no tool calls, so the loop "
                    "stops here.")
        return (f"The model answered in plain text{dur}{tok}: no tool calls, so the loop "
                f"ends after {facts.decides}.")
    if ev.hook in TOOL_HOOKS:
        name = p.get("name", "")
        if ev.phase == "enter":
            unknown = "" if p.get("known_tool", True) else " (not a tool the agent has!)"
            return (f"{purpose} Tool call {name}{unknown} starts with id {ev.tool_call_id}."
                    f"{_hidden_note(run, ev, str(name))}").strip()
        status = p.get("status")
        if status == "error":
            from .tool_life import ERROR_PATHS

            path = ERROR_PATHS.get(str(p.get("error_path")))
            said = f"The tool call {ev.tool_call_id} came back as an error ToolMessage{dur}"
            if path:
                return f"{said}: {path}."
            return f"{said}; the error is fed back to the model on the next lap."
        if p.get("command"):
            answered = any(m.tool_call_id == ev.tool_call_id for m in run.messages)
            return (f"The tool returned a Command{dur} that updates the state (a subagent's "
                    "result arrives this way)"
                    + ("; its update carries the ToolMessage that answers this call (same "
                       "tool_call_id), as ToolNode requires: every tool call must be answered."
                       if answered else "."))
        if loop:
            answered = any(m.tool_call_id == ev.tool_call_id for m in run.messages)
            return (f"The tool call {ev.tool_call_id} returned{dur}; "
                    + ("the loop sends its result back in a ToolMessage with the call's id."
                       if answered else "no ToolMessage with this call's id was sent back: "
                       "the model cannot match a result to this call."))
        return (f"The tool call {ev.tool_call_id} returned{dur}; its ToolMessage answers the "
                "call with the same tool_call_id.")
    if known:
        purpose, who = known, ""
    if ev.hook == "after_model":
        nxt = "tools" if tool_calls else "after_agent"
        return f"{purpose}{who} Next, the conditional edge goes to {nxt}."
    if ev.hook == "before_model":
        return f"{purpose}{who} Lap {ev.lap} begins."
    return f"{purpose}{who}".strip()


_OFFERS: list[Any] = [None, ([], [])]  # the run last asked about, and its offers


def _tool_offers(run: Run) -> tuple[list[int], list[Any]]:
    """The seqs of the model calls that offered tools, and the signatures they gave
    (found once per run: a caption per tool call looks them up)."""
    if _OFFERS[0] is not run:
        seqs, offers = [], []
        for e in run.events:
            if e.hook in MODEL_HOOKS and e.phase == "enter" and isinstance(e.payload, dict) and (
                    isinstance(e.payload.get("tools"), list)):
                seqs.append(e.seq)
                offers.append(e.payload.get("signatures"))
        _OFFERS[:] = [run, (seqs, offers)]
    found: tuple[list[int], list[Any]] = _OFFERS[1]
    return found


def _hidden_note(run: Run, ev: Event, name: str) -> str:
    """At a tool call's start: the parameters LangChain injects, which the schema the
    model saw leaves out (``tracer.tool_life``)."""
    seqs, offers = _tool_offers(run)
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
