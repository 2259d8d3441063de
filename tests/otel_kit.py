"""Helpers for the OpenTelemetry tests: request bodies made by the SDK's own encoders,
plain HTTP posts, and waiting for the receiver."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracer.interop.exchange import export_lines
from tracer.otel.export import readable
from tracer.otel.spans import Span
from tracer.read.loader import TraceDB

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


def proto_body(spans: list[Span] | list[ReadableSpan]) -> bytes:
    sdk = [s if isinstance(s, ReadableSpan) else readable(s) for s in spans]
    return encode_spans(sdk).SerializeToString()


def json_body(spans: list[Span] | list[ReadableSpan]) -> bytes:
    """OTLP JSON as the spec has it: protobuf's JSON mapping with hex ids."""
    from google.protobuf.json_format import MessageToJson

    sdk = [s if isinstance(s, ReadableSpan) else readable(s) for s in spans]
    obj = json.loads(MessageToJson(encode_spans(sdk), use_integers_for_enums=True))

    def fix(node: Any) -> None:
        if isinstance(node, list):
            for x in node:
                fix(x)
        elif isinstance(node, dict):
            for k, v in node.items():
                if k in ("traceId", "spanId", "parentSpanId"):
                    node[k] = base64.b64decode(v).hex()
                else:
                    fix(v)

    fix(obj)
    return json.dumps(obj).encode()


def post(url: str, body: bytes, content_type: str = PROTOBUF,
         headers: dict[str, str] | None = None) -> tuple[int, bytes, str]:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as err:
        return err.code, err.read(), err.headers.get("Content-Type", "")


def response(data: bytes) -> ExportTraceServiceResponse:
    out = ExportTraceServiceResponse()
    out.ParseFromString(data)
    return out


def foreign_spans(n: int = 3, **attrs: Any) -> list[ReadableSpan]:
    """``n`` nested spans of a plain (non-GenAI) web app, made by the SDK itself."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("web-app")

    def nest(i: int) -> None:
        with tracer.start_as_current_span(f"GET /page/{i}", attributes={
                "http.request.method": "GET", **attrs}):
            if i + 1 < n:
                nest(i + 1)

    nest(0)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def lines(db_path: str | Path, run_id: str) -> list[str]:
    with TraceDB(db_path) as db:
        return list(export_lines(db, run_id))


def wait_for(cond: Callable[[], Any], timeout: float = 10.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if value or time.monotonic() > end:
            return value
        time.sleep(0.02)
