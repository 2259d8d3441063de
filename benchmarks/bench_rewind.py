"""Benchmark: a rewind's answer-to-fork latency.  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_rewind.py [--rewinds N]

A real ``create_agent`` (scripted model, three model calls and two tool calls, built
through ``looptrace debug``'s wrapper of ``create_agent``) pauses at its third model
call (step 16); this process answers ``rewind 9`` (model call 2) with a system prompt
edit through the database, as the terminal, the app and MCP do
(``tracer.debug.channel.rewind``). Printed: the time from the answer committed to the
fork paused at its own third model call (the record read, the agent built again, steps
1 to 8 served from the record, model call 2 and the Paris tool call live), median and
90th percentile, sync and async.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests"),
                str(Path(__file__).resolve().parents[1] / "tests" / "debug")]

from debug_kit import wait_paused
from test_debug_rewind import Counted, K, _agent, _wait_original, _wait_other

from tracer.debug import channel


def one(mode: str, n: int, tmp: Path) -> list[float]:
    out: list[float] = []
    for i in range(n):
        db = tmp / f"{mode}-{i}.db"
        bg, trace = _agent(db, Counted(), ["model:3"], is_async=mode == "async")
        p = wait_paused(db, alive=bg.alive)[0]
        t0 = time.perf_counter()
        channel.rewind(db, p["run"], K, [{"kind": "system", "text": "Be verbose."}],
                       pause=p["pause"])
        fork = _wait_other(db, p["run"], bg.alive)
        out.append(time.perf_counter() - t0)
        channel.answer(db, fork["run"], "run", pause=fork["pause"])
        channel.answer(db, p["run"], "run", pause=_wait_original(db, p["run"])["pause"])
        bg.result()
        trace.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rewinds", type=int, default=10)
    n = ap.parse_args().rewinds
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        for mode in ("sync", "async"):
            got = sorted(one(mode, n, Path(tmp)))
            p90 = got[min(len(got) - 1, int(0.9 * len(got)))]
            print(f"rewind to step {K}, answer -> the fork paused after it, {mode}: "
                  f"median {statistics.median(got) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms "
                  f"over {n} rewinds")


if __name__ == "__main__":
    main()
