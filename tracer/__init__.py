"""looptrace: record LangChain / LangGraph agent loops to SQLite, and read them back.

Record (the write side, imports LangChain):
    ``TraceMiddleware``, ``LeanTraceMiddleware``, ``TraceCallbackHandler``,
    ``Redactor``; ``HOOKS`` and ``HOOK_NAMES`` (every hook the tracer records).

Read (no LangChain):
    ``TraceDB`` (a database opened for reading: ``runs(RunFilter(...))``,
    ``run(id)``), ``RunFilter``, ``RunSummary``, ``Run``, ``Event``, ``Message``;
    ``build_replay`` (a ``Replay`` of ``Step``s), ``step_captions`` (each step in
    words: ``step_captions(replay)[step.index]``); ``check_run`` and ``check_db``
    (``Finding``s, with ``Thresholds``); ``diff_runs`` and ``diff_tree`` (a
    ``RunDiff``, its ``Divergence``s).

What if (imports LangChain):
    ``rerun`` / ``arerun`` (a run rerun through its agent from its
    record, or forked at a step with an ``Edit``; a ``RerunResult``).

Files:
    ``export_run``, ``import_trace``, ``import_many`` (JSON Lines trace files),
    ``export_html`` (a self-contained HTML replay), ``export_otlp`` and
    ``import_otlp_file`` (OpenTelemetry, with the ``otel`` extra; an
    ``ImportResult``). ``SCHEMA_VERSION``: the database schema this looptrace writes.

Errors (one-line messages, all ``LooptraceError``):
    ``NotALooptraceDatabase``, ``DatabaseUnavailable``, ``NewerSchemaError``,
    ``RunNotFound``, ``TraceFileError``, ``OtelUnavailable``, ``OtlpExportError``,
    ``RerunError`` (and ``RerunDiverged``).

Example:
    ```python
    from tracer import TraceDB, build_replay, check_run

    with TraceDB("looptrace.db") as db:
        run = db.run(db.runs()[0].id)
        print(len(build_replay(run).steps), [f.rule for f in check_run(run)])
    ```

Every name is imported on first use, so that the read side (and ``looptrace
runs``, ``looptrace check``, the app) starts without importing LangChain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_getattr
from .record import processors as _processors
from .record import rebuild as _rebuild

if TYPE_CHECKING:
    from .checks.run import Finding, Thresholds, check_db, check_run
    from .db.tables import SCHEMA_VERSION
    from .errors import (
        DatabaseUnavailable,
        LooptraceError,
        NewerSchemaError,
        NotALooptraceDatabase,
        OtelUnavailable,
        OtlpExportError,
        RerunDiverged,
        RerunError,
        RunNotFound,
        TraceFileError,
    )
    from .interop.exchange import export_run, import_many, import_trace
    from .interop.html_export import export_html
    from .otel.export import export_otlp
    from .otel.imports import ImportResult, import_otlp_file
    from .read.captions import step_captions
    from .read.diff import Divergence, RunDiff, diff_runs, diff_tree
    from .read.loader import Event, Message, Run, RunSummary, TraceDB
    from .read.run_list import RunFilter
    from .read.steps import Replay, Step, build_replay
    from .record.callbacks import TraceCallbackHandler
    from .record.middleware import LeanTraceMiddleware, TraceMiddleware
    from .vocab.hooks import HOOK_NAMES, HOOKS
    from .vocab.redact import Redactor
    from .whatif.rerun import Edit, RerunResult, arerun, rerun

__all__ = [  # (the groups: see the docstring above)
    "HOOKS",
    "HOOK_NAMES",
    "SCHEMA_VERSION",
    "DatabaseUnavailable",
    "Divergence",
    "Edit",
    "Event",
    "Finding",
    "ImportResult",
    "LeanTraceMiddleware",
    "LooptraceError",
    "Message",
    "NewerSchemaError",
    "NotALooptraceDatabase",
    "OtelUnavailable",
    "OtlpExportError",
    "Redactor",
    "Replay",
    "RerunDiverged",
    "RerunError",
    "RerunResult",
    "Run",
    "RunDiff",
    "RunFilter",
    "RunNotFound",
    "RunSummary",
    "Step",
    "Thresholds",
    "TraceCallbackHandler",
    "TraceDB",
    "TraceFileError",
    "TraceMiddleware",
    "arerun",
    "build_replay",
    "check_db",
    "check_run",
    "diff_runs",
    "diff_tree",
    "export_html",
    "export_otlp",
    "export_run",
    "import_many",
    "import_otlp_file",
    "import_trace",
    "rerun",
    "step_captions",
]

# public name -> the module (of this package) that defines it
_EXPORTS: dict[str, str] = {
    "HOOKS": "vocab.hooks",
    "HOOK_NAMES": "vocab.hooks",
    "LeanTraceMiddleware": "record.middleware",
    "Redactor": "vocab.redact",
    "TraceCallbackHandler": "record.callbacks",
    "TraceMiddleware": "record.middleware",
    "Event": "read.loader",
    "Message": "read.loader",
    "Run": "read.loader",
    "RunFilter": "read.run_list",
    "RunSummary": "read.loader",
    "TraceDB": "read.loader",
    "Replay": "read.steps",
    "Step": "read.steps",
    "build_replay": "read.steps",
    "step_captions": "read.captions",
    "Finding": "checks.run",
    "Thresholds": "checks.run",
    "check_db": "checks.run",
    "check_run": "checks.run",
    "Divergence": "read.diff",
    "RunDiff": "read.diff",
    "diff_runs": "read.diff",
    "diff_tree": "read.diff",
    "SCHEMA_VERSION": "db.schema",
    "ImportResult": "otel.imports",
    "export_html": "interop.html_export",
    "export_otlp": "otel.export",
    "export_run": "interop.exchange",
    "import_many": "interop.exchange",
    "import_otlp_file": "otel.imports",
    "import_trace": "interop.exchange",
    "DatabaseUnavailable": "errors",
    "LooptraceError": "errors",
    "NewerSchemaError": "errors",
    "NotALooptraceDatabase": "errors",
    "OtelUnavailable": "errors",
    "OtlpExportError": "errors",
    "RunNotFound": "errors",
    "TraceFileError": "errors",
    "RerunError": "errors",
    "RerunDiverged": "errors",
    "Edit": "whatif.rerun",
    "RerunResult": "whatif.rerun",
    "arerun": "whatif.rerun",
    "rerun": "whatif.rerun",
}


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def _arm_debugger(debug: object, db: str) -> _processors.HookProcessor | None:
    """The debugger ``TraceMiddleware(debug=...)`` / ``LOOPTRACE_DEBUG`` arms (imported
    then: it reads the checks, a layer above the recording side, which only declares
    the processor it calls, ``tracer.record.processors``)."""
    from .debug.hooks import arm_processor

    return arm_processor(debug, db)


_processors.register(_arm_debugger)


def _start_rewind(**kw: object) -> dict[str, object]:
    """A rewind asked at a pause (``tracer.debug.rewind``): the fork machinery starts it
    (``tracer.whatif.rewind``, imported then)."""
    from .whatif.rewind import start

    return start(**kw)  # type: ignore[arg-type]


_rebuild.register(_start_rewind)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
