"""Retention on both engines (``store_db``): ``prune`` says what it deleted and the
oldest run it kept, never deletes a run paused in the debugger, and runs on a schedule
(``tracer.db.retention.keep_pruning``, ``looptrace prune --every``) with the policy
given by flags or ``LOOPTRACE_RETAIN``."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import pytest
from cli_kit import cli
from tracer_kit import record_weather_run, rows

from tracer.db.prune import PruneResult, prune
from tracer.db.retention import Retention, keep_pruning, parse_retain
from tracer.db.schema import connect
from tracer.errors import LooptraceError


def _started(db: str, rid: str) -> float:
    return float(rows(db, "SELECT started_at FROM runs WHERE id = ?", [rid])[0][0])


def _pause(db: str, rid: str, pid: int) -> None:
    """An open pause of ``rid`` held by process ``pid`` (what the debugger writes)."""
    conn = connect(db)
    try:
        with conn:
            conn.execute("INSERT INTO debug_pauses(run_id, seq, hook, at, reason, pid,"
                         " paused_at) VALUES (?, 3, 'wrap_tool_call', 'before', 'tool', ?, ?)",
                         [rid, pid, time.time()])
    finally:
        conn.close()


def _utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


def test_prune_says_the_oldest_kept_and_never_deletes_a_paused_run(
        store_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The oldest run is paused (its process, this one, lives): --keep 0 deletes the
    two others, and says the paused one is the oldest kept."""
    a, b, c = (record_weather_run(store_db, n) for n in ("a", "b", "c"))
    _pause(store_db, a, os.getpid())
    code, out, _ = cli(capsys, "prune", "--db", store_db, "--keep", "0", "--no-vacuum")
    assert code == 0
    assert out.startswith("deleted 2 runs (2 top-level, 0 subagent runs); ")
    assert f"; oldest kept: {_utc(_started(store_db, a))}; " in out
    assert [r[0] for r in rows(store_db, "SELECT id FROM runs")] == [a]
    # the pause ends: the run goes too, and nothing is left
    conn = connect(store_db)
    with conn:
        conn.execute("UPDATE debug_pauses SET resumed_at = ?", [time.time()])
    conn.close()
    got = prune(store_db, keep=0, vacuum=False)
    assert (got.runs, got.top_level, got.oldest_kept) == (1, 1, None)
    assert {b, c}.isdisjoint(r[0] for r in rows(store_db, "SELECT id FROM runs"))


def test_a_dry_run_says_the_oldest_it_would_keep(store_db: str) -> None:
    a, b = record_weather_run(store_db, "a"), record_weather_run(store_db, "b")
    got = prune(store_db, keep=1, dry_run=True)
    assert (got.runs, got.oldest_kept) == (1, _started(store_db, b))
    assert {r[0] for r in rows(store_db, "SELECT id FROM runs")} == {a, b}


def test_on_a_schedule_each_round_prunes_what_came_since(store_db: str) -> None:
    """Two rounds an hour apart (the wait is the test's: it records a run meanwhile):
    each keeps the newest run only, and says so."""
    record_weather_run(store_db, "first")
    second = record_weather_run(store_db, "second")
    kept_first = _started(store_db, second)
    said: list[object] = []
    waits: list[float] = []
    newer: list[str] = []

    def wait(s: float) -> None:
        waits.append(s)
        newer.append(record_weather_run(store_db, "third"))

    keep_pruning(store_db, Retention(keep=1), 3600.0, say=said.append, rounds=2, sleep=wait)
    assert waits == [3600.0]
    assert [(r.runs, r.oldest_kept) for r in said if isinstance(r, PruneResult)] == [
        (1, kept_first), (1, _started(store_db, newer[0]))], said
    assert [r[0] for r in rows(store_db, "SELECT id FROM runs")] == newer


def test_a_round_that_fails_is_said_and_the_next_one_prunes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The store not there yet (a file not made, a server away): said, not fatal."""
    db = str(tmp_path / "later.db")
    said: list[object] = []

    def wait(_s: float) -> None:
        record_weather_run(db, "old")
        record_weather_run(db, "new")

    keep_pruning(db, Retention(keep=1), 60.0, say=said.append, rounds=2, sleep=wait)
    assert isinstance(said[0], LooptraceError) and "no such database" in str(said[0])
    assert isinstance(said[1], PruneResult) and said[1].runs == 1
    assert [r[0] for r in rows(db, "SELECT name FROM runs")] == ["new"]


@pytest.mark.parametrize("text,policy", [
    ("30d", Retention(30 * 86400.0, None)),
    ("10000", Retention(None, 10000)),
    ("30d,10000", Retention(30 * 86400.0, 10000)),
    (" 12h  5 ", Retention(12 * 3600.0, 5)),
])
def test_the_setting(text: str, policy: Retention) -> None:
    assert parse_retain(text) == policy


@pytest.mark.parametrize("text", ["", "thirty days", "30d,30d", "5,6", "30d;5", "-3"])
def test_a_setting_that_says_nothing_clear_is_one_error(text: str) -> None:
    with pytest.raises(LooptraceError, match="LOOPTRACE_RETAIN="):
        parse_retain(text)


def test_prune_takes_the_policy_from_the_setting(store_db: str, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    record_weather_run(store_db, "old")
    new = record_weather_run(store_db, "new")
    monkeypatch.setenv("LOOPTRACE_RETAIN", "30d,1")
    code, out, _ = cli(capsys, "prune", "--db", store_db)
    assert code == 0 and out.startswith("deleted 1 run (1 top-level, 0 subagent runs)")
    assert [r[0] for r in rows(store_db, "SELECT id FROM runs")] == [new]
    monkeypatch.setenv("LOOPTRACE_RETAIN", "a month")
    code, out, err = cli(capsys, "prune", "--db", store_db)
    assert code == 1 and out == "" and "LOOPTRACE_RETAIN='a month'" in err
    assert err.count("\n") == 1
