"""Both engines, one behaviour: every test here takes ``store_db`` (a SQLite file, then a
PostgreSQL store: ``tests/conftest.py``), records with a real agent (a scripted model),
and reads back through looptrace's own read side. Then what only a URL can get wrong:
a malformed URL, a server that is not there, credentials refused, someone else's
database, a newer schema: each one line, without the password, nothing written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tracer_kit import record_three_turn_thread, record_weather_run, rows

from tracer.db.notes import add_note
from tracer.db.prune import prune
from tracer.db.schema import SCHEMA_VERSION, connect
from tracer.db.url import safe
from tracer.errors import (
    DatabaseUnavailable,
    InvalidOption,
    LooptraceError,
    NewerSchemaError,
    NotALooptraceDatabase,
)
from tracer.interop.exchange import export_run, import_trace
from tracer.read.loader import TraceDB
from tracer.read.run_list import RunFilter
from tracer.read.threads import list_threads

PASSWORD = "s3cret-Pa55"  # noqa: S105 - a test role's, on a throwaway cluster


def test_a_run_reads_back_the_same_on_each_engine(store_db: str) -> None:
    """A two-lap weather run: its counts, its messages, its steps (the dialect layer
    translating the counts' SQL wrong gave 0 model calls on PostgreSQL)."""
    rid = record_weather_run(store_db, "w")
    with TraceDB(store_db) as db:
        (run,) = db.runs()
        assert (run.id, run.name, run.status) == (rid, "w", "completed")
        assert (run.laps, run.model_calls, run.tool_calls, run.errors) == (2, 2, 1, 0)
        trace = db.run(rid)
        kinds = [m.type for m in trace.messages]
        assert kinds == ["human", "ai", "tool", "ai"]
        assert "Sunny in Oslo" in trace.messages[2].text


def test_search_finds_a_run_by_its_text_on_each_engine(store_db: str) -> None:
    """Search (PostgreSQL: ILIKE over the trigram index) folds ASCII case as SQLite's
    LIKE does, and takes % and _ as text."""
    a = record_weather_run(store_db, "a")
    with TraceDB(store_db) as db:
        assert [r.id for r in db.runs(RunFilter(search="sunny in oslo"))] == [a]
        assert db.runs(RunFilter(search="Zanzibar")) == []
        assert db.runs(RunFilter(search="100%")) == []
        assert db.count_runs(RunFilter(search="Oslo")) == 1


def test_notes_threads_and_prune_on_each_engine(store_db: str) -> None:
    """A note on a step, a thread of three turns, then prune keeping one run: the
    pruned runs' notes go with them (the store's delete trigger)."""
    ids = record_three_turn_thread(store_db, "trip")
    assert len(ids) == 3
    add_note(store_db, ids[0], "first turn", step=2, tags=["look"])
    with TraceDB(store_db) as db:
        (thread,) = list_threads(db)
        assert (thread.thread_id, thread.turns) == ("trip", 3)
        assert [r.id for r in db.runs(RunFilter(tags=("look",)))] == [ids[0]]
    prune(store_db, keep=1)
    with TraceDB(store_db) as db:
        assert [r.id for r in db.runs()] == [ids[2]]
    assert rows(store_db, "SELECT COUNT(*) FROM notes") == [(0,)]
    assert rows(store_db, "SELECT COUNT(*) FROM events WHERE run_id = ?", [ids[0]]) == [(0,)]


def test_export_import_round_trip_keeps_the_run(store_db: str, tmp_path: Path) -> None:
    """A run exported from one engine and imported into a new SQLite file reads the
    same: same messages, same counts."""
    rid = record_weather_run(store_db, "x")
    out = export_run(store_db, rid, tmp_path / "x.jsonl")
    other = tmp_path / "other.db"
    import_trace(out, other)
    with TraceDB(store_db) as a, TraceDB(other) as b:
        ra, rb = a.run(rid), b.run(rid)
        assert [m.text for m in ra.messages] == [m.text for m in rb.messages]
        assert [(e.seq, e.hook, e.phase) for e in ra.events] == [
            (e.seq, e.hook, e.phase) for e in rb.events]
        assert a.runs()[0].model_calls == b.runs()[0].model_calls == 2


# -- what only a URL can get wrong ------------------------------------------------------

def _pg(pg_url: str | None) -> str:
    if pg_url is None:
        if os.environ.get("CI"):
            pytest.fail("no PostgreSQL: .ci/run must start one (LOOPTRACE_TEST_PG_URL)")
        pytest.skip("no PostgreSQL here")
    return pg_url


def _tables(url: str) -> list[tuple[str]]:
    return [tuple(r) for r in rows(url, "SELECT table_name FROM information_schema.tables"
                                        " WHERE table_schema = current_schema()")]


def test_a_url_never_becomes_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      pg_url: str | None) -> None:
    """The old bug: TraceMiddleware(db='postgresql://...') made a folder 'postgresql:'
    holding a SQLite file."""
    from pg_kit import fresh_store

    from tracer import TraceMiddleware

    url = fresh_store(_pg(pg_url))
    monkeypatch.chdir(tmp_path)
    TraceMiddleware(db=url, run_name="n")
    assert list(tmp_path.iterdir()) == []
    assert ("meta",) in _tables(url)


