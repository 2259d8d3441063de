"""Benchmark: what recording the whole state stores for a Deep Agents run that writes
files (not a pytest test; it prints, it asserts nothing about time).

    uv run python benchmarks/bench_state.py [--files 20] [--size 5000]

A real ``create_deep_agent`` driven by a scripted model writes ``--files`` distinct files
of ``--size`` characters (``write_file``, one per lap), reads the last one back five
times, and answers; ``TraceMiddleware`` attached. Printed: the bytes of the files'
distinct contents, what ``state_values`` holds (rows, bytes) and the run's other rows,
and the invoke time with and without the tracer (medians of a few runs).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script


def agent(n: int, size: int, middleware: list[Any], store: Any = None) -> Any:
    from deepagents import create_deep_agent

    files = [(f"/notes/{i:02d}.md", f"file {i}\n" + (chr(97 + i % 26) * (size - 8)))
             for i in range(n)]
    turns = [AIMessage("", tool_calls=[call("write_file", {"file_path": p, "content": c},
                                            f"w{i}")]) for i, (p, c) in enumerate(files)]
    turns += [AIMessage("", tool_calls=[call("read_file", {"file_path": files[-1][0]}, f"r{i}")])
              for i in range(5)]
    turns.append(AIMessage("All notes written."))
    kw: dict[str, Any] = {}
    if store is not None:
        from deepagents.backends import StoreBackend

        kw = {"store": store, "backend": StoreBackend(namespace=lambda rt: ("fs",))}
    return create_deep_agent(model=ScriptedChatModel(script=turn_script(turns)),
                             middleware=middleware, **kw), sum(len(c) for _, c in files)


def copies(db: Path, n: int) -> list[int]:
    """For each file written, how many ``state_values`` rows hold its content."""
    conn = sqlite3.connect(db)
    out = [conn.execute("SELECT COUNT(*) FROM state_values WHERE instr(data, ?) > 0",
                        [f"file {i}\\n"]).fetchone()[0] for i in range(n)]
    conn.close()
    return out


def store_run(n: int, size: int, tmp: Path) -> None:
    from langgraph.store.memory import InMemoryStore

    db = tmp / "store.db"
    trace = TraceMiddleware(db=db)
    ag, distinct = agent(n, size, [trace], store=InMemoryStore())
    trace.attach(ag).invoke({"messages": [("user", "Write the notes.")]},
                            {"recursion_limit": 500})
    trace.flush()
    conn = sqlite3.connect(db)
    writes = conn.execute("SELECT COUNT(*) FROM state WHERE key LIKE '@store:%'").fetchone()[0]
    values = conn.execute("SELECT COUNT(*), SUM(LENGTH(data)) FROM state_values").fetchone()
    conn.close()
    c = copies(db, n)
    print(f"\nthe same {n} files in the LangGraph store (StoreBackend, InMemoryStore)")
    print(f"store writes recorded:         {writes:>9}")
    print(f"state_values:                  {values[1] or 0:>9} bytes in {values[0]} rows")
    print(f"stored / distinct contents:    {(values[1] or 0) / distinct:>9.2f}")
    print(f"rows holding each file:        {min(c)}..{max(c)} (1: each content stored once)")


def plain_10x3(tmp: Path) -> None:
    """A run with no state beyond messages: the bytes of all its rows, every table."""
    from bench_tracer import get_price, scripted
    from langchain.agents import create_agent

    db = tmp / "plain.db"
    trace = TraceMiddleware(db=db)
    create_agent(scripted(10, 3), tools=[get_price], middleware=[trace]).invoke(
        {"messages": [("user", "Price everything")]})
    trace.close()
    conn = sqlite3.connect(db)
    total, per = 0, {}
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND name NOT LIKE '%fts%'")]
    for t in tables:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
        expr = " + ".join(f"COALESCE(LENGTH(CAST({c} AS BLOB)), 0)" for c in cols)
        per[t] = conn.execute(f"SELECT COALESCE(SUM({expr}), 0) FROM {t}").fetchone()[0]
        total += per[t]
    state_rows = conn.execute("SELECT COUNT(*) FROM state").fetchone()[0]
    conn.close()
    print("\na 10x3 run with no state beyond messages (create_agent, no store)")
    print(f"row data, every table:         {total:>9} bytes (target < 40 KB = 40960)")
    print("  " + ", ".join(f"{t} {b}" for t, b in per.items() if b))
    print(f"state rows:                    {state_rows:>9}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--size", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-state-"))
    times: dict[str, list[float]] = {"untraced": [], "traced": []}
    for r in range(a.runs):
        ag, distinct = agent(a.files, a.size, [])
        t0 = time.perf_counter()
        ag.invoke({"messages": [("user", "Write the notes.")]}, {"recursion_limit": 500})
        times["untraced"].append(time.perf_counter() - t0)
        db = tmp / f"run{r}.db"
        trace = TraceMiddleware(db=db)
        ag, distinct = agent(a.files, a.size, [trace])
        ag = trace.attach(ag)
        t0 = time.perf_counter()
        ag.invoke({"messages": [("user", "Write the notes.")]}, {"recursion_limit": 500})
        times["traced"].append(time.perf_counter() - t0)
        trace.flush()
    conn = sqlite3.connect(db)
    values = conn.execute("SELECT COUNT(*), SUM(LENGTH(data)) FROM state_values").fetchone()
    state = conn.execute("SELECT COUNT(*) FROM state WHERE key = 'files'").fetchone()[0]
    msgs = conn.execute("SELECT SUM(LENGTH(data)) FROM messages").fetchone()[0]
    conn.close()
    print(f"{a.files} files of {a.size} chars written, the last read back 5 times")
    print(f"distinct file contents:        {distinct:>9} chars")
    print(f"state_values:                  {values[1] or 0:>9} bytes in {values[0]} rows "
          f"({state} versions of files)")
    print(f"messages (for comparison):     {msgs:>9} bytes")
    print(f"stored / distinct contents:    {(values[1] or 0) / distinct:>9.2f}")
    c = copies(db, a.files)
    print(f"rows holding each file:        {min(c)}..{max(c)} (1: each content stored once)")
    for k, v in times.items():
        print(f"invoke {k:9}               {statistics.median(v) * 1000:>9.1f} ms (median of "
              f"{len(v)})")
    store_run(a.files, a.size, tmp)
    plain_10x3(tmp)


if __name__ == "__main__":
    main()
