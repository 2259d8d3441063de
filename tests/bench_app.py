"""Benchmark of the replay app on a large run (run on demand, not by pytest).

    uv run python tests/bench_app.py [--laps 500] [--width 3] [--db PATH]

Records a real ``create_agent`` run with ``TraceMiddleware`` and a scripted
model: ``laps`` laps of ``width`` parallel tool calls (500 x 3 gives about
5,000 events and 2,000 messages), then drives the app with AppTest and
prints: the time to open the replay (nothing cached: load, replay, findings,
first render) and the server-side time of one step at the start, the middle
and the end of the run. Targets: open < 2 s, step < 150 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def record(db: Path, laps: int, width: int) -> str:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from tracer import TraceMiddleware
    from tracer.demo.models import ScriptedChatModel, call, turn_script

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}: " + "lorem ipsum " * 8

    turns = [AIMessage(content=f"Lap {lap}: looking up {width} keys.", tool_calls=[
        call("lookup", {"key": f"k{lap}-{j}"}, f"call-{lap}-{j}") for j in range(width)])
        for lap in range(laps)]
    turns.append(AIMessage(content="All keys looked up."))
    model = ScriptedChatModel(script=turn_script(turns))
    trace = TraceMiddleware(db=db, run_name=f"bench-{laps}x{width}")
    agent = create_agent(model, tools=[lookup], middleware=[trace],
                         system_prompt="You look things up.")
    agent.invoke({"messages": [("user", "Look up every key.")]},
                 config={"recursion_limit": 10 * laps + 100})
    trace.flush()
    from tracer.loader import TraceDB

    with TraceDB(db) as t:
        return t.runs()[0].id


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--laps", type=int, default=500)
    ap.add_argument("--width", type=int, default=3)
    ap.add_argument("--db", help="reuse (or create) this database")
    ap.add_argument("--steps", type=int, default=10, help="steps timed at each position")
    args = ap.parse_args()

    db = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "bench.db"
    if not db.exists():
        t = time.perf_counter()
        run_id = record(db, args.laps, args.width)
        print(f"recorded {args.laps} laps x {args.width} calls in {time.perf_counter() - t:.1f} s")
    from tracer.loader import TraceDB

    with TraceDB(db) as t:
        s = t.runs()[0]
        run_id = s.id
    print(f"run {run_id}: {s.events} events, laps {s.laps}, "
          f"{s.model_calls} model calls, {s.tool_calls} tool calls")

    import streamlit as st
    from app_kit import app_test

    from app.run_view import SYNC_CHECK_STEPS, build_run_view
    from tracer.replay import build_replay

    t = time.perf_counter()
    with TraceDB(db) as tdb:
        run = tdb.run(run_id)
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    rp = build_replay(run)
    t_replay = time.perf_counter() - t
    t = time.perf_counter()
    build_run_view(rp, with_findings=False)
    t_view = time.perf_counter() - t
    t = time.perf_counter()
    findings = build_run_view(rp, with_findings=False)
    findings.check(background=False)
    t_check = time.perf_counter() - t
    print(f"messages {len(run.messages)}; load {t_load * 1000:.0f} ms, replay "
          f"{t_replay * 1000:.0f} ms, message views {t_view * 1000:.0f} ms; tracer.check "
          f"{t_check * 1000:.0f} ms ({len(findings.findings)} findings; runs on a background "
          f"thread for runs over {SYNC_CHECK_STEPS} steps)")

    os.environ["LOOPTRACE_DB"] = str(db)
    at = app_test("replay", timeout=120, run=run_id, step="1")
    at.run()  # warm the interpreter (every import the replay page makes) ...
    st.cache_data.clear()  # ... but not the caches: the run is loaded afresh below
    st.cache_resource.clear()
    t = time.perf_counter()
    at.run()
    t_open = time.perf_counter() - t
    assert not at.exception, at.exception
    print(f"OPEN replay (cold caches, server side): {t_open * 1000:.0f} ms (target < 2000 ms)")
    from app import data

    view = data.load_view(str(db), run_id)
    while view.findings_pending:  # let the background check finish before timing steps
        time.sleep(0.2)

    n = len(rp)
    results = {}
    for label, start in (("start", 0), ("middle", n // 2), ("end", n - args.steps - 2)):
        at.slider(key="scrub").set_value(start + 1).run()
        times, renders = [], []
        for _ in range(args.steps):
            t = time.perf_counter()
            at.button(key="step_next").click().run()
            times.append(time.perf_counter() - t)
            renders.append(at.session_state["_lt_render_ms"])
            assert not at.exception, at.exception
        results[label] = renders
        print(f"STEP at {label:6s} (step {start + 1}): render median "
              f"{statistics.median(renders):.0f} ms, max {max(renders):.0f} ms (target < 150 ms); "
              f"AppTest round trip median {statistics.median(times) * 1000:.0f} ms")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
