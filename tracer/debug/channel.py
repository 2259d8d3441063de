"""The debugger's channel: the trace database's ``debug_breaks`` and ``debug_pauses``
tables (schema 6; owners: schema 7), between the agent's process and whoever drives
it (the app, the terminal of ``looptrace debug``, an MCP client).

- A breakpoint armed from outside is a row of ``debug_breaks`` (``arm``; ``clear``
  clears them). The agent's process reads them again whenever the file changed since
  it last read them (``PRAGMA data_version``; on PostgreSQL, whenever a NOTIFY said
  they changed: ``tracer.debug.wake``): a change applies to the next hook firing.
  One armed by a ``looptrace debug`` process (``owner``) applies only while it lives.
- A pause is a row of ``debug_pauses`` the agent's process writes (``open_pause``),
  with what is pending as JSON; its row id is the pause's id. The driver answers it
  (``answer``: a command and an optional edit, validated here, in the driver's
  process, so that a bad edit is one line there and nothing changes); several pauses
  of one run at once (parallel tool calls) are each answered by their id. The agent's
  process reads the answer (``poll``), goes on, and says how (``close_pause``).
- A pause is open while nobody answered it and the process that opened it lives (its
  pid, and a process start time before the pause: a reused pid is not it).

Nothing here leaves the file: no socket, nothing beyond 127.0.0.1. On a PostgreSQL
store each write also sends a NOTIFY in its transaction (``tracer.debug.wake``), so an
answer reaches a paused agent at once, from any machine.
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

from . import owner as owners
from .breakpoints import parse
from .wake import notify

__all__ = ["COMMANDS", "NotPaused", "answer", "arm", "armed_breaks", "clear", "close_pause",
           "list_paused", "open_pause", "paused_status", "pending", "poll", "release",
           "rewind", "rewind_edits", "unchanged"]

# command -> what it does
COMMANDS: dict[str, str] = {
    "continue": "go on to the next breakpoint",
    "step": ("go on to the next hook firing of this run (at a tool call before it runs: "
             "into the subagent it runs, at its first hook)"),
    "out": ("step out: run to the end of this subagent (or subgraph), breakpoints still "
            "hitting, and pause back in its parent after the call"),
    "lap": "go on to the next lap's model call",
    "run": "run to the end: clear this run's breakpoints and stop pausing it",
    "abort": "end the run here as an error, 'aborted in the debugger'",
}


def _rules() -> tuple[str, ...]:
    from tracer.checks.run import RULES

    return tuple(RULES)


def arm(db: str | Path, spec: str, *, run: str | None = None, thread: str | None = None,
        source: str = "cli", owner: str | None = None, owner_only: bool = False) -> int:
    """Arm ``spec`` for the runs recorded into ``db`` (only ``run`` and its subagents,
    or only the runs of ``thread``, when given); the new breakpoint's id. ``owner``
    (``tracer.debug.owner.token``): it applies only while that process lives, and, with
    ``owner_only``, only to the agents that process started."""
    bp = parse(spec, rules=_rules())
    conn = connect(db)
    try:
        with conn:
            cur = conn.execute(
                "INSERT INTO debug_breaks(spec, run_id, thread_id, source, created_at, owner,"
                " owner_only) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [bp.spec, run, thread, source, time.time(), owner, 1 if owner_only else 0])
            notify(conn, "breaks")
        return int(cur.lastrowid or 0)
    finally:
        conn.close()


def clear(db: str | Path, *, run: str | None = None, owner: str | None = None) -> int:
    """Clear the armed breakpoints (only those of ``run``, or of ``owner``, when given);
    how many."""
    conn = connect(db)
    try:
        with conn:
            sql = "UPDATE debug_breaks SET cleared_at = ? WHERE cleared_at IS NULL"
            args: list[Any] = [time.time()]
            if run is not None:
                sql += " AND run_id = ?"
                args.append(run)
            if owner is not None:
                sql += " AND owner = ?"
                args.append(owner)
            n = conn.execute(sql, args).rowcount
            if n:
                notify(conn, "breaks")
            return n
    finally:
        conn.close()


Armed = tuple[int, str, str | None, str | None, str | None, bool]


def armed_breaks(conn: sqlite3.Connection) -> list[Armed]:
    """(id, spec, run_id, thread_id, owner, owner_only) of every armed breakpoint whose
    owner (if it has one) lives."""
    try:
        rows = conn.execute("SELECT id, spec, run_id, thread_id, owner, owner_only FROM"
                            " debug_breaks WHERE cleared_at IS NULL ORDER BY id").fetchall()
    except sqlite3.OperationalError:  # (a schema 6 file read as it is: no owners)
        rows = conn.execute("SELECT id, spec, run_id, thread_id, NULL, 0 FROM debug_breaks"
                            " WHERE cleared_at IS NULL ORDER BY id").fetchall()
    return [(int(r[0]), str(r[1]), r[2], r[3], r[4], bool(r[5])) for r in rows
            if not owners.gone(r[4])]


def open_pause(conn: sqlite3.Connection, *, run_id: str, seq: int, hook: str, at: str,
               reason: str, pending: dict[str, Any], owner: str | None = None) -> int:
    """The agent's process: write the pause (its row id)."""
    with conn:
        cur = conn.execute(
            "INSERT INTO debug_pauses(run_id, seq, hook, at, reason, pending, pid, paused_at,"
            " owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [run_id, seq, hook, at, reason, json.dumps(pending, default=str), os.getpid(),
             time.time(), owner])
        notify(conn, f"paused:{int(cur.lastrowid or 0)}")
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
    return [r for r in rows if owners.alive(r["pid"], r["paused_at"])]


