"""The debugger's channel: the trace database's ``debug_breaks`` and ``debug_pauses``
tables (schema 6), between the agent's process and whoever drives it (the app, the
terminal of ``looptrace debug``, an MCP client).

- A breakpoint armed from outside is a row of ``debug_breaks`` (``arm``; ``clear``
  clears them). The paused process reads the armed ones every half second at most.
- A pause is a row of ``debug_pauses`` the agent's process writes (``open_pause``),
  with what is pending as JSON; the driver answers it (``answer``: a command and an
  optional edit, validated here, in the driver's process, so that a bad edit is one
  line there and nothing changes); the agent's process reads the answer (``poll``),
  goes on, and says how (``close_pause``).

Nothing here leaves the file: no socket, nothing beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from tracer.db.schema import connect
from tracer.errors import LooptraceError, NotPaused, RunNotFound, UsageError
from tracer.vocab.edits import Edit, edits_of

from .breakpoints import parse

__all__ = ["COMMANDS", "NotPaused", "answer", "arm", "armed_breaks", "clear", "close_pause",
           "list_paused", "open_pause", "paused_status", "pending", "poll"]

# command -> what it does
COMMANDS: dict[str, str] = {
    "continue": "go on to the next breakpoint",
    "step": "go on to the next hook firing of this run",
    "lap": "go on to the next lap's model call",
    "run": "run to the end: clear this run's breakpoints and stop pausing it",
    "abort": "end the run here as an error, 'aborted in the debugger'",
}


def _rules() -> tuple[str, ...]:
    from tracer.checks.run import RULES

    return tuple(RULES)


def arm(db: str | Path, spec: str, *, run: str | None = None, thread: str | None = None,
        source: str = "cli") -> int:
    """Arm ``spec`` for the runs recorded into ``db`` (only ``run`` and its subagents,
    or only the runs of ``thread``, when given); the new breakpoint's id."""
    bp = parse(spec, rules=_rules())
    conn = connect(db)
    try:
        with conn:
            cur = conn.execute(
                "INSERT INTO debug_breaks(spec, run_id, thread_id, source, created_at)"
                " VALUES (?, ?, ?, ?, ?)", [bp.spec, run, thread, source, time.time()])
        return int(cur.lastrowid or 0)
    finally:
        conn.close()


def clear(db: str | Path, *, run: str | None = None) -> int:
    """Clear the armed breakpoints (only those of ``run`` when given); how many."""
    conn = connect(db)
    try:
        with conn:
            sql = "UPDATE debug_breaks SET cleared_at = ? WHERE cleared_at IS NULL"
            args: list[Any] = [time.time()]
            if run is not None:
                sql += " AND run_id = ?"
                args.append(run)
            return conn.execute(sql, args).rowcount
    finally:
        conn.close()


def armed_breaks(conn: sqlite3.Connection) -> list[tuple[int, str, str | None, str | None]]:
    """(id, spec, run_id, thread_id) of every armed breakpoint."""
    return [(int(r[0]), str(r[1]), r[2], r[3]) for r in conn.execute(
        "SELECT id, spec, run_id, thread_id FROM debug_breaks WHERE cleared_at IS NULL"
        " ORDER BY id")]


def open_pause(conn: sqlite3.Connection, *, run_id: str, seq: int, hook: str, at: str,
               reason: str, pending: dict[str, Any]) -> int:
    """The agent's process: write the pause (its row id)."""
    with conn:
        cur = conn.execute(
            "INSERT INTO debug_pauses(run_id, seq, hook, at, reason, pending, pid, paused_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [run_id, seq, hook, at, reason, json.dumps(pending, default=str), os.getpid(),
             time.time()])
    return int(cur.lastrowid or 0)


def poll(conn: sqlite3.Connection, pause_id: int) -> tuple[str, dict[str, Any] | None] | None:
    """The agent's process: the answer to pause ``pause_id``, if there is one yet."""
    row = conn.execute("SELECT command, edit FROM debug_pauses WHERE id = ?",
                       [pause_id]).fetchone()
    if row is None or row[0] is None:
        return None
    return str(row[0]), (json.loads(row[1]) if row[1] else None)


def close_pause(conn: sqlite3.Connection, pause_id: int, outcome: str,
                command: str | None = None) -> None:
    """The agent's process: it went on (``outcome``: continued, edited, aborted,
    timeout, rejected); ``command`` fills in what a timeout decided."""
    with conn:
        conn.execute("UPDATE debug_pauses SET resumed_at = ?, outcome = ?,"
                     " command = COALESCE(command, ?) WHERE id = ?",
                     [time.time(), outcome, command, pause_id])


