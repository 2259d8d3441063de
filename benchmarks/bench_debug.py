"""Benchmark: the debugger's pause.  (Not a pytest test.)

    uv run --frozen python benchmarks/bench_debug.py [--pauses N] [--db postgresql://...]
        [--prompt]

A real ``create_agent`` (scripted model) armed with ``step`` pauses at every hook
firing; this process answers each pause through the database as the app, the terminal
and MCP do (``tracer.debug.channel.answer``). Printed: the time from Continue (the
answer committed) to the agent moving on (the pause closed by the agent's process),
median and 90th percentile, sync and async, and for 1, 3 and 20 parallel tool calls
of an async agent paused at once, each answered by its pause id; goal: median under
200 ms. ``--db URL``: each agent records into a new store (a schema of its own) of
that PostgreSQL database, where the answer's NOTIFY wakes the paused agent
(``tracer.debug.wake``); without it, a new SQLite file each. The unarmed
cost is in ``bench_tracer.py`` ("looptrace" is unarmed: one ``is None`` check per
hook; "looptrace debug armed": armed, no breakpoint hit). ``--prompt``: instead, the
time from a pause opened to the ``looptrace debug`` prompt showing it (the prompt
waiting in this process, answering ``c``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]

from debug_kit import Background  # noqa: E402
from tracer_kit import get_weather, make_agent, two_lap_model  # noqa: E402

from tracer import TraceMiddleware  # noqa: E402
from tracer.db.schema import connect  # noqa: E402
from tracer.debug import Debugger, channel  # noqa: E402

PG: str | None = None  # --db: a PostgreSQL database


def store(tmp: Path, name: str) -> str:
    """A new store: a SQLite file in ``tmp``, or a schema of its own in ``PG``."""
    if PG is None:
        return str(tmp / f"{name}.db")
    from pg_kit import fresh_store

    return fresh_store(PG)


def paused(db: str) -> list[dict[str, object]]:
    try:
        return channel.list_paused(db)
    except Exception:  # noqa: BLE001 - not created yet
        return []


def latencies(db: str) -> list[float]:
    """Continue (committed) -> the pause closed by the agent's process, in ms."""
    conn = connect(db, readonly=True)
    try:
        return [(r - a) * 1000 for a, r in conn.execute(
            "SELECT commanded_at, resumed_at FROM debug_pauses WHERE resumed_at IS NOT NULL")]
    finally:
        conn.close()


def one(mode: str, pauses: int, tmp: Path) -> list[float]:
    out: list[float] = []
    i = 0
    while len(out) < pauses:
        db = store(tmp, f"{mode}-{i}")
        i += 1
        trace = TraceMiddleware(db=db, debug=Debugger(["step"]))
        agent = make_agent(two_lap_model(), [get_weather], [trace])
        q = {"messages": [("user", "Weather in Oslo?")]}
        bg = (Background(lambda a=agent: a.ainvoke(q), is_async=True) if mode == "async"
              else Background(lambda a=agent: a.invoke(q)))
        while bg.alive():
            now = paused(db)
            if not now:
                time.sleep(0.005)
                continue
            channel.answer(db, str(now[0]["run"]), "step")
        bg.result()
        trace.flush()
        out += latencies(db)
    return out[:pauses]


