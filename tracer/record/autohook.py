"""The configure hook, armed without importing LangChain: what ``looptrace run``'s
``sitecustomize`` loads in every Python child process.

Importing LangChain (and the tracer's callback handler) at start-up would cost every
child process seconds, also those that never use LangChain. Instead, ``arm()`` waits
for ``langchain_core.tracers.context`` to be imported by the program itself, then adds
one entry to its configure hooks (appending to the list imports nothing). The handler
(``tracer.record.autotrace``, into ``$LOOPTRACE_DB``) is created at the first run LangChain
configures, when LangChain is loaded whole.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

__all__ = ["FACTORY", "GRAPH", "TARGET", "arm", "arm_debug", "capturing"]

TARGET = "langchain_core.tracers.context"
# (``looptrace debug``: every agent ``create_agent`` builds gets a debugging
# TraceMiddleware, the innermost, when it has none of its own)
FACTORY = "langchain.agents.factory"
# (and every node of every graph: ``tracer.record.node_hook``)
GRAPH = "langgraph.pregel.main"


class _HandlerVar:
    """Stands for the context variable of a configure hook: its value is the process's
    ``AutoTraceHandler`` (created at the first call), or None when tracing is off."""

    def get(self) -> Any:
        from .autotrace import install_from_env

        return install_from_env()


class _IsTraceHandler(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        from .callbacks import TraceCallbackHandler

        return isinstance(obj, TraceCallbackHandler)


class TraceHandlerClass(metaclass=_IsTraceHandler):
    """For the hook's "a handler of this class is there already" test: any
    ``TraceCallbackHandler`` (an attached ``TraceMiddleware``'s, or this process's)."""


def _register(module: Any) -> None:
    hooks = getattr(module, "_configure_hooks", None)
    if isinstance(hooks, list) and not any(isinstance(h[0], _HandlerVar) for h in hooks):
        hooks.append((_HandlerVar(), True, TraceHandlerClass, None))


class _Finder(importlib.abc.MetaPathFinder):
    target = TARGET

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.target:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            try:
                self.loaded(module)
            except Exception as exc:  # noqa: BLE001 - never break the import
                print(f"looptrace: not tracing: {exc!r}", file=sys.stderr)

        loader.exec_module = exec_module
        return spec

    def loaded(self, module: Any) -> None:
        _register(module)


class _GraphFinder(_Finder):
    target = GRAPH

    def loaded(self, module: Any) -> None:
        from .node_hook import debug_every_node

        debug_every_node()


class _FactoryFinder(_Finder):
    target = FACTORY

    def loaded(self, module: Any) -> None:
        _debug_every_agent(module)


def _debug_every_agent(module: Any) -> None:
    """Wrap ``create_agent`` of ``module`` (``capturing``)."""
    original = module.create_agent
    if getattr(original, "__looptrace__", False):
        return
    module.create_agent = capturing(original)


def capturing(original: Any) -> Any:
    """``create_agent`` wrapped: an agent with no ``TraceMiddleware`` gets one (into
    ``$LOOPTRACE_DB``, armed by ``$LOOPTRACE_DEBUG``) as its innermost middleware; one
    whose armed tracer is not the innermost gets its innermost probe
    (``TraceMiddleware.innermost``) last. The call is kept on that tracer
    (``tracer.record.rebuild``): a rewind builds the agent again from it."""

    def create_agent(*args: Any, **kwargs: Any) -> Any:
        from .middleware import TraceBase
        from .rebuild import Build, keep

        given = tuple(kwargs.get("middleware") or ())
        stack = list(given)
        traced = [m for m in stack if isinstance(m, TraceBase)]
        if not traced:
            from tracer.db.url import default_db

            from .middleware import TraceMiddleware

            stack.append(TraceMiddleware(db=default_db()))
            traced = [stack[-1]]
        elif stack[-1] is not traced[0] and traced[0].processors and (
                traced[0].innermost() not in stack):
            # (the user's own tracer, outside other middleware: the debugger asks at
            # the innermost layer, where the request is what the model receives)
            stack.append(traced[0].innermost())
        kwargs["middleware"] = stack
        agent = original(*args, **kwargs)
        rest = {k: v for k, v in kwargs.items() if k != "middleware"}
        keep(traced[0], Build(create_agent, args, rest, given))
        return agent

    create_agent.__looptrace__ = True  # type: ignore[attr-defined]
    create_agent.__wrapped__ = original  # type: ignore[attr-defined]
    create_agent.__doc__ = original.__doc__
    return create_agent


def arm_debug() -> None:
    """``looptrace debug``: every ``create_agent`` agent is debugged (now if LangChain's
    agent factory is loaded, else when it is)."""
    mod = sys.modules.get(FACTORY)
    if mod is not None:
        _debug_every_agent(mod)
    elif not any(isinstance(f, _FactoryFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _FactoryFinder())
    if sys.modules.get(GRAPH) is not None:
        from .node_hook import debug_every_node

        debug_every_node()
    elif not any(isinstance(f, _GraphFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _GraphFinder())


def arm() -> None:
    """Register the hook now if LangChain is loaded, else when it is."""
    mod = sys.modules.get(TARGET)
    if mod is not None:
        _register(mod)
    elif not any(type(f) is _Finder for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
