"""``looptrace runs``: the runs list, filtered and paged (``TraceDB.runs``, ``RunFilter``).

Imports only the read side: it starts without LangChain.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections.abc import Sequence

from tracer.cli import add_prices, int_range, use_prices
from tracer.db.tables import RUN_STATUSES
from tracer.debug.channel import paused_status
from tracer.errors import LooptraceError
from tracer.read.cost import RunCost, run_costs
from tracer.read.loader import RunSummary, TraceDB
from tracer.read.run_list import HEALTH_CLASSES, RunFilter, parse_when
from tracer.vocab.terminal import safe_text

from . import DEFAULT_DB, read_db

DEFAULT_LIMIT = 100


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("runs", help="list recorded runs (newest first, 100 at a time)")
    p.add_argument("--db", default=DEFAULT_DB, type=read_db)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--search", help="only runs whose messages or notes contain this text")
    p.add_argument("--status", action="append", choices=RUN_STATUSES,
                   help="only runs with this status (repeatable)")
    p.add_argument("--name", help="only runs whose name or agent name contains this text")
    p.add_argument("--since", metavar="WHEN",
                   help="only runs started since WHEN: a date (2026-01-31), a time "
                        "(2026-01-31T12:00) or an age (7d, 12h)")
    p.add_argument("--until", metavar="WHEN", help="only runs started before WHEN")
    p.add_argument("--health", action="append", choices=HEALTH_CLASSES,
                   help="only runs whose stored check (looptrace check) says this (repeatable)")
    p.add_argument("--tag", action="append", metavar="TAG",
                   help="only runs with a note tagged TAG (repeatable: any of them)")
    p.add_argument("--parent", metavar="RUN", help="only the subagent runs of RUN")
    p.add_argument("--thread", metavar="THREAD",
                   help="only the runs recorded under this thread_id (a conversation's "
                        "turns; looptrace threads lists them)")
    p.add_argument("--top-level", action="store_true", help="only runs that are no subagent run")
    p.add_argument("--limit", type=int_range(0), default=DEFAULT_LIMIT,
                   help=f"at most this many runs (default {DEFAULT_LIMIT}; 0: all)")
    p.add_argument("--offset", type=int_range(0), default=0, help="skip this many runs first")
    add_prices(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    use_prices(args)
    with TraceDB(args.db) as db:
        f = RunFilter(
            status=tuple(args.status or ()), name=args.name, health=tuple(args.health or ()),
            since=parse_when(args.since) if args.since else None,
            until=parse_when(args.until) if args.until else None,
            parent_id=db.resolve(args.parent) if args.parent else None,
            top_level=args.top_level, search=args.search or None, thread=args.thread,
            tags=tuple(dict.fromkeys(t.strip().lower() for t in args.tag or ())))
        limit = args.limit if args.limit > 0 else None
        runs = db.runs(f, limit=limit, offset=args.offset)
        if limit is not None and len(runs) == limit:
            total = db.count_runs(f)
            if total > args.offset + limit:
                print(f"(runs {args.offset + 1}-{args.offset + limit} of {total}: --offset "
                      f"{args.offset + limit} for the next ones, --limit 0 for all)",
                      file=sys.stderr)
        try:
            costs = run_costs(db, [r.id for r in runs])
        except (LooptraceError, sqlite3.DatabaseError) as exc:  # (a damaged events page:
            # the runs list still reads; their costs are unknown, and said so once)
            print(f"looptrace runs: costs not shown ({exc})".splitlines()[0], file=sys.stderr)
            costs = {}
        # (the models that answered each run's calls, in order: a fallback's too; a
        # damaged events page leaves them out, as the costs)
        try:
            models = db.models([r.id for r in runs]) if args.json else {}
        except (LooptraceError, sqlite3.DatabaseError):
            models = {}
        paused = _paused(args.db)
    if args.json:
        # paused: "paused" or "paused at an error" for a run paused in the debugger now
        # (its status stays the one recorded), else null
        # cost_usd: the run's model calls and its subagent runs', null unless every one
        # of them is priced ("cost" says how many are, and the run's own part)
        rows = [{**{f: getattr(r, f) for f in r.__dataclass_fields__}, "duration_s": r.duration_s,
                 "models": models.get(r.id, []), "paused": paused.get(r.id),
                 "cost_usd": costs[r.id].total.usd if r.id in costs else None,
                 "cost": costs[r.id].to_dict() if r.id in costs else None}
                for r in runs]
        print(json.dumps(rows, indent=2))
        return 0
    print(format_table(runs, costs, paused))
    return 0


def _paused(db: str) -> dict[str, str]:
    """The runs paused in the debugger now (``tracer.debug.channel.paused_status``);
    none for a file whose channel cannot be read."""
    try:
        return paused_status(db)
    except (LooptraceError, sqlite3.Error, OSError):
        return {}


def format_table(runs: Sequence[RunSummary], costs: dict[str, RunCost] | None = None,
                 paused: dict[str, str] | None = None) -> str:
    """The runs as a table, one line a run ("no runs" when there are none); ``costs``:
    each run's, with its subagent runs (``tracer.read.cost.run_costs``); ``paused``: the
    runs paused in the debugger, whose status reads "paused" (or "paused at an error")."""
    if not runs:
        return "no runs"
    costs = costs or {}
    paused = paused or {}
    header = ("id", "name", "status", "laps", "model", "tools", "errors", "tokens", "cost",
              "parent")
    table = [header]
    for r in runs:
        c = costs.get(r.id)
        table.append((safe_text(r.id[:12]), safe_text(r.name or "")[:28], paused.get(r.id, r.status), str(r.laps), str(r.model_calls),
                      str(r.tool_calls), str(r.errors), r.tokens_text,
                      c.total.short() if c else "-",
                      safe_text((r.parent_id or "")[:12])))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                     for row in table)
