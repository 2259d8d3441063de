"""Benchmark: how fast do runs go out as OTLP spans, and come back in?  (Not a pytest test.)

    uv run python benchmarks/bench_otel.py [--copies N]

The bundled sample traces, replicated ``N`` times under new run ids, in a real SQLite
file. Three measurements, each over every root run:

  export        run -> GenAI spans -> the SDK's OTLP/HTTP exporter -> a sink that only
                answers 200 (what looptrace costs on the sending side): spans/s, runs/s
  ingest        protobuf request bodies (encoded beforehand) posted to ``collect``,
                which decodes them, buffers per trace and writes the runs back:
                spans/s (and the same with OTLP JSON bodies)
  round trip    ``export_otlp`` into a live ``collect``: runs/s, sender and receiver
                on the same machine

Wall times, one pass each, on whatever else the machine is doing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the test kits

from otel_kit import JSON, PROTOBUF, json_body, post, proto_body

from tracer.interop.exchange import import_rows, read_trace, sample_files
from tracer.otel.collect import CollectServer
from tracer.otel.export import export_otlp
from tracer.otel.runspans import run_spans
from tracer.read.loader import TraceDB


def replicated_db(path: Path, copies: int) -> list[str]:
    """Every sample ``copies`` times, each copy under fresh run ids; the root run ids."""
    roots = []
    samples = [read_trace(p) for p in sample_files()]
    for _ in range(copies):
        rows_all = []
        for header, rows in samples:
            new = {r["id"]: uuid.uuid4().hex for t, r in rows if t == "runs"}
            for table, row in rows:
                row = dict(row)
                for key in ("id", "parent_id") if table == "runs" else ("run_id",):
                    if row.get(key) in new:
                        row[key] = new[row[key]]
                rows_all.append((table, row))
            roots.append(new[header["root"]])
        import_rows(rows_all, path)
    return roots


class _Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", PROTOBUF)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--copies", type=int, default=10, help="times each sample is replicated")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-otel-"))
    src = tmp / "source.db"
    roots = replicated_db(src, args.copies)
    with TraceDB(src) as db:
        n_runs = len(db.runs())
        t = time.perf_counter()
        spans = {r: run_spans(db, r) for r in roots}
        build = time.perf_counter() - t
    n_spans = sum(len(s) for s in spans.values())
    print(f"{len(roots)} root runs ({n_runs} runs with subagents), {n_spans} spans, "
          f"{args.copies} copies of {len(sample_files())} samples")
    print(f"  building spans:  {n_spans / build:8.0f} spans/s  {len(roots) / build:6.0f} runs/s")

    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    sink.daemon_threads = True
    import threading

    threading.Thread(target=sink.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{sink.server_address[1]}"
    t = time.perf_counter()
    sent = sum(export_otlp(src, r, url) for r in roots)
    took = time.perf_counter() - t
    sink.shutdown()
    print(f"  export:          {sent / took:8.0f} spans/s  {len(roots) / took:6.0f} runs/s"
          f"  ({took:.2f} s)")

    for name, encode, ctype in (("protobuf", proto_body, PROTOBUF), ("JSON", json_body, JSON)):
        bodies = [encode(s) for s in spans.values()]
        mb = sum(map(len, bodies)) / 1e6
        with CollectServer(tmp / f"ingest-{name}.db", port=0) as srv:
            t = time.perf_counter()
            for body in bodies:
                status, _, _ = post(srv.url + "/v1/traces", body, ctype)
                assert status == 200
            took = time.perf_counter() - t
            assert srv.buffer.pending == 0
            got = len(srv.buffer.total.run_ids)
        assert got == n_runs, (got, n_runs)
        print(f"  ingest {name:8s} {n_spans / took:8.0f} spans/s  {len(roots) / took:6.0f} runs/s"
              f"  ({took:.2f} s, {mb:.1f} MB)")

    with CollectServer(tmp / "roundtrip.db", port=0) as srv:
        t = time.perf_counter()
        for r in roots:
            export_otlp(src, r, srv.url)
        took = time.perf_counter() - t
    print(f"  round trip:      {n_spans / took:8.0f} spans/s  {len(roots) / took:6.0f} runs/s"
          f"  ({took:.2f} s)")


if __name__ == "__main__":
    main()