def _describe(db: str | Path, row: sqlite3.Row, with_pending: bool) -> dict[str, Any]:
    from tracer.read.loader import TraceDB

    step = None
    try:
        with TraceDB(db) as tdb:
            step = tdb.step_numbers(row["run_id"], [int(row["seq"])]).get(int(row["seq"]))
    except (LooptraceError, sqlite3.Error, KeyError, TypeError, ValueError):
        step = None
    pend = json.loads(row["pending"] or "{}")
    call = pend.get("tool_call") if isinstance(pend.get("tool_call"), dict) else None
    keys = row.keys()
    out: dict[str, Any] = {
        "pause": int(row["id"]), "run": row["run_id"], "run_name": row["run_name"],
        "parent_run": row["parent_id"], "thread": row["thread_id"], "step": step,
        "hook": row["hook"], "at": row["at"], "breakpoint": row["reason"],
        "reason": row["reason"], "paused_at": row["paused_at"], "pid": row["pid"],
        "owner": row["owner"] if "owner" in keys else None,
    }
    if call is not None and call.get("id"):
        out["tool_call_id"] = call["id"]
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


def _pick(conn: sqlite3.Connection, run: str, pause: int | None) -> sqlite3.Row:
    """The open pause ``pause`` of ``run``, or its only open pause; one line otherwise."""
    _known_run(conn, run)
    rows = _open_rows(conn, run)
    if pause is None:
        if not rows:
            raise NotPaused(f"run {run} is not paused")
        if len(rows) > 1:
            named = "; ".join(_name(r) for r in rows)
            msg = (f"run {run} has {len(rows)} pauses at once; name one (pause=ID): "
                   f"{named}")
            raise UsageError(msg)
        return rows[0]
    for r in rows:
        if int(r["id"]) == int(pause):
            return r
    raise NotPaused(_why_not(conn, run, int(pause)))


def _name(row: sqlite3.Row) -> str:
    pend = json.loads(row["pending"] or "{}")
    call = pend.get("tool_call") if isinstance(pend.get("tool_call"), dict) else {}
    what = f" {call.get('name')} {call.get('id')}" if call else ""
    return f"pause {row['id']} ({row['hook']} {row['at']}{what})"


def _why_not(conn: sqlite3.Connection, run: str, pause: int) -> str:
    """Why pause ``pause`` of ``run`` cannot be answered (it is not open)."""
    row = conn.execute("SELECT run_id, command, outcome, resumed_at, pid, paused_at FROM"
                       " debug_pauses WHERE id = ?", [pause]).fetchone()
    if row is None or row[0] != run:
        return f"run {run} has no pause {pause}"
    if row[2] == "cancelled":
        return f"pause {pause} is over: its call was cancelled"
    if row[1] is not None or row[3] is not None:
        return f"pause {pause} was answered already"
    return f"pause {pause} is over: its process ({row[4]}) is gone"


