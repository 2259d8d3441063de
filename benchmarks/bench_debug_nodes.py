"""Benchmark: the debugger at graph nodes (``node:NAME``).  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_debug_nodes.py [--pauses N] [--runs N]

1. Answer-to-agent latency at a node pause: a plain ``StateGraph`` armed with
   ``node:report`` pauses before its node; this process answers each pause through the
   database as the app, the terminal and MCP do (``tracer.debug.channel.answer``).
   Printed: from the answer committed to the pause closed by the agent's process,
   median and 90th percentile, sync and async.
2. The cost of an armed debugger with only a node breakpoint, on a 10-node graph
   recorded with the callback handler (``TraceCallbackHandler``, as ``looptrace run``
   records it): the same graph unarmed, and armed with ``node:n1 if hits < 0`` (a
   breakpoint at a node of the graph that never stops: the watcher asks it at every
   node). Printed: the median time of one invoke, each way, and the difference.
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
from typing import Any, TypedDict

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]

from debug_kit import Background  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from tracer import TraceCallbackHandler  # noqa: E402
from tracer.debug import Debugger, channel  # noqa: E402
from tracer.debug.nodes import watch  # noqa: E402
from tracer.record import node_hook  # noqa: E402


class S(TypedDict):
    count: int


def chain(n: int) -> Any:
    g = StateGraph(S)
    names = [f"n{i}" for i in range(1, n + 1)]
    for name in names:
        g.add_node(name, lambda s: {"count": s["count"] + 1})
    g.add_edge(START, names[0])
    for a, b in zip(names, names[1:], strict=False):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile()


def _closed(db: Path, pause_id: int) -> float | None:
    with sqlite3.connect(db) as c:
        row = c.execute("SELECT resumed_at FROM debug_pauses WHERE id = ?", [pause_id]).fetchone()
    return row[0] if row and row[0] else None


def latency(mode: str, pauses: int, tmp: Path) -> list[float]:
    db = tmp / f"lat-{mode}.db"
    dbg = Debugger(["node:n2"])
    dbg.bind(db)
    w = watch(dbg)
    graph = chain(3)
    out: list[float] = []
    try:
        for _ in range(pauses):
            h = TraceCallbackHandler(db=db)
            cfg = {"callbacks": [h]}
            if mode == "async":
                async def go(cfg: Any = cfg) -> Any:
                    return await graph.ainvoke({"count": 0}, config=cfg)
                bg = Background(go, is_async=True)
            else:
                bg = Background(lambda cfg=cfg: graph.invoke({"count": 0}, config=cfg))
            while True:
                got = channel.list_paused(db) if db.exists() else []
                if got:
                    break
                time.sleep(0.002)
            with sqlite3.connect(db) as c:
                pid = c.execute("SELECT MAX(id) FROM debug_pauses").fetchone()[0]
            t0 = time.time()
            channel.answer(db, got[0]["run"], "continue")
            while _closed(db, pid) is None:
                time.sleep(0.001)
            out.append((_closed(db, pid) - t0) * 1000)  # type: ignore[operator]
            bg.result()
            h.close()
    finally:
        node_hook.unregister(w)
    return out


def overhead(runs: int, tmp: Path) -> tuple[float, float]:
    graph = chain(10)

    def timed(db: Path) -> float:
        h = TraceCallbackHandler(db=db)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            graph.invoke({"count": 0}, config={"callbacks": [h]})
            times.append((time.perf_counter() - t0) * 1000)
        h.close()
        return statistics.median(times)

    plain = timed(tmp / "plain.db")
    db = tmp / "armed.db"
    dbg = Debugger(["node:n1 if hits < 0"])
    dbg.bind(db)
    w = watch(dbg)
    try:
        armed = timed(db)
    finally:
        node_hook.unregister(w)
    return plain, armed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pauses", type=int, default=30)
    ap.add_argument("--runs", type=int, default=60)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for mode in ("sync", "async"):
            ms = sorted(latency(mode, a.pauses, tmp))
            p90 = ms[int(len(ms) * 0.9) - 1]
            print(f"node pause, answer to agent ({mode}): median {statistics.median(ms):.1f} ms, "
                  f"p90 {p90:.1f} ms over {len(ms)} pauses")
        plain, armed = overhead(a.runs, tmp)
        print(f"10-node graph, one invoke (median of {a.runs}): unarmed {plain:.2f} ms, "
              f"armed with one node breakpoint {armed:.2f} ms (+{armed - plain:.2f} ms, "
              f"{(armed / plain - 1) * 100:+.0f}%)")


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
