"""Benchmark: stepping into a Deep Agents subagent.  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_debug_step_into.py [--rounds N]

A real Deep Agents coordinator (scripted model, ``tests/subagent_kit.py``), its tracer
attached, pauses at its ``task`` call (``tool:task``); this process answers ``step``
through the database, as the app, the terminal and MCP do, and the run pauses again at
the first hook of the ``researcher`` subagent, in the subagent's run. Printed, median
and 90th percentile over N rounds, sync and async: from the answer committed to the
agent moving on (the task call's pause closed), and from the answer committed to the
agent paused in the subagent (its pause opened: the subagent's graph started, its
first node reached). Then ``out`` is answered there and the same two figures are
printed for stepping out (to the pause after the task call in the parent).
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
from typing import Any

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]

from subagent_kit import Deep

from tracer.debug import channel


def _wait(db: Path, seen: set[int]) -> dict[str, Any]:
    while True:
        got = [p for p in channel.list_paused(db) if p["pause"] not in seen]
        if got:
            seen.add(int(got[0]["pause"]))
            return got[0]
        time.sleep(0.002)


def one(mode: str, tmp: Path) -> tuple[float, float, float, float]:
    """(into: answer -> moving on, answer -> paused in the subagent; out: the same)."""
    d = Deep(tmp, mode=mode)
    seen: set[int] = set()
    top = _wait(d.db, seen)
    channel.answer(d.db, str(top["run"]), "step", pause=int(top["pause"]))
    into = _wait(d.db, seen)
    channel.answer(d.db, str(into["run"]), "out", pause=int(into["pause"]))
    back = _wait(d.db, seen)
    channel.answer(d.db, str(back["run"]), "run", pause=int(back["pause"]))
    d.finish()
    with sqlite3.connect(d.db) as c:
        rows = {int(r[0]): r[1:] for r in c.execute(
            "SELECT id, paused_at, commanded_at, resumed_at FROM debug_pauses")}
    t, i, b = (rows[int(p["pause"])] for p in (top, into, back))
    return ((t[2] - t[1]) * 1000, (i[0] - t[1]) * 1000, (i[2] - i[1]) * 1000,
            (b[0] - i[1]) * 1000)


def _line(label: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p90 = ms[max(0, int(len(ms) * 0.9) - 1)]
    return (f"{label}: median {statistics.median(ms):7.1f} ms, p90 {p90:7.1f} ms, "
            f"max {ms[-1]:7.1f} ms over {len(ms)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("sync", "async"):
            got = []
            for k in range(args.rounds):
                where = Path(tmp) / f"{mode}-{k}"
                where.mkdir()
                got.append(one(mode, where))
            cols = list(zip(*got, strict=True))
            print(_line(f"{mode:5} step into: answer -> the agent goes on      ", list(cols[0])))
            print(_line(f"{mode:5} step into: answer -> paused in the subagent ", list(cols[1])))
            print(_line(f"{mode:5} step out:  answer -> the agent goes on      ", list(cols[2])))
            print(_line(f"{mode:5} step out:  answer -> paused after the call  ", list(cols[3])))


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
