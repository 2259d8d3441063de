"""``looptrace collect`` on other instrumentations' traces, and on OTLP log records.

The seed's hand-rolled loop (``openai_loop``) on the ``openai`` SDK instrumented
by ``opentelemetry-instrumentation-openai-v2`` in its default content mode: one
trace per model call, the messages in log records tied to the chat spans. Its
spans and logs go through the SDK's own OTLP/HTTP exporters to a real
``CollectServer``; the run it makes is compared with the run ``wire.traffic``
builds from the same loop's HTTP traffic.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from otel_kit import JSON, PROTOBUF, post, proto_body, wait_for

from tracer.otel.collect import CollectServer
from tracer.read.diff import diff_runs
from tracer.read.loader import Run, TraceDB, content_text
from tracer.wire import WireServer
from tracer.wire.loops import get_weather, openai_loop
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM

WEATHER = [get_weather("Oslo"), get_weather("Bergen")]


# -- helpers ---------------------------------------------------------------------------


@dataclass
class _Sent:
    """What the instrumentor made (kept in memory too, to send again by hand)."""

    spans: Any
    logs: Any
    providers: list[Any] = field(default_factory=list)


@contextmanager
def _openai_v2(monkeypatch: pytest.MonkeyPatch, url: str | None) -> Iterator[_Sent]:
    """``OpenAIInstrumentor`` in its default content mode (content in log records,
    the older conventions), its spans and logs exported at once by the SDK's OTLP/HTTP
    exporters to ``url`` (the logs gzip-compressed), and kept in memory; uninstrumented
    afterwards."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation import _semconv
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs import export as log_export
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    # the stability opt-in is read once a process: read it again (and again after the test)
    stability = _semconv._OpenTelemetrySemanticConventionStability
    monkeypatch.setattr(stability, "_initialized", False)
    monkeypatch.setattr(stability, "_OTEL_SEMCONV_STABILITY_SIGNAL_MAPPING", {})
    stability._initialize()
    sent = _Sent(InMemorySpanExporter(), log_export.InMemoryLogRecordExporter())
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(sent.spans))
    lp = LoggerProvider()
    lp.add_log_record_processor(log_export.SimpleLogRecordProcessor(sent.logs))
    if url is not None:
        tp.add_span_processor(SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=url + "/v1/traces", timeout=10)))
        lp.add_log_record_processor(log_export.SimpleLogRecordProcessor(
            OTLPLogExporter(endpoint=url + "/v1/logs", timeout=10,
                            compression=Compression.Gzip)))
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=tp, logger_provider=lp)
    try:
        yield sent
    finally:
        inst.uninstrument()
        tp.shutdown()
        lp.shutdown()


def _runs(db: str | Path) -> list[Run]:
    with TraceDB(db) as t:
        return [t.run(s.id) for s in sorted(t.runs(), key=lambda s: s.started_at or 0)]


def _one(db: str | Path) -> Run:
    runs = _runs(db)
    assert len(runs) == 1, [r.summary.name for r in runs]
    return runs[0]


def _convo(run: Run) -> list[tuple[Any, ...]]:
    return [(m.type, content_text(m.content).strip(),
             [(c["name"], c["args"], c["id"]) for c in m.tool_calls],
             getattr(m, "tool_call_id", None)) for m in run.messages]


