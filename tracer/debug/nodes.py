"""The debugger at a graph's nodes: ``node:NAME[:before|:after]`` (and ``step``,
``error``, ``text:`` on a plain graph) for any compiled LangGraph graph, no code change.

The debugger registers a ``NodeWatch`` into ``tracer.record.node_hook``, which stands
between LangGraph's step runner and every node (a plain ``StateGraph``, a subgraph's
nodes, ``create_agent``'s own). At each node it asks the debugger, as the middleware
does at each hook; a pause is recorded in the run the callback handler records for the
graph (``looptrace run`` / ``looptrace debug``, ``trace.attach``), or in the run of the
``TraceMiddleware`` that armed the debugger. A node of a run nobody records is not
watched.

What is pending at a node pause (``kind: node``): the node's name, ``at`` (before /
after), ``state`` and ``keys`` (the state's keys, from the graph's channels):

- before: ``state`` is the input the node will receive, every key (custom keys,
  ``files``, ``todos``), each value as the State view shows it (``messages`` as the
  debugger shows messages);
- after: ``state`` is the update the node returned (its writes to state keys).

A ``state`` edit (``{"kind": "state", "values": {KEY: VALUE, ...}}``, the
``tracer.vocab.edits`` kind; several in one answer: their values merged in order, a
later key winning) goes through the graph's reducers, as LangGraph applies an update (the channel's own ``update``, on a
copy of it):

- before: each value is applied to the state the node reads, as an update made just
  before the node ran (with ``add_messages``, a message is added, or one with the
  same id replaced; with ``operator.add`` a list is appended; a key with no reducer
  is set). The node receives that, and the same update is written to the graph's
  state with the node's own writes, so the edit stays after the node (as
  ``update_state`` would keep it); where the node also writes a key with no reducer,
  the node's write, made after the edit, wins;
- after: each value takes the place of what the node wrote to that key, and LangGraph
  applies it through the key's reducer at the end of the step;
- at a node's error: the values are the node's update instead of the exception.

A value a key's reducer refuses is refused before the run goes on: the edit is
recorded as rejected and the run pauses again.
"""

from __future__ import annotations

import json
import sys
import threading
import uuid
import weakref
from typing import Any

from tracer.db.state_rows import value_json
from tracer.db.url import DB_ENV, DEFAULT_FILE
from tracer.errors import DebugAborted
from tracer.record import node_hook
from tracer.record.node_hook import NodeTask
from tracer.vocab.edits import edits_of

from .raised import exception_json
from .session import Debugger, from_env, in_thread, message_json

__all__ = ["NodeWatch", "arm_from_env", "state_json", "watch"]

_ENV_WATCH: list[NodeWatch] = []
# the watches of the middlewares' own debuggers: a run one of them debugs is decided by
# it at its nodes too (one step mode, one hit count per run)
_MW_WATCHES: weakref.WeakSet[NodeWatch] = weakref.WeakSet()
_LOCK = threading.Lock()
_SEEN_NODES: set[str] = set()
_PAUSED = "__looptrace_paused__"


