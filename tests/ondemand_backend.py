"""On demand, not in CI: send every sample run into a real OpenTelemetry backend and
read it back through the backend's own API.

Phoenix (``pip install arize-phoenix`` in a separate venv; it accepts OTLP/HTTP on
its UI port) must be running:

    PHOENIX_WORKING_DIR=/tmp/phx PHOENIX_HOST=127.0.0.1 PHOENIX_PORT=6006 phoenix serve
    uv run --frozen python tests/ondemand_backend.py [--url http://127.0.0.1:6006]

For each sample: ``looptrace export RUN --otlp URL``, then the spans of that trace
through Phoenix's REST API (``GET /v1/projects/default/spans``), turned back into
spans and imported (``tracer.otel.imports.import_spans``) into a fresh database,
and diffed with the original (``diff_tree``). Prints one line per sample and the
number that came back identical; exits 1 if any did not.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from tracer.diff import diff_tree
from tracer.exchange import build_sample_db, sample_files
from tracer.loader import TraceDB
from tracer.otel.export import export_otlp
from tracer.otel.imports import import_spans
from tracer.otel.spans import Span, SpanEvent


def _ts(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def _span(d: dict[str, Any]) -> Span:
    ctx = d["context"]
    return Span(trace_id=ctx["trace_id"], span_id=ctx["span_id"], parent_id=d.get("parent_id"),
                name=d["name"], start=_ts(d["start_time"]) or 0.0, end=_ts(d.get("end_time")),
                attributes=d.get("attributes") or {},
                events=[SpanEvent(e["name"], _ts(e["timestamp"]) or 0.0, e.get("attributes") or {})
                        for e in d.get("events") or []],
                status={"OK": "ok", "ERROR": "error"}.get(d.get("status_code") or "", "unset"),
                status_message=d.get("status_message") or None)


def fetch_trace(url: str, trace_id: str) -> list[Span]:
    """Every span of ``trace_id`` in Phoenix's default project (paged)."""
    out: list[Span] = []
    cursor = None
    while True:
        q = f"{url}/v1/projects/default/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
        with urllib.request.urlopen(q, timeout=30) as r:  # noqa: S310 - a local URL
            page = json.load(r)
        out += [_span(s) for s in page["data"] if s["context"]["trace_id"] == trace_id]
        cursor = page.get("next_cursor")
        if not cursor:
            return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:6006")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    src = build_sample_db(tmp / "samples.db")
    same = 0
    with TraceDB(src) as db:
        roots = [r for r in db.runs() if r.parent_id is None]
        for r in roots:
            t0 = time.perf_counter()
            sent = export_otlp(src, r.id, args.url)
            spans: list[Span] = []
            for _ in range(40):  # the backend writes asynchronously
                spans = fetch_trace(args.url, r.id)
                if len(spans) >= sent:
                    break
                time.sleep(0.25)
            back = tmp / f"{r.id}.db"
            result = import_spans(spans, back)
            with TraceDB(back) as bdb:
                d = diff_tree(db, r.id, bdb, r.id) if r.id in result.run_ids else None
            ok = d is not None and d.identical
            same += ok
            print(f"{r.name:28} sent {sent:3} spans, read back {len(spans):3}: "
                  f"{'identical' if ok else 'DIFFERENT'} ({time.perf_counter() - t0:.1f} s)")
    print(f"{same} of {len(roots)} sample runs came back identical through Phoenix "
          f"({len(sample_files())} sample files)")
    return 0 if same == len(roots) else 1


if __name__ == "__main__":
    sys.exit(main())
