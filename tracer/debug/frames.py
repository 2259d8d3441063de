"""Stepping into and out of a nested run: a Deep Agents subagent (the ``task`` tool's
graph), any graph a tool call runs, and a plain graph's subgraph.

- **Step into.** ``step`` answered at a tool call's pause before it runs (at the tracer
  or inside a layer) marks the call: an ``Into``, held in a context variable that the
  call's own context carries into everything the call runs (the tool, the subagent's
  graph, its nodes and hooks, in worker threads and asyncio tasks alike), and that no
  parallel sibling call sees. The first hook firing of another run in that context
  (the subagent's first node, or its before_agent when its own ``TraceMiddleware``
  sees it first) pauses there, in the subagent's run: reason ``step into NAME (...)``,
  and what is pending says ``into``: the subagent, the parent run and the call. The
  step went into the call: the parent run stops stepping. A call that ran no recorded
  graph (a plain tool; a subagent nobody records) pauses after it, as a step always did.
  Stepping on in the subagent works whoever decides its hook firings (its own
  ``TraceMiddleware``'s debugger, the parent's, ``looptrace debug``'s): the step mode of
  the run stepped into is the ``Into``'s. A subagent that no ``TraceMiddleware`` records
  (only the parent's callbacks, ``trace.attach``) has its graph nodes as its steps.
  Stepped past the subagent's end, the step comes back: the parent pauses after the call.
- **Step out** (``out``): at a pause in a subagent's run (nested under its parent's call
  in the record, or stepped into), the subagent runs on, stepping no more, and the
  parent pauses after that call (its ``wrap_tool_call`` after, with the result, as
  ``tool:task:after``; or its error), reason ``step out of NAME``. When the parent's own
  tracer has no debugger, it pauses after the parent's graph node that made the call
  (``tools``), as the node watch sees it. At a node of a plain graph's subgraph: after
  the node of the parent graph that runs the subgraph. Breakpoints on the way still
  hit (as gdb's ``finish``, pdb's ``return``). A pause with nothing to step out of says
  so at answering (``tracer.debug.channel``): what is pending has ``out`` only where
  there is.
"""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["Frame", "Into", "answered", "back_reason", "carry", "entered", "frame_of",
           "mark_into", "noted", "out_to", "stepping"]

_LOCK = threading.Lock()


@dataclass(eq=False)
class Into:
    """A tool call stepped into: run ``run``'s call ``call`` (of tool ``tool``)."""

    run: str
    call: str | None
    tool: str | None
    parent: Any  # the run's debugging state (``session._RunDebug``): its step goes into the call
    child: str | None = None  # the run stepped into (its first hook firing took it)
    child_name: str | None = None
    stepping: bool = False  # the run stepped into was last answered ``step``
    closed: bool = False  # the call came back
    outer: Into | None = None  # the call stepped into that this one is made inside
    hooks: bool = False  # a debugger sees the hooks of the run stepped into (not only nodes)


_INTO: contextvars.ContextVar[Into | None] = contextvars.ContextVar("looptrace_step_into",
                                                                   default=None)
# (run id, "call" | "node", tool call id | checkpoint namespace) -> the name of what was
# stepped out of: the pause to make once that call or node comes back
_OUT: dict[tuple[str, str, str], str] = {}


@dataclass(frozen=True)
class Frame:
    """Where ``out`` goes back to: run ``run``'s tool call (``kind`` call, ``key`` its id)
    or the node of a graph whose checkpoint namespace is ``key`` (``kind`` node)."""

    run: str
    kind: str
    key: str
    name: str  # what is stepped out of: the subagent's name, the subgraph's node
    tool: str | None = None
    node: str | None = None  # (kind node) the parent graph's node

    def says(self) -> str:
        if self.kind == "call":
            what = f"{self.tool} call" if self.tool else "call"
            return f"back in run {self.run[:12]} after its {what} {self.key}"
        return f"after the parent graph's node {self.node}"

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"to": self.says(), "run": self.run, "from": self.name}
        if self.kind == "call":
            out["tool_call"] = self.key
            out["tool"] = self.tool
        else:
            out["node"] = self.node
        return out


def _name(run: Any) -> str:
    return str(getattr(run, "name", None) or "subagent")


# -- step into -------------------------------------------------------------------------
def mark_into(run: Any, rd: Any, call: str | None, tool: str | None) -> None:
    """``step`` answered at run ``run``'s tool call ``call`` before it runs: the first
    hook firing of another run inside it pauses (set in the caller's context: a sync
    hook's own; an async hook's through ``carry``)."""
    outer = _INTO.get()
    if outer is not None and outer.run == run.id and outer.call == call and outer.child is None:
        outer = outer.outer  # (stepped again inside the call's layers: the same call)
    _INTO.set(Into(str(run.id), call, tool, rd, outer=outer))


def _of(run: Any) -> Into | None:
    """The call stepped into whose run stepped into is ``run`` (the innermost)."""
    into = _INTO.get()
    while into is not None:
        if into.child == run.id and not into.closed:
            return into
        into = into.outer
    return None


