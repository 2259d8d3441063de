"""Replay steps: the step model of a recorded run, one step per recorded event.

``build_replay(run)`` turns a loaded ``Run`` into ``Replay``: for each step the
graph node that is active, the edge just taken, the nodes visited so far, the
tool calls in flight and the messages as of that step. Pure functions over loader
records; what a step means in words is a view of it (``tracer.read.captions``), built
only by what shows it. Each read-side view of a replay (its captions, its floor plan,
its findings) is built once per replay (``Replay.view``), so one opened run is
replayed once and shared by all of them.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, TypeVar

from tracer.vocab.edits import KINDS, what_json
from tracer.vocab.graph_shape import GRAPH_EDGES, GRAPH_NODES, HOOK_NODE, NODE_HOOKS, STEP_KINDS
from tracer.vocab.hooks import HOOK_BY_NAME
from tracer.vocab.payloads import (
    HistoryPayload,
    LayerPayload,
    NodePayload,
    RunStartPayload,
    read_payload,
)
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS
from tracer.vocab.words import plural

from .calls import model_calls
from .loader import Event, Message, Run

__all__ = ["GRAPH_EDGES", "GRAPH_NODES", "HOOK_NODE", "NODE_HOOKS", "STEP_KINDS", "ForkEdit",
           "Replay", "Step", "build_replay", "fork_edit", "inline_message", "is_create_agent", "plural",
           "run_shape"]

T = TypeVar("T")

def is_create_agent(run: Run) -> bool:
    """The run is a ``create_agent`` graph, as its start says (the callback handler
    records ``graph``), whether or not any middleware hook fired in it."""
    for e in run.events[:3]:  # (the run's start comes first)
        if e.hook == "run" and e.phase == "start":
            return read_payload(RunStartPayload, e.payload).get("graph") == "create_agent"
    return False


def run_shape(run: Run, used_hooks: frozenset[str]) -> str:
    """``"loop"`` for a run without any middleware hook (a hand-rolled loop or plain
    graph recorded by the callback handler, a loop seen through its traffic or
    spans), else ``"agent"`` (a ``create_agent`` graph: with its hooks, or without any
    middleware, as its start says, ``is_create_agent``)."""
    if run.observed:
        return "loop"
    if used_hooks or any(e.hook in NODE_HOOKS for e in run.events) or is_create_agent(run):
        return "agent"
    return "loop"


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a replay: an event, the graph node it lights and the edge taken to it,
    the tool calls in flight and the messages it added (its caption: ``tracer.read.captions``)."""

    index: int
    event: Event
    node: str  # graph node active at this step
    edge: tuple[str, str] | None  # the edge just taken to reach it
    visited: frozenset[str]
    active_tools: tuple[str, ...]  # tool_call_ids in flight
    kind: str
    new_keys: tuple[str, ...]  # message keys that this step added


# (the fork's edits that change the order of the request's messages)
_ORDER_EDITS = frozenset({"drop", "insert"})


@dataclass(frozen=True, slots=True)
class ForkEdit:
    """Where a fork (``looptrace rerun RUN --at N`` with an edit) made its edit, as its
    record says: the run's ``forked_from`` metadata and the call at or after step N."""

    index: int  # the step of the call the edit was made at (its enter)
    seq: int  # that step's event
    edit: dict[str, Any]  # the edit as the fork recorded it (``Edit.to_json``)
    written: int | None  # the seq of the history event that wrote it into the state

    @property
    def what(self) -> str:
        """The edit in words: "the message at position 0 of the request replaced by ..."."""
        return what_json(self.edit)


