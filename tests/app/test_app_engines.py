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
