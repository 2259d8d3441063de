"""OpenTelemetry in and out: runs as GenAI-convention spans, spans as runs.

Out: ``export_otlp`` sends a run tree as one trace (``runspans`` builds the
spans, ``rows`` carries the stored rows along so nothing is lost, ``export``
hands them to the SDK's OTLP/HTTP exporter); ``follow`` sends runs as they
finish. In: ``CollectServer`` receives OTLP/HTTP (``otlp`` decodes the
requests, ``collect`` buffers spans per trace) and ``import_spans`` turns
traces into runs. The OpenTelemetry packages (the ``otel`` extra) are imported
only when used; public names here are imported lazily for the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracer._lazy import lazy_getattr

if TYPE_CHECKING:
    from .collect import CollectServer, TraceBuffer
    from .export import export_otlp, send_spans
    from .follow import follow
    from .imports import ImportResult, import_otlp_file, import_spans
    from .otlp import parse_request, read_otlp_file
    from .runspans import run_spans
    from .spans import Span, SpanEvent

_EXPORTS: dict[str, str] = {
    "CollectServer": "collect",
    "ImportResult": "imports",
    "Span": "spans",
    "SpanEvent": "spans",
    "TraceBuffer": "collect",
    "export_otlp": "export",
    "follow": "follow",
    "import_otlp_file": "imports",
    "import_spans": "imports",
    "parse_request": "otlp",
    "read_otlp_file": "otlp",
    "run_spans": "runspans",
    "send_spans": "export",
}

__all__ = [
    "CollectServer", "ImportResult", "Span", "SpanEvent", "TraceBuffer", "export_otlp", "follow",
    "import_otlp_file", "import_spans", "parse_request", "read_otlp_file", "run_spans",
    "send_spans",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
