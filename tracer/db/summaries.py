"""A run's counts (laps, model calls, tool calls, errors, events): kept when it ends.

(Errors are counted as ``tracer.read.errors`` defines them: each once, ``ERRORS``.)

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


def _json(col: str, path: str) -> str:
    """``json_extract`` that gives NULL for a text that is not JSON (an imported file's)
    instead of failing the statement."""
    return f"(CASE WHEN json_valid({col}) THEN json_extract({col}, '{path}') END)"


def _seen(x: str) -> str:
    """Event ``x`` is an exception seen: an ``error``, or a layer that saw one come up."""
    return (f"({x}.phase = 'error' OR ({x}.phase = 'layer'"
            f" AND {_json(f'{x}.payload', '$.what')} = 'error'))")


_MODEL, _TOOL = _in(MODEL_HOOKS), _in(TOOL_HOOKS)
_TEXT = _json("x.payload", "$.error")


def _came_up(before: str | None, text: str) -> str:
    """A failure of the run with error ``text`` is an exception of a model or tool call
    (before seq ``before``) come up to the top: one with that text, or whose text was
    not recorded."""
    y = _json("y.payload", "$.error")
    return (f"EXISTS (SELECT 1 FROM events y WHERE y.run_id = r.id"
            f"{f' AND y.seq < {before}' if before else ''} AND y.hook IN ({_MODEL}, {_TOOL})"
            f" AND {_seen('y')} AND ({y} IS NULL OR {y} = {text}))")

# A tool result ``m`` that is a person's rejection, not a failure: its call never ran (no
# tool hook saw it) and a resume before it carried a "reject" decision (a human in the
# loop said no: ``HumanInTheLoopMiddleware`` writes an error ``ToolMessage`` for it).
_REJECTED = (
    "(NOT EXISTS (SELECT 1 FROM events t WHERE t.run_id = r.id"
    f" AND t.hook IN ({_TOOL}) AND t.tool_call_id = m.tool_call_id)"
    " AND EXISTS (SELECT 1 FROM events v WHERE v.run_id = r.id AND v.hook = 'resume'"
    " AND v.seq <= m.seq AND (v.payload LIKE '%\"type\":\"reject\"%'"
    " OR v.payload LIKE '%\"type\": \"reject\"%')))"
)

# A run's errors, each counted once (``tracer.read.errors`` says what counts, and gives
# the step of each): the tool calls that failed (a result with status "error", or the
# tool raised), the exceptions of model calls (the same one seen again by the layer
# just outside, the event before with the same text, is not counted again), and the
# run's own failure unless it is one of those come up to the top. Over run ``r``.
ERRORS = (
    "((SELECT COUNT(*) FROM ("
    f" SELECT x.tool_call_id FROM events x WHERE x.run_id = r.id AND x.hook IN ({_TOOL})"
    f" AND x.tool_call_id IS NOT NULL AND ({_seen('x')} OR (x.phase = 'exit'"
    f" AND x.payload LIKE '%error%' AND {_json('x.payload', '$.status')} = 'error'))"
    " UNION SELECT m.tool_call_id FROM messages m WHERE m.run_id = r.id AND m.type = 'tool'"
    " AND m.tool_call_id IS NOT NULL AND m.data LIKE '%error%'"
    f" AND {_json('m.data', '$.data.status')} = 'error' AND NOT {_REJECTED}) AS u)"
    f" + (SELECT COUNT(*) FROM events x WHERE x.run_id = r.id AND {_seen('x')}"
    f" AND (x.hook IN ({_MODEL}) OR (x.hook IN ({_TOOL}) AND x.tool_call_id IS NULL))"
    " AND NOT EXISTS (SELECT 1 FROM events p WHERE p.run_id = r.id AND p.seq = x.seq - 1"
    f" AND {_seen('p')} AND {_json('p.payload', '$.error')} IS {_TEXT}))"
    f" + (SELECT COUNT(*) FROM events x WHERE x.run_id = r.id AND x.hook = 'run'"
    f" AND x.phase = 'error' AND NOT {_came_up('x.seq', _TEXT)})"
    " + (r.status = 'error' AND NOT EXISTS (SELECT 1 FROM events x WHERE x.run_id = r.id"
    f" AND x.hook = 'run' AND x.phase = 'error') AND NOT {_came_up(None, 'r.error')}))"
)

# laps, model calls, tool calls, errors, events: over ``events e`` of run ``r``.
# A tool call is its ``enter``; a tool call seen from outside (``tracer/record/ingest.py``)
# has none, and its result's ``exit`` says so: ``{"observed": ...}``.
COUNTS = (
    "COALESCE(MAX(e.lap), 0),"
    f" COALESCE(SUM(e.hook IN ({_MODEL}) AND e.phase = 'enter'), 0),"
    f" COALESCE(SUM(e.hook IN ({_TOOL}) AND (e.phase = 'enter' OR"
    " (e.phase = 'exit' AND e.payload LIKE '{\"observed\"%'))), 0),"
    f" {ERRORS}, COUNT(e.seq)"
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


def recount_errors(conn: sqlite3.Connection) -> None:
    """Count every kept run's errors again (``ERRORS``; the schema 6 step: they were
    error events before). Nothing else is counted again and ``gen`` stays: the rows
    are the same, so findings kept for them still hold."""
    conn.execute(f"UPDATE run_stats SET errors = (SELECT {ERRORS} FROM runs r"
                 " WHERE r.id = run_stats.run_id)"
                 " WHERE EXISTS (SELECT 1 FROM runs r WHERE r.id = run_stats.run_id)")


def live_counts(query: Any, run_ids: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Counts from ``events`` for ``run_ids`` (runs still running, or a file without
    ``run_stats``). ``query(sql, params)`` returns rows."""
    out: dict[str, tuple[int, ...]] = {}
    for part in chunks(list(run_ids)):
        marks = ",".join("?" * len(part))
        for row in query(f"SELECT r.id, {COUNTS} FROM runs r JOIN events e ON e.run_id = r.id"
                         f" WHERE r.id IN ({marks}) GROUP BY r.id", list(part)):
            out[row[0]] = tuple(int(v or 0) for v in row[1:])
    return out
