"""``looptrace collect`` and ``looptrace export --otlp``: the command line over ``tracer.otel``.

Only argument handling and printing live here; the OpenTelemetry packages are
imported when a command runs, so the rest of the CLI works without them.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from ..cli import DEFAULT_DB
from ..errors import LooptraceError


class OtelUsageError(LooptraceError):
    """The OTLP options do not fit together."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "collect", help="receive OpenTelemetry traces (OTLP/HTTP) and store them as runs",
        description=(
            "Listen for OTLP/HTTP trace exports (POST /v1/traces, protobuf or JSON, gzip) and "
            "write each trace as runs: traces sent by 'looptrace export --otlp' come back "
            "exactly as recorded, other GenAI traces are converted, other spans are skipped "
            "and counted. Point an exporter at http://HOST:PORT (OTEL_EXPORTER_OTLP_ENDPOINT)."))
    p.add_argument("--db", default=DEFAULT_DB, help=f"database to write (default {DEFAULT_DB})")
    p.add_argument("--port", type=int, default=4318, help="port (default 4318, OTLP/HTTP's)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--quiet", type=float, default=2.0, metavar="SECONDS",
                   help="import a trace once its root span is in and no span came for this long")
    p.add_argument("--orphan-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="import a trace that never completes after this long, with a warning")
    p.set_defaults(func=cmd_collect)


def add_export_options(p: argparse.ArgumentParser) -> None:
    """The OTLP options of ``looptrace export``."""
    g = p.add_argument_group("OpenTelemetry (instead of -o / --html)")
    g.add_argument("--otlp", metavar="URL",
                   help="send as OpenTelemetry GenAI spans to an OTLP/HTTP endpoint "
                        "(e.g. http://127.0.0.1:4318)")
    g.add_argument("--follow", action="store_true",
                   help="with --otlp and no RUN: watch the database and send each run as it "
                        "finishes, until Ctrl-C")
    g.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                   help="an HTTP header to send with --otlp (repeatable)")
    g.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up on the endpoint after this long (default 10)")
    g.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="with --follow: how often to look for finished runs (default 1)")


def cmd_export_otlp(args: argparse.Namespace) -> int:
    if args.out or getattr(args, "html", None):
        msg = "--otlp and -o/--html are alternatives: give one"
        raise OtelUsageError(msg)
    headers = _headers(args.header)
    if args.follow:
        if args.run:
            msg = "--follow sends every run as it finishes: give no RUN"
            raise OtelUsageError(msg)
        return _follow(args, headers)
    if not args.run:
        msg = "give a RUN to export (or --follow to send runs as they finish)"
        raise OtelUsageError(msg)
    from .export import export_otlp, traces_url

    n = export_otlp(args.db, args.run, args.otlp, headers=headers, timeout=args.timeout)
    print(f"sent {n} spans to {traces_url(args.otlp)}")
    return 0


def _headers(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            msg = f"--header {item!r}: expected KEY=VALUE"
            raise OtelUsageError(msg)
        out[key.strip()] = value.strip()
    return out


def _follow(args: argparse.Namespace, headers: dict[str, str]) -> int:
    from .export import traces_url
    from .follow import follow, ledger_path

    url = traces_url(args.otlp)
    print(f"looptrace export: sending each run of {args.db} to {url} as it finishes "
          f"(sent runs are listed in {ledger_path(args.db)}); Ctrl-C stops", flush=True)
    said: set[str] = set()

    def sent(run: Any, n: int) -> None:
        print(f"sent {run.id[:12]} {run.name or ''} ({run.status}, {n} spans)", flush=True)

    def failed(run: Any, exc: Exception) -> None:
        if str(exc) not in said:  # once per distinct trouble, not at every poll
            said.add(str(exc))
            print(f"looptrace export: {exc} (retrying)", file=sys.stderr, flush=True)

    stop = threading.Event()
    _stop_on_sigterm(stop)
    try:
        total = follow(args.db, url, interval=args.interval, stop=stop, headers=headers,
                       timeout=args.timeout, on_sent=sent, on_error=failed)
    except KeyboardInterrupt:
        return 0
    print(f"sent {total} runs")
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    from .collect import CollectServer

    if not 0 <= args.port < 65536:
        msg = f"--port {args.port} is not a port number"
        raise OtelUsageError(msg)

    def imported(trace_id: str, result: Any) -> None:
        if result.run_ids:
            ids = ", ".join(r[:12] for r in result.run_ids)
            extra = f", {result.skipped} spans skipped" if result.skipped else ""
            print(f"trace {trace_id}: {len(result.run_ids)} runs ({ids}){extra}", flush=True)
        elif result.skipped:
            print(f"trace {trace_id}: {result.skipped} spans skipped (not GenAI spans)",
                  flush=True)
        for w in result.warnings:
            print(f"warning: {w}", file=sys.stderr, flush=True)

    try:
        srv = CollectServer(args.db, host=args.host, port=args.port, quiet=args.quiet,
                            orphan_timeout=args.orphan_timeout, on_import=imported)
    except OSError as exc:
        msg = f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
        raise OtelUsageError(msg) from None
    print(f"looptrace collect: OTLP/HTTP on {srv.url}/v1/traces (and /v1/logs), writing runs "
          f"into {args.db}; Ctrl-C stops", flush=True)
    _stop_on_sigterm(None)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    t = srv.buffer.total
    logs = (f" and {srv.buffer.received_logs} log records" if srv.buffer.received_logs
            else "")
    print(f"received {srv.buffer.received} spans{logs}: {len(set(t.run_ids))} runs imported, "
          f"{t.skipped} spans skipped, {len(t.warnings)} warnings")
    return 0


def _stop_on_sigterm(stop: threading.Event | None) -> None:
    """SIGTERM stops like Ctrl-C (buffered traces are still imported)."""

    def handler(signum: int, frame: object) -> None:
        if stop is not None:
            stop.set()
        else:
            raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
