"""Durability: SIGKILL mid-run, several processes into one file, files that are not ours."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracer_kit import assert_gapless, rows

from tracer import NewerSchemaError, NotALooptraceDatabase, TraceMiddleware
from tracer.db.schema import connect
from tracer.read.loader import TraceDB
from tracer.vocab.records import RunRecord

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}

SLOW_RUN = textwrap.dedent("""
    import sys, time
    from langchain_core.tools import tool
    from tracer import TraceMiddleware
    from tracer_kit import make_agent, parallel_model

    trace = TraceMiddleware(db=sys.argv[1])

    @tool
    def get_price(item: str) -> str:
        \"\"\"Price.\"\"\"
        if item == "item-1-0":
            trace.flush()  # a group commit: everything so far is on disk
            print("COMMITTED", flush=True)
            time.sleep(120)  # the test kills us here
        return "10 EUR"

    make_agent(parallel_model(3, 1), [get_price], [trace]).invoke(
        {"messages": [("user", "slow please")]})
""")


def test_sigkill_mid_run_leaves_a_clean_database(tmp_path):
    db = tmp_path / "killed.db"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(db)], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "COMMITTED", proc.stderr.read()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with TraceDB(db) as tdb:
        (summary,) = tdb.runs()
        run = tdb.run(summary.id)
    assert summary.status == "running"
    assert_gapless(db, summary.id)
    seen = [(e.hook, e.phase, e.tool_call_id) for e in run.events]
    # Everything up to the commit is there: lap 1 complete, lap 2's tool call entered.
    assert ("wrap_tool_call", "exit", "c0-0") in seen
    assert seen[-1] == ("wrap_tool_call", "enter", "c1-0")
    assert [m.type for m in run.messages] == ["human", "ai", "tool", "ai"]
    # And the file still takes new runs.
    trace = TraceMiddleware(db=db)
    trace.recorder.writer.put(RunRecord("after-kill", {"status": "completed", "name": "x"}))
    trace.flush()
    assert len(rows(db, "SELECT id FROM runs")) == 2


WORKER = textwrap.dedent("""
    import sys
    from tracer import TraceMiddleware
    from tracer_kit import get_price, make_agent, parallel_model

    trace = TraceMiddleware(db=sys.argv[1])
    agent = make_agent(parallel_model(2, 2), [get_price], [trace])
    for i in range(int(sys.argv[2])):
        agent.invoke({"messages": [("user", f"worker {sys.argv[3]} run {i}")]})
    trace.close()
    print("DONE", flush=True)
""")


def test_four_processes_fifty_runs_each_into_one_file(tmp_path):
    db = tmp_path / "shared.db"
    connect(db).close()
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(db), "50", str(w)], env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and out.strip() == "DONE", err
        assert "looptrace" not in err, err  # no warnings: nothing failed or was dropped
    runs = rows(db, "SELECT id, status, pid FROM runs")
    assert len(runs) == 200
    assert {r[1] for r in runs} == {"completed"}
    assert len({r[2] for r in runs}) == 4
    counts = set()
    for run_id, _, _ in runs:
        counts.add(len(assert_gapless(db, run_id)))
        msgs = rows(db, "SELECT position FROM messages WHERE run_id = ? ORDER BY position",
                    [run_id])
        assert [m[0] for m in msgs] == list(range(1 + 2 * 3 + 1))
    assert len(counts) == 1  # every run has the same number of events
    texts = {t for (t,) in rows(db, "SELECT text FROM messages WHERE position = 0")}
    assert texts == {f"worker {w} run {i}" for w in range(4) for i in range(50)}


# -- files that are not looptrace databases ---------------------------------------------------


def _foreign(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.commit()
    conn.close()
    return path


def _not_sqlite(path: Path) -> Path:
    path.write_text("name,price\nwidget,10\n" * 100)
    return path


def _newer(path: Path) -> Path:
    connect(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    return path


CASES = [(_foreign, NotALooptraceDatabase, "not a looptrace"),
         (_not_sqlite, NotALooptraceDatabase, "not a SQLite database"),
         (_newer, NewerSchemaError, "newer looptrace")]


@pytest.mark.parametrize(("make", "error", "words"), CASES)
def test_rejected_by_the_middleware(tmp_path, make, error, words):
    path = make(tmp_path / "x.db")
    before = path.read_bytes()
    with pytest.raises(error, match=words) as info:
        TraceMiddleware(db=path)
    assert "\n" not in str(info.value)
    assert path.read_bytes() == before  # untouched


@pytest.mark.parametrize(("make", "error", "words"), CASES)
def test_rejected_by_the_reader(tmp_path, make, error, words):
    path = make(tmp_path / "x.db")
    with pytest.raises(error, match=words) as info:
        TraceDB(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("make", "error", "words"), CASES)
def test_rejected_by_the_cli(tmp_path, make, error, words):
    path = make(tmp_path / "x.db")
    proc = subprocess.run([sys.executable, "-m", "tracer", "runs", "--db", str(path)], env=ENV,
                          check=False,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert proc.stdout == ""


EXIT_WITHOUT_CLOSE = textwrap.dedent("""
    import sys
    from tracer import TraceMiddleware
    from tracer_kit import get_price, make_agent, parallel_model

    trace = TraceMiddleware(db=sys.argv[1])
    make_agent(parallel_model(3, 2), [get_price], [trace]).invoke(
        {"messages": [("user", "then exit at once")]})
    # no flush(), no close(): the interpreter-exit hook must commit everything
""")


def test_interpreter_exit_flushes(tmp_path):
    db = tmp_path / "exit.db"
    proc = subprocess.run([sys.executable, "-c", EXIT_WITHOUT_CLOSE, str(db)], env=ENV,
                          check=False, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    (run_id, status), = rows(db, "SELECT id, status FROM runs")
    assert status == "completed"
    seqs = assert_gapless(db, run_id)
    assert rows(db, "SELECT hook, phase FROM events WHERE run_id = ? AND seq >= ? ORDER BY seq",
                [run_id, seqs[-2]]) == [("after_agent", "fire"), ("run", "end")]
    assert len(rows(db, "SELECT 1 FROM messages WHERE run_id = ?", [run_id])) == 1 + 3 * 3 + 1