class NodeWatch:
    """The node side of one ``Debugger`` (``node_hook``'s watcher)."""

    def __init__(self, dbg: Debugger, middleware: Any = None) -> None:
        self.dbg = dbg
        self._mw = weakref.ref(middleware) if middleware is not None else None
        self._said: set[str] = set()

    # -- which runs ---------------------------------------------------------------
    def task(self, task: Any) -> NodeTask | None:
        if str(task.name).startswith("__"):  # (LangGraph's own: __start__)
            return None
        found = node_hook.run_of(task.config or {}) or self._middleware_run(task.config or {})
        if found is None:
            return None
        nt = NodeTask(task, *found)
        nt.dbg = self.dbg
        for w in list(_MW_WATCHES):
            if w is not self and nt.run.id in w.dbg._runs:
                nt.dbg = w.dbg
                break
        return nt

    def _middleware_run(self, config: Any) -> tuple[Any, Any] | None:
        mw = self._mw() if self._mw is not None else None
        if mw is None:
            return None
        from langgraph._internal._constants import CONF, CONFIG_KEY_RUNTIME

        writer = getattr((config.get(CONF) or {}).get(CONFIG_KEY_RUNTIME), "stream_writer",
                         None)
        entry = mw._runs.get(id(writer)) if writer is not None else None
        if entry is None or entry[0]() is not writer:
            return None
        return mw.recorder, entry[1]

    # -- a graph starts: node breakpoints no graph can hit are said ------------------
    def graph(self, name: str, nodes: set[str]) -> None:
        _SEEN_NODES.update(nodes)
        specs = [b for b in self.dbg.breaks if b.kind == "node"] + [
            r[1] for r in self.dbg._remote if r[1].kind == "node"]
        for b in specs:
            if b.value in _SEEN_NODES or b.spec in self._said:
                continue
            self._said.add(b.spec)
            shown = ", ".join(sorted(n for n in nodes if not n.startswith("__")))
            print(f"looptrace debug: breakpoint {b.spec}: no graph run so far has a node "
                  f"{b.value!r} (graph {name!r} has: {shown}); it hits only if one does",
                  file=sys.stderr)

    # -- before, after, at an error ------------------------------------------------
    def _moment(self, nt: NodeTask, at: str, value: Any, exc: BaseException | None = None
                ) -> Any:
        def text() -> str:
            if exc is not None:
                return f"{type(exc).__name__}: {exc}".lower()
            return json.dumps(state_json(value), ensure_ascii=False, default=str).lower()

        def calls() -> set[str]:
            return _answered_calls(value) if at == "after" else set()

        return nt.dbg.moment(nt.run, "node", at, node=nt.name, in_agent=nt.create_agent,
                               error=exc is not None, text=text, calls=calls,
                               ns=nt.graph_meta.get("langgraph_checkpoint_ns"))

    def _pending(self, nt: NodeTask, at: str, value: Any,
                 exc: BaseException | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "node" if exc is None else "error", "node": nt.name,
                               "at": at, "keys": nt.state_keys()}
        if exc is None:
            out["state"] = state_json(value)
        else:
            out["where"] = "node"
            out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            out["exception"] = exception_json(exc)  # (its type, message, the user's frames)
        return out

    def _visit(self, nt: NodeTask, at: str, value: Any, apply: Any, unchanged: Any,
               exc: BaseException | None = None) -> Any:
        m = self._moment(nt, at, value, exc)
        if nt.dbg.io_due(m):
            nt.dbg.io(nt.recorder, nt.run, m)
        reason = nt.dbg.decide(nt.run, m)
        if reason is None:
            return unchanged
        return nt.dbg.resolve(nt.recorder, nt.run, None, m, reason,
                                self._pending(nt, at, value, exc), apply)

    async def _avisit(self, nt: NodeTask, at: str, value: Any, apply: Any, unchanged: Any,
                      exc: BaseException | None = None) -> Any:
        m = self._moment(nt, at, value, exc)
        if nt.dbg.io_due(m):
            await in_thread(nt.dbg.io, nt.recorder, nt.run, m)
        reason = nt.dbg.decide(nt.run, m)
        if reason is None:
            return unchanged
        return await in_thread(nt.dbg.resolve, nt.recorder, nt.run, None, m, reason,
                               self._pending(nt, at, value, exc), apply)

    def _before(self, nt: NodeTask) -> tuple[Any, Any]:
        def apply(edit: dict[str, Any] | None) -> Any:
            if edit is None:
                return nt.input
            values = _prepared(nt, _values(edit))
            new = _merged_input(nt, values)
            nt.carry = values
            return new, {"state": _shown(nt.input, values)}, {"state": _shown(new, values)}

        return apply, nt.input

    def before(self, nt: NodeTask) -> Any:
        apply, same = self._before(nt)
        return self._visit(nt, "before", nt.input, apply, same)

    async def abefore(self, nt: NodeTask) -> Any:
        apply, same = self._before(nt)
        return await self._avisit(nt, "before", nt.input, apply, same)

    def _after(self, nt: NodeTask) -> Any:
        def apply(edit: dict[str, Any] | None) -> Any:
            if edit is None:
                return None
            values = _prepared(nt, _values(edit))
            before = state_json({k: v for k, v in nt.update().items() if k in values})
            for k, v in values.items():
                _check(nt, k, [v])
            kept = [(c, v) for c, v in nt.writes if c not in values]
            nt.writes.clear()
            nt.writes.extend(kept + list(values.items()))
            return None, {"state": before}, {"state": state_json(values)}

        return apply

    def after(self, nt: NodeTask) -> None:
        _carry(nt)
        self._visit(nt, "after", nt.update(), self._after(nt), None)

    async def aafter(self, nt: NodeTask) -> None:
        _carry(nt)
        await self._avisit(nt, "after", nt.update(), self._after(nt), None)

    def _error(self, nt: NodeTask, exc: BaseException) -> Any:
        def apply(edit: dict[str, Any] | None) -> Any:
            if edit is None:
                return False
            values = _prepared(nt, _values(edit))
            for k, v in values.items():
                _check(nt, k, [v])
            nt.writes.clear()
            nt.write(values)
            return True, {"error": f"{type(exc).__name__}: {exc}"[:500]}, {
                "state": state_json(values)}

        return apply

    def error(self, nt: NodeTask, exc: BaseException) -> bool:
        if isinstance(exc, DebugAborted) or getattr(exc, _PAUSED, False):
            return False
        _mark(exc)
        return bool(self._visit(nt, "error", None, self._error(nt, exc), False, exc))

    async def aerror(self, nt: NodeTask, exc: BaseException) -> bool:
        if isinstance(exc, DebugAborted) or getattr(exc, _PAUSED, False):
            return False
        _mark(exc)
        return bool(await self._avisit(nt, "error", None, self._error(nt, exc), False, exc))


