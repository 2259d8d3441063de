"""A run's counts (laps, model calls, tool calls, errors, events): kept when it ends.

The runs list shows these for every run. Counting them from ``events`` on every
read costs the size of the file; so they are counted once, when a run ends (the
writer's commit that ends it, ``looptrace import``, the schema 3 migration), into
``run_stats``, and read from there. A run still running has no final counts: the
read side counts its events, for those runs only (``live_counts``). One SQL
expression (``COUNTS``) serves both, so the two can never disagree.

Example:
    ```python
    from tracer.db.schema import connect
    from tracer.db.summaries import refresh

    conn = connect("looptrace.db")
    with conn:
        refresh(conn, ["a-run-id"])  # after writing rows of a run that has ended
    ```
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS


def _in(names: Iterable[str]) -> str:
    return ", ".join(f"'{n}'" for n in sorted(names))


# laps, model calls, tool calls, errors, events: over ``events e`` of one run.
# A tool call is its ``enter``; a tool call seen from outside (``tracer/record/ingest.py``)
# has none, and its result's ``exit`` says so: ``{"observed": ...}``.
COUNTS = (
    "COALESCE(MAX(e.lap), 0),"
    f" COALESCE(SUM(e.hook IN ({_in(MODEL_HOOKS)}) AND e.phase = 'enter'), 0),"
    f" COALESCE(SUM(e.hook IN ({_in(TOOL_HOOKS)}) AND (e.phase = 'enter' OR"
    " (e.phase = 'exit' AND e.payload LIKE '{\"observed\"%'))), 0),"
    " COALESCE(SUM(e.phase = 'error'), 0), COUNT(e.seq)"
)
COUNT_FIELDS = ("laps", "model_calls", "tool_calls", "errors", "events")

CHUNK = 500  # ids per statement (SQLite allows 32,766 parameters; keep statements small)


def chunks(ids: Sequence[str], size: int = CHUNK) -> Iterator[Sequence[str]]:
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


def refresh(conn: sqlite3.Connection, run_ids: Iterable[str | None]) -> None:
    """Count, and keep, the counts of those of ``run_ids`` that have ended (any
    status but ``running``); call it in the transaction that wrote their rows. Each
    refresh moves the run's ``gen`` on, so findings found before it are stale."""
    ids = sorted({r for r in run_ids if r is not None})
    for part in chunks(ids):
        marks = ",".join("?" * len(part))
        conn.execute(
            "INSERT INTO run_stats(run_id, laps, model_calls, tool_calls, errors, events, gen)"
            f" SELECT r.id, {COUNTS}, 1 FROM runs r LEFT JOIN events e ON e.run_id = r.id"
            f" WHERE r.id IN ({marks}) AND r.status != 'running' GROUP BY r.id"
            " ON CONFLICT(run_id) DO UPDATE SET laps = excluded.laps,"
            " model_calls = excluded.model_calls, tool_calls = excluded.tool_calls,"
            " errors = excluded.errors, events = excluded.events, gen = run_stats.gen + 1",
            list(part))


def refresh_all(conn: sqlite3.Connection) -> None:
    """Every ended run's counts (the schema 3 migration), in one pass over ``events``."""
    conn.execute(
        "INSERT OR REPLACE INTO run_stats(run_id, laps, model_calls, tool_calls, errors, events,"
        f" gen) SELECT r.id, {COUNTS}, 1 FROM runs r LEFT JOIN events e ON e.run_id = r.id"
        " WHERE r.status != 'running' GROUP BY r.id")


def live_counts(query: Any, run_ids: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Counts from ``events`` for ``run_ids`` (runs still running, or a file without
    ``run_stats``). ``query(sql, params)`` returns rows."""
    out: dict[str, tuple[int, ...]] = {}
    for part in chunks(list(run_ids)):
        marks = ",".join("?" * len(part))
        for row in query(f"SELECT e.run_id, {COUNTS} FROM events e WHERE e.run_id IN ({marks})"
                         " GROUP BY e.run_id", list(part)):
            out[row[0]] = tuple(int(v or 0) for v in row[1:])
    return out
