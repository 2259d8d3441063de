"""Runs of a process that was killed (issue 36, item 15).

Each test names the defect it catches: a process killed with SIGKILL (no exit handler
runs) left its runs ``running`` for good when they had no thread (a fork, a run without
a checkpointer): the only rule that closed them was "its thread's next run starts",
although the dead process's pid is stored. Now the first write of a process into the
file closes every run whose recorded pid names no live process here (or a process
that started after the run did: the pid was reused). Real child processes recording
real agents into a real SQLite file.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tracer_kit import get_weather, make_agent, rows, two_lap_model

from tracer import TraceMiddleware
from tracer.db.schema import connect
from tracer.db.writer import close_all

ROOT = Path(__file__).resolve().parents[2]

# A child recording one run with no thread (no checkpointer: like a fork), stopped in a
# tool once what it recorded is committed.
CHILD = """
import os, sys, time
sys.path.insert(0, {tests!r})
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer_kit import make_agent

@tool
def slow_lookup(city: str) -> str:
    \"\"\"A lookup that never comes back.\"\"\"
    trace.flush()
    print(os.getpid(), flush=True)
    time.sleep(120)
    return "never"

model = ScriptedChatModel(script=turn_script([
    AIMessage("", id="ai-1", tool_calls=[call("slow_lookup", {{"city": "Oslo"}}, "c1")]),
    AIMessage("done", id="ai-2")]))
trace = TraceMiddleware(db={db!r})
make_agent(model, [slow_lookup], [trace]).invoke({{"messages": [("user", "hi")]}})
"""


def _record_one(db: Path) -> None:
    """This process records a run into ``db`` (its first write: a new writer)."""
    close_all()  # (a writer this process already had would not open the file again)
    trace = TraceMiddleware(db=db)
    make_agent(two_lap_model(), [get_weather], [trace]).invoke(
        {"messages": [("user", "hi")]})
    trace.flush()


def test_a_run_killed_with_sigkill_is_closed_when_the_file_is_next_written(
        db_path: Path) -> None:
    """Was: ``running`` for good (no thread: no next run of it to close it)."""
    code = textwrap.dedent(CHILD).format(tests=str(ROOT / "tests"), db=str(db_path))
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), child.stderr.read() if child.stderr else ""
        pid = int(line)
        (killed,) = rows(db_path, "SELECT id FROM runs WHERE pid = ?", [pid])
        # alive: its run is left alone by this process's first write
        _record_one(db_path)
        assert rows(db_path, "SELECT status FROM runs WHERE id = ?", [killed[0]]) == [
            ("running",)]
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == -signal.SIGKILL
    before = time.time()
    _record_one(db_path)
    ((status, error, ended),) = rows(
        db_path, "SELECT status, error, ended_at FROM runs WHERE id = ?", [killed[0]])
    assert status == "error"
    assert error == (f"looptrace: this run has no end in the record: the process that "
                     f"recorded it (process {pid}) exited or was killed while it was still "
                     "running")
    assert ended is not None and ended >= before - 1
    assert sorted(s for (s,) in rows(db_path, "SELECT status FROM runs")) == [
        "completed", "completed", "error"]


def _insert(db: Path, run_id: str, pid: int | None, started_at: float) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("INSERT INTO runs(id, name, status, started_at, source, pid)"
                     " VALUES (?, 'planted', 'running', ?, 'middleware', ?)",
                     [run_id, started_at, pid])
    conn.close()


def test_only_runs_whose_process_is_gone_are_closed(db_path: Path) -> None:
    """A pid reused by a process started after the run (an hour here) is not the run's
    process; a live process started before it may be; a run without a pid says
    nothing."""
    connect(db_path).close()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.1)
        now = time.time()
        _insert(db_path, "reused-pid", sleeper.pid, now - 3600)
        _insert(db_path, "live-pid", sleeper.pid, now + 5)  # (started after the sleeper)
        _insert(db_path, "no-pid", None, now - 3600)
        _insert(db_path, "this-process-earlier", os.getpid(), 1000.0)  # (a restart)
        _insert(db_path, "this-process", os.getpid(), now)
        _insert(db_path, "init", 1, now)  # (alive, or another user's: never closed)
        _record_one(db_path)
    finally:
        sleeper.kill()
        sleeper.wait()
    got = dict(rows(db_path, "SELECT id, status FROM runs WHERE name = 'planted'"))
    assert got == {"reused-pid": "error", "live-pid": "running", "no-pid": "running",
                   "this-process-earlier": "error", "this-process": "running",
                   "init": "running"}
