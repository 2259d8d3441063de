"""``looptrace demo``: record the scripted demo agents, offline, in seconds."""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path

from ..exchange import export_run
from ..schema import connect
from .scenarios import SCENARIOS


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="record the demo agents (scripted models, no API key)")
    p.add_argument("--db", default="looptrace.db", help="database to record into")
    p.add_argument("--only", nargs="+", choices=sorted(SCENARIOS), metavar="NAME",
                   help=f"only these scenarios ({', '.join(SCENARIOS)})")
    p.add_argument("--no-providers", action="store_true",
                   help="skip the provider wire-format demos (OpenAI/Anthropic/Ollama emulator)")
    p.add_argument("--export", metavar="DIR",
                   help="also export each scenario's run to DIR/<scenario>.jsonl")
    p.set_defaults(func=cmd_demo)


def _roots(db: str) -> set[str]:
    conn = connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id IS NULL")}
    except sqlite3.DatabaseError:
        return set()
    finally:
        conn.close()


def record_all(db: str, only: list[str] | None = None,
               providers: bool = True) -> dict[str, list[str]]:
    """Record every scenario into ``db``; return scenario name -> new root run ids."""
    out: dict[str, list[str]] = {}
    for name, scenario in SCENARIOS.items():
        if only and name not in only:
            continue
        before = _roots(db)
        scenario(db)
        out[name] = sorted(_roots(db) - before)
    if providers and not only:
        try:
            from ..wire.demo import record_provider_demos
        except ImportError:
            pass
        else:
            for run_id in record_provider_demos(db):
                name = _run_name(db, run_id)
                out.setdefault(f"provider-{name}", []).append(run_id)
    return out


def _run_name(db: str, run_id: str) -> str:
    conn = connect(db)
    try:
        row = conn.execute("SELECT name FROM runs WHERE id = ?", [run_id]).fetchone()
    finally:
        conn.close()
    return str(row[0]) if row and row[0] else run_id[:8]


def cmd_demo(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    recorded = record_all(args.db, args.only, providers=not args.no_providers)
    for name, ids in recorded.items():
        print(f"{name:28} {', '.join(i[:12] for i in ids)}")
    print(f"recorded {sum(len(v) for v in recorded.values())} runs into {args.db} "
          f"in {time.perf_counter() - t0:.1f} s")
    if args.export:
        out = Path(args.export)
        out.mkdir(parents=True, exist_ok=True)
        for name, ids in recorded.items():
            for i, run_id in enumerate(ids):
                suffix = f"-{i + 1}" if len(ids) > 1 else ""
                export_run(args.db, run_id, out / f"{name}{suffix}.jsonl")
        print(f"exported to {out}")
    return 0