def _is_the_loop(run: Run) -> None:
    """The weather loop, whole: two laps, the messages, the tool call ids."""
    assert run.summary.source == "otel" and run.summary.status == "completed"
    assert run.summary.laps == 2
    assert len(run.metadata["trace_ids"]) == 2  # one trace per model call
    assert "content" not in run.metadata  # (no call left without its messages)
    assert [m.type for m in run.messages] == ["human", "ai", "tool", "tool", "ai"]
    calls = run.messages[1].tool_calls
    assert [(c["name"], c["args"]) for c in calls] == [
        ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Bergen"})]
    assert all(c["id"].startswith("call_") for c in calls)
    assert [m.tool_call_id for m in run.messages[2:4]] == [c["id"] for c in calls]
    assert [m.text for m in run.messages[2:4]] == WEATHER
    assert run.messages[4].text.startswith("Here is the weather: Oslo: Light snow")


def _settled(srv: CollectServer, laps: int = 2) -> bool:
    if srv.buffer.pending:
        return False
    runs = _runs(srv.buffer.db)
    return len(runs) == 1 and runs[0].summary.laps == laps


def _logs_body(records: Any) -> bytes:
    return encode_logs(list(records)).SerializeToString()


def _logs_response(data: bytes) -> ExportLogsServiceResponse:
    out = ExportLogsServiceResponse()
    out.ParseFromString(data)
    return out


@pytest.fixture
def loop_sdk(monkeypatch: pytest.MonkeyPatch) -> _Sent:
    """The loop's spans and log records, in memory (nothing exported)."""
    with _openai_v2(monkeypatch, None) as sent, WireServer(
            mode="emulate", script="weather") as wire:
        openai_loop(wire.url, WEATHER_PROMPT, system=WEATHER_SYSTEM)
    return sent


# -- the loop through collect == the run its traffic gives -----------------------------


def test_openai_v2_loop_through_collect_is_the_run_its_traffic_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wire_db, got_db = tmp_path / "wire.db", tmp_path / "got.db"
    srv = CollectServer(got_db, port=0, quiet=0.1, orphan_timeout=5).start()
    try:
        with _openai_v2(monkeypatch, srv.url) as sent, WireServer(
                mode="emulate", script="weather", db=wire_db) as wire:
            answer = openai_loop(wire.url, WEATHER_PROMPT, system=WEATHER_SYSTEM)
        assert answer.startswith("Here is the weather: Oslo: Light snow")
        spans, records = sent.spans.get_finished_spans(), sent.logs.get_finished_logs()
        assert len({s.context.trace_id for s in spans}) == 2
        assert records and not any(s.events for s in spans)  # the content: in the logs
        assert wait_for(lambda: _settled(srv))
        assert srv.buffer.received == 2 and srv.buffer.received_logs == len(records)
        assert srv.buffer.logs_without_span == 0
        run = _one(got_db)
        assert set(srv.buffer.total.run_ids) == {run.id}  # (each trace continued it)
        assert srv.buffer.total.skipped == 0
        _is_the_loop(run)

        # the exporter sends it all again (a retry): no run more, nothing doubled
        status, data, _ = post(srv.url + "/v1/logs", _logs_body(records))
        assert status == 200 and not _logs_response(data).HasField("partial_success")
        assert post(srv.url + "/v1/traces", proto_body(list(spans)))[0] == 200
        assert srv.buffer.pending == 2  # imported again once quiet
        assert wait_for(lambda: _settled(srv))
        assert [r.id for r in _runs(got_db)] == [run.id]
        assert _convo(_one(got_db)) == _convo(run)
    finally:
        srv.stop()
    run = _one(got_db)
    _is_the_loop(run)

    # the same loop's traffic, read by the proxy: the same run
    wire_run = _one(wire_db)
    assert _convo(run) == _convo(wire_run)
    d = diff_runs(wire_run, run)
    assert d.identical and d.first_divergence is None, d.to_dict()


def test_without_one_importer_the_loop_would_be_two_runs(tmp_path: Path,
                                                         loop_sdk: _Sent) -> None:
    """(What the receiver's one importer is for: each trace on its own is a run.)"""
    from tracer.otel.genai import from_sdk
    from tracer.otel.imports import by_trace, import_spans

    db = tmp_path / "t.db"
    spans = from_sdk(loop_sdk.spans.get_finished_spans(), loop_sdk.logs.get_finished_logs())
    for trace in sorted(by_trace(spans).values(), key=lambda g: g[0].start):
        import_spans(trace, db)
    assert len(_runs(db)) == 2


# -- log records before and after their spans ------------------------------------------


def test_logs_before_their_spans(tmp_path: Path, loop_sdk: _Sent) -> None:
    spans, records = loop_sdk.spans.get_finished_spans(), loop_sdk.logs.get_finished_logs()
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1) as srv:
        body = gzip.compress(_logs_body(records))
        status, data, ctype = post(srv.url + "/v1/logs", body, PROTOBUF,
                                   {"Content-Encoding": "gzip"})
        assert (status, ctype) == (200, PROTOBUF)
        assert not _logs_response(data).HasField("partial_success")
        assert srv.buffer.pending == 0  # (logs alone are no trace to import)
        for span in spans:  # each trace, as its span ends
            assert post(srv.url + "/v1/traces", proto_body([span]))[0] == 200
        assert wait_for(lambda: _settled(srv))
        _is_the_loop(_one(srv.buffer.db))


def test_logs_after_their_spans_import_the_traces_again(tmp_path: Path,
                                                        loop_sdk: _Sent) -> None:
    spans, records = loop_sdk.spans.get_finished_spans(), loop_sdk.logs.get_finished_logs()
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1) as srv:
        assert post(srv.url + "/v1/traces", proto_body(list(spans)))[0] == 200
        assert wait_for(lambda: srv.buffer.pending == 0 and _runs(srv.buffer.db))
        # imported without their content: the calls are known, their messages are not
        before = _runs(srv.buffer.db)
        assert all(r.messages == [] and "not captured" in r.metadata["content"]
                   for r in before)
        status, _, _ = post(srv.url + "/v1/logs", _logs_body(records))
        assert status == 200
        assert srv.buffer.pending == 2  # the two traces, back for their content
        assert wait_for(lambda: _settled(srv))
        run = _one(srv.buffer.db)
        assert run.id not in {r.id for r in before}  # (the content-less runs are gone)
        _is_the_loop(run)


def test_a_late_log_for_a_trace_long_gone_is_dropped_and_said(tmp_path: Path,
                                                              loop_sdk: _Sent) -> None:
    """Logs whose spans never come are kept a while, then dropped with a warning."""
    records = loop_sdk.logs.get_finished_logs()
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1) as srv:
        srv.buffer.retain = srv.buffer.orphan_timeout = 0.2
        assert post(srv.url + "/v1/logs", _logs_body(records[:1]))[0] == 200
        assert wait_for(lambda: srv.buffer.logs_dropped == 1)
        assert any("1 log records dropped" in w for w in srv.buffer.total.warnings)
        assert _runs(srv.buffer.db) == []


