"""Standing between LangGraph and every node of every graph in the process, with no
code change: what the debugger's node breakpoints (``node:NAME``) register into.

LangGraph runs each node of a step as a task through one function,
``run_with_retry`` (``arun_with_retry`` under ``ainvoke``), which the step runner
(``langgraph.pregel._runner``) calls for a plain ``StateGraph``, a subgraph's nodes
(a subgraph runs its own loop through the same runner) and ``create_agent``'s own
nodes alike. ``install()`` puts a thin wrapper in the runner's place of both, once per
process; with no watcher registered it calls straight through. A watcher sees the
task before it runs (it may give another input) and after (it may change the writes
the node made: its update, which LangGraph then applies through the graph's reducers
at the end of the step), or the exception it raised. No checkpointer, thread id or
recompile is needed, and nothing else of LangGraph is changed.

The debugger (``tracer.debug.nodes``) registers itself here: this side never imports
it. ``NodeTask`` is what a watcher gets: the node's name, its input, its writes, the
graph's channels (to apply an edit through a key's reducer, as LangGraph does) and
the run being recorded for it (the callback handler's run of the graph, when a
``TraceCallbackHandler`` is among the task's callbacks).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["Deferred", "NodeTask", "debug_every_node", "install", "register", "unregister",
           "watcher"]

# The watcher (the debugger's node side) and how it finds the run of a task that no
# callback handler records (a TraceMiddleware's own run): weak, so a debugger that is
# gone stops watching.
_WATCHER: list[Any] = []
_LOCK = threading.Lock()
_INSTALLED: list[tuple[Any, Any]] = []
# the graphs whose nodes are create_agent's (a Deep Agents agent is create_agent's graph
# under its own ``ls_integration``)
_AGENT_GRAPHS = ("langchain_create_agent", "deepagents")


class NodeTask:
    """One node about to run (or just run) in a graph's step."""

    __slots__ = ("_task", "carry", "config", "dbg", "graph_meta", "name", "recorder", "run")

    def __init__(self, task: Any, recorder: Any, run: Any) -> None:
        self._task = task
        self.name: str = str(task.name)
        self.config: Mapping[str, Any] = task.config or {}
        self.graph_meta: Mapping[str, Any] = self.config.get("metadata") or {}
        self.recorder = recorder
        self.run = run
        self.carry: Any = None  # (the watcher's: what it keeps from before to after)
        self.dbg: Any = None  # (the watcher's: who decides for this task)

    @property
    def input(self) -> Any:
        return self._task.input

    @property
    def writes(self) -> Any:
        """The node's writes (a deque of (channel, value)), as it made them."""
        return self._task.writes

    @property
    def channels(self) -> Mapping[str, Any]:
        """The graph's channels, as they are during this step (the state before the
        step's writes); empty when LangGraph does not say."""
        from langgraph._internal._constants import CONF, CONFIG_KEY_READ

        read = (self.config.get(CONF) or {}).get(CONFIG_KEY_READ)
        args: tuple[Any, ...] = tuple(getattr(read, "args", ()))
        chans = args[1] if len(args) > 1 else None
        return chans if isinstance(chans, Mapping) else {}

    def state_keys(self) -> list[str]:
        """The state's keys (the graph's channels, without LangGraph's own)."""
        return [k for k in self.channels if _state_key(k)]

    def update(self) -> dict[str, Any]:
        """The update the node returned: its writes to state keys (a key written
        twice: the list of values)."""
        out: dict[str, Any] = {}
        for chan, value in list(self.writes):
            if not _state_key(chan):
                continue
            if chan in out:
                prev = out[chan]
                out[chan] = [*prev, value] if isinstance(prev, _Many) else _Many([prev, value])
            else:
                out[chan] = value
        return {k: list(v) if isinstance(v, _Many) else v for k, v in out.items()}

    def write(self, update: Any) -> None:
        """Write ``update`` as if the node had returned it: through the node's own
        writers (its state keys, and its edges to the next nodes)."""
        for w in self._task.writers:
            w.invoke(update, self.config)

    def with_input(self, value: Any) -> Any:
        """The task, to run with ``value`` as its input (the writes stay shared)."""
        return dataclasses.replace(self._task, input=value)

    @property
    def create_agent(self) -> bool:
        """The node belongs to a ``create_agent`` graph (its own hooks are its steps)."""
        return self.graph_meta.get("ls_integration") in _AGENT_GRAPHS


class _Many(list):  # type: ignore[type-arg]
    """Several writes of one key by one node."""


def _state_key(chan: str) -> bool:
    return not (chan.startswith(("branch:", "__")) or chan == "tasks")


def register(watcher: Any, *, weak: bool = True) -> None:
    """Watch every node from now on with ``watcher`` (it takes the place of the one
    before): its ``task(task)`` (a ``NodeTask``, or None: not watched), ``graph(name,
    nodes)`` (a graph starts: its name and the node names of it and its subgraphs),
    ``before(nt)`` / ``abefore(nt)`` (the input to run with), ``after(nt)`` /
    ``aafter(nt)`` and ``error(nt, exc)`` / ``aerror(nt, exc)`` (True: the node's update
    was given instead of the exception)."""
    install()
    with _LOCK:
        _WATCHER[:] = [weakref.ref(watcher) if weak else (lambda w=watcher: w)]


class Deferred:
    """Stands for a watcher until the first graph runs, then asks ``arm`` for it (which
    registers it): ``looptrace debug`` arms the debugger from the start-up hook, where
    importing it would be too early."""

    def __init__(self, arm: Callable[[], Any]) -> None:
        self._arm = arm
        self._real: Any = None

    def _get(self) -> Any:
        if self._real is None:
            with _LOCK:
                if _WATCHER and _WATCHER[0]() is self:
                    _WATCHER.clear()
            self._real = self._arm() or _Off()
        return self._real

    def task(self, task: Any) -> Any:
        return self._get().task(task)

    def graph(self, name: str, nodes: set[str]) -> None:
        self._get().graph(name, nodes)