def parallel(n: int, rounds: int, tmp: Path) -> list[float]:
    """An async agent whose model asks for ``n`` tool calls at once, each paused
    (``tool:fetch_price``) and answered by its pause id: Continue -> that call goes on."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from tracer.demo.models import ScriptedChatModel, call, turn_script

    @tool
    async def fetch_price(item: str) -> str:
        """Price of an item."""
        return f"{item}: 10 EUR"

    out: list[float] = []
    for r in range(rounds):
        db = store(tmp, f"par-{n}-{r}")
        calls = [call("fetch_price", {"item": f"i{i}"}, f"p{i}") for i in range(n)]
        model = ScriptedChatModel(script=turn_script([AIMessage("", tool_calls=calls),
                                                      AIMessage("done")]))
        trace = TraceMiddleware(db=db, debug=Debugger(["tool:fetch_price"]))
        agent = make_agent(model, [fetch_price], [trace])
        q = {"messages": [("user", "Prices?")]}
        bg = Background(lambda a=agent: a.ainvoke(q), is_async=True)
        answered: set[int] = set()
        while bg.alive():
            now = paused(db)
            fresh = [p for p in now if p["pause"] not in answered]
            if len(now) < n and len(answered) == 0:
                time.sleep(0.005)  # (all n paused first: they are answered at once)
                continue
            for p in fresh:
                channel.answer(db, str(p["run"]), "continue", pause=int(str(p["pause"])))
                answered.add(int(str(p["pause"])))
            time.sleep(0.005)
        bg.result()
        trace.flush()
        out += latencies(db)
    return out


def prompt_latency(pauses: int, tmp: Path) -> list[float]:
    """The ``looptrace debug`` prompt (``tracer.cli.debug.Prompt``) waiting for pauses,
    answering each with ``c``: the time from the agent opening a pause (its row's
    ``paused_at``) to the prompt showing it, in ms (``--prompt``)."""
    import io

    from tracer.cli.debug import Prompt

    shown: dict[int, float] = {}
    if PG is not None:  # (as ``looptrace debug`` does on a PostgreSQL store)
        from tracer.db import pool

        pool.enable()

    class Timed(Prompt):
        def show(self, p: dict[str, object]) -> None:
            shown.setdefault(int(str(p["pause"])), time.time())
            super().show(p)

    out: list[float] = []
    i = 0
    while len(out) < pauses:
        db = store(tmp, f"prompt-{i}")
        i += 1
        shown.clear()
        trace = TraceMiddleware(db=db, debug=Debugger(["model", "tool:get_weather"]))
        agent = make_agent(two_lap_model(), [get_weather], [trace])
        prompt = Timed(db, io.StringIO("c\n" * 100), io.StringIO())
        stop = threading.Event()
        served = Background(lambda pr=prompt, st=stop: pr.serve(lambda: not st.is_set()))
        time.sleep(0.5)  # (the prompt waiting, as it is before an agent pauses)
        agent.invoke({"messages": [("user", "Weather in Oslo?")]})
        stop.set()
        if hasattr(prompt, "wake"):
            prompt.wake()
        served.result(timeout=120)
        trace.flush()
        conn = connect(db, readonly=True)
        try:
            at = dict(conn.execute("SELECT id, paused_at FROM debug_pauses").fetchall())
        finally:
            conn.close()
        out += [(shown[k] - at[k]) * 1000 for k in sorted(shown) if k in at]
    return out[:pauses]


def _line(label: str, ms: list[float], what: str = "Continue -> the agent goes on") -> str:
    ms = sorted(ms)
    p90 = ms[max(0, int(len(ms) * 0.9) - 1)]
    return (f"{label}  {what}: median {statistics.median(ms):6.1f} ms,"
            f" p90 {p90:6.1f} ms, max {ms[-1]:6.1f} ms over {len(ms)} pauses "
            "(goal: median < 200 ms)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pauses", type=int, default=60)
    ap.add_argument("--db", default=None,
                    help="a postgresql:// URL: record into new stores there (default: SQLite)")
    ap.add_argument("--prompt", action="store_true",
                    help="only the prompt: a pause opened -> the looptrace debug prompt shows it")
    args = ap.parse_args()
    global PG
    PG = args.db
    print(f"engine: {'PostgreSQL' if PG else 'SQLite'}")
    with tempfile.TemporaryDirectory() as d:
        if args.prompt:
            print(_line("prompt", prompt_latency(args.pauses, Path(d)),
                        "a pause opened -> the prompt shows it"))
            return
        for mode in ("sync", "async"):
            print(_line(f"{mode:5}", one(mode, args.pauses, Path(d))))
        for n, rounds in ((1, 20), (3, 8), (20, 2)):
            print(_line(f"{n:2} parallel", parallel(n, rounds, Path(d))))


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
