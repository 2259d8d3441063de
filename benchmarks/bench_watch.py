"""Benchmark: what the invocation watcher (``tracer.record.watch``) adds.  (Not a pytest test.)

    uv run python benchmarks/bench_watch.py [--runs N]

The same traced ``create_agent`` (``TraceMiddleware``, no ``attach``), 2 laps (one tool
call) and 11 laps (10 of them asking for 3 parallel tool calls), run with the watcher in
the run's callbacks and without it
(its switch turned off), interleaved run by run in a shuffled order; and an untraced
agent with the watcher on and off (what every other run in a process that holds a
tracer pays). Medians of the wall time of ``invoke``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the test kits

from bench_tracer import get_price, scripted, shape
from langchain.agents import create_agent

from tracer import TraceMiddleware
from tracer.record import watch

_ON = watch._Switch.get


def _off(self: object) -> None:
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=60)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    rng = random.Random(28)
    for laps, width in ((1, 1), (10, 3)):
        trace = TraceMiddleware(db=tmp / f"bench-{laps}.db")
        traced = create_agent(scripted(laps, width), tools=[get_price], middleware=[trace])
        plain = create_agent(scripted(laps, width), tools=[get_price])
        times: dict[str, list[float]] = {k: [] for k in (
            "traced, watcher on", "traced, watcher off", "untraced, watcher on",
            "untraced, watcher off")}
        variants = list(times)
        for i in range(args.runs + 5):
            rng.shuffle(variants)
            for name in variants:
                watch._Switch.get = _ON if "on" in name.split(", ")[1] else _off  # type: ignore[method-assign]
                agent = traced if name.startswith("traced") else plain
                t0 = time.perf_counter()
                agent.invoke({"messages": [("user", f"price {i}")]})
                dt = (time.perf_counter() - t0) * 1000
                trace.flush()
                if i >= 5:  # (warm-up)
                    times[name].append(dt)
        watch._Switch.get = _ON  # type: ignore[method-assign]
        print(f"{shape(laps, width)}, {args.runs} runs each, median ms:")
        for name, ts in times.items():
            print(f"  {name:24s} {statistics.median(ts):7.2f}")
        on, off = (statistics.median(times[k]) for k in ("traced, watcher on",
                                                         "traced, watcher off"))
        print(f"  watcher's share of the traced run: {on / off:.3f}x ({on - off:+.2f} ms)")


if __name__ == "__main__":
    main()
