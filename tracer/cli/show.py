"""``looptrace show RUN [--step N] [--json]``: a run as text (``tracer.interop.show``).

Without ``--step``: the run's summary and its findings, each at its step. With it:
that step's hook and caption and the messages as the model received them there
(long contents cut, unless ``--full``). Imports only the read side.
"""

from __future__ import annotations

import argparse
import json
import sys

from tracer.cli import INT64_MAX, add_prices, int_range, use_prices
from tracer.interop.show import DEFAULT_CUT, overview, render_overview, render_step, step_view
from tracer.read.loader import TraceDB

from . import DEFAULT_DB, read_db


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "show", help="a run as text: summary and findings, or the messages at a step",
        description=(
            "Print a run: its summary and findings with their steps; with --step N, the "
            "hook and caption of step N (counted from 1, as the replay shows them) and the "
            "messages as the model received them there (or the conversation as it stood)."))
    p.add_argument("run", metavar="RUN", help="run id (or a unique prefix)")
    p.add_argument("--db", default=DEFAULT_DB, type=read_db)
    p.add_argument("--step", type=int_range(-INT64_MAX - 1), metavar="N", help="show step N (from 1)")
    p.add_argument("--full", action="store_true",
                   help=f"do not cut long contents (default: cut at {DEFAULT_CUT} characters)")
    p.add_argument("--json", action="store_true", help="print JSON")
    add_prices(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    use_prices(args)
    with TraceDB(args.db) as db:
        if args.step is None:
            d = overview(db, args.run)
            text = render_overview(d)
        else:
            d = step_view(db, args.run, args.step, cut=0 if args.full else DEFAULT_CUT)
            text = render_step(d)
    if args.json:
        print(json.dumps(d, indent=2, ensure_ascii=False, default=str))
    else:
        sys.stdout.write(text)
    return 0
