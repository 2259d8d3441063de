"""The JSON form of a replay: what Python builds once and the replayer plays.

``replay_json(replay)`` has every step (node, edges taken, visited nodes, tool
calls in flight, kind, caption, the hook's event) and the conversation each
step shows, as Python's ``Replay.messages_at`` has it: every message once in a
table, and per step an edit of the step before's list (``view_edit``), so the
browser never replays anything itself. Tool call colours come from
``tracer.read.palette`` (one colour per call, wherever the run is shown).

Short keys keep a 5,000-step run small. Per step: ``n`` node, ``e`` edge, ``r``
the edges drawn (``graph_layout.route``), ``v`` visited nodes as a bit mask
over ``drawing()["nodeOrder"]``, ``t`` tool calls in flight, ``k`` kind, ``x``
1 where one of the run's errors is first seen (``tracer.read.errors``), ``nk`` the
keys of the messages to highlight (added or replaced at this step), ``om`` keys
of messages the model did not receive, ``c`` caption, ``h`` / ``p`` / ``l`` /
``s`` / ``mw`` / ``d`` / ``tc`` the event's hook, phase, lap, seq, middleware,
duration and tool call id, ``j`` 1 where an event says the step's move was a jump, ``pl`` its payload (with ``payloads=True``), ``mv``
the message list's edit. A window of a large run (``window=``) adds ``offset`` (its
first step), ``total`` and ``kinds`` (a letter per step of the whole run); the
window's first step's edit starts from an empty list.
"""

from __future__ import annotations

import operator
from typing import Any

from tracer.read.captions import captions
from tracer.read.errors import error_indexes
from tracer.read.graph_layout import (
    BACK_EDGE,
    BACK_TO_POINT,
    EDGES,
    LOOP_BACK,
    LOOP_EDGES,
    is_jump,
    jump_path,
    jump_steps,
    middleware_labels,
    passable_points,
    passthrough_hooks,
    route,
    shape,
    unknown_hooks,
)
from tracer.read.loader import Message, content_text
from tracer.read.palette import colour_map
from tracer.read.pause_time import given_in_debugger
from tracer.read.steps import GRAPH_NODES, Replay, Step
from tracer.vocab.payloads import ToolEnterPayload, read_payload

from .state_view import state_json

FORMAT = "looptrace-replay"
VERSION = 2


def is_error(rp: Replay, step: Step) -> bool:
    """Whether one of the run's errors is first seen at ``step`` (``tracer.read.errors``:
    each error once, so "Next error" visits as many steps as the run has errors; an
    exception seen again further up, at the graph node or as the run's failure, is
    not another one)."""
    return step.index in error_indexes(rp)


def _message(m: Message) -> dict[str, Any]:
    text = content_text(m.content) if m.body else m.text
    # Arguments travel as data; the page pretty-prints them (JSON.stringify).
    calls = [{"id": c.get("id"), "name": str(c.get("name", "?")), "args": c.get("args", {})}
             for c in m.tool_calls]
    calls += [{"id": c.get("id"), "name": f"invalid: {c.get('name', '?')}",
               "args": f"{c.get('args', '')}\n{c.get('error', '')}", "invalid": 1}
              for c in m.invalid_tool_calls]
    return {"key": m.key, "pos": m.position, "seq": m.seq, "type": m.type, "name": m.name,
            "text": text, "calls": calls, "tcid": m.tool_call_id, "status": m.status}


class _MessageTable:
    """Every message a step of the replay shows (first versions, later versions, the
    forms a rewritten request carried), once each, numbered."""

    def __init__(self, rp: Replay) -> None:
        self.rp = rp
        self.rows: list[dict[str, Any]] = []
        self._ids: dict[int, int] = {}
        self._keep: list[Message] = []  # (ids stay unique while the objects live)
        self._given = given_in_debugger(rp.run.events)

    def index(self, m: Message) -> int:
        i = self._ids.get(id(m))
        if i is None:
            i = self._ids[id(m)] = len(self.rows)
            row = _message(m)
            if m.type == "tool" and m.tool_call_id in self._given:
                row["given"] = 1  # (its result was typed in the debugger)
            note = self.rp.version_note(m)
            if note:
                row["vn"] = note
            self.rows.append(row)
            self._keep.append(m)
        return i

    def indexes(self, msgs: list[Message]) -> list[int]:
        """The numbers of ``msgs`` (a step's list: mostly numbered already, so the
        lookups run in C: ``map`` and a set difference, not a Python loop)."""
        ids = list(map(id, msgs))
        new = set(ids).difference(self._ids)
        if new:
            for m in msgs:
                if id(m) in new:
                    self.index(m)
        return list(map(self._ids.__getitem__, ids))