def carry(ctx: contextvars.Context) -> None:
    """The step into a call marked in a worker thread running in ``ctx`` (an async
    hook's pause): marked in the awaiting task's context too, which runs the call."""
    got = ctx.get(_INTO)
    if got is not None and got is not _INTO.get():
        _INTO.set(got)


def entered(run: Any) -> Into | None:
    """The ``Into`` this hook firing of ``run`` steps into (taken by it: it is the first
    of another run inside the marked call), or None."""
    into = _INTO.get()
    if into is None or into.closed or into.child is not None or into.run == run.id:
        return None
    with _LOCK:
        if into.child is not None:
            return None
        into.child, into.child_name = str(run.id), _name(run)
    into.parent.step = False  # (the step went into the call)
    return into


def into_reason(into: Into) -> str:
    what = f"{into.tool} call" if into.tool else "call"
    return (f"step into {into.child_name} (from run {into.run[:12]}'s {what} "
            f"{into.call})")


def stepping(run: Any) -> bool:
    """Whether ``run`` is a run stepped into and in step mode."""
    into = _of(run)
    return into is not None and into.stepping


def answered(run: Any, command: str) -> bool:
    """A pause of ``run`` answered ``command``: True when ``run`` is the run stepped
    into (its step mode is then the ``Into``'s, whoever decides its hook firings)."""
    into = _of(run)
    if into is None:
        return False
    into.stepping = command == "step"
    return True


# -- step out --------------------------------------------------------------------------
def frame_of(run: Any, m: Any) -> Frame | None:
    """Where ``out`` at moment ``m`` of ``run`` goes back to, or None."""
    into = _of(run)
    if into is not None:
        return Frame(into.run, "call", str(into.call), _name(run), tool=into.tool)
    parent = getattr(run, "parent", None)
    call = getattr(run, "parent_call", None)
    if parent is not None and call:
        return Frame(str(parent.id), "call", str(call), _name(run))
    ns = getattr(m, "ns", None)
    if m.hook == "node" and ns and "|" in ns:
        outer = ns.rsplit("|", 1)[0]
        node = outer.rsplit("|", 1)[-1].split(":", 1)[0]
        return Frame(str(run.id), "node", outer, f"{node}'s subgraph", node=node)
    return None


def out_to(run: Any, m: Any) -> None:
    """``out`` answered at moment ``m`` of ``run``: the pause to make when its frame
    comes back (none without a frame: refused when answered)."""
    frame = frame_of(run, m)
    if frame is None:
        return
    with _LOCK:
        _OUT[(frame.run, frame.kind, frame.key)] = frame.name
    into = _of(run)
    if into is not None:
        into.stepping = False


def back_reason(run: Any, m: Any) -> str | None:
    """Why moment ``m`` of ``run`` pauses coming back from a nested run (stepped out of,
    or stepped past its end), or None. Cheap when nothing was stepped into or out of."""
    back = m.at in ("after", "error")
    if not back:
        return None
    into = _INTO.get()
    mine = into is not None and into.run == run.id and not into.closed and (
        m.hook == "wrap_tool_call" and m.call_id == into.call)
    if mine and into is not None:
        into.closed = True
    if _OUT:
        rid = str(run.id)
        with _LOCK:
            name = None
            if m.hook == "wrap_tool_call" and m.call_id:
                name = _OUT.pop((rid, "call", str(m.call_id)), None)
            elif m.hook == "node" and m.ns:
                name = _OUT.pop((rid, "node", str(m.ns)), None)
                if name is None and m.at == "after" and m.calls is not None:
                    # (the parent's tracer has no debugger: after its node that made the
                    # call, whose update answers it)
                    key = next((k for k in _OUT if k[0] == rid and k[1] == "call"
                                and k[2] in m.calls()), None)
                    name = _OUT.pop(key) if key is not None else None
        if name is not None:
            return f"step out of {name}"
    if mine and into is not None:
        if into.child is None:  # (nothing was stepped into: a step over the call)
            return "step" if stepping(run) else None
        if into.stepping:
            return f"step (back from {into.child_name})"
    return None


def noted(pending: dict[str, Any], run: Any, m: Any, reason: str) -> dict[str, Any]:
    """What is pending at a pause of ``run``, with where it stands: ``into`` (the
    subagent stepped into, its parent run and the call) at a step into, and ``out``
    (where ``out`` goes back to) where it can step out."""
    out = dict(pending)
    into = _of(run)
    if into is not None and reason.startswith("step into "):
        out["into"] = {"subagent": into.child_name, "parent_run": into.run,
                       "tool": into.tool, "tool_call": into.call}
    frame = frame_of(run, m)
    if frame is not None:
        out["out"] = frame.as_json()
    return out


def hooked(run: Any) -> None:
    """A hook firing of ``run`` (not a node) is asked of a debugger."""
    into = _of(run)
    if into is not None:
        into.hooks = True


def bare(run: Any) -> bool:
    """A run stepped into, in step mode, whose hooks no debugger sees (no
    ``TraceMiddleware`` with a debugger records it: only callbacks do): its graph nodes
    are its steps."""
    into = _of(run)
    return into is not None and into.stepping and not into.hooks
