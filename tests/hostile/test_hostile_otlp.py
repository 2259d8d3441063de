"""``looptrace collect`` against hostile and careless clients (issue 21).

Each test names the defect it catches: a stored run replaced by a trace naming its
id, a full disk answered 200, one huge chunk read whole, a malformed chunk size or
deep JSON answered with a dropped connection, stalled connections holding threads,
an unbounded buffer, content-less chat runs left running, a trace id sent again
replacing earlier runs. Real HTTP against a real server writing a real SQLite
file; small limits are set through the server's own parameters.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from otel_kit import JSON, PROTOBUF, lines, post, proto_body, response, wait_for

from tracer.interop.exchange import import_rows, read_trace, sample_files
from tracer.otel.collect import CollectServer, TraceBuffer
from tracer.otel.export import export_otlp
from tracer.otel.genai import SpanImporter
from tracer.otel.runspans import run_spans
from tracer.otel.spans import Span
from tracer.read.loader import TraceDB

WEATHER = next(p for p in sample_files() if p.stem == "weather")
ROOT = str(read_trace(WEATHER)[0]["root"])


def _source(path: Path, *, reply: str | None = None) -> Path:
    """The weather sample in its own file; ``reply``: its last AI message says that instead."""
    _header, rows = read_trace(WEATHER)
    if reply is not None:
        last = [r for t, r in rows if t == "messages" and r["type"] == "ai"][-1]
        data = json.loads(last["data"])
        data["data"]["content"] = reply
        last["data"], last["text"] = json.dumps(data), reply
    import_rows(rows, path)
    return path


def chat(trace: str, span: str, text: str | None, *, start: float, parent: str | None = None,
         reply: str = "Sunny.") -> Span:
    """A GenAI chat span as openai-v2 sends it: with its messages, or (``text`` None)
    without them (the instrumentors' default)."""
    attrs: dict[str, object] = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
                                "gen_ai.request.model": "gpt-4o-mini",
                                "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 2}
    if text is not None:
        attrs["gen_ai.input.messages"] = json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": text}]}])
        attrs["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": reply}],
              "finish_reason": "stop"}])
    return Span(trace, span, parent, "chat gpt-4o-mini", start, start + 0.5, attrs,
                kind="client", scope="opentelemetry.instrumentation.openai_v2")


def _ids(i: int) -> tuple[str, str]:
    return f"{i + 1:032x}", f"{i + 1:016x}"


def _runs(db: str | Path) -> list:  # type: ignore[type-arg]
    with TraceDB(db) as tdb:
        return list(tdb.runs())


@pytest.fixture
def srv(tmp_path: Path) -> Iterator[CollectServer]:
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1, orphan_timeout=0.4,
                       max_body=1 << 20, timeout=0.5) as s:
        yield s


# -- nothing overwritten ------------------------------------------------------------------

def test_a_trace_naming_a_stored_run_with_other_content_is_refused(
        tmp_path: Path, srv: CollectServer) -> None:
    """Was: the stored run was silently replaced by whatever the trace said."""
    src = _source(tmp_path / "src.db")
    export_otlp(src, ROOT, srv.url)
    stored = lines(srv.buffer.db, ROOT)
    assert stored == lines(src, ROOT)
    forged = _source(tmp_path / "forged.db", reply="Wire the money to account 1234.")
    with TraceDB(forged) as db:
        spans = run_spans(db, ROOT)
    status, data, _ = post(srv.url + "/v1/traces", proto_body(spans), PROTOBUF)
    got = response(data)
    assert status == 200
    assert got.partial_success.rejected_spans == len(spans)
    assert "refused" in got.partial_success.error_message
    assert ROOT in got.partial_success.error_message
    assert lines(srv.buffer.db, ROOT) == stored
    # the same trace sent again (an exporter's retry) is no conflict, and changes nothing
    with TraceDB(src) as db:
        same = run_spans(db, ROOT)
    status, data, _ = post(srv.url + "/v1/traces", proto_body(same), PROTOBUF)
    assert status == 200 and not response(data).HasField("partial_success")
    assert lines(srv.buffer.db, ROOT) == stored
    # another receiver on the same file (a restart) refuses it too
    with CollectServer(srv.buffer.db, port=0, quiet=0.1) as again:
        status, data, _ = post(again.url + "/v1/traces", proto_body(spans), PROTOBUF)
        assert status == 200 and response(data).partial_success.rejected_spans == len(spans)
    assert lines(srv.buffer.db, ROOT) == stored


