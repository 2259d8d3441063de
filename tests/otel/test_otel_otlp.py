"""Reading OTLP: protobuf and JSON requests, OTLP JSON files, and ``looptrace import`` of them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from otel_kit import foreign_spans, json_body, lines, proto_body

from tracer.cli import main
from tracer.errors import OtelUnavailable, OtlpFormatError, TraceFileError
from tracer.interop.exchange import build_sample_db, read_trace, sample_files
from tracer.otel.export import readable
from tracer.otel.otlp import parse_request, read_otlp_file, to_otlp_json
from tracer.otel.runspans import run_spans
from tracer.read.loader import TraceDB

WEATHER = next(p for p in sample_files() if p.stem == "weather")
DEEP = next(p for p in sample_files() if p.stem == "deep-agent")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_db(tmp_path_factory.mktemp("otel-src") / "samples.db")


def test_protobuf_and_json_read_the_same(source: Path) -> None:
    with TraceDB(source) as db:
        spans = run_spans(db, str(read_trace(DEEP)[0]["root"]))
    from_proto = parse_request(proto_body(spans), "application/x-protobuf")
    from_json = parse_request(json_body(spans), "application/json; charset=utf-8")
    assert from_proto == from_json
    assert [(s.trace_id, s.span_id, s.parent_id, s.name, s.kind) for s in from_proto] == [
        (s.trace_id, s.span_id, s.parent_id, s.name, s.kind) for s in spans]
    assert from_proto[0].attributes == spans[0].attributes
    assert from_proto[0].resource == {"service.name": "looptrace",
                                      "openinference.project.name": "looptrace"}
    assert from_proto[0].scope == "looptrace"
    assert abs(from_proto[1].start - spans[1].start) < 1e-6


def test_plain_sdk_spans(source: Path) -> None:
    sdk = foreign_spans(2, retries=3, ratio=0.5, ok=True, tags=("a", "b"))
    (child, parent) = parse_request(json_body(sdk), "application/json")
    assert child.parent_id == parent.span_id and parent.parent_id is None
    assert child.attributes == {"http.request.method": "GET", "retries": 3, "ratio": 0.5,
                                "ok": True, "tags": ["a", "b"]}
    assert child.scope == "web-app" and child.kind == "internal" and child.end is not None


def test_base64_ids_are_accepted_too() -> None:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    sdk = foreign_spans(1)
    stock = MessageToJson(encode_spans(sdk))  # protobuf's own mapping: base64 ids
    assert parse_request(stock.encode(), "application/json") == parse_request(
        json_body(sdk), "application/json")


@pytest.mark.parametrize(("body", "ctype", "words"), [
    (b"\x0a\x05hello", "application/x-protobuf", "malformed OTLP protobuf"),
    (b"{", "application/json", "malformed OTLP JSON"),
    (b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"abc"}]}]}]}', "application/json",
     "resourceSpans[0].scopeSpans[0].spans[0].traceId: 'abc' is not a 16-byte id"),
    (b"", "text/plain", "unsupported content type"),
])
def test_malformed_requests(body: bytes, ctype: str, words: str) -> None:
    with pytest.raises(OtlpFormatError, match=words.replace("[", r"\[").replace("]", r"\]")):
        parse_request(body, ctype)
    assert issubclass(OtlpFormatError, TraceFileError) and issubclass(OtlpFormatError, ValueError)


def test_import_otlp_json_files(source: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """``looptrace import`` tells OTLP JSON from looptrace's own JSONL by content: a
    Collector file-exporter file (JSON Lines, one request a line), a single
    pretty-printed request, and a trace file, in one call."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    deep, weather = (str(read_trace(p)[0]["root"]) for p in (DEEP, WEATHER))
    with TraceDB(source) as db:
        spans = run_spans(db, deep)
    jsonl = tmp_path / "collector-output.json"
    half = len(spans) // 2
    jsonl.write_text("\n".join(to_otlp_json(encode_spans([readable(s) for s in part]))
                               for part in (spans[:half], spans[half:])) + "\n")
    single = tmp_path / "one.json"
    single.write_text(json.dumps(json.loads(json_body(foreign_spans(2))), indent=2))
    db = tmp_path / "imported.db"
    assert main(["import", str(jsonl), str(single), str(WEATHER), "--db", str(db)]) == 0
    out = capsys.readouterr()
    assert f"imported 3 runs into {db}" in out.out  # deep-agent (and its subagent), weather
    assert "2 spans skipped (not GenAI spans)" in out.err
    assert lines(db, deep) == lines(source, deep)
    assert lines(db, weather) == lines(source, weather)
    assert len(read_otlp_file(jsonl)) == len(spans)


def test_bad_otlp_files(tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text('{"resourceSpans": []}\n{"resourceSpans": [\n')
    with pytest.raises(OtlpFormatError, match=r"x.json:2: malformed JSON"):
        read_otlp_file(p)
    p.write_text('{"something": "else"}')
    with pytest.raises(OtlpFormatError, match="no 'resourceSpans'"):
        read_otlp_file(p)
    p.write_text("")
    with pytest.raises(OtlpFormatError, match="empty OTLP file"):
        read_otlp_file(p)


def test_missing_extra_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.otel._deps import require

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(OtelUnavailable, match=r"install looptrace\[otel\]"):
        require("opentelemetry.sdk.trace")
