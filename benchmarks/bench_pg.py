"""SQLite and PostgreSQL side by side (run on demand, not by pytest; as root, with
Debian's PostgreSQL installed: it starts throwaway clusters with .ci/pg-start).

    .venv/bin/python benchmarks/bench_pg.py [--runs 25] [--scale 10000] [--outage 1000]

Prints, for each engine:

- INGEST: 4 writer processes, each recording ``--runs`` two-lap weather runs (a real
  ``create_agent`` with a scripted model), all at once: runs/s and events/s (wall time
  from the first start to the last flush);
- BYTES/EVENT: the store's size over its events (SQLite: the file and its log;
  PostgreSQL: its tables and indexes);
- HOOK: the cost of tracing per hook, one process: (traced run - untraced run) / hooks;
- RUNS LIST and SEARCH at ``--scale`` top-level runs (made by copying the recorded ones
  in SQL): ``runs --json`` (the command, in process) and the first page of a search for
  a text in one run, p50/p95 of 7;
- DRAIN (PostgreSQL): ``--outage`` runs recorded while the server is stopped, then the
  time from its start to the last of them stored.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _agent(trace: object | None) -> object:
    from tracer_kit import get_weather, make_agent, two_lap_model

    return make_agent(two_lap_model(), [get_weather], [trace] if trace else [])


def _record(db: str, n: int, tag: str, ready: object, out: object) -> None:
    from tracer import TraceMiddleware

    agents = [_agent(None)]  # (LangChain imported before the clock starts)
    del agents
    trace = TraceMiddleware(db=db, run_name=tag)
    ready.wait()  # type: ignore[attr-defined]
    t = time.time()
    for i in range(n):
        _agent(trace).invoke({"messages": [("user", f"Weather in Oslo? {tag}-{i}")]})  # type: ignore[attr-defined]
    trace.flush()
    out.put((t, time.time()))  # type: ignore[attr-defined]


def ingest(db: str, runs: int) -> tuple[float, int]:
    """Wall time from the first process's first run to the last one's flush (each
    process imports LangChain and opens the store before the start)."""
    ctx = mp.get_context("spawn")
    ready, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_record, args=(db, runs, f"w{k}", ready, out))
             for k in range(4)]
    for p in procs:
        p.start()
    spans = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join()
    return (max(e for _, e in spans) - min(s for s, _ in spans),
            sum(p.exitcode == 0 for p in procs))


def q(db: str, sql: str) -> list[tuple[object, ...]]:
    from tracer_kit import rows

    return rows(db, sql)


def size(db: str) -> int:
    if not db.startswith("postgresql"):
        return sum(os.path.getsize(p) for p in (db, f"{db}-wal") if os.path.exists(p))
    from tracer.db.prune import file_bytes
    from tracer.db.schema import connect

    conn = connect(db, readonly=True)
    try:
        return file_bytes(db, conn)
    finally:
        conn.close()


def hook_cost(db: str, n: int = 15) -> float:
    from tracer import TraceMiddleware

    def per_run(trace: object | None) -> float:
        times = []
        for i in range(n):
            agent = _agent(trace)
            t = time.perf_counter()
            agent.invoke({"messages": [("user", f"Weather in Oslo? h{i}")]})  # type: ignore[attr-defined]
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    trace = TraceMiddleware(db=db, run_name="hook")
    per_run(trace)  # (warm)
    traced, bare = per_run(trace), per_run(None)
    trace.flush()
    (rid,) = q(db, "SELECT id FROM runs WHERE name = 'hook' ORDER BY started_at DESC LIMIT 1")[0]
    (events,) = q(db, f"SELECT COUNT(*) FROM events WHERE run_id = '{rid}'")[0]
    return (traced - bare) / int(events) * 1e6  # type: ignore[call-overload]


def grow(db: str, total: int) -> None:
    """Copy the top-level runs (with their messages and counts) until ``total``."""
    from tracer.db.schema import connect

    conn = connect(db)
    have = int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])
    times = max(0, (total - have) // max(have, 1))
    if times:
        k = ("WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ?)")
        with conn:
            conn.execute(f"{k} INSERT INTO runs(id, name, thread_id, status, started_at, ended_at,"
                         " model, input_tokens, output_tokens, total_tokens, source, pid)"
                         " SELECT r.id || '-' || k.n, r.name, r.thread_id, r.status,"
                         " r.started_at - k.n, r.ended_at - k.n, r.model, r.input_tokens,"
                         " r.output_tokens, r.total_tokens, r.source, r.pid FROM runs r, k",
                         [times])
            conn.execute(f"{k} INSERT INTO run_stats(run_id, laps, model_calls, tool_calls,"
                         " errors, events, gen) SELECT s.run_id || '-' || k.n, s.laps,"
                         " s.model_calls, s.tool_calls, s.errors, s.events, 1"
                         " FROM run_stats s, k WHERE s.run_id NOT LIKE '%-%'", [times])
            conn.execute(f"{k} INSERT INTO messages(run_id, position, seq, msg_id, type, text,"
                         " data) SELECT m.run_id || '-' || k.n, m.position, m.seq, m.msg_id,"
                         " m.type, m.text || ' #' || m.run_id || '-' || k.n, m.data"
                         " FROM messages m, k WHERE m.run_id NOT LIKE '%-%'", [times])
    with conn:
        from tracer.db.search import catch_up

        catch_up(conn)
    if db.startswith("postgresql"):
        conn.close()
        import psycopg

        from tracer.db.url import parse

        with psycopg.connect(parse(db), autocommit=True) as raw:
            raw.execute("ANALYZE")
    else:
        conn.close()


def timed(fn: object, reps: int = 7) -> tuple[float, float]:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


def reads(db: str) -> dict[str, tuple[float, float]]:
    from tracer.cli import main
    from tracer.read.loader import TraceDB
    from tracer.read.run_list import RunFilter

    (rid,) = q(db, "SELECT id FROM runs WHERE instr(id, '-') > 0"
                  " ORDER BY LENGTH(id) DESC, id DESC LIMIT 1")[0]

    def runs_json() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["runs", "--db", db, "--json"])

    def search() -> None:
        with TraceDB(db) as t:
            got = t.runs(RunFilter(search=f"#{rid}"), limit=50)
            assert [r.id for r in got] == [rid], got

    return {"runs --json": timed(runs_json), "search (one run)": timed(search)}


def drain(runs: int) -> float | None:
    from pg_kit import OwnCluster, can_run_cluster

    if not can_run_cluster():
        return None
    from tracer import TraceMiddleware

    c = OwnCluster(Path(tempfile.mkdtemp(prefix="looptrace-bench-pg.")))
    os.environ["LOOPTRACE_SPOOL_DIR"] = tempfile.mkdtemp(prefix="looptrace-bench-spool.")
    try:
        url = c.start()
        trace = TraceMiddleware(db=url, run_name="before")
        _agent(trace).invoke({"messages": [("user", "Weather in Oslo?")]})  # type: ignore[attr-defined]
        trace.flush()
        c.stop()
        trace.run_name = "outage"
        for i in range(runs):
            _agent(trace).invoke({"messages": [("user", f"Weather in Oslo? o{i}")]})  # type: ignore[attr-defined]
        trace.flush()
        t = time.perf_counter()
        c.start()
        trace.flush()
        took = time.perf_counter() - t
        (n,) = q(url, "SELECT COUNT(*) FROM runs WHERE name = 'outage'")[0]
        print(f"  drain: {n} of {runs} outage runs stored")
        return took
    finally:
        c.stop()
        shutil.rmtree(c.folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=25, help="runs per writer process")
    ap.add_argument("--scale", type=int, default=10_000)
    ap.add_argument("--outage", type=int, default=1000)
    ap.add_argument("--engines", default="sqlite,postgresql")
    args = ap.parse_args()
    from pg_kit import cluster, fresh_store

    with cluster() as pg, tempfile.TemporaryDirectory() as tmp:
        if pg is None:
            sys.exit("no PostgreSQL here (Debian's postgresql, as root)")
        for engine, db in (("sqlite", str(Path(tmp) / "bench.db")), ("postgresql",
                                                                   fresh_store(pg))):
            if engine not in args.engines.split(","):
                continue
            print(f"== {engine}")
            took, ok = ingest(db, args.runs)
            (runs,) = q(db, "SELECT COUNT(*) FROM runs")[0]
            (events,) = q(db, "SELECT COUNT(*) FROM events")[0]
            print(f"  ingest, 4 processes x {args.runs} runs: {ok}/4 ok, {runs} runs,"
                  f" {events} events in {took:.2f} s: {int(runs) / took:.1f} runs/s,"  # type: ignore[call-overload]
                  f" {int(events) / took:.0f} events/s")  # type: ignore[call-overload]
            print(f"  bytes/event: {size(db) / int(events):.0f}")  # type: ignore[call-overload]
            print(f"  per-hook overhead: {hook_cost(db):.0f} us")
            grow(db, args.scale)
            (runs,) = q(db, "SELECT COUNT(*) FROM runs")[0]
            for what, (p50, p95) in reads(db).items():
                print(f"  {what} at {runs} runs: p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    if args.outage:
        took_drain = drain(args.outage)
        if took_drain is not None:
            print(f"== postgresql outage of {args.outage} runs: drained in {took_drain:.2f} s")


if __name__ == "__main__":
    main()
