"""Retention: delete old runs, and give the space back.

``prune(path, older_than=..., keep=...)`` deletes the top-level runs started more
than ``older_than`` seconds ago, or beyond the newest ``keep`` (either limit, or
both: both then hold), each with all its subagent runs, in ONE transaction: a
prune that is interrupted (killed, the disk full) leaves the file as it was, and
every run in it whole. Runs still recording (status ``running``, started within
``older_than``, or any with ``keep`` alone) are left alone. What was derived
from the runs goes with them (``tracer.schema``'s trigger).

Then the file shrinks: a file made by looptrace since schema 3 vacuums
incrementally (the free pages are cut off its end, quickly); an older file is
rewritten once by ``VACUUM``, which also makes it vacuum incrementally from then
on. ``vacuum=False`` skips this (the free pages are reused by later runs).

Example:
    ```python
    from tracer.prune import prune

    result = prune("looptrace.db", older_than=30 * 86400)
    print(result.runs, result.bytes_before, result.bytes_after)
    ```
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import LooptraceError
from .schema import connect

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """Seconds in an age such as ``30d``, ``12h``, ``90m``, ``2w``, ``45s``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if not m:
        msg = f"not an age: {text!r} (a number and a unit: s, m, h, d or w, e.g. 30d)"
        raise LooptraceError(msg)
    return float(m.group(1)) * _UNITS[m.group(2)]


@dataclass(frozen=True)
class PruneResult:
    """What ``prune`` deleted (or, with ``dry_run``, would delete), and the file's size."""

    runs: int  # runs deleted, subagent runs included
    top_level: int  # of which top-level runs
    bytes_before: int  # the file and its write-ahead log
    bytes_after: int


def file_bytes(path: str | Path) -> int:
    return sum(os.path.getsize(p) for p in (str(path), f"{path}-wal") if os.path.exists(p))


# Top-level runs: no parent, or a parent that is not in the file.
_ROOTS = "(r.parent_id IS NULL OR r.parent_id NOT IN (SELECT id FROM runs))"


def doomed(conn: sqlite3.Connection, *, older_than: float | None, keep: int | None,
           now: float) -> list[str]:
    """The top-level runs to delete (without their subagent runs)."""
    if older_than is None and keep is None:
        msg = "say what to prune: --older-than AGE and/or --keep N"
        raise LooptraceError(msg)
    picked: dict[str, None] = {}
    if older_than is not None:
        for (rid,) in conn.execute(
                f"SELECT r.id FROM runs r WHERE {_ROOTS} AND r.started_at < ?",
                [now - older_than]):
            picked[rid] = None
    if keep is not None:
        for (rid,) in conn.execute(
                f"SELECT r.id FROM runs r WHERE {_ROOTS} AND r.status != 'running'"
                " AND r.id NOT IN (SELECT r.id FROM runs r WHERE " + _ROOTS +
                " ORDER BY r.started_at DESC, r.id DESC LIMIT ?)", [max(0, int(keep))]):
            picked[rid] = None
    return list(picked)


def delete_runs(conn: sqlite3.Connection, roots: list[str]) -> int:
    """Delete ``roots`` and every run below them, with all their rows (in the
    caller's transaction). Returns how many runs went."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS prune_roots(id TEXT PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS prune_gone(id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM prune_roots")
    conn.execute("DELETE FROM prune_gone")
    conn.executemany("INSERT OR IGNORE INTO prune_roots(id) VALUES (?)", [(r,) for r in roots])
    conn.execute(
        "INSERT OR IGNORE INTO prune_gone(id) WITH RECURSIVE tree(id) AS ("
        "SELECT id FROM prune_roots UNION SELECT r.id FROM runs r JOIN tree"
        " ON r.parent_id = tree.id) SELECT id FROM tree")
    for table in ("events", "messages", "wire"):
        conn.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT id FROM prune_gone)")
    cur = conn.execute("DELETE FROM runs WHERE id IN (SELECT id FROM prune_gone)")
    return int(cur.rowcount)


def shrink(conn: sqlite3.Connection) -> None:
    """Give the free pages back to the file system (see the module's docstring)."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        # (one page per step: executescript steps it to the end, where execute stops at one)
        conn.executescript("PRAGMA incremental_vacuum;")
    else:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def prune(path: str | Path, *, older_than: float | None = None, keep: int | None = None,
          vacuum: bool = True, now: float | None = None,
          dry_run: bool = False) -> PruneResult:
    """Delete old runs (see the module's docstring); ``dry_run`` only counts them."""
    if not Path(path).exists():
        msg = f"{path}: no such database"
        raise LooptraceError(msg)
    before = file_bytes(path)
    conn = connect(path, create=False)
    try:
        conn.isolation_level = None  # (transactions spelled out below)
        conn.execute("BEGIN IMMEDIATE")
        try:
            roots = doomed(conn, older_than=older_than, keep=keep,
                           now=time.time() if now is None else now)
            gone = delete_runs(conn, roots) if roots else 0
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("ROLLBACK" if dry_run else "COMMIT")
        if gone and vacuum and not dry_run:
            shrink(conn)
    finally:
        conn.close()
    return PruneResult(gone, len(roots), before, file_bytes(path))
