"""Files written by older schemas (1 to 4) open: read as they are, or migrated in place."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tracer_kit import get_weather, make_agent, two_lap_model

from tracer import TraceMiddleware
from tracer.checks.run import check_db
from tracer.db.schema import SCHEMA_VERSION, connect
from tracer.db.tables import RUNS_COLUMNS
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

FIXTURE = Path(__file__).parents[1] / "fixtures" / "schema1.db"


def _copy(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    shutil.copyfile(FIXTURE, path)
    return path


def _compared(table: str) -> str:
    """What to compare of ``table`` before and after a migration: every column, but
    the ``runs.writer`` schema 9 adds (NULL in a SQLite file)."""
    return ", ".join(c for c in RUNS_COLUMNS if c != "writer") if table == "runs" else "*"


def _dump(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT {_compared(t)} FROM {t} ORDER BY 1, 2").fetchall()
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
    assert _version(path) == SCHEMA_VERSION == 9
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
    assert _version(path) == SCHEMA_VERSION
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
    from tracer.db import schema

    def then_fail(conn):
        schema._add_message_versions(conn)  # the real step runs, then the disk fails
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setitem(schema.MIGRATIONS, 1, then_fail)
    with pytest.raises(Exception, match="simulated"):
        schema.connect(path)
    assert _version(path) == 1 and _dump(path) == before
    cols = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(messages)")]
    assert "version" not in cols  # the ALTER TABLE was rolled back too


# -- schema 2 -> 3 ---------------------------------------------------------------------
# tests/fixtures/schema2.db was recorded by looptrace at schema 2 (`looptrace demo --only
# weather shopping deep-agent human-in-the-loop hand-rolled-loop hostile-content
# sdk-loop`); schema2_expected.json holds what that looptrace read from it: every run
# with its counts, every run's findings, and the runs a few searches found.
FIXTURE2 = Path(__file__).parents[1] / "fixtures" / "schema2.db"
EXPECTED2 = json.loads((FIXTURE2.parent / "schema2_expected.json").read_text(encoding="utf-8"))
# Since the rules' version 2, the Ollama-ids warning is given on runs that talked to
# Ollama only: none of the fixture's runs did (its demos ran no provider adapter).
FINDINGS2 = {rid: [f for f in fs if f["rule"] != "ollama-unlinked-calls"]
             for rid, fs in EXPECTED2["findings"].items()}


def _copy2(tmp_path: Path) -> Path:
    path = tmp_path / "v2.db"
    shutil.copyfile(FIXTURE2, path)
    return path


def _everything(path: Path) -> dict[str, list[tuple]]:
    """Every row of every recorded table, every column."""
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT {_compared(t)} FROM {t} ORDER BY 1, 2, 3").fetchall()
                for t in ("runs", "events", "messages", "wire")}
    finally:
        conn.close()


def _read_all(path: Path) -> tuple[list[dict], dict[str, list[dict]], dict[str, list[str]]]:
    with TraceDB(path) as db:
        runs = [dataclasses.asdict(r) for r in db.runs()]
        for r in runs:
            run = db.run(r["id"])
            replay = build_replay(run)
            assert len(replay) == r["events"] and replay.messages_at(len(replay) - 1)
        searches = {q: sorted(r.id for r in db.runs(search=q)) for q in EXPECTED2["search"]}
    found = {rid: [f.to_dict() for f in fs] for rid, fs in check_db(path).items()}
    return runs, found, searches


def test_the_fixture_is_schema_2():
    assert _version(FIXTURE2) == 2
    assert len(EXPECTED2["runs"]) == 8 and any(r["parent_id"] for r in EXPECTED2["runs"])


def test_read_only_a_schema_2_file_is_read_as_it_is(tmp_path):
    path = _copy2(tmp_path)
    before = path.read_bytes()
    runs, found, searches = _read_all(path)
    assert runs == EXPECTED2["runs"]
    assert found == FINDINGS2
    assert searches == EXPECTED2["search"]
    assert path.read_bytes() == before  # read-only: not migrated, nothing kept


def test_a_schema_2_file_is_migrated_in_place_and_nothing_is_lost(tmp_path):
    path = _copy2(tmp_path)
    before = _everything(path)
    connect(path).close()
    assert _version(path) == SCHEMA_VERSION == 9
    assert _everything(path) == before
    conn = sqlite3.connect(path)
    stats = {r[0]: r[1:] for r in conn.execute(
        "SELECT run_id, laps, model_calls, tool_calls, errors, events FROM run_stats")}
    indexed = conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0]
    conn.close()
    # every ended run's counts kept, equal to what schema 2 counted on each read
    assert stats == {r["id"]: (r["laps"], r["model_calls"], r["tool_calls"], r["errors"],
                               r["events"]) for r in EXPECTED2["runs"] if r["status"] != "running"}
    assert indexed == len(before["messages"])
    runs, found, searches = _read_all(path)
    assert runs == EXPECTED2["runs"]
    assert found == FINDINGS2
    assert searches == EXPECTED2["search"]
    # the findings were kept by that check: read back, they are the same
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM run_checks").fetchone()[0] == 8
    conn.close()
    assert {rid: [f.to_dict() for f in fs] for rid, fs in check_db(path).items()} == found


def test_a_failed_schema_2_migration_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = _copy2(tmp_path)
    before = _everything(path)
    from tracer.db import schema

    def then_fail(conn):
        schema._add_derived(conn)  # the real step runs, then the disk fails
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setitem(schema.MIGRATIONS, 2, then_fail)
    with pytest.raises(Exception, match="simulated"):
        schema.connect(path)
    assert _version(path) == 2 and _everything(path) == before
    names = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")}
    assert not names & {"run_stats", "messages_fts", "findings"}  # rolled back too


def test_recording_into_a_schema_2_file(tmp_path):
    path = _copy2(tmp_path)
    trace = TraceMiddleware(db=path, run_name="after-migration-3")
    make_agent(two_lap_model(), [get_weather], [trace]).invoke(
        {"messages": [("user", "Weather in Tromsø?")]})
    trace.flush()
    assert _version(path) == SCHEMA_VERSION
    with TraceDB(path) as db:
        new = db.runs(search="Tromsø")
        assert [r.name for r in new] == ["after-migration-3"]
        assert (new[0].laps, new[0].model_calls, new[0].tool_calls) == (2, 2, 1)
        assert len(db.runs()) == len(EXPECTED2["runs"]) + 1


def test_two_processes_migrating_at_once_migrate_once(tmp_path):
    """The second saw schema 2 before the first migrated: it finds 3 under the lock."""
    path = _copy2(tmp_path)
    from tracer.db import schema

    first = sqlite3.connect(path, isolation_level=None)
    second = sqlite3.connect(path, isolation_level=None)
    schema.migrate(first, 2)
    schema.migrate(second, 2)
    assert second.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == second.execute(
        "SELECT COUNT(*) FROM messages").fetchone()
    first.close()
    second.close()


# -- schema 3 -> 4 ---------------------------------------------------------------------
# tests/fixtures/schema3.db was recorded by looptrace at schema 3 (the commit before
# schema 4): the truth agents "todo" and "command_update" (tests/truth/scenarios.py), traced
# first and attached. Schema 4 adds the state tables; what schema 3 stored is kept.
FIXTURE3 = Path(__file__).parents[1] / "fixtures" / "schema3.db"
TABLES3 = ("runs", "events", "messages", "wire", "run_stats", "search_runs")


def _everything3(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT {_compared(t)} FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES3}
    finally:
        conn.close()


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def test_the_fixture_is_schema_3():
    assert _version(FIXTURE3) == 3 and "state" not in _tables(FIXTURE3)


def test_read_only_a_schema_3_file_is_read_as_it_is(tmp_path):
    path = tmp_path / "v3.db"
    shutil.copyfile(FIXTURE3, path)
    before = path.read_bytes()
    with TraceDB(path) as db:
        runs = db.runs()
        assert len(runs) == 2
        for summary in runs:
            run = db.run(summary.id)
            assert not run.state and run.state.at(10**9) == {}  # no state recorded then
            replay = build_replay(run)
            assert replay.messages_at(len(replay) - 1)
            assert db.raw_rows("state", summary.id) == []
    assert path.read_bytes() == before


def test_a_schema_3_file_is_migrated_in_place_and_nothing_is_lost(tmp_path):
    path = tmp_path / "v3.db"
    shutil.copyfile(FIXTURE3, path)
    before = _everything3(path)
    connect(path).close()
    assert _version(path) == SCHEMA_VERSION == 9
    assert {"state", "state_values"} <= _tables(path)
    assert _everything3(path) == before
    # and a run recorded into it now has its state
    trace = TraceMiddleware(db=path, run_name="after-migration")
    from truth.run import run_truth

    run_truth("command_update", [trace], position="first")
    trace.flush()
    with TraceDB(path) as db:
        new = next(r for r in db.runs() if r.name == "after-migration")
        assert db.run(new.id).state.final() == {"notes": ["the meeting is at 10"]}
    assert _everything3(path)["events"][:len(before["events"])] == before["events"]


def test_a_failed_schema_3_migration_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "v3.db"
    shutil.copyfile(FIXTURE3, path)
    before = _everything3(path)
    from tracer.db import schema

    def then_fail(conn):
        schema._add_state(conn)
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setitem(schema.MIGRATIONS, 3, then_fail)
    with pytest.raises(Exception, match="simulated"):
        schema.connect(path)
    assert _version(path) == 3 and _everything3(path) == before
    assert "state" not in _tables(path)


# -- schema 4 -> 5 ---------------------------------------------------------------------
# tests/fixtures/schema4.db was recorded by looptrace at schema 4 (main a93e0e1): the truth
# agents "todo" and "command_update", traced first, flushed but not closed (as a file whose
# writer was killed), so that the text of their 8 messages still waits in search_pending in
# the schema 4 form (its rowid in the index already given), then copied with SQLite's backup.
# Schema 5 writes a waiting message with its run and gives it its rowid when the index takes
# it; the migration indexes what waits first.
FIXTURE4 = Path(__file__).parents[1] / "fixtures" / "schema4.db"
TABLES4 = ("runs", "events", "messages", "wire", "run_stats", "state", "state_values")


def _everything4(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    try:
        return {t: conn.execute(f"SELECT {_compared(t)} FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES4}
    finally:
        conn.close()


def _one(path: Path, sql: str) -> Any:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _hits(path: Path, text: str) -> list[str]:
    with TraceDB(path) as db:
        return sorted(r.name or r.id for r in db.runs(search=text))


def test_the_fixture_is_schema_4_with_messages_waiting_for_the_index():
    assert _version(FIXTURE4) == 4
    assert _one(FIXTURE4, "SELECT COUNT(*) FROM search_pending") == [(8,)]
    assert _one(FIXTURE4, "SELECT COUNT(*) FROM messages_fts") == [(0,)]
    cols = [r[1] for r in _one(FIXTURE4, "PRAGMA table_info(search_pending)")]
    assert cols == ["fts", "text"]


def test_read_only_a_schema_4_file_is_read_and_searched_as_it_is(tmp_path):
    path = tmp_path / "v4.db"
    shutil.copyfile(FIXTURE4, path)
    before = path.read_bytes()
    with TraceDB(path) as db:
        runs = db.runs()
        assert len(runs) == 2
        todo = db.runs(search="quarterly summary")  # a text only the todo agent's messages hold
        assert len(todo) == 1
        assert db.run(todo[0].id).state.final()  # its state, recorded at schema 4
        assert len(db.runs(search="the meeting is at 10")) == 1
        assert db.runs(search="nowhere in any message") == []
    assert path.read_bytes() == before


def test_a_schema_4_file_is_migrated_in_place_and_nothing_is_lost(tmp_path):
    path = tmp_path / "v4.db"
    shutil.copyfile(FIXTURE4, path)
    before = _everything4(path)
    searches = {t: _hits(path, t) for t in ("quarterly summary", "the meeting is at 10", "nowhere")}
    connect(path).close()
    assert _version(path) == SCHEMA_VERSION == 9
    assert _everything4(path) == before
    # what waited is in the index now, under each run's block, as schema 4 would have put it
    assert _one(path, "SELECT COUNT(*) FROM search_pending") == [(0,)]
    assert _one(path, "SELECT COUNT(*) FROM messages_fts") == [(8,)]
    assert {t: _hits(path, t) for t in searches} == searches
    cols = [r[1] for r in _one(path, "PRAGMA table_info(search_pending)")]
    assert cols == ["id", "run_id", "text"]
    # a run recorded into it now is searchable at once, and after the index takes it
    trace = TraceMiddleware(db=path, run_name="after-migration")
    from truth.run import run_truth

    run_truth("command_update", [trace], position="first")
    trace.flush()
    assert _one(path, "SELECT COUNT(*) FROM search_pending WHERE run_id IS NULL") == [(0,)]
    assert len(_hits(path, "the meeting is at 10")) == 2
    trace.close()  # (the writer's last act: the index takes what waits)
    assert _one(path, "SELECT COUNT(*) FROM search_pending") == [(0,)]
    assert len(_hits(path, "the meeting is at 10")) == 2
    n_before = _one(path, "SELECT COUNT(*) FROM messages_fts")[0][0]
    assert n_before > 8
    # the new run's rows went into a block of their own, numbered from 1 in order
    rows = _one(path, "SELECT f.rowid - s.n * 4294967296 FROM messages_fts f JOIN search_runs s"
                      " ON f.rowid / 4294967296 = s.n JOIN runs r ON r.id = s.run_id"
                      " WHERE r.name = 'after-migration' ORDER BY f.rowid")
    assert [r[0] for r in rows] == list(range(1, len(rows) + 1))


def test_a_failed_schema_4_migration_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "v4.db"
    shutil.copyfile(FIXTURE4, path)
    before = _everything4(path)
    from tracer.db import schema

    def then_fail(conn):
        schema._pending_by_run(conn)
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setitem(schema.MIGRATIONS, 4, then_fail)
    with pytest.raises(Exception, match="simulated"):
        schema.connect(path)
    assert _version(path) == 4 and _everything4(path) == before
    assert _one(path, "SELECT COUNT(*) FROM search_pending") == [(8,)]
    assert [r[1] for r in _one(path, "PRAGMA table_info(search_pending)")] == ["fts", "text"]


# -- schema 5 -> 6: the debugger's channel and the notes ------------------------------
FIXTURE5 = Path(__file__).parents[1] / "fixtures" / "schema5.db"


def _tables(path: Path) -> set[str]:
    return {r[0] for r in _one(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_the_fixture_is_schema_5_without_the_debugger_tables():
    assert _version(FIXTURE5) == 5
    assert not {"debug_breaks", "debug_pauses", "notes"} & _tables(FIXTURE5)


def test_a_schema_5_file_is_read_as_it_is_and_migrated_in_place(tmp_path):
    path = tmp_path / "v5.db"
    shutil.copyfile(FIXTURE5, path)
    before_bytes = path.read_bytes()
    with TraceDB(path) as db:  # read-only: as it is
        assert sorted(r.name for r in db.runs()) == ["no-usage", "weather"]
    assert path.read_bytes() == before_bytes
    before = _everything4(path)
    tokens = "SELECT name, input_tokens, output_tokens, total_tokens FROM runs ORDER BY name"
    assert _one(path, tokens) == [("no-usage", 0, 0, 0), ("weather", 31, 11, 42)]
    connect(path).close()
    assert _version(path) == SCHEMA_VERSION == 9
    # the one change to what was recorded: tokens no model call reported are NULL ("not
    # reported"), no longer 0; the weather run's tokens are kept
    assert _one(path, tokens) == [("no-usage", None, None, None), ("weather", 31, 11, 42)]
    after = _everything4(path)
    cols = [r[1] for r in _one(path, "PRAGMA table_info(runs)")]
    unknown = [cols.index(c) for c in ("input_tokens", "output_tokens", "total_tokens")]
    name = cols.index("name")
    before["runs"] = [tuple(None if row[name] == "no-usage" and i in unknown else v
                            for i, v in enumerate(row)) for row in before["runs"]]
    assert after == before
    assert {"debug_breaks", "debug_pauses", "notes"} <= _tables(path)
    # and it records into them: a note on the weather run, gone with the run
    conn = sqlite3.connect(path)
    rid = conn.execute("SELECT id FROM runs WHERE name = 'weather'").fetchone()[0]
    conn.execute("INSERT INTO notes(run_id, seq, text, tags, created_at)"
                 " VALUES (?, 3, 'here', '[]', 0)", [rid])
    conn.execute("DELETE FROM runs WHERE id = ?", [rid])
    assert conn.execute("SELECT COUNT(*) FROM notes").fetchone() == (0,)
    conn.close()


def test_a_failed_schema_5_migration_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "v5.db"
    shutil.copyfile(FIXTURE5, path)
    before = _everything4(path)
    from tracer.db import schema

    def then_fail(conn):
        schema._add_debug_notes(conn)
        schema._unreported_tokens(conn)
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setitem(schema.MIGRATIONS, 5, then_fail)
    with pytest.raises(Exception, match="simulated"):
        schema.connect(path)
    assert _version(path) == 5
    assert _everything4(path) == before
    assert not {"debug_breaks", "debug_pauses", "notes"} & _tables(path)


# -- schema 6 -> 7: who a breakpoint or a pause belongs to (the debugger's owner) -----------
# tests/fixtures/schema6.db was recorded by looptrace at schema 6 (dbglife's base, e215f56):
# one run, a breakpoint armed from the CLI, a pause answered.
FIXTURE6 = Path(__file__).parents[1] / "fixtures" / "schema6.db"


def _cols(path: Path, table: str) -> list[str]:
    return [r[1] for r in _one(path, f"PRAGMA table_info({table})")]


def test_the_fixture_is_schema_6_without_owners():
    assert _version(FIXTURE6) == 6
    assert "owner" not in _cols(FIXTURE6, "debug_breaks")
    assert "owner" not in _cols(FIXTURE6, "debug_pauses")


def test_a_schema_6_file_is_read_as_it_is_and_migrated_in_place(tmp_path):
    from tracer.debug import channel

    path = tmp_path / "v6.db"
    shutil.copyfile(FIXTURE6, path)
    before_bytes = path.read_bytes()
    assert channel.list_paused(path) == []  # read-only: as it is
    conn = connect(path, readonly=True)
    assert [b[1:] for b in channel.armed_breaks(conn)] == [
        ("tool:get_weather", None, None, None, False)]
    conn.close()
    assert path.read_bytes() == before_bytes
    before = _everything4(path)
    connect(path).close()
    assert _version(path) == SCHEMA_VERSION == 9
    assert _cols(path, "debug_breaks")[-2:] == ["owner", "owner_only"]
    assert _cols(path, "debug_pauses")[-1] == "owner"
    assert _everything4(path) == before
    assert _one(path, "SELECT spec, owner, owner_only FROM debug_breaks") == [
        ("tool:get_weather", None, None)]
    assert _one(path, "SELECT outcome, owner FROM debug_pauses") == [("continued", None)]


def test_the_schema_7_step_is_idempotent(tmp_path):
    # (another branch may add the same columns in its own step: each keeps the other's)
    from tracer.db import schema

    path = tmp_path / "v6.db"
    shutil.copyfile(FIXTURE6, path)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE debug_pauses ADD COLUMN owner TEXT")
    schema._debug_owners(conn)
    schema._debug_owners(conn)
    assert _cols(path, "debug_pauses").count("owner") == 1
    conn.close()
