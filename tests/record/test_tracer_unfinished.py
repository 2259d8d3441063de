"""A run whose end the tracer could not see is not left ``running`` forever.

- The process exits while a run is still going (an agent in a daemon thread, the
  main thread returns): at exit the run is closed with what is known, ``error``
  saying the process exited.
- The process dies (``os._exit``: no exit handler runs): the run stays ``running``
  until the next process writes to the file, if its pid is gone from this host
  (``tests/hostile/test_hostile_killed.py``), or else until its thread's next run
  starts, in another process; then it is ``error`` saying so, with the pid of the
  process that recorded it.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from tracer_kit import get_weather, make_agent, rows, two_lap_model

from tracer import TraceMiddleware

ROOT = Path(__file__).resolve().parents[2]

AGENT = """
import asyncio, os, sys, threading, time
sys.path.insert(0, {tests!r})
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer_kit import make_agent

started = threading.Event()

@tool
async def slow_lookup(city: str) -> str:
    \"\"\"A lookup that never comes back in time.\"\"\"
    started.set()
    {in_tool}
    return "never"

model = ScriptedChatModel(script=turn_script([
    AIMessage("", id="ai-1", tool_calls=[call("slow_lookup", {{"city": "Oslo"}}, "c1")]),
    AIMessage("done", id="ai-2")]))
trace = TraceMiddleware(db={db!r})
agent = make_agent(model, [slow_lookup], [trace])
config = {{"configurable": {{"thread_id": "t-1"}}}}
# (an event loop in a daemon thread: the interpreter does not wait for it to finish)
t = threading.Thread(target=asyncio.run, args=(agent.ainvoke({{"messages": [("user", "hi")]}},
                                                             config),), daemon=True)
t.start()
print(os.getpid(), flush=True)
started.wait(30)
time.sleep(0.5)
"""


def _child(db: Path, in_tool: str) -> int:
    code = textwrap.dedent(AGENT).format(tests=str(ROOT / "tests"), db=str(db), in_tool=in_tool)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.stdout.strip(), out.stderr
    return int(out.stdout.strip().splitlines()[-1])


def test_a_run_still_going_when_the_process_exits_is_closed(db_path):
    _child(db_path, "await asyncio.sleep(60)")  # the main thread returns: the interpreter exits
    ((status, error, ended),) = rows(db_path, "SELECT status, error, ended_at FROM runs")
    assert status == "error" and ended is not None
    assert "the process exited while it was still running" in error


def test_a_run_of_a_dead_process_is_closed_when_its_thread_goes_on(db_path):
    # (what was recorded is committed, then the process dies: no exit handler runs)
    _child(db_path, "trace.flush(); os._exit(3)")
    assert rows(db_path, "SELECT status FROM runs") == [("running",)]
    # A dead pid of this host is closed by the next process's first write
    # (tests/hostile/test_hostile_killed.py); one this host cannot tell is dead (another
    # host's or pid namespace's: pid 1 here, alive) waits for its thread to go on.
    pid = 1
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE runs SET pid = ?", [pid])
    conn.close()
    trace = TraceMiddleware(db=db_path)
    other = make_agent(two_lap_model(), [get_weather], [trace], checkpointer=InMemorySaver())
    # another thread first: its run leaves the dead process's run alone
    other.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t-2"}})
    trace.flush()
    assert sorted(rows(db_path, "SELECT thread_id, status FROM runs")) == [
        ("t-1", "running"), ("t-2", "completed")]
    other.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t-1"}})
    trace.flush()
    got = rows(db_path, "SELECT status, error FROM runs WHERE thread_id = 't-1'"
                        " ORDER BY started_at")
    assert [s for s, _ in got] == ["error", "completed"]
    assert "its thread's next run started while it was still running" in got[0][1]
    assert f"process {pid}" in got[0][1]


def test_a_run_left_by_an_earlier_process_with_the_same_pid_is_closed(db_path):
    """A restarted container often gets the same pid: a run of the thread with this pid
    that started before this process did was left by an earlier one."""
    import os
    import sqlite3

    from tracer.db.schema import connect

    connect(db_path).close()
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("INSERT INTO runs(id, name, thread_id, status, started_at, source, pid)"
                     " VALUES ('old-run', 'agent', 't-1', 'running', 1000.0, 'middleware', ?)",
                     [os.getpid()])
    conn.close()
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(two_lap_model(), [get_weather], [trace], checkpointer=InMemorySaver())
    agent.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t-1"}})
    trace.flush()
    (status, error), = rows(db_path, "SELECT status, error FROM runs WHERE id = 'old-run'")
    assert status == "error" and f"process {os.getpid()}" in error
