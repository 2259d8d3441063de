"""A span as looptrace reads it, whatever carried it (OTLP protobuf, OTLP JSON, the SDK).

Attribute values are plain Python (str, bool, int, float, list, dict, bytes) with
the OTLP ``AnyValue`` wrappers removed; times are seconds since the epoch (float).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class SpanEvent:
    name: str
    time: float
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class Span:
    trace_id: str  # 32 lower-case hex digits
    span_id: str  # 16 lower-case hex digits
    parent_id: str | None
    name: str
    start: float
    end: float | None
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    status: str = "unset"  # unset / ok / error
    status_message: str | None = None
    kind: str = "internal"  # internal / server / client / producer / consumer
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None  # the instrumentation scope's name
