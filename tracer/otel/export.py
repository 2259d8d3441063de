"""Send recorded runs to an OTLP/HTTP endpoint, with the OpenTelemetry SDK's exporter.

The spans of a run are built after the fact, with the recorded ids and times,
so they are handed to the SDK as its own ``ReadableSpan`` objects and sent with
``OTLPSpanExporter.export()`` (the same call a ``BatchSpanProcessor`` makes):
the SDK encodes and posts them, retrying what OTLP says to retry. Batches are
cut by span count and by size (a Collector refuses bodies over 20 MiB by
default).

The exporter reports failure as a boolean and logs the reason; ``_Failures``
catches those log records so a refusal or an unreachable endpoint is one clear
``OtlpExportError`` line.

Example:
    >>> export_otlp("looptrace.db", "3f2a", "http://127.0.0.1:4318")
    11
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

from tracer.errors import OtlpExportError
from tracer.read.loader import TraceDB

from ._deps import require
from .runspans import run_spans
from .spans import Span

DEFAULT_TIMEOUT = 10.0
BATCH_SPANS = 512
BATCH_BYTES = 4 * 1024 * 1024
_KINDS = ("internal", "server", "client", "producer", "consumer")


def traces_url(url: str) -> str:
    """The ``/v1/traces`` URL of an OTLP/HTTP endpoint given as a base URL or in full."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        msg = f"{url!r} is not an http(s) URL (e.g. http://127.0.0.1:4318)"
        raise OtlpExportError(msg)
    if parts.path in ("", "/"):
        return url.rstrip("/") + "/v1/traces"
    return url


def export_otlp(db_path: str | Path, run_id: str, url: str, *,
                headers: dict[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT,
                service: str | None = None) -> int:
    """Send run ``run_id`` (an id or unique prefix) and its subagent runs; return the
    number of spans sent. ``service`` names the service (and Phoenix's project; default
    "looptrace"). Raise ``OtlpExportError`` if the endpoint refuses them or cannot be
    reached."""
    with TraceDB(db_path) as db:
        spans = run_spans(db, db.resolve(run_id), service)
    return send_spans(spans, url, headers=headers, timeout=timeout)


def send_spans(spans: Sequence[Span], url: str, *, headers: dict[str, str] | None = None,
               timeout: float = DEFAULT_TIMEOUT) -> int:
    """Post ``spans`` in batches; return how many were sent."""
    http = require("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    sdk_export = require("opentelemetry.sdk.trace.export")
    endpoint = traces_url(url)
    exporter = http.OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=timeout)
    sent = 0
    try:
        for batch in _batches(spans):
            with _Failures() as failures:
                result = exporter.export([readable(s) for s in batch])
            if result != sdk_export.SpanExportResult.SUCCESS:
                why = failures.reason() or "the export failed"
                msg = f"{endpoint}: {why} ({sent} of {len(spans)} spans sent)"
                raise OtlpExportError(msg)
            sent += len(batch)
    finally:
        exporter.shutdown()
    return sent


def _batches(spans: Sequence[Span]) -> Iterator[list[Span]]:
    batch: list[Span] = []
    size = 0
    for span in spans:
        n = _size(span)
        if batch and (len(batch) >= BATCH_SPANS or size + n > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(span)
        size += n
    if batch:
        yield batch


def _size(span: Span) -> int:
    def attrs(a: dict[str, Any]) -> int:
        return sum(len(k) + (len(v) if isinstance(v, str) else 16) for k, v in a.items())

    return 64 + attrs(span.attributes) + sum(48 + attrs(e.attributes) for e in span.events)


@functools.cache
def _sdk() -> tuple[Any, Any, Any, Any]:
    return (require("opentelemetry.sdk.trace"), require("opentelemetry.trace"),
            require("opentelemetry.sdk.resources"),
            require("opentelemetry.sdk.util.instrumentation"))


def readable(span: Span) -> Any:
    """A ``Span`` as the SDK's ``ReadableSpan`` (what its exporters encode)."""
    sdk, trace, resources, instrumentation = _sdk()
    flags = trace.TraceFlags(trace.TraceFlags.SAMPLED)
    ctx = trace.SpanContext(int(span.trace_id, 16), int(span.span_id, 16), is_remote=False,
                            trace_flags=flags)
    parent = (trace.SpanContext(int(span.trace_id, 16), int(span.parent_id, 16), is_remote=False,
                                trace_flags=flags) if span.parent_id else None)
    status = {"ok": trace.StatusCode.OK, "error": trace.StatusCode.ERROR}.get(
        span.status, trace.StatusCode.UNSET)
    kind = getattr(trace.SpanKind, span.kind.upper()) if span.kind in _KINDS else (
        trace.SpanKind.INTERNAL)
    return sdk.ReadableSpan(
        name=span.name, context=ctx, parent=parent,
        resource=resources.Resource(span.resource),
        attributes=span.attributes,
        events=[sdk.Event(e.name, e.attributes, _ns(e.time), limit=None) for e in span.events],
        kind=kind,
        status=trace.Status(status, span.status_message if status == trace.StatusCode.ERROR
                            else None),
        start_time=_ns(span.start), end_time=_ns(span.end if span.end is not None else span.start),
        instrumentation_scope=instrumentation.InstrumentationScope(span.scope or "looptrace"))


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


class _Failures(logging.Handler):
    """Catch the OTLP exporter's own log records about a failed export, so the
    reason reaches the user as one line and not as logging noise."""

    LOGGERS = ("opentelemetry.exporter.otlp", "opentelemetry.exporter.otlp.common.http")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self._saved: list[tuple[logging.Logger, bool]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> Self:
        for name in self.LOGGERS:
            log = logging.getLogger(name)
            self._saved.append((log, log.propagate))
            log.addHandler(self)
            log.propagate = False
        return self

    def __exit__(self, *exc: object) -> None:
        for log, propagate in self._saved:
            log.removeHandler(self)
            log.propagate = propagate

    def reason(self) -> str | None:
        for rec in reversed(self.records):
            if rec.levelno < logging.ERROR:
                continue
            args = rec.args if isinstance(rec.args, tuple) else ()
            if "code: %s" in str(rec.msg) and len(args) >= 3:
                code, why = args[1], args[2]
                if code:
                    return f"the endpoint refused the spans (HTTP {code} {why})"
                return f"cannot reach the endpoint ({_short(why)})"
            if "timeout, max retries" in str(rec.msg):
                last = next((r for r in reversed(self.records) if r.levelno == logging.WARNING
                             and "Transient error" in str(r.msg)), None)
                detail = f": {_short(last.args[0])}" if last is not None and isinstance(
                    last.args, tuple) and last.args else ""
                return f"gave up after retrying (unreachable or busy{detail})"
            return rec.getMessage()
        return None


def _short(err: Any) -> str:
    text = str(err)
    for marker in ("Connection refused", "Name or service not known", "timed out",
                   "No route to host", "Temporary failure in name resolution"):
        if marker in text:
            return marker.lower()
    return text if len(text) < 200 else text[:200] + "..."
