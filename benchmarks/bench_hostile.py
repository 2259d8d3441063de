"""Benchmark: the receiver and the proxy under hostile traffic (issue 21).  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_hostile.py [--traces N] [--only NAME]

Each case starts a fresh server in a child process (``looptrace collect`` or
``looptrace proxy`` as a library, with the command's default limits), sends it the
traffic from this process, and prints the child's peak RSS (``ru_maxrss``; its
RSS right after start-up in brackets) and how the server answered:

  chunk-800MB       one chunk declaring 800 MB, streamed until the server stops it
  length-800MB      a Content-Length of 800 MB, streamed until the server stops it
  gzip-1GB          a gzip body inflating to 1 GB (1 MB on the wire)
  growing-trace     one trace (no root span) growing by 1,000 spans a request, 200 times
  tiny-spans        300,000 tiny spans, 1,000 new traces a request
  stalled-1000      1,000 connections that send half a request and stall (server
                    timeout 2 s here): its threads while they stall, and after
  proxy-sse-200MB   a 200 MB SSE stream relayed and recorded by the proxy
  proxy-body-100MB  a 100 MB request body sent to the proxy
  rate              ``--traces`` content-less GenAI chat traces (one span each, as
                    opentelemetry-instrumentation-openai-v2 sends them by default),
                    500 a request: runs stored per second, for each tenth of them

Wall times and RSS on whatever else the machine is doing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))  # the test kits

MB = 1024 * 1024


# -- the child: one server -------------------------------------------------------------------

def serve(kind: str, db: str, upstream: str | None, timeout: float) -> None:
    if kind == "collect":
        from tracer.otel.collect import CollectServer

        srv: Any = CollectServer(db, port=0, quiet=0.2, timeout=timeout).start()
    else:
        from tracer.wire.proxy import WireServer

        srv = WireServer(mode="forward", provider="openai", upstream=upstream, db=db).start()
    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"PORT {srv.port} {start}", flush=True)
    sys.stdin.read()  # until the parent closes it
    srv.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"PEAK {peak}", flush=True)


@contextlib.contextmanager
def child(kind: str, db: Path, upstream: str | None = None,
          timeout: float = 30.0) -> Iterator[dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--db", str(db), "--timeout", str(timeout),
         *(["--upstream", upstream] if upstream else [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    _, port, start = proc.stdout.readline().split()
    info: dict[str, Any] = {"port": int(port), "pid": proc.pid, "start_mb": int(start) / 1024}
    try:
        yield info
    finally:
        proc.stdin.close()
        out = proc.stdout.read()
        proc.wait(120)
        info["peak_mb"] = int(out.split("PEAK")[-1].split()[0]) / 1024


def threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return -1


def answer(s: socket.socket) -> str:
    """The status line the server answered on ``s`` (or what happened instead)."""
    s.settimeout(30)
    try:
        data = s.recv(4096)
    except OSError as exc:
        return f"no answer ({exc.__class__.__name__})"
    return data.split(b"\r\n", 1)[0].decode() if data else "closed without answer"


def stream_until_stopped(port: int, head: bytes, total: int) -> str:
    """Send ``head`` then up to ``total`` bytes of zeros until the server answers/closes."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(head)
        block = b"\0" * MB
        sent = 0
        s.settimeout(0.5)
        try:
            while sent < total:
                s.sendall(block)
                sent += len(block)
        except OSError:
            pass
        return f"{answer(s)} after {sent // MB} MB sent"


def post(port: int, path: str, body: bytes, ctype: str = "application/x-protobuf",
         headers: dict[str, str] | None = None) -> int:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": ctype, **(headers or {})})
        resp = conn.getresponse()
        resp.read()
        return resp.status
    except OSError:
        return -1
    finally:
        conn.close()


# -- OTLP bodies --------------------------------------------------------------------------