def _answered_calls(update: Any) -> set[str]:
    """The tool call ids the ToolMessages of a node's update answer."""
    msgs = update.get("messages") if isinstance(update, dict) else None
    items = msgs if isinstance(msgs, list) else [msgs]
    ids = (getattr(m, "tool_call_id", None) for m in items)
    return {str(i) for i in ids if i}


def _values(raw: Any) -> dict[str, Any]:
    """The state keys an answer's edits (``tracer.vocab.edits``: ``state``; one, or a
    list made in order) set, merged in order."""
    out: dict[str, Any] = {}
    for e in edits_of(raw):
        out.update(e.values or {})
    return out


def _mark(exc: BaseException) -> None:
    """(an error seen at its node is not paused at again at each graph it leaves)"""
    try:
        setattr(exc, _PAUSED, True)
    except (AttributeError, TypeError):
        pass


# -- applying an edit through the reducers ---------------------------------------------
def _prepared(nt: NodeTask, values: dict[str, Any]) -> dict[str, Any]:
    """The edit's values, messages made messages with ids (so that the node's input and
    the write to the state hold the same messages: ``add_messages`` matches by id)."""
    from langchain_core.messages import BaseMessage, convert_to_messages

    chans = nt.channels
    unknown = [k for k in values if chans and k not in chans]
    if unknown:
        msg = f"the state has no key {unknown[0]!r}"
        raise KeyError(msg)
    out: dict[str, Any] = {}
    for k, v in values.items():
        items = v if isinstance(v, list) else [v]
        if k == "messages" or (items and all(isinstance(x, BaseMessage) for x in items)):
            msgs = convert_to_messages(items)
            for m in msgs:
                if m.id is None:
                    m.id = f"looptrace-debug-{uuid.uuid4().hex[:12]}"
            out[k] = msgs if isinstance(v, list) else msgs[0]
        else:
            out[k] = v
    return out


