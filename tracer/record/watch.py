"""The invocation watcher: how a run ends in the record as what it was, without ``attach``.

``TraceMiddleware``'s hooks see only what passes through them: an exception raised
by another middleware's node hook, a wrap hook inside the tracer's, a tool without
error handling or the model never comes back through a hook that the run has
ended. LangGraph tells callbacks: the graph's own chain run ends with
``on_chain_error`` (after the node where the exception surfaced did), or with
``on_chain_end`` (its output holds ``__interrupt__`` when a human-in-the-loop
pause ended it).

One ``InvocationWatcher`` per process listens to chain runs only (model, tool,
retriever and custom events are ignored by LangChain before they reach it). It is
added to every callback manager LangChain configures, through
``langchain_core.tracers.context.register_configure_hook``, while at least one
``TraceMiddleware`` is alive; with none alive it is in no manager. For each chain
run it keeps ``(parent, name)`` until the run ends. A middleware's first hook of an
invocation claims the graph run it runs inside (``claim``); when that graph run
ends, the middleware is told (``TraceBase.invocation_ended``), with the graph
node where an exception surfaced first, or the interrupt that paused a node (the
graph then ends without error: its output does not say it paused). Unclaimed runs cost a dict insert and a
pop each.

When the middleware's callback handler is attached (``TraceMiddleware.attach``),
the handler sees all of this itself and the middleware claims nothing.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any, Protocol
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphInterrupt


class Owner(Protocol):
    def invocation_ended(self, run: Any, error: BaseException | None,
                         node: tuple[str, float] | None,
                         pause: GraphInterrupt | None) -> None: ...


class _Claim:
    __slots__ = ("node", "owners", "pause")

    def __init__(self) -> None:
        self.owners: list[tuple[Owner, Any]] = []  # (middleware, its RunState)
        self.node: tuple[str, float] | None = None  # where an exception surfaced first
        self.pause: GraphInterrupt | None = None  # an interrupt() that paused a node


_MAX_OPEN = 200_000  # chain runs open at once, far above any real process's


class InvocationWatcher(BaseCallbackHandler):
    """Tells a claiming middleware how the graph run it recorded into ended."""

    run_inline = True  # (called on the caller's thread or event loop, in order)
    raise_error = False
    ignore_llm = True
    ignore_chat_model = True
    ignore_agent = True  # (tool events too)
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self) -> None:
        super().__init__()
        self._chains: dict[UUID, tuple[UUID | None, str]] = {}  # chain run -> (parent, name)
        self._claims: dict[UUID, _Claim] = {}  # graph run -> who recorded into it
        self._lock = threading.Lock()

    # -- claims ------------------------------------------------------------
    def graph_of(self, config: Mapping[str, Any]) -> UUID | None:
        """The graph run that a hook called with ``config`` runs inside: the parent of
        the nearest enclosing chain run named as the node (``langgraph_node``)."""
        cbs = config.get("callbacks")
        cur = getattr(cbs, "parent_run_id", None)
        node = (config.get("metadata") or {}).get("langgraph_node")
        chains = self._chains
        for _ in range(64):  # (a bound: the tree is shallow; never loop on bad data)
            entry = chains.get(cur) if cur is not None else None
            if entry is None:
                return None
            parent, name = entry
            if name == node:
                return parent
            cur = parent
        return None

    def graph_name(self, config: Mapping[str, Any]) -> str | None:
        """The name of the graph run a hook called with ``config`` runs inside (what a
        callback handler names the run: ``create_agent(name=...)``, else LangGraph's
        ``LangGraph``), or None when the graph run is not known."""
        graph = self.graph_of(config)
        entry = self._chains.get(graph) if graph is not None else None
        return (entry[1] or None) if entry is not None else None

    def claim(self, config: Mapping[str, Any], owner: Owner, run: Any) -> bool:
        """``owner`` records the invocation of ``config`` into ``run``: tell it how the
        graph run ends. False when the graph run is not known (no watcher in it)."""
        graph = self.graph_of(config)
        if graph is None:
            return False
        with self._lock:
            claim = self._claims.get(graph)
            if claim is None:
                claim = self._claims[graph] = _Claim()
            claim.owners.append((owner, run))
        return True

    # -- chain runs ----------------------------------------------------------
    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *,
                       run_id: UUID, parent_run_id: UUID | None = None,
                       **kwargs: Any) -> None:
        chains = self._chains
        if len(chains) >= _MAX_OPEN:  # (runs that never ended: never grow without bound)
            chains.clear()
            self._claims.clear()
        chains[run_id] = (parent_run_id, kwargs.get("name") or "")

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._chains.pop(run_id, None)
        if self._claims:
            claim = self._claims.pop(run_id, None)
            if claim is not None:
                _tell(claim, None)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        entry = self._chains.pop(run_id, None)
        if not self._claims:
            return
        claim = self._claims.pop(run_id, None)
        if claim is not None:
            _tell(claim, error)
            return
        if entry is not None and entry[0] is not None:
            parent = self._claims.get(entry[0])
            if parent is None:
                return
            # a node of a claimed graph: paused by an interrupt() (the graph then ends
            # normally, its state saved), or the first node an exception came out of
            if isinstance(error, GraphInterrupt):
                parent.pause = error
            elif parent.node is None:
                parent.node = (entry[1], time.time())


def _tell(claim: _Claim, error: BaseException | None) -> None:
    for owner, run in claim.owners:
        try:
            owner.invocation_ended(run, error, claim.node, claim.pause)
        except Exception:  # noqa: BLE001, S110 - the tracer never breaks the agent (it warns)
            pass


WATCHER = InvocationWatcher()
_LIVE: weakref.WeakSet[Any] = weakref.WeakSet()  # the live TraceMiddleware instances


class _Switch:
    """What ``register_configure_hook`` reads at every configure (it calls ``.get()``,
    as on a ``ContextVar``): the watcher while a ``TraceMiddleware`` is alive. A
    process-wide switch, not a context variable: a server (``langgraph dev``) runs
    each invocation in a context of its own, made before the agent's module ran."""

    def get(self) -> InvocationWatcher | None:
        return WATCHER if _LIVE else None


_registered = [False]
_reg_lock = threading.Lock()


def watch(middleware: Any) -> InvocationWatcher:
    """Keep the watcher in every callback manager while ``middleware`` is alive."""
    _LIVE.add(middleware)
    if not _registered[0]:
        with _reg_lock:
            if not _registered[0]:
                from langchain_core.tracers.context import register_configure_hook

                register_configure_hook(_Switch(), True)  # type: ignore[arg-type]
                _registered[0] = True
    return WATCHER
