"""``looptrace export`` and ``looptrace import``: runs to and from files (``tracer.interop.exchange``),
a self-contained HTML replay (``tracer.interop.html_export``) and OpenTelemetry (``tracer.otel``).

The OpenTelemetry packages are imported only when ``--otlp`` (or an OTLP JSON file)
asks for them.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from tracer.db.url import safe
from tracer.errors import UsageError, storage_errors
from tracer.interop.exchange import export_run, import_rows, read_trace, stored_alike
from tracer.vocab.terminal import safe_text
from tracer.vocab.words import plural

from . import DEFAULT_DB, add_prices, read_db, stop_on_sigterm, use_prices


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("export", help="export a run (and its subagent runs)")
    p.add_argument("run", nargs="?", help="run id (or a unique prefix)")
    p.add_argument("--db", default=DEFAULT_DB, type=read_db)
    p.add_argument("-o", "--out", help="output .jsonl file (default: <run>.jsonl)")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML replay")
    g = p.add_argument_group("OpenTelemetry (instead of -o / --html)")
    g.add_argument("--otlp", metavar="URL",
                   help="send as OpenTelemetry GenAI spans to an OTLP/HTTP endpoint "
                        "(e.g. http://127.0.0.1:4318)")
    g.add_argument("--follow", action="store_true",
                   help="with --otlp and no RUN: watch the database and send each run as it "
                        "finishes, until Ctrl-C")
    g.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                   help="an HTTP header to send with --otlp (repeatable)")
    g.add_argument("--service", metavar="NAME",
                   help="the service name the spans carry, also Phoenix's project "
                        "(default looptrace)")
    g.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="give up on the endpoint after this long (default 10)")
    g.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="with --follow: how often to look for finished runs (default 1)")
    add_prices(p)
    p.set_defaults(func=export)

    p = sub.add_parser("import", help="import trace files into a database")
    p.add_argument("files", nargs="+",
                   help="looptrace trace files (.jsonl), or OTLP JSON files of OpenTelemetry spans")
    p.add_argument("--db", default=DEFAULT_DB)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--rename", action="store_true",
                   help="a run already stored with other content: import the file's runs "
                        "under new ids (default: refuse the file, import nothing of it)")
    g.add_argument("--replace", action="store_true",
                   help="a run already stored with other content: overwrite it")
    p.set_defaults(func=import_files)


def export(args: argparse.Namespace) -> int:
    use_prices(args)
    if args.otlp or args.follow:
        if not args.otlp:
            msg = "--follow needs --otlp URL"
            raise UsageError(msg)
        return _export_otlp(args)
    if not args.run:
        msg = "give a RUN to export"
        raise UsageError(msg)
    if args.html:
        from tracer.interop.html_export import export_html

        print(safe_text(export_html(args.db, args.run, args.html)))
        return 0
    print(safe_text(export_run(args.db, args.run, args.out or f"{args.run}.jsonl")))
    return 0


def import_files(args: argparse.Namespace) -> int:
    from tracer.otel.otlp import is_otlp_json

    ids: list[str] = []
    alike: set[str] = set()  # runs the files hold that were stored as they are already
    on_conflict = "rename" if args.rename else "replace" if args.replace else "refuse"
    for path in args.files:
        if not is_otlp_json(path):
            _header, rows = read_trace(path)
            alike |= stored_alike(args.db, rows) - set(ids)  # (not by an earlier file)
            with storage_errors(args.db):
                got = import_rows(rows, args.db, on_conflict=on_conflict)
            for old, new in zip((r["id"] for t, r in rows if t == "runs"), got):
                if old != new:
                    print(safe_text(f"{path}: run {old} is stored with other content: "
                                    f"imported as {new}"), file=sys.stderr)
            ids.extend(got)
            continue
        from tracer.otel.imports import import_otlp_file

        result = import_otlp_file(path, args.db)
        ids.extend(result.run_ids)
        if result.skipped:
            print(safe_text(f"{path}: {plural(result.skipped, 'span')} skipped (not GenAI spans)"),
                  file=sys.stderr)
        for w in result.warnings:
            print(safe_text(f"{path}: warning: {w}"), file=sys.stderr)
    every = list(dict.fromkeys(ids))
    fresh = [rid for rid in every if rid not in alike]
    same = (f" ({len(every) - len(fresh)} already stored with the same content)"
            if len(fresh) < len(every) else "")
    print(safe_text(f"imported {plural(len(fresh), 'run')} into {safe(args.db)}{same}"))
    return 0


# -- export --otlp -------------------------------------------------------------------------

def _export_otlp(args: argparse.Namespace) -> int:
    if args.out or args.html:
        msg = "--otlp and -o/--html are alternatives: give one"
        raise UsageError(msg)
    headers = _headers(args.header)
    if args.follow:
        if args.run:
            msg = "--follow sends every run as it finishes: give no RUN"
            raise UsageError(msg)
        return _follow(args, headers)
    if not args.run:
        msg = "give a RUN to export (or --follow to send runs as they finish)"
        raise UsageError(msg)
    from tracer.otel.export import export_otlp, traces_url

    n = export_otlp(args.db, args.run, args.otlp, headers=headers, timeout=args.timeout,
                    service=args.service)
    print(f"sent {plural(n, 'span')} to {traces_url(args.otlp)}")
    return 0


def _headers(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            msg = f"--header {item!r}: expected KEY=VALUE"
            raise UsageError(msg)
        out[key.strip()] = value.strip()
    return out


def _follow(args: argparse.Namespace, headers: dict[str, str]) -> int:
    from tracer.otel.export import traces_url
    from tracer.otel.follow import follow, ledger_path

    url = traces_url(args.otlp)
    print(f"looptrace export: sending each run of {safe(args.db)} to {url} as it finishes "
          f"(sent runs are listed in {ledger_path(args.db)}); Ctrl-C stops", flush=True)
    said: set[str] = set()

    def sent(run: Any, n: int) -> None:
        print(safe_text(f"sent {run.id[:12]} {run.name or ''} ({run.status}, {plural(n, 'span')})"),
              flush=True)

    def failed(run: Any, exc: Exception) -> None:
        if str(exc) not in said:  # once per distinct trouble, not at every poll
            said.add(str(exc))
            print(safe_text(f"looptrace export: {exc} (retrying)"), file=sys.stderr, flush=True)

    stop = threading.Event()
    stop_on_sigterm(stop)
    try:
        total = follow(args.db, url, interval=args.interval, stop=stop, headers=headers,
                       timeout=args.timeout, service=args.service, on_sent=sent, on_error=failed)
    except KeyboardInterrupt:
        return 0
    print(f"sent {plural(total, 'run')}")
    return 0
