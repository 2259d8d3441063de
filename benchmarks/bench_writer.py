"""Benchmark: the writer's cost per row, against SQLite's own.  (Not a pytest test.)

    uv run python benchmarks/bench_writer.py [--runs 300] [--profile]

Records ``--runs`` one-lap runs of a real ``create_agent`` (scripted model) and keeps
the records the tracer puts on its writer's queue instead of writing them; then, on
this thread, times what the writer does with them: building the rows (serialising,
redacting, the deferred bookkeeping) and committing them, with one commit per run
(what a flush after every run costs) and with the runs that end within one linger
committed together (the writer's group commit), beside SQLite's own ``executemany``
of the same rows into the same schema (WAL, ``synchronous=NORMAL``). Microseconds per
row (an event or a message). ``--profile`` prints where the building time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the test kits

from bench_tracer import get_price, scripted
from langchain.agents import create_agent

from tracer import TraceMiddleware
from tracer.schema import connect
from tracer.store import _EVENT_SQL, _MESSAGE_SQL, Writer, _Rows


def records(runs: int, db: Path) -> tuple[Writer, list[list[Any]]]:
    """The records of each of ``runs`` runs, as the agent's thread put them, and the
    writer they were meant for (its deferred operations put the message rows there,
    when the writer builds: each list is built once)."""
    trace = TraceMiddleware(db=db)
    writer = trace.recorder.writer
    got: list[Any] = []
    writer.put = got.append  # type: ignore[method-assign]
    agent = create_agent(scripted(1, 1), tools=[get_price], middleware=[trace])
    per_run = []
    for i in range(runs):
        n = len(got)
        agent.invoke({"messages": [("user", f"question {i}")]})
        per_run.append(got[n:])
    del writer.put  # its own again
    return writer, per_run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        w, per_run = records(args.runs, tmp / "build.db")
        flat = [r for run in per_run for r in run]
        load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
        prof = cProfile.Profile() if args.profile else None
        c0 = time.process_time()
        rows = prof.runcall(w._rows, flat) if prof else w._rows(flat)
        build = time.process_time() - c0
        n = len(rows.events) + len(rows.messages)
        print(f"{args.runs} one-lap runs: {len(flat)} records, {n} rows "
              f"({len(rows.events)} events, {len(rows.messages)} messages); {load}")
        print(f"  build (serialise, redact, bookkeeping)  {build / n * 1e6:6.1f} us/row CPU")
        by_run: dict[str, list[list[Any]]] = {}
        for e in rows.events:
            by_run.setdefault(e[0], [[], []])[0].append(e)
        for m in rows.messages:
            by_run.setdefault(m[0], [[], []])[1].append(m)
        for name, groups in (("a commit per run", list(by_run.values())),
                             ("one commit", [[rows.events, rows.messages]])):
            raw = connect(tmp / f"raw-{len(groups)}.db")
            c0 = time.process_time()
            for ev, ms in groups:
                with raw:
                    raw.executemany(_EVENT_SQL, ev)
                    raw.executemany(_MESSAGE_SQL, ms)
            cpu = time.process_time() - c0
            raw.close()
            print(f"  SQLite's executemany, {name:17} {cpu / n * 1e6:6.1f} us/row CPU")
        for group in (1, 8, 32):
            wg, runs = records(args.runs, tmp / f"group-{group}.db")
            c0 = time.process_time()
            w0 = time.perf_counter()
            for i in range(0, args.runs, group):
                pending = _Rows()
                wg._build([r for run in runs[i:i + group] for r in run], pending)
                wg._commit(pending)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            print(f"  writer, {group:2d} run(s) per commit, build + commit"
                  f" {cpu / n * 1e6:6.1f} us/row CPU, {wall / n * 1e6:6.1f} wall;"
                  f" {cpu / args.runs * 1e3:.2f} ms CPU per run")
        print(f"  (load average {os.getloadavg()[0]:.2f} at the end)")
        if prof is not None:
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
