"""``looptrace prune``: delete old runs and shrink the file (``tracer.db.prune.prune``),
once or every INTERVAL (``tracer.db.retention``)."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from datetime import UTC, datetime

from tracer.cli import int_range
from tracer.db.prune import PruneResult, check_limits, parse_age, prune
from tracer.db.retention import RETAIN_ENV, Retention, from_env, keep_pruning
from tracer.db.url import safe
from tracer.errors import LooptraceError
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
                    "reuses the write-ahead log's room, then the log is cut to nothing. "
                    f"Without --older-than and --keep, the policy {RETAIN_ENV} sets "
                    "(30d, 10000, or 30d,10000). With --every, it runs until stopped and "
                    "prunes again every INTERVAL, one line per round.")
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
    p.add_argument("--every", metavar="INTERVAL",
                   help="prune now, then again every INTERVAL (1h, 30m, 1d) until stopped; "
                        "a round that fails (the store away) is said and the next tries again")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    age = parse_age(args.older_than) if args.older_than is not None else None
    policy = Retention(age, args.keep)
    if age is None and args.keep is None:
        policy = from_env() or policy
    if args.every is not None:
        if args.dry_run or args.include_running:
            msg = "--every prunes for real, running runs kept: not with --dry-run or --include-running"
            raise LooptraceError(msg)
        every = parse_age(args.every)
        if every <= 0:
            msg = f"--every {args.every}: an interval longer than 0"
            raise LooptraceError(msg)
        check_limits(policy.older_than, policy.keep)  # (a store away now: the loop waits)

        def say(got: PruneResult | LooptraceError | sqlite3.Error) -> None:
            now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            text = describe(got, args.db, False) if isinstance(got, PruneResult) else (
                f"prune: {got}; trying again in {args.every}")
            print(safe_text(f"[{now}] {text}"), flush=True)

        try:
            keep_pruning(args.db, policy, every, say=say, vacuum=not args.no_vacuum)
        except KeyboardInterrupt:
            print("prune: stopped", file=sys.stderr)
        return 0
    result = prune(args.db, older_than=policy.older_than, keep=policy.keep,
                   vacuum=not args.no_vacuum, dry_run=args.dry_run,
                   include_running=args.include_running)
    print(safe_text(describe(result, args.db, args.dry_run)))
    return 0


def describe(result: PruneResult, db: str, dry_run: bool) -> str:
    """What a prune deleted (or would delete), the size, and the oldest run kept."""
    verb = "would delete" if dry_run else "deleted"
    size = f"{_mb(result.bytes_before)} -> {_mb(result.bytes_after)}"
    if dry_run:
        size = f"{_mb(result.bytes_before)} now, {_mb(result.bytes_after)} after"
    oldest = ("none left" if result.oldest_kept is None else
              datetime.fromtimestamp(result.oldest_kept, UTC).strftime("%Y-%m-%d %H:%M UTC"))
    return (f"{verb} {plural(result.runs, 'run')} ({result.top_level} top-level, "
            f"{plural(result.runs - result.top_level, 'subagent run')}); oldest kept: "
            f"{oldest}; {safe(db)}: {size}")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"