def _check(nt: NodeTask, key: str, writes: list[Any]) -> Any:
    """The key's value after ``writes``, applied through its reducer on a copy of its
    channel (raises what the reducer raises); the value itself for no channel."""
    ch = nt.channels.get(key)
    if ch is None:
        return writes[-1]
    cc = ch.copy()
    cc.update(writes)
    return cc.get()


def _merged_input(nt: NodeTask, values: dict[str, Any]) -> Any:
    """The node's input with each value applied through its key's reducer."""
    new = {k: _check(nt, k, [v]) for k, v in values.items()}
    inp = nt.input
    if isinstance(inp, dict):
        return {**inp, **new}
    if hasattr(inp, "model_copy"):
        return inp.model_copy(update=new)
    import dataclasses

    if dataclasses.is_dataclass(inp) and not isinstance(inp, type):
        return dataclasses.replace(inp, **new)
    msg = f"the node's input is a {type(inp).__name__}, not a state with keys"
    raise TypeError(msg)


def _carry(nt: NodeTask) -> None:
    """A before-edit written to the graph's state with the node's own writes (first:
    it was made before the node ran); for a key with no reducer that the node wrote
    too, the node's write wins."""
    from langgraph.errors import InvalidUpdateError

    values = nt.carry
    if not values:
        return
    nt.carry = None
    for k, v in reversed(list(values.items())):
        own = [val for c, val in nt.writes if c == k]
        if own:
            try:
                _check(nt, k, [v, *own])
            except InvalidUpdateError:
                continue
        nt.writes.appendleft((k, v))


# -- the state as JSON ---------------------------------------------------------------
def _value(key: str, v: Any) -> Any:
    from langchain_core.messages import BaseMessage

    if isinstance(v, list) and v and all(isinstance(m, BaseMessage) for m in v):
        return [message_json(m, i) for i, m in enumerate(v)]
    if isinstance(v, BaseMessage):
        return message_json(v)
    return json.loads(value_json(v))


def state_json(value: Any) -> dict[str, Any]:
    """A state (a node's input, an update) as JSON, key by key: messages as the
    debugger shows messages, every other value as the State view does
    (``tracer.db.state_rows.value_json``)."""
    if value is None:
        return {}
    items: Any
    if isinstance(value, dict):
        items = value.items()
    elif hasattr(value, "model_dump") and hasattr(type(value), "model_fields"):
        items = ((k, getattr(value, k, None)) for k in type(value).model_fields)
    else:
        import dataclasses

        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            items = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        else:
            return {"(input)": _value("(input)", value)}
    return {str(k): _value(str(k), v) for k, v in items}


def _shown(state: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The keys an edit touched, as they are in ``state``."""
    whole = state_json(state)
    return {k: whole.get(k) for k in values}


# -- registering ------------------------------------------------------------------------
def watch(dbg: Debugger, middleware: Any = None) -> NodeWatch:
    """Watch every node of the process with ``dbg`` (kept as long as ``dbg`` is); the
    debugger ``LOOPTRACE_DEBUG`` armed stays the watcher once it is."""
    with _LOCK:
        w = getattr(dbg, "_node_watch", None)
        if w is None:
            w = NodeWatch(dbg, middleware)
            dbg._node_watch = w  # type: ignore[attr-defined]
            if middleware is not None:
                _MW_WATCHES.add(w)
        cur = node_hook.watcher()
        if cur is None or (isinstance(cur, NodeWatch) and cur not in _ENV_WATCH):
            node_hook.register(w)
    return w


def arm_from_env(env: Any = None) -> NodeWatch | None:
    """``looptrace debug`` / ``LOOPTRACE_DEBUG``: the process's debugger watches every
    node (a plain graph has no middleware to arm it)."""
    import os

    e = dict(os.environ if env is None else env)
    dbg = from_env(e)
    if dbg is None:
        return None
    dbg.bind(e.get(DB_ENV) or DEFAULT_FILE)
    w = watch(dbg)
    with _LOCK:
        _ENV_WATCH[:] = [w]
        node_hook.register(w)
    return w
