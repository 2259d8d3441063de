"""CLI commands over the store: ``export``, ``import``, ``ui``.

``export --otlp`` and the OTLP JSON side of ``import`` are in ``tracer.otel``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from .cli import DEFAULT_DB
from .errors import LooptraceError
from .exchange import export_run, import_many
from .loader import TraceDB
from .otel.cli import add_export_options


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    # (``runs`` is in tracer.runs_cli: it starts without importing the write side)
    p = sub.add_parser("export", help="export a run (and its subagent runs)")
    p.add_argument("run", nargs="?", help="run id (or a unique prefix)")
    p.add_argument("--db", default=DEFAULT_DB)
    p.add_argument("-o", "--out", help="output .jsonl file (default: <run>.jsonl)")
    p.add_argument("--html", metavar="OUT.html", help="write a self-contained HTML replay")
    add_export_options(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", help="import trace files into a database")
    p.add_argument("files", nargs="+",
                   help="looptrace trace files (.jsonl), or OTLP JSON files of OpenTelemetry spans")
    p.add_argument("--db", default=DEFAULT_DB)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("ui", help="open the replay app")
    p.add_argument("--db", help="database to open (default: the bundled sample traces)")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1")
    p.set_defaults(func=cmd_ui)


def cmd_export(args: argparse.Namespace) -> int:
    if args.otlp or args.follow:
        if not args.otlp:
            msg = "--follow needs --otlp URL"
            raise LooptraceError(msg)
        from .otel.cli import cmd_export_otlp

        return cmd_export_otlp(args)
    if not args.run:
        msg = "give a RUN to export"
        raise LooptraceError(msg)
    if args.html:
        from .html_export import export_html

        out = export_html(args.db, args.run, args.html)
        print(out)
        return 0
    out = args.out or f"{args.run}.jsonl"
    print(export_run(args.db, args.run, out))
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from .otel.otlp import is_otlp_json

    ids: list[str] = []
    for path in args.files:
        if not is_otlp_json(path):
            ids.extend(import_many([path], args.db))
            continue
        from .otel.imports import import_otlp_file

        result = import_otlp_file(path, args.db)
        ids.extend(result.run_ids)
        if result.skipped:
            print(f"{path}: {result.skipped} spans skipped (not GenAI spans)", file=sys.stderr)
        for w in result.warnings:
            print(f"{path}: warning: {w}", file=sys.stderr)
    print(f"imported {len(ids)} runs into {args.db}")
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    app = Path(__file__).resolve().parent.parent / "app" / "main.py"
    if not app.exists():
        print("looptrace ui: the app is not built yet", file=sys.stderr)
        return 2
    env = dict(os.environ)
    if args.db:
        TraceDB(args.db).close()  # fail here, clearly, for a bad file
        env["LOOPTRACE_DB"] = str(Path(args.db).resolve())
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", args.host,
           "--server.port", str(args.port), "--browser.gatherUsageStats", "false"]
    return subprocess.call(cmd, env=env)
