"""Benchmark: a connection to a PostgreSQL store, opened per request (as the app, MCP
and collect do), with and without the pool (``tracer.db.pool``).  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_pool.py --db postgresql://... [--n 200]

Printed: the median and p90 of ``connect(readonly=True)`` + one query + ``close()``, in
ms, each way. The store is a new schema of that database.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]

from pg_kit import fresh_store
from tracer_kit import record_weather_run

from tracer.db import pool
from tracer.db.schema import connect


def measure(db: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        conn = connect(db, readonly=True)
        conn.execute("SELECT COUNT(*) FROM runs").fetchone()
        conn.close()
        out.append((time.perf_counter() - t0) * 1000)
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", required=True, help="a postgresql:// URL")
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    db = fresh_store(args.db)
    record_weather_run(db, "w")
    for label, on in (("no pool", False), ("pooled ", True)):
        pool._enabled = on
        measure(db, 5)  # (warm: the pool made)
        ms = measure(db, args.n)
        print(f"{label}  connect + 1 query + close: median {statistics.median(ms):6.2f} ms,"
              f" p90 {ms[int(len(ms) * 0.9) - 1]:6.2f} ms over {args.n}")
    pool.close_all()


if __name__ == "__main__":
    main()
