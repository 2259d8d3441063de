"""Benchmark of the replay app's server side on a large run (run on demand, not by pytest).

    .venv/bin/python benchmarks/bench_app.py [--laps 500] [--width 3] [--db PATH] [--steps 10]

Records a real ``create_agent`` run with ``TraceMiddleware`` and a scripted
model: ``laps`` laps of ``width`` parallel tool calls (500 x 3 gives about
5,000 steps and 2,000 messages; about 15 s), or reuses ``--db``. Then prints:

- what loading the run costs in Python: the database load, ``build_replay``,
  the run view (``app.data.run_view.build_run_view``), ``replay_json`` (the run as
  the browser's replayer plays it) with the size of its JSON, and
  ``tracer.checks.run``;
- OPEN: the replay page's first script run in AppTest with cold caches (the
  interpreter warmed by an earlier run, whose background import of the wire
  formats' adapters is waited for): load, replay, JSON, first render, with
  the size of the component's data (the run's JSON included);
- STEP at the start, the middle and the end of the run: the server side of a
  step the browser reported. The browser steps and plays the run by itself
  (``app/panes/replayer_component.py``) and reports the step it settled on (sent
  here as the component's trigger, ``tests/app_kit.report_step``); the replay
  fragment then reruns (URL, inspector, floor plan) and gives the component
  its data again, without the run, which the browser holds. Timed as the
  fragment's render time (``st.session_state["_lt_render_ms"]``) and AppTest's
  round trip, with the size of the component's data. AppTest cannot rerun a
  fragment alone: it reruns the whole page, after which the app gives the run
  again (a full run may mean a new replayer), so these figures include
  serialising the run's JSON, which a browser's step report does not cost.

Targets (the issue's, measured in Chromium by ``benchmarks/bench_playback.py``): the
page opens in under 2 s; a step shows within 50 ms of the key press (in the
browser, with no server round trip: the rerun timed here follows it and should
not hold up the next one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test kits


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
    from tracer.read.loader import TraceDB

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
        record(db, args.laps, args.width)
        print(f"recorded {args.laps} laps x {args.width} calls in {time.perf_counter() - t:.1f} s")
    from tracer.read.loader import TraceDB

    with TraceDB(db) as tdb:
        s = tdb.runs()[0]
        run_id = s.id
    print(f"run {run_id}: {s.events} events, laps {s.laps}, "
          f"{s.model_calls} model calls, {s.tool_calls} tool calls")

    import streamlit as st
    from app_kit import app_test, replayer, report_step

    from app.kit import state
    from app.data.run_view import SYNC_CHECK_STEPS, build_run_view
    from tracer.read.steps import build_replay
    from tracer.replayer import replay_json

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
    rj = replay_json(rp, payloads=False)
    t_json = time.perf_counter() - t
    t = time.perf_counter()
    size = len(json.dumps(rj))
    t_dump = time.perf_counter() - t
    t = time.perf_counter()
    findings = build_run_view(rp, with_findings=False)
    findings.check(background=False)
    t_check = time.perf_counter() - t
    print(f"{len(rp)} steps, {len(run.messages)} messages; load {t_load * 1000:.0f} ms, replay "
          f"{t_replay * 1000:.0f} ms, run view {t_view * 1000:.0f} ms, replay_json "
          f"{t_json * 1000:.0f} ms ({size / 1e6:.2f} MB of JSON, json.dumps {t_dump * 1000:.0f} ms); "
          f"tracer.checks.run {t_check * 1000:.0f} ms ({len(findings.findings)} findings; runs on a "
          f"background thread for runs over {SYNC_CHECK_STEPS} steps)")

    os.environ["LOOPTRACE_DB"] = str(db)
    at = app_test("replay", timeout=120, run=run_id, step="1")
    at.run()  # warm the interpreter (every import the replay page makes) ...
    for thread in threading.enumerate():  # (the wire formats' adapters, imported on a thread)
        if thread.name == "looptrace-wire-warmup":
            thread.join()
    st.cache_data.clear()  # ... but not the caches: the run is loaded afresh below
    st.cache_resource.clear()
    t = time.perf_counter()
    at.run()
    t_open = time.perf_counter() - t
    assert not at.exception, at.exception
    sent = len(json.dumps(replayer(at)))
    print(f"OPEN replay (cold caches, server side): {t_open * 1000:.0f} ms, of which the replay "
          f"fragment {at.session_state[state.RENDER_MS]:.0f} ms (target for the page in the "
          f"browser < 2000 ms); the component's data: {sent / 1e6:.2f} MB of JSON")
    from app.data import loads

    view = loads.load_view(str(db), run_id)
    while view.findings_pending:  # let the background check finish before timing steps
        time.sleep(0.2)

    n = len(rp)
    for label, start in (("start", 0), ("middle", n // 2), ("end", n - args.steps - 2)):
        times, renders, sizes = [], [], []
        for k in range(args.steps):
            # The browser's report of the step it settled on (its trigger, as app_kit
            # sends it): the callback, then the fragment's rerun.
            t = time.perf_counter()
            report_step(at, start + 1 + k)
            times.append(time.perf_counter() - t)
            renders.append(at.session_state[state.RENDER_MS])
            sizes.append(len(json.dumps(replayer(at))))
            assert not at.exception, at.exception
            assert at.session_state[state.STEP] == start + 1 + k, at.session_state[state.STEP]
        print(f"STEP at {label:6s} (step {start + 2}): server-side rerun after a reported step: "
              f"fragment median {statistics.median(renders):.0f} ms, max {max(renders):.0f} ms; "
              f"AppTest round trip median {statistics.median(times) * 1000:.0f} ms; the "
              f"component's data {max(sizes) / 1e3:.1f} kB (AppTest reruns the whole page)")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