@pytest.mark.parametrize(("url", "says"), [
    ("postgresql://u:pw@host:99999/db", "Port out of range"),
    ("postgresql://u:pw@host:abc/db", "not a valid PostgreSQL URL"),
    ("postgresql://u:pw@host:5432/", "names no database"),
    ("postgresql://u:pw@host/db?sslmod=require", "unknown connection parameter 'sslmod'"),
])
def test_a_malformed_url_is_one_line_without_the_password(url: str, says: str) -> None:
    with pytest.raises(InvalidOption) as err:
        connect(url)
    text = str(err.value)
    assert says in text and "\n" not in text
    assert ":pw@" not in text and "u:****@" in text


def test_a_server_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgresql://me:{PASSWORD}@127.0.0.1:{port}/db?connect_timeout=2"
    with pytest.raises(DatabaseUnavailable) as err:
        connect(url)
    text = str(err.value)
    assert "cannot reach the PostgreSQL server" in text and PASSWORD not in text
    assert "\n" not in text


def test_wrong_credentials_are_one_line_and_nothing_is_written(pg_url: str | None) -> None:
    import psycopg

    base = _pg(pg_url)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS pw_tester")
        conn.execute(f"CREATE ROLE pw_tester LOGIN PASSWORD '{PASSWORD}'")
    bad = base.replace("postgres@", "pw_tester:wrong-one@", 1)
    try:
        psycopg.connect(bad).close()
        pytest.skip("this server lets pw_tester in without its password (.ci/pg-start's"
                    " pg_hba.conf asks for it)")
    except psycopg.OperationalError:
        pass
    with pytest.raises(DatabaseUnavailable) as err:
        connect(bad)
    text = str(err.value)
    assert "refused the credentials" in text and "wrong-one" not in text
    assert "pw_tester:****@" in text


def test_someone_elses_database_and_a_newer_schema_are_refused(pg_url: str | None) -> None:
    import psycopg
    from pg_kit import fresh_store

    foreign = fresh_store(_pg(pg_url))
    with psycopg.connect(foreign, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(NotALooptraceDatabase, match="not a looptrace one"):
        connect(foreign)
    assert _tables(foreign) == [("invoices",)]  # nothing written

    newer = fresh_store(pg_url or "")
    connect(newer).close()
    with psycopg.connect(newer, autocommit=True) as conn:
        conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'",
                     [str(SCHEMA_VERSION + 1)])
    with pytest.raises(NewerSchemaError, match="newer looptrace"):
        TraceDB(newer)


