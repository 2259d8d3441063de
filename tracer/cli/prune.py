"""``looptrace prune``: delete old runs and shrink the file (``tracer.db.prune.prune``)."""

from __future__ import annotations

import argparse

from tracer.cli import int_range
from tracer.db.prune import parse_age, prune
from tracer.db.url import safe
from tracer.vocab.terminal import safe_text
from tracer.vocab.words import plural

from . import DEFAULT_DB


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "prune", help="delete old runs (with their subagent runs) and shrink the file",
        description="Delete the top-level runs started more than AGE ago, or beyond the "
                    "newest N, each with its subagent runs, in one transaction; then give "
                    "the space back to the file system. Runs still recording stay "
                    "(--include-running deletes them too). On a full disk the delete "
                    "reuses the write-ahead log's room, then the log is cut to nothing.")
    p.add_argument("--db", default=DEFAULT_DB)
    p.add_argument("--older-than", metavar="AGE",
                   help="delete runs started more than AGE ago (30d, 12h, 90m, 2w, 45s)")
    p.add_argument("--keep", type=int_range(0), metavar="N", help="keep only the newest N top-level runs")
    p.add_argument("--include-running", action="store_true",
                   help="delete runs still recording too (status running, or a subagent run "
                        "of them): their end would then be lost (default: they stay)")
    p.add_argument("--dry-run", action="store_true", help="say what would go and the size the file would have after; delete nothing")
    p.add_argument("--no-vacuum", action="store_true",
                   help="do not shrink the file (later runs reuse the space)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    age = parse_age(args.older_than) if args.older_than is not None else None
    result = prune(args.db, older_than=age, keep=args.keep, vacuum=not args.no_vacuum,
                   dry_run=args.dry_run, include_running=args.include_running)
    verb = "would delete" if args.dry_run else "deleted"
    size = f"{_mb(result.bytes_before)} -> {_mb(result.bytes_after)}"
    if args.dry_run:
        size = f"{_mb(result.bytes_before)} now, {_mb(result.bytes_after)} after"
    print(safe_text(f"{verb} {plural(result.runs, 'run')} ({result.top_level} top-level, "
                    f"{plural(result.runs - result.top_level, 'subagent run')}); {safe(args.db)}: "
                    f"{size}"))
    return 0


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"