def test_a_trace_id_sent_again_later_makes_new_runs(tmp_path: Path) -> None:
    """Was: the importer remembered every trace's runs and deleted them when the trace
    id came back with other spans (anyone able to post could erase a run)."""
    db = tmp_path / "got.db"
    buf = TraceBuffer(db, quiet=0.1, retain=1.0)
    tid, sid = _ids(1)
    buf.add(_agent(tid, sid, "first question", 100.0))
    buf.tick(time.monotonic() + 0.5)
    (first,) = _runs(db)
    buf.tick(time.monotonic() + 5)  # past ``retain``: the trace is final
    buf.add(_agent(tid, f"{99:016x}", "another question", 200.0))
    buf.tick(time.monotonic() + 0.5)
    buf.flush()
    buf.close()
    runs = {r.id: r for r in _runs(db)}
    assert first.id in runs and len(runs) == 2
    with TraceDB(db) as tdb:
        texts = [m.text for m in tdb.run(first.id).messages]
    assert any("first question" in t for t in texts)


def _agent(tid: str, sid: str, text: str, start: float) -> list[Span]:
    """An agent invocation (``invoke_agent``) holding one model call."""
    agent = Span(tid, sid, None, "invoke_agent helper", start, start + 1,
                 {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"},
                 scope="agent-app")
    return [agent, chat(tid, f"{int(sid, 16) + 1:016x}", text, start=start + 0.1, parent=sid)]


# -- a full disk ----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post_h(url: str, body: bytes) -> tuple[int, dict[str, str]]:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": PROTOBUF})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers.items())
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers.items())


def test_a_full_disk_is_a_503_with_retry_after_never_a_success(tmp_path: Path) -> None:
    """Was: 200, and "trace ...: 1 runs" printed, for a GenAI trace the writer then
    dropped. The disk is filled with RLIMIT_FSIZE (every file of the receiver
    limited to a size), then given back with ``prlimit``."""
    db = tmp_path / "full.db"
    port = _free_port()
    limit = 1 << 20

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "collect", "--db", str(db), "--port", str(port),
         "--quiet", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=small_files, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        url = f"http://127.0.0.1:{port}/v1/traces"
        assert wait_for(lambda: _up(port), timeout=30), proc.stderr and proc.stderr.read()
        tid, sid = _ids(7)
        big = chat(tid, sid, "weather? " + "x" * (3 * limit), start=100.0)
        assert _post_h(url, proto_body([big]))[0] == 200  # buffered: stored after its quiet
        small = chat(*_ids(8), "hello", start=101.0)
        got = wait_for(lambda: (r := _post_h(url, proto_body([small])))[0] == 503 and r,
                       timeout=20)
        assert got, "never answered 503 while the disk was full"
        assert int(got[1]["Retry-After"]) > 0
        assert not any("gpt" in r.name or "openai" in r.name for r in _runs(db))
        # space again: what was acknowledged is stored, and clients are answered 200
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        assert wait_for(lambda: _post_h(url, proto_body([small]))[0] == 200, timeout=20)
        assert wait_for(lambda: len(_runs(db)) == 2, timeout=20)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert "not stored yet" in err
    printed = [ln for ln in out.splitlines() if ln.startswith(f"trace {tid}")]
    assert len(printed) == 1, out  # said once: when it was stored, not when it failed
    assert proc.returncode == 0, err


