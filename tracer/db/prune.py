"""Retention: delete old runs, and give the space back.

``prune(path, older_than=..., keep=...)`` deletes the top-level runs started more
than ``older_than`` seconds ago, or beyond the newest ``keep`` (either limit, or
both: both then hold), each with all its subagent runs, in ONE transaction: a
prune that is interrupted (killed, the disk full) leaves the file as it was, and
every run in it whole. A run still recording (status ``running``, or a subagent
run of it) is left alone, whatever its age, unless ``include_running``; so is a run
paused in the debugger (it, or a subagent run of it, has an open pause whose process
lives: paused at an error, it reads ``error`` until it goes on). What was derived
from the runs goes with them (``tracer.db.schema``'s trigger).

Then the file shrinks: a file made by looptrace since schema 3 vacuums
incrementally (the free pages are cut off its end, quickly); an older file is
rewritten once by ``VACUUM``, which also makes it vacuum incrementally from then
on. ``vacuum=False`` skips this (the free pages are reused by later runs).

Example:
    ```python
    from tracer.db.prune import prune

    result = prune("looptrace.db", older_than=30 * 86400)
    print(result.runs, result.bytes_before, result.bytes_after)
    ```
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tracer.errors import LooptraceError, is_full, storage_errors
from tracer.vocab.words import plural

from .schema import connect
from .url import engine_of, is_url

FULL_DISK_PAGES = 16  # pages given back per step when the disk is full
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
    bytes_after: int  # a dry run: the size the prune would leave (``size_after``)
    oldest_kept: float | None = None  # the start of the oldest top-level run left (None: none)


def file_bytes(path: str | Path, conn: sqlite3.Connection | None = None) -> int:
    """The size of the file and its log; of a PostgreSQL store (``conn``), its tables'
    and indexes' in the store's schema (deleted rows count until autovacuum takes
    them)."""
    if conn is not None and engine_of(conn) != "sqlite":
        return int(conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN"
            " pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
            " AND c.relkind = 'r'").fetchone()[0])
    return sum(os.path.getsize(p) for p in (str(path), f"{path}-wal") if os.path.exists(p))


# Top-level runs: no parent, or a parent that is not in the file.
_ROOTS = "(r.parent_id IS NULL OR r.parent_id NOT IN (SELECT id FROM runs))"


# A run still recording: it, or a run below it, is ``running``.
_RECORDING = ("EXISTS (WITH RECURSIVE tree(id, status) AS (SELECT r.id, r.status UNION"
              " SELECT k.id, k.status FROM runs k JOIN tree ON k.parent_id = tree.id)"
              " SELECT 1 FROM tree WHERE status = 'running')")


def check_limits(older_than: float | None, keep: int | None) -> None:
    """One clear error for limits that say nothing, or nonsense."""
    if older_than is None and keep is None:
        msg = "say what to prune: --older-than AGE and/or --keep N (or LOOPTRACE_RETAIN)"
        raise LooptraceError(msg)
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
        msg = f"--keep {keep}: the number of runs to keep, 0 or more"
        raise LooptraceError(msg)
    if older_than is not None and not (older_than >= 0 and math.isfinite(older_than)):
        msg = f"--older-than {older_than}: an age of 0 seconds or more"
        raise LooptraceError(msg)


def doomed(conn: sqlite3.Connection, *, older_than: float | None, keep: int | None,
           now: float, include_running: bool = False) -> list[str]:
    """The top-level runs to delete (without their subagent runs). A run still
    recording (it or a subagent run of it ``running``) stays unless ``include_running``."""
    check_limits(older_than, keep)
    live = "" if include_running else f" AND NOT {_RECORDING}"
    held = set() if include_running else _paused_roots(conn)
    picked: dict[str, None] = {}
    if older_than is not None:
        for (rid,) in conn.execute(
                f"SELECT r.id FROM runs r WHERE {_ROOTS} AND r.started_at < ?{live}",
                [now - older_than]):
            picked[rid] = None
    if keep is not None:
        for (rid,) in conn.execute(
                f"SELECT r.id FROM runs r WHERE {_ROOTS}{live}"
                " AND r.id NOT IN (SELECT r.id FROM runs r WHERE " + _ROOTS +
                " ORDER BY r.started_at DESC, r.id DESC LIMIT ?)", [keep]):
            picked[rid] = None
    return [rid for rid in picked if rid not in held]


def _paused_roots(conn: sqlite3.Connection) -> set[str]:
    """The top-level runs with a run paused in the debugger under them (or paused
    themselves): an open pause (schema 6's ``debug_pauses``) whose process lives."""
    from .processes import process_gone

    try:
        rows = conn.execute("SELECT run_id, pid, paused_at FROM debug_pauses WHERE"
                            " command IS NULL AND resumed_at IS NULL").fetchall()
    except sqlite3.OperationalError:  # (a file older than schema 6: no debugger)
        return set()
    paused = {rid for rid, pid, at in rows
              if not (isinstance(pid, int) and process_gone(pid, at))}
    roots: set[str] = set()
    for rid in paused:
        seen: set[str] = set()
        cur: str | None = rid
        while cur is not None and cur not in seen:
            seen.add(cur)
            row = conn.execute("SELECT parent_id FROM runs WHERE id = ?", [cur]).fetchone()
            if row is None:
                break
            roots.add(cur)
            cur = row[0]
    return roots


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
    """Give the free pages back to the file system (see the module's docstring).

    The write-ahead log is emptied first (its pages copied into the file, the log cut
    to nothing): on a full disk that is the room the vacuum's own log needs."""
    if engine_of(conn) != "sqlite":
        return  # (PostgreSQL's autovacuum makes the room reusable; the server's own)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        try:
            # (one page per step: executescript steps it to the end, where execute stops
            # at one)
            conn.executescript("PRAGMA incremental_vacuum;")
        except sqlite3.OperationalError as exc:
            if not is_full(exc):
                raise
            # a full disk: a few pages at a time, the log emptied after each
            while conn.execute("PRAGMA freelist_count").fetchone()[0]:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.executescript(f"PRAGMA incremental_vacuum({FULL_DISK_PAGES});")
    else:
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def size_after(conn: sqlite3.Connection, *, vacuum: bool) -> int:
    """The file's size once a delete made in the open transaction is committed and the
    file shrunk (read before the commit or rollback): its pages but the free ones
    (every free page is given back; ``vacuum=False``: none is), the log emptied. A file
    rewritten by ``VACUUM`` (made before schema 3) can end a little smaller."""
    if engine_of(conn) != "sqlite":
        return file_bytes("", conn)
    page = int(conn.execute("PRAGMA page_size").fetchone()[0])
    pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
    if vacuum:
        pages -= int(conn.execute("PRAGMA freelist_count").fetchone()[0])
    return pages * page


def _delete(conn: sqlite3.Connection, pick: Callable[[], list[str]], *,
            dry_run: bool, vacuum: bool = True) -> tuple[list[str], int, int | None]:
    """Delete the runs ``pick()`` names (with their subagent runs) in one transaction;
    return them, how many runs went and, for a dry run (whose transaction is rolled
    back), the size the file would have after (``size_after``). On a full disk
    (the log cannot grow to hold the whole delete) one top-level run per transaction,
    the log emptied between them, so that it is reused instead of grown: each run
    still goes whole or not at all, and a prune stopped half-way leaves fewer runs."""
    roots: list[str] = []
    try:
        with _transaction(conn, commit=not dry_run):
            roots = pick()
            gone = delete_runs(conn, roots) if roots else 0
            after = size_after(conn, vacuum=vacuum) if dry_run and gone else None
            return roots, gone, after
    except sqlite3.OperationalError as exc:
        if dry_run or not is_full(exc) or len(roots) < 2:
            raise
    gone = 0
    for root in roots:
        with _transaction(conn, commit=True):
            gone += delete_runs(conn, [root])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return roots, gone, None


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, *, commit: bool) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if conn.in_transaction:  # (SQLite rolls back by itself on a full disk)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT" if commit else "ROLLBACK")


