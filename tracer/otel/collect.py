"""``looptrace collect``: an OTLP/HTTP receiver that turns traces into runs.

Any OpenTelemetry exporter pointed at ``http://127.0.0.1:4318`` posts
``/v1/traces`` (and ``/v1/logs``) here, as protobuf or JSON, gzip-compressed or
not. The answer is OTLP's: ``ExportTraceServiceResponse`` /
``ExportLogsServiceResponse`` (with ``partial_success`` when spans or log
records were rejected), 400 with a ``google.rpc.Status`` for a malformed body,
415 for a content type or encoding OTLP does not use, 413 for an oversized body.

Exporters batch: the spans of one trace can arrive over several requests, in
any order (a root span usually last, since it ends last). ``TraceBuffer`` keeps
them per trace and imports a trace when it is whole:

- a looptrace trace as soon as every row it announces has arrived;
- any other trace once its root span is in and it has been quiet ``quiet``
  seconds;
- a trace cut in the middle (no root, or looptrace rows missing) after
  ``orphan_timeout`` seconds of quiet, with what arrived and a warning;
- everything still buffered on shutdown.

Spans arriving late for a trace imported a moment ago are merged with the
ones it had (kept ``retain`` seconds) and the trace is imported again: its runs
are replaced, no other run is touched. A looptrace trace still incomplete only
adds to what is stored, so a piece resent after its trace was imported whole
never cuts the run down.

Hostile or careless clients (``tests/hostile/test_hostile_otlp.py``): bodies are read with
a hard limit whatever their framing (``tracer.vocab.httpbody``: 413 past ``max_body``
once inflated, 400 for bad framing or JSON nested too deeply); a connection
silent for ``timeout`` seconds is closed; at most ``max_spans`` spans and
``max_traces`` traces wait, past which the oldest trace is imported as it is
(said in a warning). A looptrace trace naming a stored run with other content is
refused (``imports.import_spans``), unless this receiver imported that run from
that very trace in part and the trace is now completing. A write that fails
(disk full, read-only, locked) leaves the trace buffered, to be tried again, and
every request is answered 503 with ``Retry-After`` until a write succeeds: a 200
never stands for spans that cannot be stored. Foreign traces are written through
a ``SyncWriter`` (committed as each trace is imported, its failure known).

Foreign traces (other instrumentations) all go through one
``genai.SpanImporter`` kept for the receiver's lifetime (made when the first
one arrives, closed by ``CollectServer.stop``): a hand-rolled loop on an
instrumented SDK sends one trace per model call, and its calls make one run.

Log records: ``opentelemetry-instrumentation-openai-v2`` (in its default content
mode) sends the messages as log records tied to the chat span, not as span
events. A log record with a trace and span id is put on its span as an event
(``genai.log_event``'s shape) when its trace is imported; logs arriving before
their spans wait for them (``retain`` seconds), logs arriving after their trace
was imported send it through the importer again (the buffer keeps a recently
imported trace). A log record tied to no span is counted and skipped.

Example:
    ```python
    with CollectServer("looptrace.db", port=0) as srv:
        export_otlp("source.db", run_id, srv.url)
    ```
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

from tracer.db.schema import connect
from tracer.errors import LooptraceError, OtlpFormatError
from tracer.vocab.httpbody import BodyError, decompress, read_body

from ._deps import require
from .imports import ImportResult, import_spans
from .otlp import JSON, body_format, decode_logs, decode_request
from .rows import A_FORMAT, A_INDEX, A_PART, A_PARTS, A_ROWS, ROW_EVENT, is_looptrace
from .spans import Span, SpanEvent

if TYPE_CHECKING:
    from .genai import SpanImporter
    from .otlp import Decoded

DEFAULT_PORT = 4318
MAX_BODY = 16 * 1024 * 1024  # after decompression
TIMEOUT = 30.0  # seconds a connection may stay silent, and a request body may take
MAX_TRACES = 10_000  # traces buffered (waiting to be whole) at most ...
MAX_SPANS = 50_000  # ... and spans: past either, the oldest trace is imported as it is
RETRY_AFTER = 5  # seconds a client is told to wait while the database cannot be written
TRACES, LOGS = "/v1/traces", "/v1/logs"

_Log = tuple[str, SpanEvent]  # (span id, the log record as a span event)


@dataclass
class _Pending:
    """The spans of one trace received so far, and what is known about its completeness."""

    first: float
    last: float
    spans: dict[str, Span] = field(default_factory=dict)  # by span id: a resent span replaces
    has_root: bool = False
    looptrace: bool = False
    expected: int | None = None
    parts: dict[int, set[int]] = field(default_factory=dict)
    nparts: dict[int, int] = field(default_factory=dict)
    whole: int = 0  # rows with every part in
    logs: list[_Log] = field(default_factory=list)  # log records tied to its spans

    def add(self, span: Span, now: float) -> None:
        self.last = now
        self.spans[span.span_id] = span
        self.has_root = self.has_root or span.parent_id is None
        if not is_looptrace(span):
            return
        self.looptrace = True
        if A_FORMAT in span.attributes and isinstance(span.attributes.get(A_ROWS), int):
            self.expected = span.attributes[A_ROWS]
        for ev in span.events:
            if ev.name != ROW_EVENT or not isinstance(ev.attributes.get(A_INDEX), int):
                continue
            index = ev.attributes[A_INDEX]
            got = self.parts.setdefault(index, set())
            before = len(got) == self.nparts.get(index, -1)
            got.add(ev.attributes.get(A_PART, 0))
            self.nparts[index] = ev.attributes.get(A_PARTS, 1)
            self.whole += (len(got) == self.nparts[index]) - before

    @property
    def complete(self) -> bool:
        return self.looptrace and self.expected is not None and self.whole >= self.expected


class TraceBuffer:
    """Spans per trace until each trace is whole (or given up on), then runs in ``db``."""

    def __init__(self, db: str | Path, *, quiet: float = 2.0, orphan_timeout: float = 30.0,
                 retain: float = 60.0, max_traces: int = MAX_TRACES, max_spans: int = MAX_SPANS,
                 on_import: Callable[[str, ImportResult], None] | None = None) -> None:
        self.db = str(db)
        self.quiet = quiet
        self.orphan_timeout = orphan_timeout
        self.retain = retain
        self.max_traces = max_traces
        self.max_spans = max_spans
        self.on_import = on_import
        # why the database could not be written (None: it could, last time it was tried)
        self.store_error: str | None = None
        self._nspans = 0  # spans in _pending
        self._done_spans = 0  # spans in _done
        self._owned: dict[str, str] = {}  # run id -> the trace it was imported from
        self._stale: list[SpanImporter] = []  # importers a failed write left unsure
        self.total = ImportResult()
        self.received = 0
        self.received_logs = 0
        self.logs_without_span = 0  # log records tied to no span: counted, skipped
        self.logs_dropped = 0  # log records whose spans never arrived
        self._pending: dict[str, _Pending] = {}
        # recently imported traces: when, their spans, their log records
        self._done: dict[str, tuple[float, list[Span], list[_Log]]] = {}
        self._early: dict[str, tuple[float, list[_Log]]] = {}  # logs before their spans
        self._importer: SpanImporter | None = None  # foreign traces, for our lifetime
        self._inflight = 0  # traces taken out of the buffer, being imported
        self._lock = threading.Lock()  # the buffers
        self._write = threading.Lock()  # the database: one import at a time

    def add(self, spans: list[Span]) -> ImportResult:
        """Buffer ``spans``; import (now) the traces they complete; return what that did."""
        now = time.monotonic()
        due: list[tuple[str, _Pending]] = []
        early: list[str] = []
        with self._lock:
            self.received += len(spans)
            touched: set[str] = set()
            for span in spans:
                p = self._pending.get(span.trace_id)
                if p is None:
                    p = self._open(span.trace_id, now)
                n = len(p.spans)
                p.add(span, now)
                self._nspans += len(p.spans) - n
                touched.add(span.trace_id)
            for tid in touched:
                if self._pending[tid].complete:
                    due.append(self._take(tid, now))
            # bounded: past the caps the oldest traces go in as they are (said, not lost)
            while self._pending and (len(self._pending) > self.max_traces
                                     or self._nspans > self.max_spans):
                tid = next(iter(self._pending))
                early.append(f"trace {tid}: imported before it was whole, the receiver "
                             f"buffers at most {self.max_traces} traces and {self.max_spans} "
                             "spans (later spans of it make runs of their own)")
                due.append(self._take(tid, now, keep=False))
        out = self._import(due)
        if early and self._importer is not None:  # (not kept: its later spans are new runs)
            self._importer.forget(e.split(" ", 2)[1].rstrip(":") for e in early)
        if early:
            out.warnings.extend(early)
            with self._lock:
                self.total.warnings.extend(early)
        return out

    def add_logs(self, logs: list[tuple[str, str, SpanEvent]], without_span: int = 0) -> None:
        """Buffer log records ``(trace_id, span_id, event)`` with their trace: they go
        on their spans when it is imported (a trace imported a moment ago is imported
        again). ``without_span``: records tied to no span, only counted."""
        now = time.monotonic()
        with self._lock:
            self.received_logs += len(logs) + without_span
            self.logs_without_span += without_span
            for tid, sid, ev in logs:
                p = self._pending.get(tid)
                if p is None and tid in self._done and not any(
                        is_looptrace(s) for s in self._done[tid][1]):
                    p = self._open(tid, now)
                if p is not None:
                    p.logs.append((sid, ev))
                    p.last = now
                else:
                    self._early.setdefault(tid, (now, []))[1].append((sid, ev))

    def _open(self, tid: str, now: float) -> _Pending:
        """A new pending trace: with what it had when imported a moment ago, and the log
        records that came before its spans. (Under ``_lock``.)"""
        p = self._pending[tid] = _Pending(now, now)
        done = self._undone(tid)
        if done is not None:
            for old in done[1]:
                p.add(old, now)
            p.logs.extend(done[2])
            self._nspans += len(p.spans)
        early = self._early.pop(tid, None)
        if early is not None:
            p.logs.extend(early[1])
        return p

    def tick(self, now: float | None = None) -> ImportResult:
        """Import the traces that are due by now (called periodically)."""
        now = time.monotonic() if now is None else now
        due = []
        with self._lock:
            for tid, p in list(self._pending.items()):
                quiet = now - p.last
                if ((p.has_root and not p.looptrace and quiet >= self.quiet)
                        or (p.complete and quiet >= self.quiet)  # (its write failed before)
                        or quiet >= self.orphan_timeout):
                    due.append(self._take(tid, now))
            forgotten = []
            for tid, (at, _spans, _logs) in list(self._done.items()):
                if now - at > self.retain:
                    self._undone(tid)
                    forgotten.append(tid)
            wait = max(self.retain, self.orphan_timeout)
            dropped = [(tid, len(logs)) for tid, (at, logs) in self._early.items()
                       if now - at > wait]
            for tid, _n in dropped:
                del self._early[tid]
        if forgotten and self._importer is not None:
            # the same trace id sent again from now on makes runs of its own
            self._importer.forget(forgotten)
        out = self._drop_logs(dropped)
        out.merge(self._import(due))
        return out

    def flush(self) -> ImportResult:
        """Import everything still buffered (on shutdown)."""
        with self._lock:
            now = time.monotonic()
            due = [self._take(tid, now) for tid in list(self._pending)]
            dropped = [(tid, len(logs)) for tid, (_at, logs) in self._early.items()]
            self._early.clear()
        out = self._drop_logs(dropped)
        out.merge(self._import(due))
        with self._lock:
            lost = len(self._pending)
            spans = self._nspans
        if lost:
            lost_msg = (f"{lost} traces ({spans} spans) could not be stored and are lost: "
                        f"{self.store_error}")
            out.warnings.append(lost_msg)
            with self._lock:
                self.total.warnings.append(lost_msg)
        return out

    def close(self) -> None:
        """End the runs of foreign loops still waiting for their next model call (a
        loop's next call can come no more). Call after ``flush``."""
        with self._write:
            for imp in [*self._stale, *([self._importer] if self._importer else [])]:
                try:
                    imp.close()
                except LooptraceError as exc:
                    self.total.warnings.append(f"runs left 'running': {exc}")
                finally:
                    imp.rec.writer.close()
            self._stale = []
            self._importer = None

    def _foreign(self) -> SpanImporter:
        """The importer of foreign traces, made when first needed. (Under ``_write``.)"""
        if self._importer is None:
            from tracer.record.recorder import Recorder

            from .genai import SpanImporter
            from .syncwrite import SyncWriter

            rec = Recorder(self.db)
            rec.writer = SyncWriter(self.db)  # (a failed write is known before answering)
            self._importer = SpanImporter(self.db, recorder=rec)
        return self._importer

    def _drop_logs(self, dropped: list[tuple[str, int]]) -> ImportResult:
        out = ImportResult()
        for tid, n in dropped:
            out.warnings.append(f"trace {tid}: {n} log records dropped, their spans never "
                                "arrived")
        if dropped:
            with self._lock:
                self.logs_dropped += sum(n for _tid, n in dropped)
                self.total.merge(out)
        return out

    @property
    def pending(self) -> int:
        """Traces received and not imported yet (being imported included)."""
        with self._lock:
            return len(self._pending) + self._inflight

    def _take(self, tid: str, now: float, *, keep: bool = True) -> tuple[str, _Pending]:
        """Take a trace out of the buffer to import it. One that may still grow is kept
        as imported already (unless not ``keep``: one the caps pushed out): a span or
        log record arriving while it is being imported brings it back whole.
        (Under ``_lock``.)"""
        p = self._pending.pop(tid)
        self._nspans -= len(p.spans)
        self._inflight += 1
        if not p.complete and keep:
            self._undone(tid)
            self._done[tid] = (now, list(p.spans.values()), list(p.logs))
            self._done_spans += len(p.spans)
            while self._done and (len(self._done) > self.max_traces
                                  or self._done_spans > self.max_spans):
                self._done_spans -= len(self._done.pop(next(iter(self._done)))[1])
        return tid, p

    def _undone(self, tid: str) -> tuple[float, list[Span], list[_Log]] | None:
        """Take trace ``tid`` out of the recently imported. (Under ``_lock``.)"""
        done = self._done.pop(tid, None)
        if done is not None:
            self._done_spans -= len(done[1])
        return done

    def _import(self, due: list[tuple[str, _Pending]]) -> ImportResult:
        out = ImportResult()
        # (the calls of a loop, one trace each, in the order they were made)
        due.sort(key=lambda d: min((s.start for s in d[1].spans.values()), default=0.0))
        for tid, p in due:
            try:
                result = self._import_one(tid, p)
            finally:
                with self._lock:
                    self._inflight -= 1
            if isinstance(result, LooptraceError):
                failed = ImportResult(warnings=[(f"trace {tid}: not stored yet, kept to try "
                                                f"again ({result})")])
                out.merge(failed)
                if self.on_import is not None:
                    self.on_import(tid, failed)
                continue
            out.merge(result)
            with self._lock:
                self.total.merge(result)
            if self.on_import is not None:
                self.on_import(tid, result)
        return out

    def _import_one(self, tid: str, p: _Pending) -> ImportResult | LooptraceError:
        """One trace into the database; the error if the database refused it (the trace
        is buffered again, to be tried later)."""
        spans = list(p.spans.values())
        given, lost = _with_logs(spans, p.logs)
        with self._write:
            try:
                result = import_spans(given, self.db, importer=self._foreign,
                                      owned=self._owns)
            except (LooptraceError, sqlite3.Error) as exc:  # full, locked, unwritable ...
                self._unsure()
                with self._lock:  # ... keep it for later (and say so to clients meanwhile)
                    self.store_error = str(exc)
                    now = time.monotonic()
                    later = self._pending.pop(tid, None)
                    merged = _Pending(p.first, now)
                    for span in [*spans, *(later.spans.values() if later else ())]:
                        merged.add(span, now)
                    merged.logs = [*p.logs, *(later.logs if later else ())]
                    self._nspans += len(merged.spans) - (len(later.spans) if later else 0)
                    self._pending[tid] = merged
                    self._undone(tid)
                return exc if isinstance(exc, LooptraceError) else LooptraceError(str(exc))
            self.store_error = None
            # a looptrace trace imported in part may be completed by its later pieces;
            # once whole, nothing replaces it
            for rid in result.run_ids:
                if p.looptrace and not p.complete:
                    self._owned[rid] = tid
                else:
                    self._owned.pop(rid, None)
            while len(self._owned) > 20 * self.max_traces:
                del self._owned[next(iter(self._owned))]
        if not p.has_root and not p.looptrace:
            result.warnings.append(f"trace {tid}: no root span arrived; imported the "
                                   f"{len(spans)} spans that did")
        if lost:
            result.warnings.append(f"trace {tid}: {lost} log records tied to spans that "
                                   "did not arrive left out")
        if not p.complete:  # a later span (or log record) may still complete it
            with self._lock:
                if tid in self._done:  # (kept from now on: ``retain`` counts from here)
                    self._done[tid] = (time.monotonic(), *self._done[tid][1:])
        return result


    def _owns(self, run_id: str, trace_id: str) -> bool:
        """Whether this receiver stored run ``run_id`` from trace ``trace_id`` (its late
        pieces may then complete it). (Under ``_write``.)"""
        return self._owned.get(run_id) == trace_id

    def _unsure(self) -> None:
        """After a failed write the foreign importer's memory (runs it thinks written)
        is not the file's: later traces go to a new one; this one's open runs are
        ended on close. (Under ``_write``.)"""
        imp = self._importer
        if imp is not None:
            cast("Any", imp.rec.writer).discard()
            self._stale.append(imp)
            self._importer = None


def _with_logs(spans: list[Span], logs: list[_Log]) -> tuple[list[Span], int]:
    """``spans`` with their log records as events (copies: the buffered spans stay as
    they came, to be given again with later records); and how many records found no
    span. A record sent twice (an exporter's retry) is put on once."""
    if not logs:
        return spans, 0
    by_span: dict[str, dict[tuple[Any, ...], SpanEvent]] = {}
    for sid, ev in logs:
        key = (ev.name, ev.time, repr(sorted(ev.attributes.items())))
        by_span.setdefault(sid, {}).setdefault(key, ev)
    out = []
    for s in spans:
        evs = by_span.pop(s.span_id, None)
        if evs:
            s = replace(s, events=sorted([*s.events, *evs.values()], key=lambda e: e.time))
        out.append(s)
    return out, sum(len(v) for v in by_span.values())


class CollectServer:
    """The OTLP/HTTP receiver: a threaded HTTP server feeding a ``TraceBuffer``."""

    def __init__(self, db: str | Path, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
                 quiet: float = 2.0, orphan_timeout: float = 30.0, max_body: int = MAX_BODY,
                 timeout: float = TIMEOUT, max_traces: int = MAX_TRACES,
                 max_spans: int = MAX_SPANS,
                 on_import: Callable[[str, ImportResult], None] | None = None) -> None:
        require("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
        # create it now, and fail now for a file that is not ours or is damaged
        connect(db, verify=True).close()
        self.buffer = TraceBuffer(db, quiet=quiet, orphan_timeout=orphan_timeout,
                                  max_traces=max_traces, max_spans=max_spans,
                                  on_import=on_import)
        self.max_body = max_body
        self.timeout = timeout
        self.requests = 0
        # (``timeout``: each connection's socket timeout, BaseHTTPRequestHandler's own)
        handler = type("Handler", (_Handler,), {"server_obj": self, "timeout": timeout})
        self._httpd = _QuietServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="looptrace-collect-tick",
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        host = cast("str", self._httpd.server_address[0])  # (a TCP server: a host name)
        return f"http://{host}:{self.port}"

    def start(self) -> Self:
        if self._thread is None:
            self._ticker.start()
            self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.1,),
                                            name=f"looptrace-collect-{self.port}", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until ``stop()`` or Ctrl-C."""
        if not self._ticker.is_alive():
            self._ticker.start()
        self._httpd.serve_forever()

    def stop(self) -> ImportResult:
        """Stop listening, then import every trace still buffered (and end the runs
        of foreign loops still waiting for a next model call)."""
        self._stop.set()
        if self._thread is not None:
            self._httpd.shutdown()
        self._httpd.server_close()
        self._thread = None
        try:
            return self.buffer.flush()
        finally:
            self.buffer.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _tick(self) -> None:
        step = max(0.02, min(self.buffer.quiet, 1.0) / 4)
        while not self._stop.wait(step):
            try:
                self.buffer.tick()
            except Exception as exc:  # noqa: BLE001 - the receiver keeps receiving
                self.buffer.total.warnings.append(f"import failed: {exc!r}")


class _QuietServer(ThreadingHTTPServer):
    """A client dropping its kept-alive connection is normal, not a traceback."""

    request_queue_size = 128  # (socketserver's 5 stalls a burst of exporters' connects)

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            return
        super().handle_error(request, client_address)


_HTTPError = BodyError


class _Handler(BaseHTTPRequestHandler):
    server_obj: CollectServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        ctype = self.headers.get("Content-Type", "")
        fmt = body_format(ctype) or JSON
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            body = self._body()
            if path not in (TRACES, LOGS):
                raise _HTTPError(404, f"no OTLP endpoint at {self.path} (traces go to "
                                      f"{TRACES}, logs to {LOGS})")
            if body_format(ctype) is None:
                raise _HTTPError(415, f"unsupported content type {ctype!r}: send "
                                      "application/x-protobuf or application/json")
            self._unavailable()
            decoded = decode_request(body, ctype) if path == TRACES else decode_logs(body, ctype)
        except _HTTPError as exc:
            self._status(exc.status, str(exc), fmt)
            return
        except OtlpFormatError as exc:
            self._status(400, str(exc), fmt)
            return
        except RecursionError:
            self._status(400, "malformed OTLP request: nested too deeply", fmt)
            return
        srv = self.server_obj
        srv.requests += 1
        if path == LOGS:
            self._logs(decoded, fmt)
            return
        try:
            result = srv.buffer.add(cast("Decoded", decoded).spans)  # (not LOGS: spans)
        except Exception as exc:  # noqa: BLE001 - a bug must not look like success
            self._status(500, f"looptrace could not store the spans: {exc!r}", fmt)
            return
        try:
            self._unavailable()  # (the spans stay buffered: the retry adds nothing twice)
        except _HTTPError as exc:
            self._status(exc.status, str(exc), fmt)
            return
        rejected = decoded.rejected + result.skipped + result.refused
        why = decoded.problems[:3] + ([f"{result.skipped} spans are not GenAI spans"]
                                      if result.skipped else [])
        why += [w for w in result.warnings if "refused" in w][:3]
        self._success(rejected, "; ".join(why), fmt)

    def _unavailable(self) -> None:
        """Raise a 503 while the database cannot be written (OTLP/HTTP: the client
        retries after ``Retry-After`` seconds)."""
        err = self.server_obj.buffer.store_error
        if err is not None:
            raise _HTTPError(503, f"looptrace cannot write its database now ({err}); "
                                  "retry later")

    def _logs(self, decoded: Any, fmt: str) -> None:
        try:
            self.server_obj.buffer.add_logs(decoded.logs, decoded.without_span)
        except Exception as exc:  # noqa: BLE001 - a bug must not look like success
            self._status(500, f"looptrace could not store the log records: {exc!r}", fmt)
            return
        rejected = decoded.rejected + decoded.without_span
        why = decoded.problems[:3]
        if decoded.without_span:
            why.append(f"{decoded.without_span} log records are tied to no span (looptrace "
                       "reads log records only as events of a span)")
        self._success(rejected, "; ".join(why), fmt, logs=True)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        status = 405 if path in (TRACES, LOGS) else 404
        self._status(status, f"OTLP/HTTP: POST spans to {TRACES}, log records to {LOGS}", JSON)

    # -- body ---------------------------------------------------------------------
    def _body(self) -> bytes:
        """The request body, decompressed, within ``max_body`` however it is sent; a
        body not read to its end closes the connection after the answer."""
        limit = self.server_obj.max_body
        try:
            raw = read_body(self.rfile, self.headers, limit=limit,
                            deadline=self.server_obj.timeout)
        except BodyError:
            self.close_connection = True
            raise
        return decompress(raw, self.headers.get("Content-Encoding", ""), limit)

    # -- answers --------------------------------------------------------------------
    def _success(self, rejected: int, message: str, fmt: str, *, logs: bool = False) -> None:
        if logs:
            ls = require("opentelemetry.proto.collector.logs.v1.logs_service_pb2")
            resp = ls.ExportLogsServiceResponse()
            if rejected:
                resp.partial_success.rejected_log_records = rejected
        else:
            ts = require("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
            resp = ts.ExportTraceServiceResponse()
            if rejected:
                resp.partial_success.rejected_spans = rejected
        if rejected:
            resp.partial_success.error_message = message
        self._send(200, resp, fmt)

    def _status(self, status: int, message: str, fmt: str) -> None:
        status_pb2 = require("google.rpc.status_pb2")
        # gRPC codes: INVALID_ARGUMENT for a bad request, UNIMPLEMENTED otherwise
        code = {400: 3, 408: 4, 413: 8, 415: 3, 500: 13, 503: 14}.get(status, 12)
        self._send(status, status_pb2.Status(code=code, message=message), fmt)

    def _send(self, status: int, message: Any, fmt: str) -> None:
        if fmt == JSON:
            json_format = require("google.protobuf.json_format")
            data = json_format.MessageToJson(message, indent=None).encode()
            ctype = "application/json"
        else:
            data = message.SerializeToString()
            ctype = "application/x-protobuf"
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            if status == 503:
                self.send_header("Retry-After", str(RETRY_AFTER))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            pass