def test_safe_hides_every_password() -> None:
    assert safe("postgresql://ann:pa%40ss@db.example:5432/lt?sslmode=verify-full"
                "&password=x") == ("postgresql://ann:****@db.example:5432/lt?"
                                   "sslmode=verify-full&password=****")
    assert safe("/tmp/trace.db") == "/tmp/trace.db"


def test_an_empty_store_read_is_one_line(pg_url: str | None) -> None:
    from pg_kit import fresh_store

    url = fresh_store(_pg(pg_url))
    with pytest.raises(LooptraceError, match="empty: no looptrace runs"):
        TraceDB(url)
    assert _tables(url) == []


def test_a_child_gets_the_url_without_its_password_on_its_command_line() -> None:
    """``looptrace rerun --db`` started by the app or MCP: process listings show the
    command line, so the password goes in the child's environment."""
    from tracer.db.url import for_child
    from app.data.forks import fork_argv

    url = "postgresql://ann:pa%40ss@db:5432/lt?sslmode=require"
    argv = fork_argv("r1", 2, {"kind": "system", "text": "x"}, agent="m:f", db=url)
    assert "pa%40ss" not in " ".join(argv) and "pa@ss" not in " ".join(argv)
    assert "postgresql://ann@db:5432/lt?sslmode=require" in argv
    assert for_child(url)[1] == {"PGPASSWORD": "pa@ss"}
    assert for_child("/tmp/t.db") == ("/tmp/t.db", {})


def test_copy_moves_every_run_between_engines(store_db: str, tmp_path: Path,
                                              pg_url: str | None) -> None:
    """``looptrace copy`` from each engine to the other: runs, notes, state, debugger
    records and kept findings all arrive; copying again adds nothing."""
    from pg_kit import fresh_store

    from tracer.checks.saved import stored_health
    from tracer.cli import main

    ids = record_three_turn_thread(store_db, "trip")
    add_note(store_db, ids[1], "look here", tags=["t"])
    conn = connect(store_db)
    with conn:
        conn.execute("INSERT INTO debug_pauses(run_id, seq, hook, at, reason, pending,"
                     " paused_at, command, outcome) VALUES (?, 3, 'wrap_tool_call',"
                     " 'before', 'tool:get_weather', '{}', 1.5, 'continue', 'continued')",
                     [ids[0]])
    conn.close()
    assert main(["check", "--db", store_db]) in (0, 1)  # (keeps the findings)
    with TraceDB(store_db) as db:
        health = stored_health(db, ids)
    assert set(health) == set(ids)
    dst = fresh_store(_pg(pg_url)) if store_db.endswith(".db") else str(tmp_path / "b.db")
    assert main(["copy", "--from", store_db, "--to", dst]) == 0
    assert main(["copy", "--from", store_db, "--to", dst]) == 0  # (again: nothing added)
    with TraceDB(store_db) as a, TraceDB(dst) as b:
        ra, rb = a.runs(), b.runs()
        assert [(r.id, r.status, r.model_calls, r.tool_calls) for r in ra] == [
            (r.id, r.status, r.model_calls, r.tool_calls) for r in rb]
        assert [n.text for n in b.notes(ids[1])] == ["look here"]
        for rid in ids:
            assert [m.text for m in a.run(rid).messages] == [m.text for m in b.run(rid).messages]
    assert rows(dst, "SELECT run_id, hook, outcome FROM debug_pauses") == [
        (ids[0], "wrap_tool_call", "continued")]
    assert rows(dst, "SELECT COUNT(*) FROM run_checks") == [(3,)]
    assert rows(dst, "SELECT COUNT(*) FROM findings") == rows(store_db,
                                                              "SELECT COUNT(*) FROM findings")