# -- the /v1/logs edge -----------------------------------------------------------------


def _json_logs(*records: dict[str, Any]) -> bytes:
    return json.dumps({"resourceLogs": [{"resource": {"attributes": []}, "scopeLogs": [
        {"scope": {"name": "test"}, "logRecords": list(records)}]}]}).encode()


def test_a_log_record_without_a_span_is_counted(tmp_path: Path) -> None:
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1) as srv:
        tied = {"timeUnixNano": "1700000000000000000", "eventName": "gen_ai.user.message",
                "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331",
                "body": {"kvlistValue": {"values": [
                    {"key": "content", "value": {"stringValue": "hi"}}]}}}
        loose = {"timeUnixNano": "1700000000000000001", "body": {"stringValue": "app log"}}
        status, data, ctype = post(srv.url + "/v1/logs", _json_logs(tied, loose), JSON)
        assert (status, ctype) == (200, JSON)
        partial = json.loads(data)["partialSuccess"]
        assert partial["rejectedLogRecords"] == "1"
        assert "tied to no span" in partial["errorMessage"]
        assert (srv.buffer.received_logs, srv.buffer.logs_without_span) == (2, 1)
        # the tied one waits for its span (hex ids read as OTLP JSON has them)
        [(tid, (_at, [(sid, ev)]))] = srv.buffer._early.items()
        assert (tid, sid) == ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331")
        assert ev.name == "gen_ai.user.message" and ev.attributes["body"] == {"content": "hi"}
        status, data, _ = post(srv.url + "/v1/logs", _json_logs(tied), JSON)
        assert status == 200 and json.loads(data) == {}


def test_malformed_logs_bodies_are_400_and_change_nothing(tmp_path: Path,
                                                          loop_sdk: _Sent) -> None:
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1) as srv:
        assert post(srv.url + "/v1/traces", proto_body(list(loop_sdk.spans.get_finished_spans())))
        assert wait_for(lambda: srv.buffer.pending == 0 and _runs(srv.buffer.db))
        db_bytes = Path(srv.buffer.db).read_bytes()
        url = srv.url + "/v1/logs"
        bad_id = _json_logs({"traceId": "not-hex-at-all", "spanId": "b7ad6b7169203331"})
        cases = [
            (b"\xff\xfe\x00garbage", PROTOBUF, {}, "malformed OTLP protobuf"),
            (b'{"resourceLogs": [', JSON, {}, "malformed OTLP JSON"),
            (b"[1, 2]", JSON, {}, "not an OTLP JSON request"),
            (bad_id, JSON, {}, "traceId"),
            (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": "x"}]}]}]}',
             JSON, {}, "malformed OTLP JSON"),
            (b"definitely not gzip", PROTOBUF, {"Content-Encoding": "gzip"}, "malformed gzip"),
        ]
        for body, ctype, headers, words in cases:
            status, data, got_type = post(url, body, ctype, headers)
            assert status == 400, (body, data)
            if got_type == JSON:
                message = json.loads(data)["message"]
            else:
                st = Status()
                st.ParseFromString(data)
                message = st.message
            assert words in message, message
        assert post(url, b"hello", "text/plain")[0] == 415
        assert srv.buffer.received_logs == 0 and srv.buffer.pending == 0
        assert not srv.buffer._early
        assert Path(srv.buffer.db).read_bytes() == db_bytes


# -- a tool span's status, written as the tracer writes it -----------------------------


def test_an_observed_tool_run_says_its_status_as_the_tracer_does(tmp_path: Path) -> None:
    """``RunBuilder.tool`` (a tool span) puts ``status`` in its exit / error payload, as
    the tracer's ``on_tool_end`` does: a diff against a tracer run sees no difference."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from tracer.record.ingest import RunBuilder
    from tracer.record.recorder import Recorder

    db = tmp_path / "t.db"
    rec = Recorder(db)
    b = RunBuilder(rec, name="tools", source="otel", observed="otel", started_at=1.0)
    calls = [{"name": "f", "args": {}, "id": c, "type": "tool_call"} for c in ("c1", "c2")]
    b.call([HumanMessage("hi")], ts=1.0, end_ts=1.5, reply=AIMessage("", tool_calls=calls))
    b.tool(ToolMessage("ok", tool_call_id="c1", name="f"), ts=2.0, end_ts=2.1)
    b.tool(ToolMessage("boom", tool_call_id="c2", name="f", status="error"), ts=2.0,
           end_ts=2.2, error="ValueError: boom")
    b.end(ts=3.0)
    rec.writer.flush()
    run = _one(db)
    got = [(e.phase, e.payload) for e in run.events if e.hook == "tool" and e.phase != "enter"]
    assert got == [("exit", {"name": "f", "status": "success"}),
                   ("error", {"name": "f", "status": "error", "error": "ValueError: boom"})]
