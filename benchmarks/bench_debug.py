"""Benchmark: the debugger's pause.  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_debug.py [--pauses N]

A real ``create_agent`` (scripted model) armed with ``step`` pauses at every hook
firing; this process answers each pause through the database as the app, the terminal
and MCP do (``tracer.debug.channel.answer``). Printed: the time from Continue (the
answer committed) to the agent moving on (the pause closed by the agent's process),
median and 90th percentile, sync and async; goal: median under 200 ms. The unarmed
cost is in ``bench_tracer.py`` ("looptrace" is unarmed: one ``is None`` check per
hook; "looptrace debug armed": armed, no breakpoint hit).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]

from debug_kit import Background  # noqa: E402
from tracer_kit import get_weather, make_agent, two_lap_model  # noqa: E402

from tracer import TraceMiddleware  # noqa: E402
from tracer.debug import Debugger, channel  # noqa: E402


def one(mode: str, pauses: int, tmp: Path) -> list[float]:
    out: list[float] = []
    i = 0
    while len(out) < pauses:
        db = tmp / f"{mode}-{i}.db"
        i += 1
        trace = TraceMiddleware(db=db, debug=Debugger(["step"]))
        agent = make_agent(two_lap_model(), [get_weather], [trace])
        q = {"messages": [("user", "Weather in Oslo?")]}
        bg = (Background(lambda a=agent: a.ainvoke(q), is_async=True) if mode == "async"
              else Background(lambda a=agent: a.invoke(q)))
        while bg.alive():
            paused = channel.list_paused(db) if db.exists() else []
            if not paused:
                time.sleep(0.005)
                continue
            channel.answer(db, paused[0]["run"], "step")
        bg.result()
        trace.flush()
        with sqlite3.connect(db) as c:
            out += [(r - a) * 1000 for a, r in c.execute(
                "SELECT commanded_at, resumed_at FROM debug_pauses WHERE resumed_at IS NOT NULL")]
    return out[:pauses]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pauses", type=int, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for mode in ("sync", "async"):
            ms = sorted(one(mode, args.pauses, Path(d)))
            p90 = ms[int(len(ms) * 0.9) - 1]
            print(f"{mode:5}  Continue -> the agent goes on: median {statistics.median(ms):6.1f} ms,"
                  f" p90 {p90:6.1f} ms, max {ms[-1]:6.1f} ms over {len(ms)} pauses "
                  f"(goal: median < 200 ms)")


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
