"""Files written by the previous schema (1) open: read as they are, or migrated in place."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from tracer_kit import get_weather, make_agent, two_lap_model

from tracer import TraceMiddleware
from tracer.loader import TraceDB
from tracer.replay import build_replay
from tracer.schema import SCHEMA_VERSION, connect

FIXTURE = Path(__file__).parent / "fixtures" / "schema1.db"


def _copy(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    shutil.copyfile(FIXTURE, path)
    return path


def _dump(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("runs", "events", "wire")} | {
            "messages": conn.execute(
                "SELECT run_id, position, seq, msg_id, type, tool_call_id, text, data"
                " FROM messages ORDER BY 1, 2, 3").fetchall()}
    finally:
        conn.close()


def _version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'")
                   .fetchone()[0])
    finally:
        conn.close()


def test_the_fixture_is_schema_1():
    assert _version(FIXTURE) == 1


def test_read_only_a_schema_1_file_is_read_as_it_is(tmp_path):
    path = _copy(tmp_path)
    before = path.read_bytes()
    with TraceDB(path) as db:
        runs = db.runs()
        assert len(runs) == 4 and "weather" in {r.name for r in runs}
        for summary in runs:
            run = db.run(summary.id)
            assert run.messages and not run.revisions
            replay = build_replay(run)
            last = replay.messages_at(len(replay) - 1)
            assert [m.key for m in last] == [m.key for m in run.messages]
    assert path.read_bytes() == before  # read-only: not migrated, not touched


def test_opening_for_writing_migrates_in_place_and_keeps_everything(tmp_path):
    path = _copy(tmp_path)
    before = _dump(path)
    connect(path).close()
    assert _version(path) == SCHEMA_VERSION == 2
    assert _dump(path) == before  # nothing lost, nothing changed
    cols = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(messages)")]
    assert "version" in cols


def test_recording_into_a_schema_1_file(tmp_path):
    path = _copy(tmp_path)
    n_before = len(_dump(path)["runs"])
    trace = TraceMiddleware(db=path, run_name="after-migration")
    make_agent(two_lap_model(), [get_weather], [trace]).invoke(
        {"messages": [("user", "Weather in Oslo?")]})
    trace.flush()
    assert _version(path) == 2
    with TraceDB(path) as db:
        runs = db.runs()
        assert len(runs) == n_before + 1
        new = next(r for r in runs if r.name == "after-migration")
        assert [m.type for m in db.run(new.id).messages] == ["human", "ai", "tool", "ai"]
        old = next(r for r in runs if r.name == "weather")
        assert db.run(old.id).messages


def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = _copy(tmp_path)
    before = _dump(path)
    from tracer import schema

    def then_fail(conn):
        schema._add_message_versions(conn)  # the real step runs, then the disk fails
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setitem(schema.MIGRATIONS, 1, then_fail)
    with pytest.raises(Exception, match="simulated"):
        schema.connect(path)
    assert _version(path) == 1 and _dump(path) == before
    cols = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(messages)")]
    assert "version" not in cols  # the ALTER TABLE was rolled back too
