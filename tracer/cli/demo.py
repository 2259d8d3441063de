"""``looptrace demo``: record the scripted demo agents, offline, in seconds
(``tracer.demo.record.record_all``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

from tracer.db.url import safe
from tracer.vocab.terminal import safe_text
from tracer.vocab.words import plural

from . import DEFAULT_DB


class ScenarioNames:
    """``--only``'s choices: the scenarios' names, read when argparse first asks for them
    (``tracer.demo.scenarios`` imports LangChain: ``looptrace --help``, which registers
    every command, starts without it)."""

    def __iter__(self) -> Iterator[str]:
        from tracer.demo.scenarios import SCENARIOS

        return iter(SCENARIOS)

    def __contains__(self, name: object) -> bool:
        return name in set(self)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="record the demo agents (scripted models, no API key)")
    p.add_argument("--db", default=DEFAULT_DB, help="database to record into")
    p.add_argument("--only", nargs="+", choices=ScenarioNames(), metavar="NAME",
                   help="only these scenarios (%(choices)s)")
    p.add_argument("--no-providers", action="store_true",
                   help="skip the provider wire-format demos (OpenAI/Anthropic/Ollama emulator)")
    p.add_argument("--export", metavar="DIR",
                   help="also export each scenario's run to DIR/<scenario>.jsonl")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracer.demo import record
    from tracer.interop.exchange import export_run

    t0 = time.perf_counter()
    recorded = record.record_all(args.db, args.only, providers=not args.no_providers)
    for name, ids in recorded.items():
        print(safe_text(f"{name:28} {', '.join(i[:12] for i in ids)}"))
    runs = plural(sum(len(v) for v in recorded.values()), "run")
    print(safe_text(f"recorded {runs} into {safe(args.db)} "
                    f"in {time.perf_counter() - t0:.1f} s"))
    if args.export:
        out = Path(args.export)
        out.mkdir(parents=True, exist_ok=True)
        for name, ids in recorded.items():
            for i, run_id in enumerate(ids):
                suffix = f"-{i + 1}" if len(ids) > 1 else ""
                export_run(args.db, run_id, out / f"{name}{suffix}.jsonl")
        print(safe_text(f"exported to {out}"))
    return 0