def view_edit(prev: list[int], cur: list[int]) -> dict[str, Any] | None:
    """``cur`` as an edit of ``prev``: keep the first ``b`` entries, put ``x`` in place,
    append ``a``; or the whole list (``f``) when that is shorter. None: no change."""
    if prev == cur:
        return None
    n = len(prev)
    if len(cur) >= n and cur[:n] == prev:  # the usual step: messages added at the end
        return {"b": n, "a": cur[n:]}
    k = min(n, len(cur))
    subs = [[j, cur[j]] for j in range(k) if prev[j] != cur[j]]
    if len(subs) > 16:
        return {"f": cur}
    op: dict[str, Any] = {"b": k}
    if subs:
        op["x"] = subs
    if len(cur) > k:
        op["a"] = cur[k:]
    return op


def _tool_names(rp: Replay) -> dict[str, str]:
    """tool_call_id -> tool name, from the run's events and its messages."""
    names: dict[str, str] = {}
    for ev in rp.run.events:
        p = read_payload(ToolEnterPayload, ev.payload)  # (a tool event's: its name)
        if ev.tool_call_id and p.get("name"):
            names.setdefault(ev.tool_call_id, str(p["name"]))
    for m in rp.run.messages:
        for c in m.tool_calls:
            if c.get("id"):
                names.setdefault(str(c["id"]), str(c.get("name") or "tool"))
    return names


def _steps(rp: Replay, table: _MessageTable, payloads: bool,
           span: range) -> tuple[list[dict[str, Any]], dict[str, str]]:
    bit = {n: 1 << i for i, n in enumerate(GRAPH_NODES)}
    passable = passable_points(rp)
    kind = shape(rp)
    jumped = jump_steps(rp)
    said = captions(rp)
    revised: dict[int, list[str]] = {}  # seq -> keys of the messages replaced there
    for m in rp.run.revisions:
        revised.setdefault(m.seq, []).append(m.key)
    steps: list[dict[str, Any]] = []
    jumps: dict[str, str] = {}
    prev: list[int] = []
    prev_shown: list[Message] = []
    omitted_before: frozenset[str] = frozenset()
    for st in rp.steps[span.start:span.stop]:
        ev = st.event
        taken = route(*st.edge, passable, kind) if st.edge else []
        for eid in taken:
            if is_jump(eid, kind):
                a, _, b = eid.partition(">")
                jumps[eid] = jump_path(a, b, kind)
        hot = list(st.new_keys)
        hot += [k for k in revised.get(ev.seq, ()) if k not in hot]
        row: dict[str, Any] = {
            "n": st.node, "e": list(st.edge) if st.edge else None, "r": taken,
            "v": sum(bit.get(n, 0) for n in st.visited), "t": list(st.active_tools),
            "k": st.kind, "nk": hot, "c": said[st.index], "h": ev.hook,
            "p": ev.phase, "l": ev.lap, "s": ev.seq, "mw": ev.middleware,
            "d": ev.duration_ms, "tc": ev.tool_call_id,
        }
        if is_error(rp, st):
            row["x"] = 1
        if st.index in jumped:
            row["j"] = 1  # an event says a jump happened: its move is drawn as a jump
        if payloads:
            row["pl"] = ev.payload
        omitted = rp.omitted_at(st.index)
        if omitted or omitted_before:
            row["om"] = sorted(omitted)
        omitted_before = omitted
        shown = rp.messages_at(st.index)
        n = len(prev_shown)
        if len(shown) >= n and all(map(operator.is_, prev_shown, shown)):
            cur = prev + table.indexes(shown[n:])  # the usual step: messages added at the end
        else:
            cur = table.indexes(shown)
        prev_shown = shown
        op = view_edit(prev, cur)
        if op is not None:
            row["mv"] = op
        prev = cur
        steps.append(row)
    return steps, jumps