def _alive(pid: int | None) -> bool:
    if not pid:
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _open_rows(conn: sqlite3.Connection, run: str | None = None) -> list[sqlite3.Row]:
    conn.row_factory = sqlite3.Row
    sql = ("SELECT p.*, r.name AS run_name, r.parent_id, r.thread_id FROM debug_pauses p"
           " LEFT JOIN runs r ON r.id = p.run_id"
           " WHERE p.resumed_at IS NULL AND p.command IS NULL")
    args: list[Any] = []
    if run is not None:
        sql += " AND p.run_id = ?"
        args.append(run)
    rows = conn.execute(sql + " ORDER BY p.id", args).fetchall()
    return [r for r in rows if _alive(r["pid"])]


def _describe(db: str | Path, row: sqlite3.Row, with_pending: bool) -> dict[str, Any]:
    from tracer.read.loader import TraceDB

    step = None
    try:
        with TraceDB(db) as tdb:
            step = tdb.step_numbers(row["run_id"], [int(row["seq"])]).get(int(row["seq"]))
    except (LooptraceError, sqlite3.Error, KeyError, TypeError, ValueError):
        step = None
    out: dict[str, Any] = {
        "run": row["run_id"], "run_name": row["run_name"], "parent_run": row["parent_id"],
        "thread": row["thread_id"], "step": step, "hook": row["hook"], "at": row["at"],
        "reason": row["reason"], "paused_at": row["paused_at"], "pid": row["pid"],
    }
    pend = json.loads(row["pending"] or "{}")
    out["pending_kind"] = pend.get("kind")
    if with_pending:
        out["pending"] = pend
    return out


def list_paused(db: str | Path, *, with_pending: bool = False) -> list[dict[str, Any]]:
    """The paused runs of ``db`` (a pause whose process is gone is not listed)."""
    conn = _reader(db)
    try:
        return [_describe(db, r, with_pending) for r in _open_rows(conn)]
    finally:
        conn.close()


PAUSED = "paused"
PAUSED_AT_ERROR = "paused at an error"


def paused_status(db: str | Path) -> dict[str, str]:
    """{run id: ``PAUSED`` or ``PAUSED_AT_ERROR``} for the runs of ``db`` paused now (an
    open pause whose process is alive): what a runs list says instead of the status
    recorded (``running``; ``error`` while paused at an error, until the run goes on)."""
    conn = _reader(db)
    try:
        return {str(r["run_id"]): PAUSED_AT_ERROR if r["at"] == "error" else PAUSED
                for r in _open_rows(conn)}
    finally:
        conn.close()


def pending(db: str | Path, run: str) -> dict[str, Any]:
    """What run ``run`` is paused on; ``NotPaused`` (one line) if it is not."""
    conn = _reader(db)
    try:
        _known_run(conn, run)
        rows = _open_rows(conn, run)
        if not rows:
            raise NotPaused(f"run {run} is not paused")
        return _describe(db, rows[-1], True)
    finally:
        conn.close()


def answer(db: str | Path, run: str, command: str = "continue",
           edit: Edit | dict[str, Any] | list[Any] | None = None) -> dict[str, Any]:
    """Answer run ``run``'s pause: ``command`` (one of ``COMMANDS``) and, for
    ``continue`` / ``step`` / ``lap``, an optional ``edit`` (``tracer.vocab.edits.Edit`` or its JSON),
    validated against what is pending before anything is written."""
    if command not in COMMANDS:
        msg = f"command {command!r} is not one of {', '.join(COMMANDS)}"
        raise UsageError(msg)
    conn = connect(db)
    try:
        _known_run(conn, run)
        rows = _open_rows(conn, run)
        if not rows:
            raise NotPaused(f"run {run} is not paused")
        row = rows[-1]
        clean = None
        if edit is not None:
            if command == "abort":
                msg = "an abort takes no edit"
                raise UsageError(msg)
            pend = json.loads(row["pending"] or "{}")
            made = [e.check(pend).to_json() for e in edits_of(edit)]
            clean = made[0] if len(made) == 1 else made
        with conn:
            n = conn.execute(
                "UPDATE debug_pauses SET command = ?, edit = ?, commanded_at = ?"
                " WHERE id = ? AND command IS NULL",
                [command, json.dumps(clean) if clean is not None else None, time.time(),
                 row["id"]]).rowcount
        if n != 1:
            raise NotPaused(f"run {run} is not paused (someone else resumed it)")
        return {"run": run, "command": command, "edit": clean}
    finally:
        conn.close()


def _known_run(conn: sqlite3.Connection, run: str) -> None:
    if conn.execute("SELECT 1 FROM runs WHERE id = ?", [run]).fetchone() is None:
        raise RunNotFound(f"no run {run} in the database")


def _reader(db: str | Path) -> sqlite3.Connection:
    conn = connect(db, readonly=True)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "debug_pauses" not in tables:  # (a file older than schema 6, opened read-only)
        conn.close()
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE TABLE debug_pauses(id, run_id, seq, hook, at, reason, pending,"
                     " pid, paused_at, command, edit, commanded_at, resumed_at, outcome)")
        conn.execute("CREATE TABLE runs(id, name, parent_id, thread_id)")
    return conn