def pending(db: str | Path, run: str, pause: int | None = None) -> dict[str, Any]:
    """What run ``run`` is paused on (pause ``pause`` of it, when it has several at
    once); ``NotPaused`` (one line) if it is not."""
    conn = _reader(db)
    try:
        return _describe(db, _pick(conn, run, pause), True)
    finally:
        conn.close()


def unchanged(edit: dict[str, Any], pend: dict[str, Any]) -> bool:
    """Whether the (validated) ``edit`` would leave what is ``pend``ing as it is: an
    editor saved with no change. It is then no edit: nothing changes, nothing is
    recorded as changed."""
    kind = edit.get("kind")
    what = pend.get("kind")
    given = pend.get("message")
    msg: dict[str, Any] = given if isinstance(given, dict) else {}
    if msg.get("text_cut"):
        return False  # (the pending text was cut: the edit's is not it)
    if kind == "tool_result" and what == "tool_result":
        return bool(msg) and edit.get("text") == msg.get("text")
    if kind == "tool_args" and what == "tool_call":
        return edit.get("args") == (pend.get("tool_call") or {}).get("args")
    if kind == "reply" and what == "model_reply" and msg:
        def calls(cs: Any) -> list[tuple[Any, Any]]:
            return [(c.get("name"), c.get("args")) for c in cs or [] if isinstance(c, dict)]

        return (edit.get("text", msg.get("text")) == msg.get("text")
                and calls(edit.get("tool_calls", msg.get("tool_calls")))
                == calls(msg.get("tool_calls")))
    if what != "model_request":
        return False
    if kind == "system":
        return edit.get("text") == (pend.get("system") or "") and not pend.get("system_cut")
    if kind == "message":
        msgs = pend.get("messages") or []
        p = edit.get("position")
        return (isinstance(p, int) and 0 <= p < len(msgs) and not msgs[p].get("text_cut")
                and edit.get("text") == msgs[p].get("text"))
    if kind == "tools":
        return list(edit.get("names") or []) == list(pend.get("tools") or [])
    if kind == "settings":
        return edit.get("settings") == pend.get("settings")
    return False


def answer(db: str | Path, run: str, command: str = "continue",
           edit: Edit | dict[str, Any] | list[Any] | None = None, *,
           pause: int | None = None) -> dict[str, Any]:
    """Answer a pause of run ``run`` (``pause``: its id; needed when the run has several
    at once): ``command`` (one of ``COMMANDS``; ``out`` only where what is pending says
    where it goes back to, else ``UsageError``) and, for ``continue`` / ``step`` /
    ``out`` / ``lap``, an optional ``edit`` (``tracer.vocab.edits.Edit`` or its JSON, or a list of
    them), validated against what is pending before anything is written. An edit that
    changes nothing is no edit."""
    if command not in COMMANDS:
        msg = f"command {command!r} is not one of {', '.join(COMMANDS)}"
        raise UsageError(msg)
    conn = connect(db)
    try:
        row = _pick(conn, run, pause)
        if command == "out":
            _can_step_out(row)
        clean = None
        if edit is not None:
            if command == "abort":
                msg = "an abort takes no edit"
                raise UsageError(msg)
            pend = json.loads(row["pending"] or "{}")
            made = [e.check(pend).to_json() for e in edits_of(edit)]
            made = [m for m in made if not unchanged(m, pend)]
            clean = (None if not made else made[0] if len(made) == 1 else made)
        with conn:
            n = conn.execute(
                "UPDATE debug_pauses SET command = ?, edit = ?, commanded_at = ?"
                " WHERE id = ? AND command IS NULL AND resumed_at IS NULL",
                [command, json.dumps(clean) if clean is not None else None, time.time(),
                 row["id"]]).rowcount
            if n == 1:
                notify(conn, f"answered:{int(row['id'])}")
        if n != 1:
            raise NotPaused(_why_not(conn, run, int(row["id"])))
        return {"run": run, "pause": int(row["id"]), "command": command, "edit": clean}
    finally:
        conn.close()