def fork_edit(run: Run) -> ForkEdit | None:
    """Where the fork ``run`` made its edit (None: not a fork, an edit of the middleware
    list, which has no one step, or no call at or after the fork's step)."""
    meta = run.metadata if isinstance(run.metadata, dict) else {}
    fork = meta.get("forked_from")
    if not isinstance(fork, dict):
        return None
    edit, step = fork.get("edit"), fork.get("step")
    if not isinstance(edit, dict) or not isinstance(step, int):
        return None
    kind = KINDS.get(str(edit.get("kind")))
    fork = kind.fork if kind is not None else None
    hooks = MODEL_HOOKS if fork == "model" else TOOL_HOOKS if fork == "tool" else None
    if hooks is None or kind is None:
        return None
    # (the steps before the fork's come from the record: the same steps as the run it forks)
    events = run.events
    at = next((i for i in range(max(step - 1, 0), len(events))
               if events[i].hook in hooks and events[i].phase == "enter"), None)
    if at is None:
        return None
    written = None
    if kind.messages:  # (the fork's own layer writes it in as the call ends)
        for e in events[at + 1:]:
            if e.hook in MODEL_HOOKS and e.phase == "enter":
                break
            # (named "model" with the callback handler attached; unnamed without it)
            if e.hook == "history" and isinstance(e.payload, dict) and e.payload.get(
                    "by") in ("model", None):
                written = e.seq
                break
    return ForkEdit(at, events[at].seq, dict(edit), written)