class _Off:
    def task(self, task: Any) -> None:
        return None

    def graph(self, name: str, nodes: set[str]) -> None:
        return None


def unregister(watcher: Any) -> None:
    with _LOCK:
        if _WATCHER and _WATCHER[0]() is watcher:
            _WATCHER.clear()


def watcher() -> Any:
    if not _WATCHER:
        return None
    return _WATCHER[0]()


def run_of(config: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """(recorder, run) of the graph run a task's config belongs to, as a
    ``TraceCallbackHandler`` among its callbacks records it; None when none does."""
    from .callbacks import TraceCallbackHandler

    cbs = config.get("callbacks")
    parent = getattr(cbs, "parent_run_id", None)
    if parent is None:
        return None
    for h in getattr(cbs, "handlers", None) or ():
        if isinstance(h, TraceCallbackHandler):
            run = h.recorder.lc_runs.get(parent)
            if run is not None:
                return h.recorder, run
    return None


def _control(exc: BaseException) -> bool:
    """LangGraph's own signals (an interrupt, a Command to the parent) and
    cancellation: never an error of the node."""
    import asyncio

    from langgraph.errors import GraphBubbleUp

    return isinstance(exc, (GraphBubbleUp, asyncio.CancelledError, KeyboardInterrupt,
                            SystemExit, GeneratorExit))


def _watched(w: Any, task: Any) -> Any:
    """The watcher's view of ``task``, or None (not watched; a watcher that fails to
    look never stops the graph)."""
    if w is None:
        return None
    try:
        return w.task(task)
    except Exception:  # noqa: BLE001
        return None


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    def run_with_retry(task: Any, *args: Any, **kwargs: Any) -> Any:
        w = watcher()
        nt = _watched(w, task)
        if nt is None:
            return original(task, *args, **kwargs)
        new = w.before(nt)
        try:
            out = original(task if new is nt.input else nt.with_input(new), *args, **kwargs)
        except BaseException as exc:
            if _control(exc) or not w.error(nt, exc):
                raise
            return None
        w.after(nt)
        return out

    run_with_retry.__wrapped__ = original  # type: ignore[attr-defined]
    return run_with_retry


def _awrap(original: Callable[..., Any]) -> Callable[..., Any]:
    async def arun_with_retry(task: Any, *args: Any, **kwargs: Any) -> Any:
        w = watcher()
        nt = _watched(w, task)
        if nt is None:
            return await original(task, *args, **kwargs)
        new = await w.abefore(nt)
        try:
            out = await original(task if new is nt.input else nt.with_input(new), *args,
                                 **kwargs)
        except BaseException as exc:
            if _control(exc) or not await w.aerror(nt, exc):
                raise
            return None
        await w.aafter(nt)
        return out

    arun_with_retry.__wrapped__ = original  # type: ignore[attr-defined]
    return arun_with_retry


def install() -> None:
    """Put the wrappers in the step runner's place (once per process)."""
    with _LOCK:
        if _INSTALLED:
            return
        import importlib

        runner: Any = importlib.import_module("langgraph.pregel._runner")
        sync, asyn = runner.run_with_retry, runner.arun_with_retry
        if not getattr(sync, "__wrapped__", None):
            runner.run_with_retry = _wrap(sync)
        if not getattr(asyn, "__wrapped__", None):
            runner.arun_with_retry = _awrap(asyn)
        from langgraph.pregel.main import Pregel

        for attr in ("stream", "astream"):
            fn = getattr(Pregel, attr)
            if not getattr(fn, "__looptrace__", False):
                setattr(Pregel, attr, _noting(fn))
        _INSTALLED.append((sync, asyn))


def _noting(original: Callable[..., Any]) -> Callable[..., Any]:
    """``Pregel.stream`` / ``astream`` (``invoke`` and ``ainvoke`` go through them),
    telling the watcher which graph starts; what they return is unchanged."""
    def stream(self: Any, *args: Any, **kwargs: Any) -> Any:
        w = watcher()
        if w is not None:
            with contextlib.suppress(Exception):  # (never stops the graph)
                w.graph(str(getattr(self, "name", "") or "graph"), graph_nodes(self))
        return original(self, *args, **kwargs)

    stream.__looptrace__ = True  # type: ignore[attr-defined]
    stream.__wrapped__ = original  # type: ignore[attr-defined]
    stream.__doc__ = original.__doc__
    stream.__name__ = original.__name__
    return stream


def debug_every_node() -> None:
    """``looptrace debug`` / ``LOOPTRACE_DEBUG``: the debugger watches every graph node
    (``node:NAME``), armed when the first graph runs (``tracer.debug.nodes.arm_from_env``,
    named, not imported: the debugger is a layer above)."""
    import importlib

    if watcher() is not None:  # (armed already)
        return
    register(Deferred(lambda: importlib.import_module("tracer.debug.nodes").arm_from_env()),
             weak=False)


def graph_nodes(graph: Any) -> set[str]:
    """The node names of a compiled graph and of its subgraphs."""
    names = {str(n) for n in getattr(graph, "nodes", {}) or {}}
    with contextlib.suppress(Exception):  # (a graph LangGraph cannot list: its own nodes)
        for _ns, sub in graph.get_subgraphs(recurse=True):
            names |= {str(n) for n in getattr(sub, "nodes", {}) or {}}
    return names
