"""``looptrace collect``: receive OpenTelemetry traces (OTLP/HTTP) and store them as runs
(``tracer.otel.CollectServer``).

The OpenTelemetry packages are imported when the command runs, so the rest of the
command line works without them.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tracer.cli import PORT_MAX, int_range
from tracer.db.url import safe
from tracer.errors import UsageError
from tracer.vocab.terminal import safe_text
from tracer.vocab.words import plural

from . import DEFAULT_DB, serve


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "collect", help="receive OpenTelemetry traces (OTLP/HTTP) and store them as runs",
        description=(
            "Listen for OTLP/HTTP trace exports (POST /v1/traces, protobuf or JSON, gzip) and "
            "write each trace as runs: traces sent by 'looptrace export --otlp' come back "
            "exactly as recorded, other GenAI traces are converted, other spans are skipped "
            "and counted. Point an exporter at http://HOST:PORT (OTEL_EXPORTER_OTLP_ENDPOINT)."))
    p.add_argument("--db", default=DEFAULT_DB, help="database to write")
    p.add_argument("--port", type=int_range(0, PORT_MAX), default=4318, help="port (default 4318, OTLP/HTTP's)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--quiet", type=float, default=2.0, metavar="SECONDS",
                   help="import a trace once its root span is in and no span came for this long")
    p.add_argument("--orphan-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="import a trace that never completes after this long, with a warning")
    p.add_argument("--max-body", type=float, default=16, metavar="MB",
                   help="largest request body, once decompressed (default 16 MB): 413 past it")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="close a connection silent this long, or whose request body takes "
                        "longer (default 30)")
    p.add_argument("--max-spans", type=int_range(1), default=50_000, metavar="N",
                   help="spans buffered while their traces complete (default 50000): past "
                        "it, and past --max-traces, the oldest trace is imported as it is")
    p.add_argument("--max-traces", type=int_range(1), default=10_000, metavar="N",
                   help="traces buffered while they complete (default 10000)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracer.db import pool
    from tracer.otel.collect import CollectServer

    pool.enable()  # (a PostgreSQL store: its connections from a pool)

    if not 0 <= args.port < 65536:
        msg = f"--port {args.port} is not a port number"
        raise UsageError(msg)
    for flag, value in (("--max-body", args.max_body), ("--timeout", args.timeout),
                        ("--max-spans", args.max_spans), ("--max-traces", args.max_traces)):
        if not value > 0:
            msg = f"{flag} must be positive, not {value}"
            raise UsageError(msg)

    def imported(trace_id: str, result: Any) -> None:
        if result.run_ids:
            ids = ", ".join(r[:12] for r in result.run_ids)
            extra = f", {plural(result.skipped, 'span')} skipped" if result.skipped else ""
            runs = plural(len(result.run_ids), "run")
            print(safe_text(f"trace {trace_id}: {runs} ({ids}){extra}"),
                  flush=True)
        elif result.skipped:
            print(f"trace {trace_id}: {plural(result.skipped, 'span')} skipped (not GenAI spans)",
                  flush=True)
        for w in result.warnings:
            print(safe_text(f"warning: {w}"), file=sys.stderr, flush=True)

    try:
        srv = CollectServer(args.db, host=args.host, port=args.port, quiet=args.quiet,
                            orphan_timeout=args.orphan_timeout,
                            max_body=int(args.max_body * 1024 * 1024), timeout=args.timeout,
                            max_spans=args.max_spans, max_traces=args.max_traces,
                            on_import=imported)
    except OSError as exc:
        msg = f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        raise UsageError(msg) from None
    print(f"looptrace collect: OTLP/HTTP on {srv.url}/v1/traces (and /v1/logs), writing runs "
          f"into {safe(args.db)}; Ctrl-C stops", flush=True)
    serve(srv)
    t = srv.buffer.total
    logs = (f" and {plural(srv.buffer.received_logs, 'log record')}" if srv.buffer.received_logs
            else "")
    print(f"received {plural(srv.buffer.received, 'span')}{logs}: "
          f"{plural(len(set(t.run_ids)), 'run')} imported, {plural(t.skipped, 'span')} skipped, "
          f"{plural(len(t.warnings), 'warning')}")
    if srv.buffer.store_error is not None:
        print(f"error: {t.warnings[-1]}", file=sys.stderr)
        return 1
    return 0
