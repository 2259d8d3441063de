"""``looptrace threads [THREAD]``: the conversations of a file (``tracer.read.threads``):
every thread with its totals, or one thread's turns in order.

Imports only the read side: it starts without LangChain.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Sequence

from tracer.cli import add_prices, int_range, use_prices
from tracer.read.loader import TraceDB
from tracer.read.threads import Thread, ThreadSummary, list_threads, load_thread
from tracer.vocab.terminal import safe_text
from tracer.vocab.words import plural

from . import DEFAULT_DB, read_db

DEFAULT_LIMIT = 100


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "threads", help="list conversations (runs by thread_id), or one thread's turns",
        description=(
            "Without THREAD, list the threads of the file (the runs recorded under one "
            "thread_id), the one active last first, with their turns, tokens, cost, "
            "interrupts and resumes. With THREAD, show its turns in order: what each asked "
            "and answered, its interrupts and the decisions that resumed it."))
    p.add_argument("thread", metavar="THREAD", nargs="?", help="a thread id")
    p.add_argument("--db", default=DEFAULT_DB, type=read_db)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--limit", type=int_range(0), default=DEFAULT_LIMIT,
                   help=f"at most this many threads (default {DEFAULT_LIMIT}; 0: all)")
    p.add_argument("--offset", type=int_range(0), default=0, help="skip this many threads first")
    add_prices(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    use_prices(args)
    with TraceDB(args.db) as db:
        if args.thread is not None:
            thread = load_thread(db, args.thread)
            print(json.dumps(thread.to_dict(), indent=2) if args.json else format_thread(thread))
            return 0
        rows = list_threads(db, limit=args.limit or None, offset=args.offset)
    if args.json:
        print(json.dumps([t.to_dict() for t in rows], indent=2))
        return 0
    print(format_threads(rows))
    return 0


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "-"


def _tokens(n: int | None) -> str:
    return "not reported" if n is None else f"{n:,}"


def format_threads(rows: Sequence[ThreadSummary]) -> str:
    """The threads as a table, one line a thread ("no threads" when there are none)."""
    if not rows:
        return "no threads (runs record a thread_id when the agent is given one)"
    header = ("thread", "turns", "first", "last", "statuses", "tokens", "cost",
              "interrupts", "resumes")
    table = [header]
    for t in rows:
        table.append((safe_text(t.thread_id)[:32], str(t.turns), _when(t.first_at),
                      _when(t.last_at), ", ".join(f"{n} {s}" for s, n in t.statuses.items()),
                      _tokens(t.tokens), t.cost.short(), str(t.interrupts), str(t.resumes)))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
                     for row in table)


def format_thread(t: Thread) -> str:
    """One thread's turns as text, then its totals and the questions asked again."""
    lines = [(f"thread {safe_text(t.thread_id)}: {plural(len(t.turns), 'turn')}, tokens "
              f"{_tokens(t.tokens)}, cost {t.cost.text()}, {plural(t.interrupts, 'interrupt')}, "
              f"{plural(t.resumes, 'resume')}")]
    for turn in t.turns:
        r = turn.run
        lines.append("")
        lines.append(f"turn {turn.number}  run {safe_text(r.id[:12])}  {r.status}  "
                     f"{_when(r.started_at)}  tokens {_tokens(turn.tokens)}  "
                     f"cost {turn.cost.short()}")
        for q in turn.asked:
            lines.append(f"  asked:       {safe_text(q)}")
        for i in turn.interrupts:
            for a in i.asks or ("(an interrupt)",):
                lines.append(f"  interrupted: {safe_text(a)}")
        for res in turn.resumes:
            said = ("(no decision recorded)" if res.decisions is None
                    else "; ".join(res.decisions))
            how = " (read from what ran)" if res.inferred else ""
            lines.append(f"  resumed:     {safe_text(said)}{how}")
        if turn.answer is not None:
            lines.append(f"  answered:    {safe_text(turn.answer)}")
    if t.repeats:
        lines.append("")
        lines.append("across turns:")
        lines.extend(f"  {safe_text(r.text_line())}" for r in t.repeats)
    return "\n".join(lines)