def _up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# -- bounded bodies ------------------------------------------------------------------------

def _raw(srv: CollectServer, head: bytes, body: bytes = b"", wait: float = 10.0) -> bytes:
    """Send ``head`` + ``body`` on a socket; return what the server answers before it
    closes the connection (or ``wait`` seconds pass)."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=wait) as s:
        s.sendall(head + body)
        out = b""
        try:
            while True:  # (every refusal closes the connection)
                piece = s.recv(65536)
                if not piece:
                    break
                out += piece
        except TimeoutError:
            pass
        return out


CHUNKED = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n")


def test_one_huge_chunk_is_refused_before_it_is_read(srv: CollectServer) -> None:
    """Was: a chunk's declared size was read whole before the limit was checked (an
    800 MB chunk: 1.66 GB of RSS); here the client sends 1 GB's header and 10 bytes."""
    got = _raw(srv, CHUNKED, b"40000000\r\n" + b"x" * 10, wait=3.0)
    assert got.startswith(b"HTTP/1.1 413"), got[:200]


@pytest.mark.parametrize("size", [b"zz", b"-5", b"0x10", b"1" * 5000])
def test_a_malformed_chunk_size_is_a_400(srv: CollectServer, size: bytes) -> None:
    """Was: ``int(..., 16)`` raised, the connection dropped with a traceback, no answer."""
    got = _raw(srv, CHUNKED, size + b"\r\n{}\r\n0\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400"), got[:200]
    assert b"chunk" in got


def test_deeply_nested_json_is_a_400(srv: CollectServer) -> None:
    """Was: RecursionError, the connection dropped with a traceback, no answer."""
    deep = b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, data, _ = post(srv.url + "/v1/traces", deep, JSON)
    assert status == 400 and b"nested" in data
    deep_obj = b'{"resourceSpans": [{"resource": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_000
    status, _, _ = post(srv.url + "/v1/traces", deep_obj + b"}]}", JSON)
    assert status == 400


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compression_bombs_stop_at_the_limit(srv: CollectServer, chunked: bool,
                                             encoding: str) -> None:
    """64 MB of zeros in a few KB: refused once inflated past ``max_body`` (1 MB here),
    whichever transfer encoding carries it."""
    import zlib

    zeros = b"\0" * (64 << 20)
    bomb = gzip.compress(zeros, 9) if encoding == "gzip" else zlib.compress(zeros, 9)
    head = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            + f"Content-Encoding: {encoding}\r\n".encode())
    if chunked:
        got = _raw(srv, head + b"Transfer-Encoding: chunked\r\n\r\n",
                   f"{len(bomb):x}\r\n".encode() + bomb + b"\r\n0\r\n\r\n")
    else:
        got = _raw(srv, head + f"Content-Length: {len(bomb)}\r\n\r\n".encode(), bomb)
    assert got.startswith(b"HTTP/1.1 413"), got[:200]


def test_a_body_over_the_limit_is_a_413(srv: CollectServer) -> None:
    head = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 2000000\r\n\r\n")
    assert _raw(srv, head, wait=3.0).startswith(b"HTTP/1.1 413")
    pieces = b"".join(b"10000\r\n" + b" " * 0x10000 + b"\r\n" for _ in range(20))
    assert _raw(srv, CHUNKED, pieces).startswith(b"HTTP/1.1 413")


def test_stalled_connections_let_go_of_their_threads(tmp_path: Path) -> None:
    """Was: no timeout, so each stalled connection held a thread for ever (1,000 of
    them: 1,000 threads after 90 s). The server here times out after 1.5 s."""
    with CollectServer(tmp_path / "stall.db", port=0, timeout=1.5) as srv:
        _stall(srv)


