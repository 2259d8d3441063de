"""``looptrace diff``: compare two runs and show the first divergence (``tracer.read.diff``)."""

from __future__ import annotations

import argparse
import json
import sys

from tracer.errors import LooptraceError
from tracer.read.diff import diff_tree, format_text
from tracer.read.loader import TraceDB
from tracer.vocab.terminal import safe_text

from . import DEFAULT_DB, read_db

HELP = """Compare two runs lap by lap and hook by hook and print the first divergence
(different tool, arguments, answer, tool result, extra lap, hook sequence, status),
every difference per lap and a unified diff of the messages. Differences in the
setup (model, system prompt, tools offered) are listed once, apart from the
divergence. Subagent runs are compared too, the n-th of A with the n-th of B.
Ids, timestamps, durations and token counts are ignored. Steps are counted
from 1, as the replay shows them ("Step N / M"), in the text and in --json.

Exit status (like diff(1)): 0 the runs behave the same (identical, or set up
differently only: another model, system prompt or tools offered, as the same
conversation through two providers), 1 they behave differently, 2 trouble (no
such database or run). The first verdict line says which."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("diff", help="compare two runs and show the first divergence",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_a", metavar="RUN_A", help="run id (or a unique prefix)")
    p.add_argument("run_b", metavar="RUN_B", help="run id (or a unique prefix)")
    p.add_argument("--db", default=DEFAULT_DB, type=read_db, help="database holding RUN_A (and RUN_B)")
    p.add_argument("--db-b", help="database holding RUN_B (default: --db)")
    p.add_argument("--json", action="store_true", help="print the diff as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        with TraceDB(args.db) as da:
            if args.db_b is None or args.db_b == args.db:
                d = diff_tree(da, da.resolve(args.run_a), da, da.resolve(args.run_b))
            else:
                with TraceDB(args.db_b) as dbb:
                    d = diff_tree(da, da.resolve(args.run_a), dbb, dbb.resolve(args.run_b))
    except LooptraceError as exc:  # (exit 2, as diff(1) does for trouble)
        print(f"looptrace diff: {safe_text(exc)}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(d.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(safe_text(format_text(d), keep_newlines=True))
    return 0 if d.same_behaviour else 1
