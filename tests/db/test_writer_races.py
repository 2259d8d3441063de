"""The writer and the schema under races that real use makes: a run finalised on the
writer's own thread while it closes, and several writers creating one new file."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time

from tracer.db.schema import connect
from tracer.db.writer import Writer
from tracer.vocab.records import RunRecord


def _writer_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "looptrace-writer")


def test_a_record_put_by_the_writer_while_it_closes_is_written_by_it(tmp_path):
    """A run's finaliser can be called by the garbage collector on the writer thread
    while ``close()`` waits for it: no second writer starts, the record is kept."""
    db = tmp_path / "w.db"
    w = Writer(str(db))
    before = _writer_threads()
    late = RunRecord("late-run", {"status": "completed", "name": "late"})
    orig = w._commit
    started: list[int] = []

    def commit(rows):
        started.append(_writer_threads())
        if w._closed and not any(s == -1 for s in started):
            started.append(-1)
            w.put(late)  # (as _invocation_gone -> end_run would, from this thread)
        return orig(rows)

    w._commit = commit  # type: ignore[method-assign]
    w.put(RunRecord("first-run", {"status": "running", "name": "first"}))
    w.flush()
    w.put(RunRecord("first-run", {"status": "completed"}))
    w.close()
    assert max(n for n in started if n >= 0) <= before + 1  # never a second writer
    conn = sqlite3.connect(db)
    rows = dict(conn.execute("SELECT name, status FROM runs").fetchall())
    conn.close()
    assert rows == {"first": "completed", "late": "completed"}


CREATE = """
import sys, time
from tracer.db.schema import connect
t = float(sys.argv[2])
while time.time() < t:
    pass
connect(sys.argv[1]).close()
print("ok")
"""


def test_processes_creating_one_new_file_at_once(tmp_path):
    """Each creates the schema in one transaction: none sees half of another's."""
    db = tmp_path / "new.db"
    go = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", CREATE, str(db), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [e for _, e in outs]
    conn = connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key = 'app'").fetchone() == ("looptrace",)
    conn.close()


def test_threads_creating_one_new_file_at_once(tmp_path):
    """SQLite refuses the switch to WAL at once ("database is locked", no busy handler)
    while another connection holds the file: about one round in 25 met it before
    ``connect`` asked again, so the race is run 40 times."""
    errors: list[BaseException] = []

    def make(db) -> None:
        barrier.wait()
        try:
            connect(db).close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    for i in range(40):
        db = tmp_path / f"new{i}.db"
        barrier = threading.Barrier(6)
        threads = [threading.Thread(target=make, args=(db,)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, f"round {i}: {errors}"
        conn = connect(db)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.close()
