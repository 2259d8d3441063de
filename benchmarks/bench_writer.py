"""Benchmark: the writer's cost per row, against SQLite's own.  (Not a pytest test.)

    uv run python benchmarks/bench_writer.py [--runs 300] [--profile] [--split] [--pages]

Records ``--runs`` two-lap runs of a real ``create_agent`` (scripted model) and keeps
the records the tracer puts on its writer's queue instead of writing them; then, on
this thread, times what the writer does with them: building the rows (serialising,
redacting, the deferred bookkeeping) and committing them, with one commit per run
(what a flush after every run costs) and with the runs that end within one linger
committed together (the writer's group commit), beside SQLite's own ``executemany``
of the same rows into the same schema (WAL, ``synchronous=NORMAL``). Microseconds per
row (an event or a message). ``--profile`` prints where the building time goes.

``--split`` instead runs the floor (six no-op hooks) and looptrace one after the other,
``--runs`` times, each looptrace run flushed (as ``bench_tracer.py`` interleaves them),
and splits looptrace's CPU per run: the process's, the agent's thread (the tool call
runs on a pool thread, not counted there), the writer thread's, and within the writer
what building the rows and committing them (SQLite) take. Medians except where said.
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

from bench_tracer import DoNothing, get_price, scripted
from langchain.agents import create_agent

from tracer import TraceMiddleware
from tracer.db.schema import connect
from tracer.db.writer import _EVENT_SQL, _MESSAGE_SQL, Rows, Writer
from tracer.record.watch import _LIVE as _WATCHED


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


def split(runs: int, tmp: Path) -> None:
    """Where looptrace's CPU goes in a 2-lap run (see the module docstring)."""
    import statistics

    spent = {"build": 0.0, "commit": 0.0}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                spent[name] += time.thread_time() - t
        return wrapper

    Writer._build = timed("build", Writer._build)  # type: ignore[method-assign]
    Writer._commit = timed("commit", Writer._commit)  # type: ignore[method-assign]
    trace = TraceMiddleware(db=tmp / "split.db")
    floor = create_agent(scripted(1, 1), tools=[get_price], middleware=[DoNothing()])
    agent = create_agent(scripted(1, 1), tools=[get_price], middleware=[trace])
    for i in range(20):
        floor.invoke({"messages": [("user", f"warm-up {i}")]})
        agent.invoke({"messages": [("user", f"warm-up {i}")]})
        trace.flush()
    thread = trace.recorder.writer._thread
    assert thread is not None and thread.ident is not None
    clock = time.pthread_getcpuclockid(thread.ident)
    spent.update(build=0.0, commit=0.0)
    got: dict[str, list[float]] = {k: [] for k in ("fp", "ft", "lp", "lt", "w")}
    for i in range(runs):
        live = set(_WATCHED)  # (the floor without looptrace's watcher: bench_tracer.py)
        _WATCHED.clear()
        p0, t0 = time.process_time(), time.thread_time()
        floor.invoke({"messages": [("user", f"question {i}")]})
        got["ft"].append(time.thread_time() - t0)
        got["fp"].append(time.process_time() - p0)
        _WATCHED.update(live)
        w0 = time.clock_gettime(clock)
        p0, t0 = time.process_time(), time.thread_time()
        agent.invoke({"messages": [("user", f"question {i}")]})
        got["lt"].append(time.thread_time() - t0)
        trace.flush()
        got["lp"].append(time.process_time() - p0)
        got["w"].append(time.clock_gettime(clock) - w0)
    trace.close()
    med = {k: statistics.median(v) * 1e3 for k, v in got.items()}
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    print(f"{runs} two-lap runs, floor and looptrace in turn, each flushed; {load}")
    print(f"  process CPU        floor {med['fp']:.3f} ms, looptrace {med['lp']:.3f} ms"
          f" ({med['lp'] / med['fp']:.2f}x, +{med['lp'] - med['fp']:.3f} ms)")
    print(f"  agent's thread     floor {med['ft']:.3f} ms, looptrace {med['lt']:.3f} ms"
          f" (+{med['lt'] - med['ft']:.3f} ms)")
    print(f"  writer's thread    {med['w']:.3f} ms; of it (means) building the rows"
          f" {spent['build'] / runs * 1e3:.3f} ms, committing {spent['commit'] / runs * 1e3:.3f} ms")


def pages(runs: int, tmp: Path) -> None:
    """The pages of the write-ahead log each 2-lap run's commit writes, by table: read
    from the log's frame headers (automatic checkpoints off), each page named by
    SQLite's ``dbstat``. A page written by several commits counts once per commit."""
    import collections
    import sqlite3
    import struct

    import tracer.db.writer as store

    def no_checkpoints(path: Any, **kw: Any) -> Any:
        conn = connect(path, **kw)
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        return conn

    store.connect = no_checkpoints  # type: ignore[assignment]
    db = tmp / "pages.db"
    trace = TraceMiddleware(db=db)
    agent = create_agent(scripted(1, 1), tools=[get_price], middleware=[trace])
    for i in range(30):
        agent.invoke({"messages": [("user", f"warm-up {i}")]})
        trace.flush()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for i in range(runs):
        agent.invoke({"messages": [("user", f"question {i}")]})
        trace.flush()
    wal = Path(f"{db}-wal").read_bytes()
    size = struct.unpack(">I", wal[8:12])[0]
    frames = [struct.unpack(">I", wal[o:o + 4])[0]
              for o in range(32, len(wal) - 24 - size + 1, 24 + size)]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    owner = dict(conn.execute("SELECT pageno, name FROM dbstat"))
    conn.close()
    trace.close()
    count = collections.Counter(owner.get(p, "(new, or free)") for p in frames)
    print(f"{runs} two-lap runs, each flushed: {len(frames) / runs:.1f} pages of the"
          " write-ahead log a run (sqlite_schema: page 1, the file's header)")
    for name, n in count.most_common():
        print(f"  {n / runs:5.2f}  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--split", action="store_true",
                    help="split looptrace's CPU per run: agent thread, writer (build, commit)")
    ap.add_argument("--pages", action="store_true",
                    help="the pages of the write-ahead log a 2-lap run's commit writes, by table")
    args = ap.parse_args()
    if args.pages:
        with tempfile.TemporaryDirectory() as d:
            pages(min(args.runs, 100), Path(d))
        return
    if args.split:
        with tempfile.TemporaryDirectory() as d:
            split(args.runs, Path(d))
        return
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
        print(f"{args.runs} two-lap runs: {len(flat)} records, {n} rows "
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
                pending = Rows()
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
