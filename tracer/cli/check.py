"""``looptrace check``: check recorded runs (``tracer.checks.run.check_db``).

Exits 1 when any finding is an error, so it can gate a CI job over recorded runs.
"""

from __future__ import annotations

import argparse
import json
import sys

from tracer.checks.reports import write_junit, write_sarif
from tracer.checks.run import PROVIDERS, RULES, check_db, format_text, step_numbers
from tracer.errors import LooptraceError
from tracer.vocab.terminal import safe_text

from . import DEFAULT_DB, add_prices, read_db, use_prices


def _usd(text: str) -> float:
    """An amount of US dollars for ``--max-cost`` ("0.05", "$0.05")."""
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        msg = f"not an amount of dollars: {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not (value >= 0 and value != float("inf")):
        msg = f"{text} is not an amount of dollars >= 0"
        raise argparse.ArgumentTypeError(msg)
    return value


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "check", help="check recorded runs against provider rules and for loops",
        description="Check recorded runs: tool calls without results, results out of place, "
                    "provider rules (OpenAI, Anthropic, Ollama), repeated calls and runaway "
                    "loops. Exits 1 when any error-level finding exists.")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids or prefixes (default: all)")
    p.add_argument("--db", default=DEFAULT_DB, type=read_db)
    p.add_argument("--provider", action="append", choices=PROVIDERS,
                   help="check only this provider's rules (repeatable; default: all three); "
                        "findings that concern every provider are always shown")
    p.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    p.add_argument("--junit", metavar="OUT.xml",
                   help="also write a JUnit XML report: a test case per finding (an error "
                        "fails), one per run without findings")
    p.add_argument("--sarif", metavar="OUT.sarif",
                   help="also write a SARIF 2.1.0 log: a result per finding, located at its "
                        "run and step")
    p.add_argument("--max-cost", type=_usd, metavar="USD",
                   help="also fail (exit 1) when a checked run, with its subagent runs, cost "
                        "more than USD; a cost not known fails too (docs/guide/cost.md)")
    p.add_argument("--max-total-cost", type=_usd, metavar="USD",
                   help="also fail when the checked runs together cost more than USD")
    p.add_argument("--allow-unknown-cost", action="store_true",
                   help="with --max-cost: a run whose model calls are not all priced passes "
                        "(it is still reported)")
    add_prices(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    use_prices(args)
    providers = tuple(args.provider or PROVIDERS)
    results = check_db(args.db, args.runs, providers=providers)  # (InvalidOption: one line)
    findings = [f for fs in results.values() for f in fs]
    steps = step_numbers(args.db, results)  # (where a person reads a finding: its step)
    try:
        if args.junit:
            write_junit(args.junit, results, db=args.db, steps=steps)
        if args.sarif:
            write_sarif(args.sarif, results, db=args.db, rules=RULES, steps=steps)
    except OSError as exc:
        msg = f"cannot write the report: {exc}"
        raise LooptraceError(msg) from None
    if args.json:
        print(json.dumps([{**f.to_dict(), "step": steps.get((f.run_id, f.seq))
                           if f.seq is not None else None} for f in findings],
                         indent=2, ensure_ascii=False))
    else:
        from tracer.read.loader import TraceDB

        with TraceDB(args.db) as db:
            names = {str(i): n for i, n in db.query("SELECT id, name FROM runs")
                     if i in results and isinstance(n, str)}
        sys.stdout.write(safe_text(format_text(results, steps, names), keep_newlines=True))
    over = False
    if args.max_cost is not None or args.max_total_cost is not None:
        from tracer.checks.budget import cost_gate
        from tracer.read.loader import TraceDB

        with TraceDB(args.db) as db:
            verdict = cost_gate(db, list(results), max_cost=args.max_cost,
                                max_total=args.max_total_cost,
                                allow_unknown=args.allow_unknown_cost)
        # (with --json, stdout is the findings' JSON: the verdict goes to stderr)
        out = sys.stderr if args.json else sys.stdout
        out.write(safe_text("\n".join(verdict.lines), keep_newlines=True) + "\n")
        over = verdict.failed
    return 1 if over or any(f.severity == "error" for f in findings) else 0
