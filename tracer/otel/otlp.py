"""OTLP trace and log requests, protobuf or JSON, read into ``Span`` objects.

An OTLP/HTTP exporter posts an ``ExportTraceServiceRequest`` to ``/v1/traces``
as protobuf (``application/x-protobuf``) or as OTLP JSON (``application/json``),
and an ``ExportLogsServiceRequest`` to ``/v1/logs`` (``decode_logs``: each log
record tied to a span becomes a ``SpanEvent`` for that span, as
``genai.log_event`` makes it).
Both are decoded with the ``opentelemetry-proto`` classes, never by hand. OTLP
JSON is protobuf's JSON mapping with one difference that trips the stock
parser: trace and span ids are hex, not base64. ``_ids_to_base64`` rewrites
them before ``json_format.ParseDict`` (ids already in base64, as some clients
send them, are accepted too); ``to_otlp_json`` does the reverse for writing.

The OpenTelemetry Collector's file exporter writes one request per line (JSON
Lines); ``read_otlp_file`` reads that and a single request object alike.

Example:
    >>> spans = parse_request(body, "application/x-protobuf")
    >>> spans[0].name, spans[0].attributes["gen_ai.operation.name"]
    ('chat gpt-4o-mini', 'chat')
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracer.errors import OtlpFormatError

from ._deps import require
from .spans import Span, SpanEvent

PROTOBUF = "protobuf"
JSON = "json"
CONTENT_TYPES = {
    "application/x-protobuf": PROTOBUF,
    "application/protobuf": PROTOBUF,
    "application/json": JSON,
}
_KINDS = {0: "internal", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_STATUS = {0: "unset", 1: "ok", 2: "error"}
# id fields of OTLP JSON (lowerCamelCase, and the proto names ParseDict also accepts)
_ID_FIELDS = {"traceId": 16, "trace_id": 16, "spanId": 8, "span_id": 8,
              "parentSpanId": 8, "parent_span_id": 8}


@dataclass
class Decoded:
    """What one request held: the spans read, and the ones rejected (with why)."""

    spans: list[Span] = field(default_factory=list)
    rejected: int = 0
    problems: list[str] = field(default_factory=list)


@dataclass
class DecodedLogs:
    """What one logs request held: the log records tied to a span, as span events
    ``(trace_id, span_id, event)``; the ones tied to no span (no trace or span id),
    counted; the ones rejected for malformed ids (with why)."""

    logs: list[tuple[str, str, SpanEvent]] = field(default_factory=list)
    without_span: int = 0
    rejected: int = 0
    problems: list[str] = field(default_factory=list)


def body_format(content_type: str | None) -> str | None:
    """``"protobuf"``, ``"json"``, or None for a content type OTLP/HTTP does not use."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return CONTENT_TYPES.get(media)


def parse_request(body: bytes, content_type: str) -> list[Span]:
    """The spans of one ``ExportTraceServiceRequest`` body; spans with invalid ids
    are left out (``decode_request`` counts them). Raise ``OtlpFormatError``."""
    return decode_request(body, content_type).spans


def decode_request(body: bytes, content_type: str) -> Decoded:
    return spans_of(_read_body(body, content_type, _trace_request, request_from_json))


def decode_logs(body: bytes, content_type: str) -> DecodedLogs:
    """The log records of one ``ExportLogsServiceRequest`` body (``/v1/logs``), as
    span events; raise ``OtlpFormatError`` for a body that is not one."""
    return logs_of(_read_body(body, content_type, _logs_request, logs_request_from_json))


def _read_body(body: bytes, content_type: str, empty: Callable[[], Any],
               from_json: Callable[[Any], Any]) -> Any:
    """One OTLP/HTTP request body as its protobuf request, read by its content type:
    protobuf parsed into ``empty()``, JSON parsed and handed to ``from_json``.
    Raise ``OtlpFormatError`` for another content type or a malformed body."""
    fmt = body_format(content_type)
    if fmt is None:
        msg = (f"unsupported content type {content_type!r}: OTLP/HTTP sends "
               "application/x-protobuf or application/json")
        raise OtlpFormatError(msg)
    if fmt == PROTOBUF:
        return _parse_protobuf(body, empty)
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        msg = f"malformed OTLP JSON: {exc}"
        raise OtlpFormatError(msg) from None
    return from_json(obj)


