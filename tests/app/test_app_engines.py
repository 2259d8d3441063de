"""The app over each engine (``store_db``: a SQLite file, then a PostgreSQL store): the
Runs page lists the recorded run, and the replay page opens it; a password in the URL
is never on the page."""

from __future__ import annotations

import pytest
from app_kit import app_test, runs_table
from tracer_kit import record_weather_run


def test_the_runs_page_and_a_replay_on_each_engine(store_db: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rid = record_weather_run(store_db, "shown")
    shown_url = store_db
    if store_db.startswith("postgresql://"):
        # (a password in the URL: the server lets postgres in without one, so the page
        # works; the password must not reach it)
        store_db = store_db.replace("postgres@", "postgres:hunter2-pw@", 1)
    monkeypatch.setenv("LOOPTRACE_DB", store_db)
    at = app_test("runs").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = runs_table(at)
    assert list(table["name"]) == ["shown"]
    page = " ".join(str(c.value) for c in at.caption)
    assert "hunter2-pw" not in page
    if shown_url != store_db:  # (markdown-escaped: postgres\:\*\*\*\*@)
        assert "postgres\\:\\*\\*\\*\\*@127.0.0.1" in page
    at = app_test("replay", run=rid[:12]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_the_stores_stamp_moves_at_once_with_any_write(store_db: str) -> None:
    """The app's caches are keyed by ``db_stamp``: a note added must change it at once
    (PostgreSQL: the write-ahead log's position; the server's statistics it read
    before lag up to a second, and its runs count scanned 100,000 runs per page). (The
    server's own upkeep, autovacuum, moves it too: a cache reloaded, nothing wrong.)"""
    from app.data.store import db_stamp
    from tracer.db.notes import add_note

    rid = record_weather_run(store_db, "stamped")
    before = db_stamp(store_db)
    add_note(store_db, rid, "seen")
    assert db_stamp(store_db) != before
