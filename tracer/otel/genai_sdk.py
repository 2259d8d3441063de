"""The OpenTelemetry SDK's own objects as ``Span``s: adapting ``ReadableSpan`` and log
records (``from_sdk``, ``attach_logs``, ``log_event``), for ``tracer.otel.genai``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .spans import Span, SpanEvent

# -- the SDK's spans and log records -------------------------------------------------


def from_sdk(spans: Iterable[Any], logs: Iterable[Any] = ()) -> list[Span]:
    """The SDK's ``ReadableSpan``s (an ``InMemorySpanExporter``'s, a span processor's)
    as ``Span``s; ``logs`` (the SDK's log records, e.g. an ``InMemoryLogExporter``'s)
    that belong to one of them become span events on it (``attach_logs``).

    Args:
        spans: the SDK's ``ReadableSpan`` objects.
        logs: the SDK's log records (``LogData`` or ``ReadableLogRecord``).

    Returns:
        The spans, with the logs that belong to them as events.
    """
    out = [_sdk_span(s) for s in spans]
    attach_logs(out, (_sdk_log(r) for r in logs))
    return out


def log_event(name: str | None, time: float, attributes: Mapping[str, Any] | None,
              body: Any) -> SpanEvent:
    """A log record (an OpenTelemetry *event*: ``event_name`` + body) as a span event:
    its attributes, and its body under ``body``.

    Args:
        name: the record's event name (else its ``event.name`` attribute, else ``log``).
        time: when it was emitted, in seconds.
        attributes: its attributes.
        body: its body (the event's content), if any.

    Returns:
        The span event.
    """
    attrs = dict(attributes or {})
    name = name or attrs.get("event.name") or "log"
    if body is not None:
        attrs["body"] = body
    return SpanEvent(str(name), time, attrs)


def attach_logs(spans: list[Span], logs: Iterable[tuple[str, str | None, SpanEvent]]) -> int:
    """Put each log event on its span, in time order.

    Args:
        spans: the spans to put them on (changed in place).
        logs: ``(trace_id, span_id, event)`` for each log event.

    Returns:
        How many found no span (no span id, or a span not in ``spans``).
    """
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    lost = 0
    touched: set[int] = set()
    for trace_id, span_id, ev in logs:
        span = by_id.get((trace_id, span_id or ""))
        if span is None:
            lost += 1
            continue
        span.events.append(ev)
        touched.add(id(span))
    for s in spans:
        if id(s) in touched:
            s.events.sort(key=lambda e: e.time)
    return lost


def _plain(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    return v


def _sdk_span(s: Any) -> Span:
    ctx = s.context
    parent = s.parent
    status = s.status
    scope = getattr(s, "instrumentation_scope", None)
    return Span(
        trace_id=f"{ctx.trace_id:032x}", span_id=f"{ctx.span_id:016x}",
        parent_id=f"{parent.span_id:016x}" if parent is not None else None,
        name=s.name, start=(s.start_time or 0) / 1e9,
        end=s.end_time / 1e9 if s.end_time is not None else None,
        attributes=_plain(dict(s.attributes or {})),
        events=[SpanEvent(e.name, (e.timestamp or 0) / 1e9, _plain(dict(e.attributes or {})))
                for e in s.events or ()],
        status=status.status_code.name.lower() if status is not None else "unset",
        status_message=getattr(status, "description", None) or None,
        kind=s.kind.name.lower() if s.kind is not None else "internal",
        resource=_plain(dict(s.resource.attributes)) if s.resource is not None else {},
        scope=scope.name if scope is not None else None)


def _sdk_log(item: Any) -> tuple[str, str | None, SpanEvent]:
    rec = getattr(item, "log_record", item)
    ts = rec.timestamp or rec.observed_timestamp or 0
    ev = log_event(getattr(rec, "event_name", None), ts / 1e9,
                   _plain(dict(rec.attributes or {})), _plain(rec.body))
    span_id = f"{rec.span_id:016x}" if rec.span_id else None
    return f"{rec.trace_id or 0:032x}", span_id, ev
