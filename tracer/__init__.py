"""looptrace's tracer: record LangChain / LangGraph agent loops to SQLite.

Public names are imported lazily, so that the read side (``tracer.loader``,
``tracer.replay``, the app, ``looptrace runs``) starts without importing
LangChain.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .callbacks import TraceCallbackHandler
    from .errors import LooptraceError, NewerSchemaError, NotALooptraceDatabase, RunNotFound
    from .hooks import HOOK_NAMES, HOOKS
    from .middleware import LeanTraceMiddleware, TraceMiddleware
    from .redact import Redactor
    from .schema import SCHEMA_VERSION

_EXPORTS: dict[str, str] = {
    "HOOKS": "hooks",
    "HOOK_NAMES": "hooks",
    "LeanTraceMiddleware": "middleware",
    "LooptraceError": "errors",
    "NewerSchemaError": "errors",
    "NotALooptraceDatabase": "errors",
    "Redactor": "redact",
    "RunNotFound": "errors",
    "SCHEMA_VERSION": "schema",
    "TraceCallbackHandler": "callbacks",
    "TraceMiddleware": "middleware",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        msg = f"module 'tracer' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