def prune(path: str | Path, *, older_than: float | None = None, keep: int | None = None,
          vacuum: bool = True, now: float | None = None, dry_run: bool = False,
          include_running: bool = False) -> PruneResult:
    """Delete old runs (see the module's docstring); ``dry_run`` only counts them, and
    says the size the file would have after (the delete is made, measured and rolled
    back).

    On a full disk: the log's pages are first copied into the file (a checkpoint), so
    the delete reuses the log's room instead of growing it; after the delete the log
    is cut to nothing and the file shrinks. A disk too full even for that, or a
    damaged file, is one error (``DatabaseFull``, ``NotALooptraceDatabase``) and
    nothing deleted."""
    check_limits(older_than, keep)
    if not is_url(path) and not Path(path).exists():
        msg = f"{path}: no such database"
        raise LooptraceError(msg)
    conn = connect(path, create=False, verify=not dry_run, done="nothing was deleted")
    before = file_bytes(path, conn)
    try:
        conn.isolation_level = None  # (transactions spelled out below)
        conn.execute("PRAGMA temp_store = MEMORY")  # (its temporary tables: no file)
        with storage_errors(path, done="nothing was deleted"):
            with contextlib.suppress(sqlite3.OperationalError):  # (busy: a reader)
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            roots, gone, estimate = _delete(conn, lambda: doomed(
                conn, older_than=older_than, keep=keep,
                now=time.time() if now is None else now, include_running=include_running),
                dry_run=dry_run, vacuum=vacuum)
        if gone and not dry_run:
            done = (f"the {plural(gone, 'run')} {'was' if gone == 1 else 'were'} deleted, but "
                    "the file did not shrink (its free pages are reused)")
            with storage_errors(path, done=done):
                if vacuum:
                    shrink(conn)
                else:
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        after = file_bytes(path, conn) if estimate is None else estimate
        oldest = oldest_kept(conn, roots, dry_run=dry_run)
    finally:
        conn.close()
    return PruneResult(gone, len(roots), before, after, oldest)


def oldest_kept(conn: sqlite3.Connection, doomed_roots: list[str], *,
                dry_run: bool) -> float | None:
    """The start of the oldest top-level run left after the prune (a dry run: the
    oldest not among ``doomed_roots``, which were not deleted)."""
    if not dry_run:
        row = conn.execute(f"SELECT MIN(r.started_at) FROM runs r WHERE {_ROOTS}").fetchone()
        return None if row is None or row[0] is None else float(row[0])
    gone = set(doomed_roots)
    for rid, started in conn.execute(
            f"SELECT r.id, r.started_at FROM runs r WHERE {_ROOTS} ORDER BY r.started_at"):
        if rid not in gone:
            return float(started)
    return None
