"""Tracing with no code change: every LangChain run of the process, through the
configure hook.

``install(db)`` registers a ``TraceCallbackHandler`` with LangChain's own configure
hook (``langchain_core.tracers.context.register_configure_hook``), the way LangSmith's
environment-variable tracing works: every callback manager LangChain configures from
then on (every ``invoke`` of an agent, a graph, a chat model, a tool) gets the handler,
and child runs inherit it. ``looptrace run`` loads this module in the child process
before the user's code (``tracer/record/_autotrace/sitecustomize.py`` on ``PYTHONPATH``) with
``LOOPTRACE_DB`` set; a server that imports ``tracer.record.autotrace`` with ``LOOPTRACE_DB``
set is traced the same way.

Fidelity is that of ``TraceMiddleware.attach``'s callback half, and each run says so
in its metadata (``metadata["looptrace"]``): every graph node (each middleware's node
hooks, named ``<Middleware>.<hook>``), model calls with what the model received, tool
calls and their results, interrupts, subagents nested under their ``task`` call; not
the wrap layers (``wrap_model_call`` / ``wrap_tool_call`` are not graph nodes).

One run is never recorded twice:

- a run that already carries a ``TraceCallbackHandler`` (``trace.attach(agent)``, or a
  handler passed in ``config``) does not get this one (the hook adds a handler only
  when none of its class is there);
- an agent with a ``TraceMiddleware`` that is not attached takes over the run this
  handler started for it, when both write to the same file through the same writer
  (the default): one run, the middleware's hooks and the callbacks' view, as with
  ``attach``. (A middleware writing to another file records its own run there.)
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, cast

from tracer.db.url import safe

from .callbacks import TraceCallbackHandler
from .recorder import Recorder, RunState

__all__ = ["ENV_DB", "AutoTraceHandler", "Namer", "Tagger", "active_handler", "adopt", "install",
           "install_from_env", "push", "uninstall"]

ENV_DB = "LOOPTRACE_DB"

NOT_SEEN = (
    "the wrap_model_call and wrap_tool_call layers of middleware (they are not graph "
    "nodes: what each layer between the outermost one and the model changed is not "
    "recorded; add TraceMiddleware with trace.around(...) for that)")

# The handlers installed, the one recording now last: ``push`` puts one on top (a pytest
# session run inside another one's process records into its own database), ``uninstall``
# takes it off and the one under it records again.
_installed: list[AutoTraceHandler] = []
_failed: list[str] = []
_UNINSTALLED = ("looptrace: this run has no end in the record: its recording was stopped "
                "while it was still running")

# A function called as each run starts (what it returns is added to the run's metadata:
# the pytest plugin tags each run with the test that made it), and one giving the name
# of a top-level run started now, or None (the plugin names each run after its test,
# not after its graph: "LangGraph").
Tagger = Callable[[], "dict[str, Any] | None"]
Namer = Callable[[], "str | None"]


class _AutoRecorder(Recorder):
    """A recorder whose runs say in their metadata how they were recorded."""

    def __init__(self, db: str | os.PathLike[str], how: str, tag: Tagger | None = None,
                 namer: Namer | None = None) -> None:
        super().__init__(db)
        self.how = how
        self.tag = tag
        self.namer = namer
        self.meta: dict[str, dict[str, Any]] = {}  # run id -> the metadata written

    def start_run(self, *, metadata: dict[str, Any] | None = None,
                  **kwargs: Any) -> RunState:
        tags: dict[str, Any] = {}
        if self.tag is not None:
            with contextlib.suppress(Exception):  # (a tag never stops a run's recording)
                tags.update(self.tag() or {})
        meta = {**(metadata or {}), **tags, "looptrace": {
            "recorded_by": self.how, "through": "callbacks (LangChain's configure hook)",
            "not_seen": NOT_SEEN}}
        if kwargs.get("parent") is None and self.namer is not None:
            with contextlib.suppress(Exception):  # (a name never stops a recording)
                named = self.namer()
                if named:
                    kwargs["name"] = named
        run = super().start_run(metadata=meta, **kwargs)
        self.meta[run.id] = meta
        return run


class AutoTraceHandler(TraceCallbackHandler):
    """The handler the configure hook adds to every LangChain run of the process."""

    def __init__(self, db: str | os.PathLike[str], *, how: str = "LOOPTRACE_DB",
                 tag: Tagger | None = None, namer: Namer | None = None) -> None:
        super().__init__(recorder=_AutoRecorder(db, how, tag, namer))
        self._adopted: dict[str, str] = {}  # run id -> the TraceMiddleware that took it

    def adopt(self, lc_parent: Any, middleware: Any) -> RunState | None:
        """The run this handler started for the invocation that ``middleware`` (a
        ``TraceMiddleware`` with no handler of its own) is in, handed over to it: from
        now on the middleware records the hooks, model and tool calls, this handler
        the rest (as with ``attach``). None when the middleware writes elsewhere."""
        run = self.recorder.lc_runs.get(lc_parent)
        if run is None or middleware.recorder.writer is not self.recorder.writer:
            return None
        name = str(getattr(middleware, "name", "TraceMiddleware"))
        if run.id not in self._adopted:
            self._adopted[run.id] = name
            rec = self.recorder
            assert isinstance(rec, _AutoRecorder)
            meta = rec.meta.get(run.id)
            if meta is not None:
                meta["looptrace"] = {**meta["looptrace"], "through": (
                    f"{name} in the agent (its hooks) and callbacks (the rest)")}
                from tracer.vocab.records import RunRecord

                rec.writer.put(RunRecord(run.id, {"metadata": meta}))
        return run

    def _node_event(self, node: tuple[RunState, str, float], outputs: Any,
                    error: BaseException | None,
                    calls: list[dict[str, Any]] | None = None) -> None:
        run, name, _ = node
        mw = name.rsplit(".", 1)[0] if "." in name else None
        if error is None and mw is not None and self._adopted.get(run.id) == mw:
            run.last_node = name
            return  # the middleware recorded this firing itself
        super()._node_event(node, outputs, error, calls)

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kwargs: Any) -> None:
        super().on_chain_end(outputs, run_id=run_id, **kwargs)
        self._forget(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: Any, **kwargs: Any) -> None:
        super().on_chain_error(error, run_id=run_id, **kwargs)
        self._forget(run_id)

    def _forget(self, lc_id: Any) -> None:
        # (a long-lived server: keep no state for runs that ended)
        rec = self.recorder
        if isinstance(rec, _AutoRecorder) and len(rec.meta) > 64:
            live = {r.id for r in rec.lc_runs.values()}
            for rid in [r for r in rec.meta if r not in live]:
                rec.meta.pop(rid, None)
                self._adopted.pop(rid, None)


class _Active:
    """Stands for the configure hook's context variable: its value is the handler on
    top of ``_installed`` (every thread and task sees it, also those started with a
    fresh context), or None when none is installed (the hook then adds nothing)."""

    def get(self) -> AutoTraceHandler | None:
        return _installed[-1] if _installed else None


_ACTIVE = _Active()


def install(db: str | os.PathLike[str], *, how: str = "LOOPTRACE_DB") -> AutoTraceHandler:
    """Trace every LangChain run of this process into ``db`` from now on (once per
    process; a second call returns the handler recording now)."""
    if _installed:
        return _installed[-1]
    return push(db, how=how)


def push(db: str | os.PathLike[str], *, how: str, tag: Tagger | None = None,
         namer: Namer | None = None) -> AutoTraceHandler:
    """Trace every LangChain run of this process into ``db`` until ``uninstall``: a new
    handler over the one recording now, if any, which records again after it."""
    # (imported by its full name: the module sys.modules holds, the one LangChain's
    # configure reads, also after a pytester session dropped the one imported before)
    from langchain_core.tracers.context import _configure_hooks, register_configure_hook

    handler = AutoTraceHandler(db, how=how, tag=tag, namer=namer)
    # (one hook per process, whose value is the handler on top; handle_class: the hook
    # adds no handler to a run that has a TraceCallbackHandler already, e.g. an attached
    # TraceMiddleware's)
    hooks: list[Any] = _configure_hooks
    if not any(h[0] is _ACTIVE for h in hooks):
        register_configure_hook(cast("Any", _ACTIVE), True, TraceCallbackHandler)
    _installed.append(handler)
    if os.environ.get("LOOPTRACE_DEBUG"):  # (a server armed too: every graph's nodes)
        from .node_hook import debug_every_node

        debug_every_node()
    atexit.register(handler.close)  # (before the writers' own exit hook: registered later)
    return handler


def uninstall(handler: AutoTraceHandler) -> None:
    """Stop ``handler`` (``push``): what it recorded is committed, its runs that have
    not ended are ended as at the process's exit, and the handler under it, if any,
    records again. Nothing of it is left behind (no exit hook, no open file)."""
    if handler not in _installed:
        return
    _installed.remove(handler)
    atexit.unregister(handler.close)
    handler.close()
    handler.recorder.end_unfinished(_UNINSTALLED)
    handler.recorder.writer.close()


def active_handler() -> AutoTraceHandler | None:
    return _installed[-1] if _installed else None


def adopt(callbacks: Any, lc_parent: Any, middleware: Any) -> RunState | None:
    """For ``TraceMiddleware``: the run an ``AutoTraceHandler`` among ``callbacks``
    (a callback manager) started for this invocation, handed over to ``middleware``."""
    for h in getattr(callbacks, "handlers", None) or ():
        if isinstance(h, AutoTraceHandler):
            return h.adopt(lc_parent, middleware)
    return None


def install_from_env(environ: Any = None) -> AutoTraceHandler | None:
    """``install`` into ``$LOOPTRACE_DB`` when it is set; a database that cannot be used
    is said on stderr, once, and the process goes on untraced (never broken)."""
    env = os.environ if environ is None else environ
    db = env.get(ENV_DB)
    if not db or _failed:
        return None
    try:
        return install(db, how=env.get("LOOPTRACE_HOW") or "LOOPTRACE_DB")
    except Exception as exc:  # noqa: BLE001 - tracing must never stop the program
        _failed.append(db)  # (said once: the hook asks again at every run)
        print(f"looptrace: not tracing ({ENV_DB}={safe(db)}): {exc}", file=sys.stderr)
        return None


install_from_env()