def _stall(srv: CollectServer) -> None:
    before = threading.active_count()
    socks = []
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", srv.port))
        if i % 2:  # half the headers
            s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        else:  # the headers, then half the body
            s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
                      b"application/json\r\nContent-Length: 100\r\n\r\n{")
        socks.append(s)
    try:
        assert wait_for(lambda: threading.active_count() >= before + 15, timeout=5), (
            threading.active_count(), before)
        assert wait_for(lambda: threading.active_count() <= before, timeout=10), (
            threading.active_count(), before)
        for s in socks:  # each was closed by the server (after an answer, or none)
            s.settimeout(5)
            data = s.recv(65536)
            while data and not data.endswith(b"}"):
                more = s.recv(65536)
                if not more:
                    break
                data += more
            assert data == b"" or data.startswith(b"HTTP/1.1 408")
    finally:
        for s in socks:
            s.close()


# -- a bounded buffer, and runs that end --------------------------------------------------

def test_the_buffer_is_capped_and_the_oldest_trace_goes_in_with_a_warning(
        tmp_path: Path) -> None:
    """Was: traces that never complete (no root span) buffered without limit (a growing
    trace: 1 GB; a million tiny spans: 1.2 GB)."""
    db = tmp_path / "cap.db"
    with CollectServer(db, port=0, quiet=60, orphan_timeout=60, max_traces=3,
                       max_spans=10) as srv:
        missing_root = f"{0xabc:016x}"
        for i in range(5):  # five traces whose root never comes
            tid, sid = _ids(i)
            body = proto_body([chat(tid, sid, f"question {i}", start=100.0 + i,
                                    parent=missing_root)])
            assert post(srv.url + "/v1/traces", body)[0] == 200
        assert srv.buffer.pending == 3
        runs = _runs(db)
        assert sorted(r.name for r in runs) == ["openai: question 0", "openai: question 1"]
        early = [w for w in srv.buffer.total.warnings if "before it was whole" in w]
        assert len(early) == 2 and _ids(0)[0] in early[0]
        # one trace growing past ``max_spans`` goes in as it is, too
        tid = _ids(50)[0]
        spans = [chat(tid, f"{0x500 + i:016x}", f"part {i}", start=200.0 + i,
                      parent=missing_root) for i in range(12)]
        assert post(srv.url + "/v1/traces", proto_body(spans))[0] == 200
        assert srv.buffer.pending <= 3
        assert srv.buffer._nspans <= 10


def test_content_less_chat_traces_complete_after_their_quiet(srv: CollectServer) -> None:
    """Was: each chat span without content (openai-v2's default) became a run left
    ``running`` for as long as the receiver ran (issue 20)."""
    for i in range(3):
        tid, sid = _ids(i)
        assert post(srv.url + "/v1/traces", proto_body([chat(tid, sid, None,
                                                             start=100.0 + i)]))[0] == 200
    assert wait_for(lambda: len(_runs(srv.buffer.db)) == 3 and srv.buffer.pending == 0)
    runs = wait_for(lambda: [r for r in _runs(srv.buffer.db) if r.status == "completed"])
    assert len(runs) == 3, [r.status for r in _runs(srv.buffer.db)]
    with TraceDB(srv.buffer.db) as tdb:
        for r in runs:
            run = tdb.run(r.id)
            assert "not captured" in run.metadata["content"]
            assert run.summary.ended_at is not None


def test_the_running_runs_kept_in_memory_stay_bounded(tmp_path: Path) -> None:
    """Was: every content-less call's run stayed running, so the importer kept them
    all and scanned them all for every trace (1,000 traces/s, then 9/s). The rate
    itself is printed by ``benchmarks/bench_hostile.py``."""
    imp = SpanImporter(tmp_path / "many.db", keep=20)
    for i in range(60):
        tid, sid = _ids(i)
        imp.add([chat(tid, sid, None, start=100.0 + i)])
    assert len(imp.loose) <= 25  # (``keep``, and a quarter more before it trims)
    imp.close()
    assert {r.status for r in _runs(tmp_path / "many.db")} == {"completed"}
