"""Whether a running run's process still lives, in a PostgreSQL store that processes on
many machines share.

A SQLite file tells a dead process by its pid (``tracer.db.processes``): every writer
of it is on this host. A PostgreSQL store cannot: a pid names a process on some
machine. So each writer holds a lock for as long as it lives, and its runs say which:

- the writer takes a session-level advisory lock, ``(LIVE_KEY, token)``, on its
  connection when it connects (and again at each reconnection: after an outage or a
  dropped connection), and writes ``token`` into the ``writer`` column of every run it
  records (schema 9). It is a shared lock: no writer ever waits for another;
- a process that dies (SIGKILL, a crash, a machine gone) loses its connection, and the
  server drops its lock with it;
- a writer idle for a while (its agent paused, or waiting for a slow model) still
  holds it: it checks its connection every ``KEEP_S`` while it has runs open, and
  takes the lock again on a new connection if the old one was lost.

A run is an orphan (``orphans``) when it is ``running``, nobody holds its writer's
lock, its last event is older than ``GRACE_S`` and the server itself has been up for
longer than that: a writer reconnecting after an outage (the spool sending what it
kept: ``tracer.db.spool``) or after a restart of the server takes its lock back within
that time. The writer closes the orphans as it closes a dead process's runs in a SQLite
file (``tracer.db.writer.close_orphans``): when it first writes, then every ``REAP_S``.
A run closed wrongly (a writer away for longer than that) gets its real end when its
process records it, which replaces what was said.

Example:
    ```python
    from tracer.db.pg import connect
    from tracer.db.liveness import orphans

    conn = connect("postgresql://looptrace@db.internal/looptrace")
    print(orphans(conn))  # [(run id, pid), ...]
    ```
"""

from __future__ import annotations

import secrets
import sqlite3
import time

__all__ = ["GRACE_S", "KEEP_S", "LIVE_KEY", "REAP_S", "hold", "new_token", "orphans"]

LIVE_KEY = 0x6C697665  # "live": the first key of every writer's lock
GRACE_S = 120.0  # how long a run without its writer's lock is given to get it back
KEEP_S = 30.0  # how often an idle writer with runs open checks its connection
REAP_S = 60.0  # how often a writer looks for orphans (and when it first writes)

_ORPHANS_SQL = (
    "SELECT r.id, r.pid FROM runs r WHERE r.status = 'running' AND r.writer IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND l.classid::bigint = ? AND l.objid::bigint = r.writer AND l.objsubid = 2)"
    " AND COALESCE((SELECT e.ts FROM events e WHERE e.run_id = r.id"
    " ORDER BY e.seq DESC LIMIT 1), r.started_at, 0) < ?"
    " AND EXTRACT(EPOCH FROM now() - pg_postmaster_start_time()) > ?"
)


def new_token() -> int:
    """A writer's token: the second key of its lock (a positive 31-bit number; two
    writers drawing the same one only keep each other's runs open a while longer)."""
    return secrets.randbelow(2**31 - 2) + 1


def hold(conn: sqlite3.Connection, token: int) -> None:
    """Take the writer's lock ``token`` on ``conn`` (a PostgreSQL store's connection),
    for as long as the connection lives."""
    conn.execute("SELECT pg_advisory_lock_shared(?, ?)", [LIVE_KEY, token])
    conn.commit()


def orphans(conn: sqlite3.Connection, *, now: float | None = None,
            grace: float = GRACE_S) -> list[tuple[str, int | None]]:
    """The runs of a PostgreSQL store left ``running`` by a process that is gone: their
    ids and pids (see the module's docstring)."""
    now = time.time() if now is None else now
    found = conn.execute(_ORPHANS_SQL, [LIVE_KEY, now - grace, grace]).fetchall()
    return [(str(rid), pid if isinstance(pid, int) else None) for rid, pid in found]