def _state(rp: Replay, span: range) -> dict[str, Any]:
    """The State view's data (``state_view``), for a run with state beyond messages."""
    data = state_json(rp, span)
    return {"state": data} if data is not None else {}


KIND_LETTER = {"model": "m", "tool": "t", "error": "e", "interrupt": "i", "hook": "h", "run": "r"}


def kinds(rp: Replay) -> str:
    """One letter per step of the run (``KIND_LETTER``; ``e`` at every ``is_error`` step,
    ``h`` at an error step that is no error of its own): the tick strip and the jumps to
    the next model call, tool call or error."""
    errors = error_indexes(rp)
    return "".join("e" if s.index in errors else "h" if s.kind == "error" else
                   KIND_LETTER.get(s.kind, "h") for s in rp.steps)


def replay_json(rp: Replay, *, payloads: bool = True,
                window: tuple[int, int] | None = None) -> dict[str, Any]:
    """Everything the replayer needs to play ``rp``, as plain JSON-able data.
    ``payloads=False`` leaves the events' payloads out (the app's inspector reads
    them on the server). ``window=(start, stop)``: only those steps (and the messages
    they show), with ``offset``, ``total`` and ``kinds`` for the whole run: a run too
    big to send at once, sent a window at a time."""
    s = rp.run.summary
    table = _MessageTable(rp)
    span = range(len(rp.steps)) if window is None else range(
        max(0, window[0]), min(len(rp.steps), window[1]))
    steps, jumps = _steps(rp, table, payloads, span)
    kind = shape(rp)
    view0 = [] if rp.steps else [table.index(m) for m in rp.run.messages]
    messages = [*rp.run.messages, *rp.run.revisions]
    part: dict[str, Any] = {} if window is None else {
        "offset": span.start, "total": len(rp.steps), "kinds": kinds(rp)}
    return {
        "format": FORMAT, "version": VERSION,
        "run": {"id": s.id, "name": s.name, "status": s.status, "laps": s.laps,
                "parent_id": s.parent_id, "parent_tool_call_id": s.parent_tool_call_id,
                "model": s.model, "provider": s.provider, "error": s.error,
                "total_tokens": s.total_tokens, "tokens": s.tokens_phrase,
                "started_at": s.started_at,
                "ended_at": s.ended_at},
        "steps": steps,
        "messages": table.rows,
        "view0": view0,
        "system": rp.system_prompt(),
        "colours": colour_map(messages),  # tool_call_id -> colour (tracer.read.palette)
        "names": _tool_names(rp),  # tool_call_id -> tool name
        # each hook's middleware in execution order: {hook: {"text", "title"}}
        "mw": middleware_labels(rp),
        # "agent": the create_agent graph with its hooks; "loop": a run without
        # middleware hooks, drawn as the loop it is (drawing()["loop"])
        "shape": kind,
        # hooks no middleware used: node hooks drawn as points, wrap boxes faded
        "passthrough": passthrough_hooks(rp) if kind == "agent" else [],
        # a run seen from outside: the hooks it cannot know (none drawn in a loop)
        "unknown": unknown_hooks(rp) if kind == "agent" else [],
        # The edges steps take that are not standard edges: id -> SVG path data
        # (a jump where the step says so, ``j``; else a plain move).
        "jumps": jumps,
        "back": (LOOP_EDGES[LOOP_BACK] if kind == "loop" else
                 EDGES[BACK_EDGE] if "before_model" in rp.used_hooks else BACK_TO_POINT),
        "children": [{"id": c.id, "name": c.name, "parent_tool_call_id": c.parent_tool_call_id}
                     for c in rp.run.children],
        **part,
        **_state(rp, span),
    }


__all__ = ["FORMAT", "KIND_LETTER", "VERSION", "is_error", "kinds", "replay_json", "view_edit"]
