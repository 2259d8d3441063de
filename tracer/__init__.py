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
    ``replay_run`` / ``areplay_run`` (a run replayed through its agent from its
    record, or forked at a step with an ``Edit``; a ``ReplayResult``).

Files:
    ``export_run``, ``import_trace``, ``import_many`` (JSON Lines trace files),
    ``export_html`` (a self-contained HTML replay), ``export_otlp`` and
    ``import_otlp_file`` (OpenTelemetry, with the ``otel`` extra; an
    ``ImportResult``). ``SCHEMA_VERSION``: the database schema this looptrace writes.

Errors (one-line messages, all ``LooptraceError``):
    ``NotALooptraceDatabase``, ``DatabaseUnavailable``, ``NewerSchemaError``,
    ``RunNotFound``, ``TraceFileError``, ``OtelUnavailable``, ``OtlpExportError``,
    ``ReplayError`` (and ``ReplayDiverged``).

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

if TYPE_CHECKING:
    from .callbacks import TraceCallbackHandler
    from .captions import step_captions
    from .check import Finding, Thresholds, check_db, check_run
    from .diff import Divergence, RunDiff, diff_runs, diff_tree
    from .errors import (
        DatabaseUnavailable,
        LooptraceError,
        NewerSchemaError,
        NotALooptraceDatabase,
        OtelUnavailable,
        OtlpExportError,
        ReplayDiverged,
        ReplayError,
        RunNotFound,
        TraceFileError,
    )
    from .exchange import export_run, import_many, import_trace
    from .hooks import HOOK_NAMES, HOOKS
    from .html_export import export_html
    from .loader import Event, Message, Run, RunSummary, TraceDB
    from .middleware import LeanTraceMiddleware, TraceMiddleware
    from .otel.export import export_otlp
    from .otel.imports import ImportResult, import_otlp_file
    from .redact import Redactor
    from .replay import Replay, Step, build_replay
    from .run_list import RunFilter
    from .schema import SCHEMA_VERSION
    from .whatif import Edit, ReplayResult, areplay_run, replay_run

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
    "ReplayDiverged",
    "ReplayError",
    "ReplayResult",
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
    "areplay_run",
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
    "replay_run",
    "step_captions",
]

# public name -> the module (of this package) that defines it
_EXPORTS: dict[str, str] = {
    "HOOKS": "hooks",
    "HOOK_NAMES": "hooks",
    "LeanTraceMiddleware": "middleware",
    "Redactor": "redact",
    "TraceCallbackHandler": "callbacks",
    "TraceMiddleware": "middleware",
    "Event": "loader",
    "Message": "loader",
    "Run": "loader",
    "RunFilter": "run_list",
    "RunSummary": "loader",
    "TraceDB": "loader",
    "Replay": "replay",
    "Step": "replay",
    "build_replay": "replay",
    "step_captions": "captions",
    "Finding": "check",
    "Thresholds": "check",
    "check_db": "check",
    "check_run": "check",
    "Divergence": "diff",
    "RunDiff": "diff",
    "diff_runs": "diff",
    "diff_tree": "diff",
    "SCHEMA_VERSION": "schema",
    "ImportResult": "otel.imports",
    "export_html": "html_export",
    "export_otlp": "otel.export",
    "export_run": "exchange",
    "import_many": "exchange",
    "import_otlp_file": "otel.imports",
    "import_trace": "exchange",
    "DatabaseUnavailable": "errors",
    "LooptraceError": "errors",
    "NewerSchemaError": "errors",
    "NotALooptraceDatabase": "errors",
    "OtelUnavailable": "errors",
    "OtlpExportError": "errors",
    "RunNotFound": "errors",
    "TraceFileError": "errors",
    "ReplayError": "errors",
    "ReplayDiverged": "errors",
    "Edit": "whatif",
    "ReplayResult": "whatif",
    "areplay_run": "whatif",
    "replay_run": "whatif",
}


__getattr__ = lazy_getattr(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