@dataclass
class Replay:
    """A run as a sequence of steps through the agent graph (``build_replay``), with the
    conversation at every step (``messages_at``)."""

    run: Run
    steps: list[Step]
    used_hooks: frozenset[str]  # hooks that some middleware used in this run
    _views: dict[Any, Any] = field(default_factory=dict, init=False, repr=False,
                                   compare=False)

    def __len__(self) -> int:
        return len(self.steps)

    def view(self, build: Callable[[Replay], T]) -> T:
        """What ``build(self)`` returns, built once for this replay.

        The read-side modules keep their views of a replay here (the captions, the
        floor plan, the findings), so a run opened once is replayed once and each view
        is built the first time something shows it. ``build`` is the key: pass the
        same module-level function each time.

        Args:
            build: a pure function of the replay.

        Returns:
            Its result, from the first call on.
        """
        try:
            return self._views[build]  # type: ignore[no-any-return]
        except KeyError:
            made = self._views[build] = build(self)
            return made

    def index_of_seq(self, seq: int | None) -> int | None:
        """The index of the step of event ``seq``: the first step at or after it (the
        last step for a later seq); None for no seq or no steps. A person reads the
        step as ``index + 1``; ``seq`` stays the database's."""
        if seq is None or not self.steps:
            return None
        i = bisect.bisect_left([s.event.seq for s in self.steps], seq)
        return min(i, len(self.steps) - 1)

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
        (``tracer.read.state_at``): todos, files, structured_response, custom keys."""
        return self.run.state.at(seq)

    def state_at(self, seq: int) -> list[Message]:
        """The conversation as it was once the event ``seq`` was recorded."""
        order: Event | None = None
        for ev in self._order_events:
            if ev.seq > seq:
                break
            order = ev
        msgs = self.run.messages
        fork = self._fork_order
        if fork is not None and fork[0].seq <= seq < fork[1].seq:
            return self._fork_state_at(seq, *fork)
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
    def _fork_order(self) -> tuple[Event, Event, frozenset[str]] | None:
        """A fork's drop or insert edit: the call it was made at, the history event that
        wrote it into the state, and the keys the call sent (the edited request)."""
        f = self.fork_edit
        if f is None or f.written is None or f.edit.get("kind") not in _ORDER_EDITS:
            return None
        call, written = self._event_by_seq.get(f.seq), self._event_by_seq.get(f.written)
        if call is None or written is None or not isinstance(written.payload, dict) or (
                not isinstance(written.payload.get("keys"), list)):
            return None
        sent = call.payload.get("message_keys") if isinstance(call.payload, dict) else None
        return call, written, frozenset(map(str, sent or ()))

    def _fork_state_at(self, seq: int, call: Event, written: Event,
                       sent: frozenset[str]) -> list[Message]:
        """The conversation at ``seq``, between the call where a fork dropped or inserted
        a message and the step that writes its edit in: the edited conversation (the
        order the edit is written in, each message as recorded by ``seq``; an inserted
        message from the call on, since the call sent it)."""
        msgs = self.run.messages
        by_key = {m.key: m for m in msgs if m.seq <= seq
                  or (m.seq == written.seq and m.key in sent)}
        base = [by_key[k] for k in map(str, written.payload["keys"]) if k in by_key]
        seen = {m.key for m in base}
        base += [m for m in msgs if call.seq < m.seq <= seq and m.key not in seen]
        if not self._versions:
            return base
        return [self.version_at(m, seq) if m.key in self._versions else m for m in base]

    @cached_property
    def _seq_bounds(self) -> tuple[list[int], list[int]]:
        """For the messages in conversation order: the running maximum of their seqs,
        and the minimum of the seqs from each one on (both never decrease)."""
        seqs = [m.seq for m in self.run.messages]
        high, low = list(itertools.accumulate(seqs, max)), list(
            itertools.accumulate(reversed(seqs), min))[::-1]
        return high, low

    def version_at(self, m: Message, seq: int) -> Message:
        """Message ``m`` as it was at ``seq`` (its latest version recorded by then; a
        fork's edit from the call it was made at, ``fork_edit``)."""
        moved = self._fork_moved
        for v in self._versions.get(m.key, ()):
            if moved.get(v.seq, v.seq) > seq:
                break
            m = v
        return m

    @cached_property
    def fork_edit(self) -> ForkEdit | None:
        """Where this run, a fork, made its edit (``fork_edit``); None for another run."""
        return fork_edit(self.run)

    @cached_property
    def _fork_moved(self) -> dict[int, int]:
        """The seq of the history event that wrote a fork's edit into the state -> the
        seq of the call the edit was made at: the edited message shows from there on."""
        f = self.fork_edit
        return {f.written: f.seq} if f is not None and f.written is not None else {}

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
        f = self.fork_edit
        for i, v in enumerate(versions):
            if v is m:
                if f is not None and m.seq == f.written:
                    return (f"version {i + 2}, the fork's edit at step {f.index + 1} "
                            f"({f.what})")
                ev = self._event_by_seq.get(m.seq)
                return f"version {i + 2}, changed {_who(ev)}" if ev else f"version {i + 2}"
        if (f is not None and m.seq == f.written and f.edit.get("kind") == "insert"
                and self._fork_order is not None and m.key in self._fork_order[2]):
            return f"the fork's edit at step {f.index + 1} ({f.what})"
        if id(m) in self._first_ids:
            return None
        if f is not None and m.seq == f.seq and f.written is not None:
            return f"as the model received it: the fork's edit ({f.what})"
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
                and isinstance(read_payload(HistoryPayload, e.payload).get("keys"), list)]

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
        """The system prompt of the run's first model call that had one, as text
        (content blocks too: ``tracer.read.calls``)."""
        return next((c.request.system for c in model_calls(self.run) if c.request.system),
                    None)


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
    if ev.phase == "error" or (ev.phase == "layer" and read_payload(
            LayerPayload, ev.payload).get("what") == "error"):
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
    for i, ev in enumerate(run.events):
        prev = node
        if ev.hook == "run":
            node = "START" if ev.phase == "start" else ("END" if ev.phase == "end" else node)
        else:
            node = HOOK_NODE.get(ev.hook, node)
            ran = read_payload(NodePayload, ev.payload).get("node")
            if ev.hook == "node" and ran in ("model", "tools"):  # (the agent's own node: one that failed)
                node = str(ran)
        if ev.hook == "after_agent":
            pass
        if ev.tool_call_id and ev.hook in TOOL_HOOKS:
            if ev.phase == "enter":
                active[ev.tool_call_id] = None
            elif ev.phase in ("exit", "error", "interrupt"):
                active.pop(ev.tool_call_id, None)
        edge = (prev, node) if prev != node else None
        visited.add(node)
        steps.append(Step(
            index=i, event=ev, node=node, edge=edge, visited=frozenset(visited),
            active_tools=tuple(active), kind=_kind(ev),
            new_keys=tuple(new_by_seq.get(ev.seq, ())),
        ))
    return Replay(run, steps, used)

