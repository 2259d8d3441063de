"""SQLite and PostgreSQL side by side (run on demand, not by pytest; as root, with
Debian's PostgreSQL installed: it starts throwaway clusters with .ci/pg-start).

    .venv/bin/python benchmarks/bench_pg.py [--runs 15] [--scale 10000,100000] [--outage 1000]
        [--engines sqlite,postgresql] [--reads runs,paint,search] [--keep DIR]

Prints, for each engine:

- INGEST: 4 writer processes, each recording ``--runs`` two-lap weather runs (a real
  ``create_agent`` with a scripted model), all at once: runs/s and events/s (wall time
  from the first start to the last flush);
- BYTES/EVENT: the store's size over its events (SQLite: the file and its log;
  PostgreSQL: its tables and indexes);
- HOOK: the cost of tracing per hook, one process: (traced run - untraced run) / hooks;
- RUNS LIST, FIRST PAINT and SEARCH at each ``--scale`` (top-level runs, made by
  copying the recorded runs' rows in SQL, INSERT ... SELECT: their runs, counts and
  messages, not their events; running agents to 100,000 runs would take hours here):
  ``runs --json`` (the command, in process), the Runs page's first script run in
  AppTest (streamlit's caches cleared before each: a cold first paint of the server's
  side; no browser), and the first page of a search for a text in one run, p50/p95 of 7;
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
    """Copy the recorded top-level runs (their run, counts and messages; ids
    ``ID~K``) until there are ``total`` runs."""
    from tracer.db.schema import connect

    orig = "instr(r.id, '~') = 0"
    conn = connect(db)
    (n0,) = conn.execute(f"SELECT COUNT(*) FROM runs r WHERE {orig}").fetchone()
    (have,) = conn.execute("SELECT COUNT(*) FROM runs").fetchone()
    lo, hi = int(have) // int(n0), total // int(n0)  # copies K in [lo, hi)
    if hi > lo:
        k = ("WITH RECURSIVE k(n) AS (SELECT CAST(? AS INTEGER) UNION ALL SELECT n + 1 FROM k"
             " WHERE n < ?)")
        with conn:
            conn.execute(f"{k} INSERT INTO runs(id, name, thread_id, status, started_at, ended_at,"
                         " model, input_tokens, output_tokens, total_tokens, source, pid)"
                         " SELECT r.id || '~' || k.n, r.name, r.thread_id, r.status,"
                         " r.started_at - k.n, r.ended_at - k.n, r.model, r.input_tokens,"
                         f" r.output_tokens, r.total_tokens, r.source, r.pid FROM runs r, k"
                         f" WHERE {orig}", [lo, hi - 1])
            conn.execute(f"{k} INSERT INTO run_stats(run_id, laps, model_calls, tool_calls,"
                         " errors, events, gen) SELECT s.run_id || '~' || k.n, s.laps,"
                         " s.model_calls, s.tool_calls, s.errors, s.events, 1"
                         " FROM run_stats s, k WHERE instr(s.run_id, '~') = 0", [lo, hi - 1])
            conn.execute(f"{k} INSERT INTO messages(run_id, position, seq, msg_id, type, text,"
                         " data) SELECT m.run_id || '~' || k.n, m.position, m.seq, m.msg_id,"
                         " m.type, m.text || ' #' || m.run_id || '~' || k.n, m.data"
                         " FROM messages m, k WHERE instr(m.run_id, '~') = 0", [lo, hi - 1])
    with conn:
        from tracer.db.search import catch_up

        catch_up(conn)
    conn.close()
    if db.startswith("postgresql"):
        import psycopg

        from tracer.db.url import parse

        with psycopg.connect(parse(db), autocommit=True) as raw:
            raw.execute("VACUUM ANALYZE")


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def timed(fn: object, reps: int = 7) -> tuple[float, float]:
    """p50 and p95 of ``reps`` calls, after one not counted (the imports it makes)."""
    fn()  # type: ignore[operator]
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))]


READS = ("runs", "paint", "search")


def reads(db: str, which: tuple[str, ...] = READS) -> dict[str, tuple[float, float]]:
    from tracer.cli import main
    from tracer.read.loader import TraceDB
    from tracer.read.run_list import RunFilter

    (rid,) = q(db, "SELECT id FROM runs WHERE instr(id, '~') > 0"
                  " ORDER BY started_at LIMIT 1")[0]

    def runs_json() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            main(["runs", "--db", db, "--json"])

    def search() -> None:
        with TraceDB(db) as t:
            got = t.runs(RunFilter(search=f"#{rid}"), limit=50)
            assert [r.id for r in got] == [rid], got

    out = {}
    if "runs" in which:
        out["runs --json"] = timed(runs_json)
    if "paint" in which:
        out["Runs page first paint (AppTest)"] = timed(lambda: first_paint(db))
    if "search" in which:
        out["search (one run)"] = timed(search)
    return out


def first_paint(db: str) -> None:
    """The Runs page's first script run, as a new session, its caches cleared."""
    import streamlit as st
    from app_kit import app_test, runs_table

    os.environ["LOOPTRACE_DB"] = db
    st.cache_data.clear()
    st.cache_resource.clear()
    main = sys.modules["__main__"]
    try:
        at = app_test("runs", timeout=120).run()
    finally:  # (AppTest replaces __main__: the writer processes spawned later need it)
        sys.modules["__main__"] = main
    assert not at.exception and len(runs_table(at)) > 0, [e.value for e in at.exception]


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
        spool = trace.recorder.writer._spool  # type: ignore[attr-defined]
        kept = sum(p.stat().st_size for p in spool.held())
        print(f"  spool: {len(spool.held())} batches, {kept / 1e6:.1f} MB for {runs} runs")
        t = time.perf_counter()
        c.start()
        n = 0
        while time.perf_counter() - t < 900:
            trace.flush()  # (the writer also sends on its own, every few seconds)
            (n,) = q(url, "SELECT COUNT(*) FROM runs WHERE name = 'outage'")[0]
            if int(n) >= runs and not spool.held():  # type: ignore[call-overload]
                break
        took = time.perf_counter() - t
        print(f"  drain: {n} of {runs} outage runs stored")
        return took
    finally:
        c.stop()
        shutil.rmtree(c.folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15, help="runs per writer process")
    ap.add_argument("--scale", default="10000,100000", help="run counts to read at")
    ap.add_argument("--outage", type=int, default=1000)
    ap.add_argument("--engines", default="sqlite,postgresql")
    ap.add_argument("--reads", default=",".join(READS),
                    help=f"which reads to time at each scale, of {','.join(READS)}")
    ap.add_argument("--keep", metavar="DIR", help="keep the SQLite file here (and print the"
                    " PostgreSQL URL) instead of deleting them")
    args = ap.parse_args()
    scales = [int(x) for x in args.scale.split(",") if x]
    from pg_kit import cluster, fresh_store

    with cluster() as pg, tempfile.TemporaryDirectory() as tmp:
        if pg is None:
            sys.exit("no PostgreSQL here (Debian's postgresql, as root)")
        where = Path(args.keep or tmp)
        for engine, db in (("sqlite", str(where / "bench.db")), ("postgresql",
                                                                   fresh_store(pg))):
            if engine not in args.engines.split(","):
                continue
            print(f"== {engine} ({load()})", flush=True)
            took, ok = ingest(db, args.runs)
            (runs,) = q(db, "SELECT COUNT(*) FROM runs")[0]
            (events,) = q(db, "SELECT COUNT(*) FROM events")[0]
            print(f"  ingest, 4 processes x {args.runs} runs: {ok}/4 ok, {runs} runs,"
                  f" {events} events in {took:.2f} s: {int(runs) / took:.1f} runs/s,"  # type: ignore[call-overload]
                  f" {int(events) / took:.0f} events/s ({load()})", flush=True)  # type: ignore[call-overload]
            print(f"  bytes/event: {size(db) / int(events):.0f}", flush=True)  # type: ignore[call-overload]
            print(f"  per-hook overhead (traced - untraced run, over its events): "
                  f"{hook_cost(db):.0f} us ({load()})", flush=True)
            for scale in scales:
                t = time.perf_counter()
                grow(db, scale)
                (runs,) = q(db, "SELECT COUNT(*) FROM runs")[0]
                print(f"  grown to {runs} runs in {time.perf_counter() - t:.0f} s", flush=True)
                for what, (p50, p95) in reads(db, tuple(args.reads.split(","))).items():
                    print(f"  {what} at {runs} runs: p50 {p50:.0f} ms, p95 {p95:.0f} ms"
                          f" ({load()})", flush=True)
            if args.keep:
                print(f"  kept: {db}")
    if args.outage:
        took_drain = drain(args.outage)
        if took_drain is not None:
            print(f"== postgresql outage of {args.outage} runs: drained in {took_drain:.2f} s"
                  f" ({load()})")


if __name__ == "__main__":
    main()
