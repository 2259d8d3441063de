"""The pool of PostgreSQL connections (``tracer.db.pool``) in a long-lived process (the
app, MCP, collect): a connection given back is drawn again (no new connection, no schema
check), handed on clean (an open transaction rolled back, read-only kept read-only), and
a server that is not there is said as without a pool."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from tracer_kit import record_weather_run, rows

from tracer.db import pool
from tracer.db.schema import connect
from tracer.errors import DatabaseUnavailable
from tracer.read.loader import TraceDB


@pytest.fixture
def store(pg_url: str | None) -> Iterator[str]:
    """A new PostgreSQL store, with this process's pool turned on while the test runs."""
    if pg_url is None:
        pytest.skip("no PostgreSQL here")
    from pg_kit import fresh_store

    url = fresh_store(pg_url)
    pool.enable()
    try:
        yield url
    finally:
        pool._enabled = False
        pool.close_all()


def _backend(db: str, *, readonly: bool = False) -> int:
    conn = connect(db, readonly=readonly)
    try:
        return int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
    finally:
        conn.close()


def test_a_connection_given_back_is_drawn_again(store: str) -> None:
    """Ten requests one after another are served by one server process (one pid);
    without the pool each connect is a new one (ten pids)."""
    _backend(store)  # (the first: opened and checked, then the pool made)
    pool._pools[(store, False)].wait(30)  # (its first connection made)
    assert len({_backend(store) for _ in range(10)}) == 1
    pool._enabled = False
    assert len({_backend(store) for _ in range(10)}) == 10


def test_an_open_transaction_is_not_handed_on(store: str) -> None:
    """A writer that closes without committing: its row is not in the store, and the
    next connection drawn is in no transaction."""
    rid = record_weather_run(store, "w")
    _backend(store)
    conn = connect(store)
    conn.execute("UPDATE runs SET name = 'changed' WHERE id = ?", [rid])
    conn.close()
    again = connect(store)
    try:
        assert not again.in_transaction
        assert again.execute("SELECT name FROM runs WHERE id = ?", [rid]).fetchone()[0] == "w"
    finally:
        again.close()
    assert rows(store, "SELECT name FROM runs") == [("w",)]


def test_read_only_connections_stay_read_only(store: str) -> None:
    record_weather_run(store, "w")
    _backend(store, readonly=True)
    _backend(store, readonly=True)  # (now drawn from the read-only pool)
    conn = connect(store, readonly=True)
    try:
        with pytest.raises(sqlite3.DatabaseError, match="read-only"):
            conn.execute("UPDATE runs SET name = 'x'")
    finally:
        conn.close()
    with TraceDB(store) as db:
        assert [r.name for r in db.runs()] == ["w"]


def test_a_server_that_is_not_there_is_one_line_with_the_pool(store: str) -> None:
    gone = "postgresql://someone:hunter2@127.0.0.1:9/looptrace"
    with pytest.raises(DatabaseUnavailable) as err:
        connect(gone, readonly=True)
    text = str(err.value)
    assert "cannot reach the PostgreSQL server" in text and "hunter2" not in text
    assert "\n" not in text
