"""A database's stamp: a value that changes whenever the store is written, so that a
reader caching what it read (the replay app: ``app/data/``) reloads a run still being
recorded and never reloads a finished one.

A SQLite file's stamp is its own and its write-ahead log's modification times and
sizes (a ``stat``, no connection); a PostgreSQL store's is the server's write-ahead log
insert position (any write moves it at once, with ``synchronous_commit=off`` too; a
replica: the position it replayed).
A store that cannot be read has the stamp ``(0.0, 0, 0.0)``: the reader then says why.
"""

from __future__ import annotations

from pathlib import Path

from tracer.errors import LooptraceError

from .schema import connect
from .url import is_url

Stamp = tuple[float, int, float]
NONE: Stamp = (0.0, 0, 0.0)


def stamp(path: str) -> Stamp:
    """The stamp of the database ``path`` (a file or a ``postgresql://`` URL)."""
    if is_url(path):
        return _store_stamp(path)
    try:
        main = Path(path).stat()
    except OSError:
        return NONE
    try:
        wal = Path(path + "-wal").stat()
        wal_key = (wal.st_mtime, wal.st_size)
    except OSError:
        wal_key = (0.0, 0)
    return (main.st_mtime + wal_key[0], main.st_size + wal_key[1], wal_key[0])


def _store_stamp(url: str) -> Stamp:
    try:
        conn = connect(url, readonly=True)
    except LooptraceError:
        return NONE
    try:
        # (not the runs' count and last activity: at 100,000 runs those scanned the
        # table, 60-70 ms each, a dozen times per page: 2.7 s of the Runs page's paint)
        (lsn,) = conn.execute(
            "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()"
            " ELSE pg_current_wal_insert_lsn() END - '0/0'::pg_lsn").fetchone()
        return (float(lsn or 0.0), 0, 0.0)
    finally:
        conn.close()