def _written_by(db: str, drops: list[str]) -> None:
    """Run ``drops`` on ``db`` (either engine), not through looptrace."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as pg:
            for sql in drops:
                pg.execute(sql)
    else:
        import sqlite3

        conn = sqlite3.connect(db)
        with conn:
            for sql in drops:
                conn.execute(sql)
        conn.close()


def test_a_store_of_schema_8_gets_the_writer_column_on_each_engine(store_db: str) -> None:
    """Schema 8 -> 9 adds ``runs.writer`` (and, on PostgreSQL, the index of running runs),
    keeps the runs, and a second pass adds nothing (the step is idempotent)."""
    rid = record_weather_run(store_db, "eight")
    drops = ["DROP INDEX IF EXISTS idx_runs_running", "ALTER TABLE runs DROP COLUMN writer",
             "UPDATE meta SET value = '8' WHERE key = 'schema_version'"]
    _written_by(store_db, drops)
    assert "writer" not in _columns(store_db, "runs")
    connect(store_db).close()
    assert rows(store_db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("9",)]
    assert "writer" in _columns(store_db, "runs")
    assert rows(store_db, "SELECT id, status, writer FROM runs") == [(rid, "completed", None)]
    _written_by(store_db, ["UPDATE meta SET value = '8' WHERE key = 'schema_version'"])
    connect(store_db).close()  # (the column there already: kept)
    assert rows(store_db, "SELECT id, status FROM runs") == [(rid, "completed")]
    if store_db.startswith("postgresql://"):
        assert rows(store_db, "SELECT indexname FROM pg_indexes WHERE indexname ="
                              " 'idx_runs_running' AND schemaname = current_schema()") == [
            ("idx_runs_running",)]


def _written_by_schema_6(db: str) -> None:
    """Make ``db`` what schema 6 wrote: no owner columns (schema 7's), version 6."""
    drops = ["ALTER TABLE debug_breaks DROP COLUMN owner",
             "ALTER TABLE debug_breaks DROP COLUMN owner_only",
             "ALTER TABLE debug_pauses DROP COLUMN owner",
             "UPDATE meta SET value = '6' WHERE key = 'schema_version'"]
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as pg:
            for sql in drops:
                pg.execute(sql)
    else:
        import sqlite3

        conn = sqlite3.connect(db)
        with conn:
            for sql in drops:
                conn.execute(sql)
        conn.close()


def _columns(db: str, table: str) -> set[str]:
    if db.startswith("postgresql://"):
        return {r[0] for r in rows(db, "SELECT column_name FROM information_schema.columns "
                                       "WHERE table_name = ? AND table_schema = "
                                       "current_schema()", [table])}
    return {r[1] for r in rows(db, f"PRAGMA table_info({table})")}


def test_a_store_written_by_the_previous_schema_opens_and_migrates_on_each_engine(
        store_db: str) -> None:
    """A store of schema 6 (no debugger owners) with a run in it: opened for writing,
    it is brought to 9 in place, on either engine, and the run is all still there (a
    PostgreSQL store created before schema 7 kept its old debug tables: CREATE TABLE
    IF NOT EXISTS adds no column)."""
    assert SCHEMA_VERSION == 9
    rid = record_weather_run(store_db, "old")
    before = rows(store_db, "SELECT seq, hook, phase FROM events WHERE run_id = ? ORDER BY seq",
                  [rid])
    _written_by_schema_6(store_db)
    assert "owner" not in _columns(store_db, "debug_pauses")
    conn = connect(store_db)
    conn.close()
    assert rows(store_db, "SELECT value FROM meta WHERE key = 'schema_version'") == [("9",)]
    assert {"owner", "owner_only"} <= _columns(store_db, "debug_breaks")
    assert "owner" in _columns(store_db, "debug_pauses")
    assert rows(store_db, "SELECT seq, hook, phase FROM events WHERE run_id = ? ORDER BY seq",
                [rid]) == before
    with TraceDB(store_db) as db:
        (run,) = db.runs()
        assert (run.id, run.status, run.model_calls) == (rid, "completed", 2)