def _can_step_out(row: sqlite3.Row) -> None:
    """``out`` needs somewhere to go back to: what is pending says where (``out``, set by
    the agent's process, ``tracer.debug.frames``); one line when it does not."""
    pend = json.loads(row["pending"] or "{}")
    if not isinstance(pend.get("out"), dict):
        msg = (f"pause {row['id']}: nothing to step out of (run {row['run_id']} is no "
               "subagent under a parent's call, and the pause is in no subgraph)")
        raise UsageError(msg)


def rewind_edits(edits: Edit | dict[str, Any] | list[Any] | str | None) -> list[Edit]:
    """The edits a rewind makes at its step (a fork's kinds): one edit, or several made
    at one model call in order; ``BadEdit`` / ``UsageError`` (one line) otherwise."""
    if edits is None or edits == [] or (isinstance(edits, str) and not edits.strip()):
        return []
    made = list(edits_of(edits))
    for e in made:
        if e.spec.fork is None:
            from tracer.vocab.edits import KINDS

            kinds = ", ".join(k.name for k in KINDS.values() if k.fork)
            msg = f"a rewind makes the edits a fork makes ({kinds}), not {e.kind!r}"
            raise UsageError(msg)
    if len(made) > 1 and not all(e.on_model for e in made):
        msg = ("several edits at a rewind are made at one model call: message, drop, "
               "insert, system, model (a tool or middleware edit goes alone)")
        raise UsageError(msg)
    return made


def rewind(db: str | Path, run: str, step: int,
           edits: Edit | dict[str, Any] | list[Any] | str | None = None, *,
           pause: int | None = None) -> dict[str, Any]:
    """Answer a pause of ``run`` with a rewind: a fork of the run from its step ``step``
    (1-based, as shown; at most the pause's own) with ``edits`` made there
    (``tracer.debug.rewind``). Checked here, before anything is written: a run whose
    agent cannot be built again, a step out of range or an edit a fork does not make
    is one line, and the run stays paused. The paused run stays paused."""
    if isinstance(step, bool) or not isinstance(step, int):
        msg = f"rewind: the step is a whole number from 1, not {step!r}"
        raise UsageError(msg)
    made = rewind_edits(edits)
    conn = connect(db)
    try:
        row = _pick(conn, run, pause)
        pend = json.loads(row["pending"] or "{}")
        said = pend.get("rewind") if isinstance(pend.get("rewind"), dict) else {}
        if not said.get("can"):
            why = said.get("why") or "this pause was made by a looptrace that cannot rewind"
            raise UsageError(f"cannot rewind: {why}")
        top = _describe(db, row, False).get("step")
        if step < 1 or (isinstance(top, int) and step > top):
            msg = (f"rewind: step {step} is out of range: this run is paused at step "
                   f"{top}, it rewinds to a step from 1 to {top}")
            raise UsageError(msg)
        what = {"step": step, "edits": [e.to_json() for e in made]}
        with conn:
            n = conn.execute(
                "UPDATE debug_pauses SET command = 'rewind', edit = ?, commanded_at = ?"
                " WHERE id = ? AND command IS NULL AND resumed_at IS NULL",
                [json.dumps(what), time.time(), row["id"]]).rowcount
        if n != 1:
            raise NotPaused(_why_not(conn, run, int(row["id"])))
        return {"run": run, "pause": int(row["id"]), "command": "rewind", **what}
    finally:
        conn.close()


def release(db: str | Path, pauses: list[int], command: str = "run") -> int:
    """Answer the open pauses ``pauses`` with ``command`` (no edit), whoever's run they
    are: a debugger going away lets its paused runs go on. How many it answered."""
    if not pauses:
        return 0
    conn = connect(db)
    try:
        with conn:
            marks = ", ".join("?" for _ in pauses)
            n = conn.execute(
                "UPDATE debug_pauses SET command = ?, commanded_at = ? WHERE command IS NULL"
                f" AND resumed_at IS NULL AND id IN ({marks})",
                [command, time.time(), *pauses]).rowcount
            for p in pauses:
                notify(conn, f"answered:{int(p)}")
            return int(n)
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
                     " pid, paused_at, command, edit, commanded_at, resumed_at, outcome, owner)")
        conn.execute("CREATE TABLE runs(id, name, parent_id, thread_id)")
    return conn
