"""``looptrace mcp [--db F] [--http] [--port N]``: the MCP server (``tracer.mcp.server``)
for coding agents; stdio by default, streamable HTTP on 127.0.0.1 with ``--http``."""

from __future__ import annotations

import argparse
import sys

from tracer.cli import PORT_MAX, int_range
from tracer.db.url import safe
from tracer.errors import UsageError

from . import DEFAULT_DB, add_prices, read_db, use_prices


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "mcp", help="serve a trace database to coding agents (Model Context Protocol)",
        description=(
            "An MCP server over a looptrace database, for a coding agent (Claude Code, "
            "Cursor ...): list and search runs, a run's summary and findings, a step, the "
            "messages at a step, the wire exchange of a model call, the diff of two runs, an "
            "HTML export; a note on a run or a step (add_note: writes that one row); rerun a "
            "run or fork it at a step with an edit (a new run, through `looptrace rerun`). "
            "Every other tool reads the database read-only. Speaks stdio (what an MCP client "
            "starts) unless --http, then streamable HTTP on 127.0.0.1 at /mcp."))
    p.add_argument("--db", default=DEFAULT_DB, type=read_db, help="trace database")
    p.add_argument("--http", action="store_true",
                   help="serve streamable HTTP on 127.0.0.1 (http://127.0.0.1:PORT/mcp)")
    p.add_argument("--port", type=int_range(0, PORT_MAX), default=8765, help="port for --http (default 8765)")
    p.add_argument("--export-dir", metavar="DIR",
                   help="where export_html writes (default: the temporary directory)")
    p.add_argument("--agent", metavar="MODULE:FACTORY",
                   help="the agent of the runs, the default of rerun and fork_run "
                        "(see looptrace rerun)")
    add_prices(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    use_prices(args)
    from tracer.mcp.server import build_server

    if not 0 < args.port < 65536:
        msg = f"--port {args.port} is not a port number"
        raise UsageError(msg)
    from tracer.db import pool

    pool.enable()  # (a PostgreSQL store: a connection per tool call, from a pool)
    server = build_server(args.db, export_dir=args.export_dir, agent=args.agent)
    if args.http:
        print(f"looptrace mcp: http://127.0.0.1:{args.port}/mcp (database {safe(args.db)})",
              file=sys.stderr, flush=True)
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("stdio")
    return 0
