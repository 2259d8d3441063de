"""Benchmark: does the tracer's memory grow with the runs one process records?  (Not a test.)

    uv run python benchmarks/bench_tracer_memory.py [--runs 10000] [--thread-ids]

One process records ``--runs`` two-lap runs (a real ``create_agent``, a scripted model)
into one file, and prints its resident set size every tenth of the way: after a first
thousand runs (warm: imports, caches, SQLite's page cache) it should stay flat. With
``--thread-ids`` each run has a thread id of its own (what a server does), which the
tracer remembers only while a run of that thread is paused. The same runs without the
tracer are measured first, for the agent's own growth.
"""

from __future__ import annotations

import argparse
import gc
import os
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


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def series(agent: Any, runs: int, thread_ids: bool, trace: Any = None) -> list[float]:
    step = max(1, runs // 10)
    out = []
    t0 = time.perf_counter()
    for i in range(runs):
        config = {"configurable": {"thread_id": f"t{i}"}} if thread_ids else None
        agent.invoke({"messages": [("user", f"question {i}")]}, config=config)
        if (i + 1) % step == 0:
            if trace is not None:
                trace.flush()
            gc.collect()
            out.append(rss_mb())
    print(f"  {runs} runs in {time.perf_counter() - t0:.1f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--thread-ids", action="store_true")
    args = ap.parse_args()
    load = "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    print(f"{args.runs} two-lap runs in one process ({load} at the start)")
    bare = series(create_agent(scripted(1, 1), tools=[get_price]), args.runs, args.thread_ids)
    print("  no tracer, RSS MB:", " ".join(f"{v:.1f}" for v in bare))
    with tempfile.TemporaryDirectory() as d:
        trace = TraceMiddleware(db=Path(d) / "memory.db")
        agent = create_agent(scripted(1, 1), tools=[get_price], middleware=[trace])
        traced = series(agent, args.runs, args.thread_ids, trace)
        print("  looptrace, RSS MB:", " ".join(f"{v:.1f}" for v in traced))
        rec = trace.recorder
        print(f"  the recorder remembers: {len(rec.live)} live runs, {len(rec.by_thread)}"
              f" threads, {len(rec.lc_runs)} callback runs")
        trace.close()
    # growth after the first tenth (warm-up), per 1,000 runs
    per_k = 1000 / (args.runs - args.runs // 10)
    print(f"growth after the first tenth: no tracer {(bare[-1] - bare[0]) * per_k:+.2f} MB, "
          f"looptrace {(traced[-1] - traced[0]) * per_k:+.2f} MB per 1,000 runs "
          f"(load average {os.getloadavg()[0]:.2f} at the end)")


if __name__ == "__main__":
    main()
