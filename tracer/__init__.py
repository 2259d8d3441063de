"""looptrace's tracer: record LangChain / LangGraph agent loops to SQLite."""

from .callbacks import TraceCallbackHandler
from .errors import LooptraceError, NewerSchemaError, NotALooptraceDatabase, RunNotFound
from .hooks import HOOK_NAMES, HOOKS
from .middleware import LeanTraceMiddleware, TraceMiddleware
from .redact import Redactor
from .schema import SCHEMA_VERSION

__all__ = [
    "HOOKS",
    "HOOK_NAMES",
    "LeanTraceMiddleware",
    "LooptraceError",
    "NewerSchemaError",
    "NotALooptraceDatabase",
    "Redactor",
    "RunNotFound",
    "SCHEMA_VERSION",
    "TraceCallbackHandler",
    "TraceMiddleware",
]
