"""Writes to the LangGraph store (``BaseStore``: ``runtime.store``), recorded as events.

A store is not part of the state: Deep Agents' ``StoreBackend`` keeps its files there,
and any tool or hook may ``store.put`` / ``store.delete``. Every write of every
``BaseStore`` goes through its ``batch`` (``abatch`` for ``aput``) as ``PutOp``s (a
delete is a ``PutOp`` with no value).

How it is seen: when a traced run's runtime has a store, the ``batch`` and ``abatch``
of the store's class are wrapped, once per class (an instance cannot be: LangGraph's
``InMemoryStore`` has ``__slots__``; and the graph's own store object cannot be
swapped from a middleware). The wrapper calls the original with the same arguments
and returns what it returns, raises what it raises; only after a write succeeded,
and only if a tracer has met a store, does it look for the run that made it (the
graph's runtime in the calling context, ``langgraph.runtime.get_runtime``: its stream
writer names the invocation, as for the hooks) and put each write on that run's
list. A run that uses no store pays nothing: no class is wrapped until a store is
seen, and then a write outside any traced run costs one lookup.

Each write is recorded as a version of the key ``@store:[namespace, key]`` in the
``state`` table (value stored once, content-addressed, like a state value; no value:
deleted), at the tracer's next event of the run: the end of the tool call that made
it (with its ``tool_call_id``), or the tracer's next hook for a write made by another
node's hook (``by``: the graph node that ran it). Reading a store is not recorded.
"""

from __future__ import annotations

import contextvars
import functools
import json
import threading
import weakref
from typing import Any

from tracer.db.state_rows import STORE_PREFIX

from .state_keys import STORE_LOCK, memory_of

# The tool call running in this context (set by the tracer's wrap_tool_call while the
# runtime has a store): a write made inside it is that call's.
TOOL_CALL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "looptrace_store_tool_call", default=None)

_tracers: weakref.WeakSet[Any] = weakref.WeakSet()  # tracers that met a store
_wrapped: set[type] = set()
_lock = threading.Lock()


def store_key(namespace: Any, key: Any) -> str:
    """The ``state`` key of the store item ``key`` in ``namespace``."""
    return STORE_PREFIX + json.dumps([[str(p) for p in namespace], str(key)],
                                     ensure_ascii=False, separators=(",", ":"))


def watch_store(tracer: Any, store: Any) -> None:
    """``tracer`` (a TraceMiddleware) records the writes to ``store`` made by its runs."""
    if store is None:
        return
    _tracers.add(tracer)
    cls = type(store)
    if cls in _wrapped:
        return
    with _lock:
        if cls in _wrapped:
            return
        _wrap(cls)
        _wrapped.add(cls)


def _wrap(cls: type) -> None:
    batch = getattr(cls, "batch", None)
    abatch = getattr(cls, "abatch", None)
    if callable(batch) and not getattr(batch, "__looptrace__", False):
        @functools.wraps(batch)
        def traced_batch(self: Any, ops: Any) -> Any:
            if _tracers and not isinstance(ops, (list, tuple)):
                ops = list(ops)  # (read twice: by the store, then here)
            out = batch(self, ops)
            if _tracers:
                _note(ops)
            return out

        traced_batch.__looptrace__ = True  # type: ignore[attr-defined]
        cls.batch = traced_batch  # type: ignore[attr-defined]
    if callable(abatch) and not getattr(abatch, "__looptrace__", False):
        @functools.wraps(abatch)
        async def traced_abatch(self: Any, ops: Any) -> Any:
            if _tracers and not isinstance(ops, (list, tuple)):
                ops = list(ops)
            out = await abatch(self, ops)
            if _tracers:
                _note(ops)
            return out

        traced_abatch.__looptrace__ = True  # type: ignore[attr-defined]
        cls.abatch = traced_abatch  # type: ignore[attr-defined]


def _note(ops: Any) -> None:
    """The writes among ``ops`` (done), put on the list of the run that made them.
    Never raises: a write outside a traced run is not recorded."""
    try:
        from langgraph.store.base import PutOp

        puts = [op for op in ops if isinstance(op, PutOp)]
        if not puts:
            return
        run = _current_run()
        if run is None:
            return
        by = _node()
        tcid = TOOL_CALL.get()
        writes = [(store_key(op.namespace, op.key), op.value, by, tcid) for op in puts]
        with STORE_LOCK:
            memory_of(run).store.extend(writes)
    except Exception:  # noqa: BLE001, S110 - the store's caller must never see the tracer
        pass


def _current_run() -> Any:
    from langgraph.runtime import get_runtime

    try:
        writer = get_runtime().stream_writer
    except (RuntimeError, KeyError, AttributeError):
        return None
    for tracer in list(_tracers):
        entry = tracer._runs.get(id(writer))
        if entry is not None and entry[0]() is writer and not entry[1].ended:
            return entry[1]
    return None


def _node() -> str | None:
    from langgraph.config import get_config

    try:
        node = (get_config().get("metadata") or {}).get("langgraph_node")
    except RuntimeError:
        return None
    return str(node) if node else None
