"""A run whose process died while it was still running ends ``error``, on both engines:
SQLite tells the dead process by its pid, PostgreSQL (shared by other machines, where
a pid says nothing) by the advisory lock its writer held (``tracer.db.liveness``). A
process alive but idle (its run open, nothing written for a while) is never taken for
dead, not even after the server restarted under it.

The agents are real processes; one is SIGKILLed while its tool call waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_kit import OwnCluster, own_cluster_for
from tracer_kit import rows

from tracer import TraceMiddleware
from tracer.db import liveness
from tracer.db.writer import DEAD
from tracer.vocab.records import RunRecord

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}

# A run that waits in its tool call, everything before committed, until told to go on
# (a line on stdin). ``argv``: the store, the run's name, KEEP_S.
WAITING_RUN = textwrap.dedent("""
    import sys
    from langchain_core.tools import tool
    from tracer import TraceMiddleware
    from tracer.db import liveness
    from tracer_kit import make_agent, parallel_model

    liveness.KEEP_S = float(sys.argv[3])
    trace = TraceMiddleware(db=sys.argv[1], run_name=sys.argv[2])

    @tool
    def get_price(item: str) -> str:
        \"\"\"Price.\"\"\"
        trace.flush()
        print("COMMITTED", flush=True)
        sys.stdin.readline()  # idle here: the test kills us, or lets us go on
        return "10 EUR"

    make_agent(parallel_model(1, 1), [get_price], [trace]).invoke(
        {"messages": [("user", "wait please")]})
    trace.flush()
    print("DONE", flush=True)
""")


def start(db: str, name: str, keep_s: float = 30.0) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", WAITING_RUN, db, name, str(keep_s)],
                            env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    assert line.strip() == "COMMITTED", proc.stderr.read()  # type: ignore[union-attr]
    return proc


def status(db: str, name: str) -> tuple[str, str | None]:
    ((st, err),) = rows(db, "SELECT status, error FROM runs WHERE name = ? AND parent_id"
                            " IS NULL", [name])
    return st, err


def writers_locked(db: str) -> int:
    """How many writers hold their lock on the server (any store of the database)."""
    return int(rows(db, "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory'"
                        " AND classid::bigint = ? AND objsubid = 2 AND granted",
                    [liveness.LIVE_KEY])[0][0])


def until(cond: object, what: str, tries: int = 600) -> None:
    """Wait for ``cond()`` (a condition the server or the kernel makes true soon)."""
    for _ in range(tries):
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.05)
    pytest.fail(f"never: {what}")


def write_something(db: str) -> None:
    """A new process's first commit: its writer closes the dead processes' runs."""
    trace = TraceMiddleware(db=db)
    trace.recorder.writer.put(RunRecord("later", {"status": "completed", "name": "later"}))
    trace.flush()
    trace.recorder.writer.close()


def test_a_killed_process_run_ends_and_an_idle_one_stays_on_each_engine(
        store_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pg = store_db.startswith("postgresql://")
    monkeypatch.setattr(liveness, "GRACE_S", 0.0)  # (no writer here is reconnecting)
    idle = start(store_db, "idle")
    killed = start(store_db, "killed")
    try:
        before = writers_locked(store_db) if pg else 0
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=60)
        if pg:  # (the server drops the lock when it sees the connection closed)
            until(lambda: writers_locked(store_db) == before - 1, "the lock dropped")
        assert status(store_db, "killed") == ("running", None)  # (nobody has looked yet)
        write_something(store_db)
        assert status(store_db, "killed") == ("error", DEAD.format(pid=killed.pid))
        assert status(store_db, "idle") == ("running", None)
        idle.stdin.write("go on\n")  # type: ignore[union-attr]
        idle.stdin.flush()  # type: ignore[union-attr]
        assert idle.stdout.readline().strip() == "DONE", idle.stderr.read()  # type: ignore[union-attr]
        assert status(store_db, "idle") == ("completed", None)
    finally:
        for p in (idle, killed):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=60)


@pytest.fixture
def own_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OwnCluster]:
    monkeypatch.setenv("LOOPTRACE_SPOOL_DIR", str(tmp_path / "spool"))
    with own_cluster_for("liveness") as c:
        yield c


def test_an_idle_writer_takes_its_lock_again_after_the_server_restarts(
        own_cluster: OwnCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server restarts under a process whose run waits (nothing to write): its
    writer notices (every KEEP_S, here 0.2 s), connects again and takes its lock back,
    so its run is not taken for an orphan, even with no grace at all."""
    url = own_cluster.start()
    idle = start(url, "idle", keep_s=0.2)
    try:
        assert writers_locked(url) == 1
        own_cluster.stop()
        own_cluster.start()
        until(lambda: writers_locked(url) == 1, "the idle writer's lock back")
        monkeypatch.setattr(liveness, "GRACE_S", 0.0)
        write_something(url)
        assert status(url, "idle") == ("running", None)
        idle.stdin.write("go on\n")  # type: ignore[union-attr]
        idle.stdin.flush()  # type: ignore[union-attr]
        assert idle.stdout.readline().strip() == "DONE", idle.stderr.read()  # type: ignore[union-attr]
        assert status(url, "idle") == ("completed", None)
    finally:
        if idle.poll() is None:
            idle.kill()
        idle.wait(timeout=60)