def _trace_request() -> Any:
    trace_service = require("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
    return trace_service.ExportTraceServiceRequest()


def _logs_request() -> Any:
    logs_service = require("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
    return logs_service.ExportLogsServiceRequest()


def _parse_protobuf(body: bytes, empty: Callable[[], Any]) -> Any:
    message = require("google.protobuf.message")
    req = empty()
    try:
        req.ParseFromString(body)
    except message.DecodeError as exc:
        msg = f"malformed OTLP protobuf: not an {req.DESCRIPTOR.name} ({exc})"
        raise OtlpFormatError(msg) from None
    return req


def request_from_json(obj: Any, where: str = "") -> Any:
    """An ``ExportTraceServiceRequest`` from a parsed OTLP JSON object."""
    return _from_json(obj, _trace_request(), "resourceSpans", where)


def logs_request_from_json(obj: Any, where: str = "") -> Any:
    """An ``ExportLogsServiceRequest`` from a parsed OTLP JSON object."""
    return _from_json(obj, _logs_request(), "resourceLogs", where)


def _from_json(obj: Any, req: Any, top: str, where: str) -> Any:
    json_format = require("google.protobuf.json_format")
    if not isinstance(obj, dict):
        msg = f"{where}not an OTLP JSON request: expected an object with {top!r}"
        raise OtlpFormatError(msg)
    _ids_to_base64(obj, where or "request")
    try:
        json_format.ParseDict(obj, req, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        msg = f"{where}malformed OTLP JSON: {exc}"
        raise OtlpFormatError(msg) from None
    return req


def _ids_to_base64(node: Any, path: str) -> None:
    """Rewrite OTLP JSON's hex ids, in place, to the base64 protobuf's JSON mapping reads."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _ids_to_base64(item, f"{path}[{i}]")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        size = _ID_FIELDS.get(key)
        if size is not None and isinstance(value, str):
            node[key] = _id_base64(value, size, f"{path}.{key}")
        elif isinstance(value, dict | list) and key not in ("attributes", "resource", "body"):
            _ids_to_base64(value, f"{path}.{key}")


def _id_base64(value: str, size: int, path: str) -> str:
    if not value:
        return value
    if len(value) == 2 * size:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            pass
    try:
        if len(base64.b64decode(value, validate=True)) == size:
            return value
    except (binascii.Error, ValueError):
        pass
    msg = f"{path}: {value!r} is not a {size}-byte id ({2 * size} hex digits)"
    raise OtlpFormatError(msg)


def to_otlp_json(request: Any) -> str:
    """An ``ExportTraceServiceRequest`` as OTLP JSON (hex ids, integer enums)."""
    json_format = require("google.protobuf.json_format")
    obj = json_format.MessageToDict(request, use_integers_for_enums=True)
    _ids_to_hex(obj)
    return json.dumps(obj, ensure_ascii=False)


def _ids_to_hex(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _ids_to_hex(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            elif key != "attributes":
                _ids_to_hex(value)


# -- proto -> Span ---------------------------------------------------------------

def spans_of(request: Any) -> Decoded:
    """Every span of a decoded request, as ``Span``; invalid ones counted and left out."""
    out = Decoded()
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            scope = ss.scope.name or None
            for sp in ss.spans:
                problem = _bad_ids(sp)
                if problem:
                    out.rejected += 1
                    out.problems.append(f"span {sp.name!r}: {problem}")
                    continue
                status = _STATUS.get(sp.status.code, "unset")
                out.spans.append(Span(
                    trace_id=sp.trace_id.hex(), span_id=sp.span_id.hex(),
                    parent_id=sp.parent_span_id.hex() or None, name=sp.name,
                    start=sp.start_time_unix_nano / 1e9,
                    end=sp.end_time_unix_nano / 1e9 if sp.end_time_unix_nano else None,
                    attributes=attributes(sp.attributes),
                    events=[SpanEvent(e.name, e.time_unix_nano / 1e9, attributes(e.attributes))
                            for e in sp.events],
                    status=status, status_message=sp.status.message or None,
                    kind=_KINDS.get(sp.kind, "internal"), resource=resource, scope=scope))
    return out


def logs_of(request: Any) -> DecodedLogs:
    """Every log record of a decoded logs request tied to a span, as a span event
    (``genai.log_event``'s shape: its attributes, its body under ``body``); records
    tied to no span counted, records with malformed ids counted and left out."""
    out = DecodedLogs()
    for rl in request.resource_logs:
        for sl in rl.scope_logs:
            for rec in sl.log_records:
                tid, sid = rec.trace_id, rec.span_id
                if not any(tid) or not any(sid):
                    out.without_span += 1
                    continue
                if len(tid) != 16 or len(sid) != 8:
                    out.rejected += 1
                    what = rec.event_name or "log record"
                    out.problems.append(f"{what}: invalid trace or span id (16 and 8 bytes "
                                        "expected)")
                    continue
                out.logs.append((tid.hex(), sid.hex(), _log_event(rec)))
    return out


def _log_event(rec: Any) -> SpanEvent:
    attrs = attributes(rec.attributes)
    name = rec.event_name or attrs.get("event.name") or "log"
    if rec.HasField("body"):
        body = any_value(rec.body)
        if body is not None:
            attrs["body"] = body
    ts = rec.time_unix_nano or rec.observed_time_unix_nano
    return SpanEvent(str(name), ts / 1e9, attrs)


def _bad_ids(sp: Any) -> str | None:
    if len(sp.trace_id) != 16 or not any(sp.trace_id):
        return "invalid trace id (16 non-zero bytes expected)"
    if len(sp.span_id) != 8 or not any(sp.span_id):
        return "invalid span id (8 non-zero bytes expected)"
    if sp.parent_span_id and len(sp.parent_span_id) != 8:
        return "invalid parent span id (8 bytes expected)"
    return None


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def any_value(v: Any) -> Any:
    """An OTLP ``AnyValue`` as plain Python."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    return getattr(v, kind)


# -- files ------------------------------------------------------------------------

def read_otlp_file(path: str | Path) -> list[Span]:
    """The spans of an OTLP JSON file: one request object, or JSON Lines of them."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"{p}: cannot read OTLP file ({exc})"
        raise OtlpFormatError(msg) from None
    if not text.strip():
        msg = f"{p}: empty OTLP file"
        raise OtlpFormatError(msg)
    try:
        objs: list[tuple[str, Any]] = [(f"{p}: ", json.loads(text))]
    except (ValueError, RecursionError):
        objs = []
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                objs.append((f"{p}:{n}: ", json.loads(line)))
            except (ValueError, RecursionError) as exc:
                why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                msg = f"{p}:{n}: malformed JSON ({why})"
                raise OtlpFormatError(msg) from None
    spans: list[Span] = []
    for where, obj in objs:
        for item in obj if isinstance(obj, list) else [obj]:
            if not isinstance(item, dict) or not ({"resourceSpans", "resource_spans"} & set(item)):
                msg = f"{where}not an OTLP trace request (no 'resourceSpans')"
                raise OtlpFormatError(msg)
            try:
                spans.extend(spans_of(request_from_json(item, where)).spans)
            except RecursionError:  # (values nested deeper than protobuf reads)
                msg = f"{where}malformed OTLP JSON (nested too deeply)"
                raise OtlpFormatError(msg) from None
    return spans


def is_otlp_json(path: str | Path) -> bool:
    """Whether a file looks like OTLP JSON rather than a looptrace trace file (by its
    first bytes: a looptrace file starts with its header line)."""
    try:
        with Path(path).open("rb") as f:
            head = f.read(65536).decode("utf-8", "replace")
    except OSError:
        return False
    first = head.lstrip().split("\n", 1)[0]
    if '"looptrace-trace"' in first:
        return False
    return head.lstrip().startswith(("{", "[")) and (
        '"resourceSpans"' in head or '"resource_spans"' in head)
