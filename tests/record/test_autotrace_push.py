"""``tracer.record.autotrace.push`` / ``uninstall``: a recording put over the process's
one for a while (the pytest plugin's, for a session run inside another one's process)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tracer.record import autotrace


def _runs(db: Path) -> list[tuple[str, str, str | None]]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT name, status, error FROM runs ORDER BY started_at").fetchall()
    finally:
        con.close()


def test_uninstall_ends_what_is_still_running_and_commits_it(tmp_path: Path) -> None:
    """A run still going when its recording is taken off is ended as at the process's
    exit, and everything is in the file when ``uninstall`` returns (was: nothing ended
    it before the interpreter's exit; the file had the run as ``running``)."""
    handler = autotrace.push(tmp_path / "t.db", how="a test")
    try:
        assert autotrace.active_handler() is handler
        handler.recorder.start_run(name="left open", source="callbacks")
    finally:
        autotrace.uninstall(handler)
    assert autotrace.active_handler() is None
    said = ("looptrace: this run has no end in the record: its recording was stopped "
            "while it was still running")
    assert _runs(tmp_path / "t.db") == [("left open", "error", said)]
    autotrace.uninstall(handler)  # (a second time: nothing to do)