def spans_body(spans: list[tuple[bytes, bytes, bytes, dict[str, Any]]]) -> bytes:
    """An ExportTraceServiceRequest of (trace id, span id, parent id, attributes)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    ss.scope.name = "bench"
    now = time.time_ns()
    for tid, sid, parent, attrs in spans:
        sp = ss.spans.add()
        sp.trace_id, sp.span_id, sp.parent_span_id = tid, sid, parent
        sp.name = "chat gpt-4o-mini" if attrs else "op"
        sp.start_time_unix_nano, sp.end_time_unix_nano = now, now + 1000
        for k, v in attrs.items():
            kv = sp.attributes.add()
            kv.key = k
            if isinstance(v, int):
                kv.value.int_value = v
            else:
                kv.value.string_value = v
    return req.SerializeToString()


CHAT = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 7,
        "gen_ai.usage.output_tokens": 2}


# -- the cases ------------------------------------------------------------------------------

def case_chunk(tmp: Path) -> tuple[dict[str, Any], str]:
    with child("collect", tmp / "c.db") as info:
        head = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n" + f"{800 * MB:x}\r\n".encode())
        got = stream_until_stopped(info["port"], head, 800 * MB)
    return info, got


def case_length(tmp: Path) -> tuple[dict[str, Any], str]:
    with child("collect", tmp / "c.db") as info:
        head = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {800 * MB}\r\n\r\n".encode())
        got = stream_until_stopped(info["port"], head, 800 * MB)
    return info, got


def case_gzip(tmp: Path) -> tuple[dict[str, Any], str]:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * MB
    bomb = b"".join(z.compress(block) for _ in range(1024)) + z.flush()
    with child("collect", tmp / "c.db") as info:
        status = post(info["port"], "/v1/traces", bomb, headers={"Content-Encoding": "gzip"})
    return info, f"HTTP {status} ({len(bomb) // 1024} KB on the wire)"


def case_growing(tmp: Path) -> tuple[dict[str, Any], str]:
    tid = os.urandom(16)
    missing = os.urandom(8)
    pad = "x" * 1000
    statuses: set[int] = set()
    with child("collect", tmp / "c.db") as info:
        for _ in range(200):
            body = spans_body([(tid, os.urandom(8), missing, {"pad": pad}) for _ in range(1000)])
            statuses.add(post(info["port"], "/v1/traces", body))
    return info, f"HTTP {sorted(statuses)} for 200,000 spans of one trace"


def case_tiny(tmp: Path) -> tuple[dict[str, Any], str]:
    statuses: set[int] = set()
    with child("collect", tmp / "c.db") as info:
        for _ in range(300):
            body = spans_body([(os.urandom(16), os.urandom(8), b"", {}) for _ in range(1000)])
            statuses.add(post(info["port"], "/v1/traces", body))
    return info, f"HTTP {sorted(statuses)} for 300,000 spans"


def case_stalled(tmp: Path) -> tuple[dict[str, Any], str]:
    with child("collect", tmp / "c.db", timeout=2.0) as info:
        before = threads(info["pid"])
        socks = []
        for _ in range(1000):
            s = socket.create_connection(("127.0.0.1", info["port"]))
            s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            socks.append(s)
        time.sleep(0.5)
        during = threads(info["pid"])
        time.sleep(4)
        after = threads(info["pid"])
        for s in socks:
            s.close()
    return info, f"threads: {before} before, {during} while stalled, {after} 4 s later"


class _SSE(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    size = 200 * MB

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        event = "data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk",
                                       "created": 1, "model": "gpt-4o-mini", "choices": [{
                                           "index": 0, "delta": {"content": "tok "},
                                           "finish_reason": None}]}) + "\n\n"
        block = (event * (65536 // len(event))).encode()
        end = ("data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk",
                                      "created": 1, "model": "gpt-4o-mini", "choices": [{
                                          "index": 0, "delta": {}, "finish_reason": "stop"}]})
               + "\n\ndata: [DONE]\n\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(block) * (self.size // len(block)) + len(end)))
        self.end_headers()
        for _ in range(self.size // len(block)):
            self.wfile.write(block)
        self.wfile.write(end)


def case_sse(tmp: Path) -> tuple[dict[str, Any], str]:
    import http.client

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _SSE)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with child("proxy", tmp / "p.db", f"http://127.0.0.1:{httpd.server_address[1]}") as info:
            conn = http.client.HTTPConnection("127.0.0.1", info["port"], timeout=300)
            conn.request("POST", "/v1/chat/completions", body=b'{"stream": true}',
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            got = 0
            while piece := resp.read1(MB):
                got += len(piece)
            conn.close()
            time.sleep(1)
    finally:
        httpd.shutdown()
    conn2 = sqlite3.connect(tmp / "p.db")
    body, chunks, err = conn2.execute(
        "SELECT length(response_body), length(chunks), error FROM wire").fetchone()
    conn2.close()
    return info, (f"{got // MB} MB relayed; stored: body {body // 1024} KB reassembled, "
                  f"chunks {chunks // 1024} KB, error {err}")


def case_body(tmp: Path) -> tuple[dict[str, Any], str]:
    with child("proxy", tmp / "p.db", "http://127.0.0.1:9") as info:
        head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {100 * MB}\r\n\r\n".encode())
        got = stream_until_stopped(info["port"], head, 100 * MB)
    return info, got


def case_rate(tmp: Path, n: int) -> tuple[dict[str, Any], str]:
    db = tmp / "rate.db"
    step = max(n // 10, 1)
    lines = []
    with child("collect", db) as info:
        bodies = []
        for i in range(0, n, 500):
            bodies.append(spans_body([(os.urandom(16), os.urandom(8), b"", CHAT)
                                      for _ in range(min(500, n - i))]))

        def send() -> None:
            for b in bodies:
                post(info["port"], "/v1/traces", b)

        sender = threading.Thread(target=send)
        t0 = time.perf_counter()
        sender.start()
        mark, last_t, stored = step, t0, 0
        while stored < n and time.perf_counter() - t0 < 900:
            time.sleep(0.5)
            with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
                stored = conn.execute("SELECT count(*) FROM runs WHERE status = 'completed'"
                                      ).fetchone()[0]
            while stored >= mark:
                now = time.perf_counter()
                lines.append(f"{mark:>7}: {step / (now - last_t):,.0f}/s")
                mark, last_t = mark + step, now
        total = time.perf_counter() - t0
        sender.join()
    return info, (f"{stored:,} runs completed in {total:.1f} s ({stored / total:,.0f}/s); "
                  "per tenth: " + ", ".join(lines))


CASES = {"chunk-800MB": case_chunk, "length-800MB": case_length, "gzip-1GB": case_gzip,
         "growing-trace": case_growing, "tiny-spans": case_tiny, "stalled-1000": case_stalled,
         "proxy-sse-200MB": case_sse, "proxy-body-100MB": case_body}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--serve", choices=["collect", "proxy"])
    ap.add_argument("--db")
    ap.add_argument("--upstream")
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--only", choices=[*CASES, "rate"])
    args = ap.parse_args()
    if args.serve:
        serve(args.serve, args.db, args.upstream, args.timeout)
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(
        resource.RLIMIT_NOFILE)[1]))
    print(f"{'case':<18} {'peak RSS':>9} {'(start)':>8}  result")
    names = [args.only] if args.only else [*CASES, "rate"]
    for name in names:
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            info, result = (case_rate(Path(d), args.traces) if name == "rate"
                            else CASES[name](Path(d)))
            took = time.perf_counter() - t0
        print(f"{name:<18} {info['peak_mb']:>6.0f} MB {info['start_mb']:>5.0f} MB  {result} "
              f"[{took:.1f} s]", flush=True)


if __name__ == "__main__":
    main()
