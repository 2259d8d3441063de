"""The write side: one background writer per database file per process.

Hooks put small tuples on a queue (no I/O, no JSON on the hot path). A single
writer thread drains the queue on its own timer (every ``LINGER_S`` while
records come), serialises and redacts, and group-commits each batch with
``executemany`` in one transaction: a commit covers everything that queued since
the last one, however many runs ended meanwhile. A record is committed at most
``LINGER_S`` (plus the time of the commit itself) after it was put, so a SIGKILL
loses at most the runs that ended within that bound before it, and never part of
a run that was committed; ``flush()`` commits and waits, and ``close()`` and
interpreter exit flush too. A failure of the writer never
reaches the agent: it warns once and keeps what it can.

The writer's connection is the only one that writes the file in this process: what a
reader wants kept (``tracer.checks.saved``: a run's findings) is sent to it as a
``WriteTask`` (``Writer.submit``), run on its thread after the records put before it
are committed (datasette's ``execute_write_fn``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import logging
import os
import queue
import sqlite3
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tracer.errors import AccessDenied, DatabaseUnavailable, LooptraceError, NotALooptraceDatabase
from tracer.vocab.records import (
    Deferred,
    EventRecord,
    MessageRecord,
    RunRecord,
    StaleRunsRecord,
    WireRecord,
)
from tracer.vocab.redact import DEFAULT_REDACTOR, Redactor

from . import liveness, search
from .processes import process_gone
from .schema import connect
from .serialize import dumps, message_json, message_key, search_text, tool_call_id_of
from .spool import MB_ENV, Spool
from .state_rows import STATE_SQL, VALUES_SQL, StateRecord, state_rows
from .summaries import refresh
from .url import engine_of, is_url, safe

log = logging.getLogger("looptrace")

LINGER_S = 0.05  # the bound on how long a record waits for its commit
IDLE_TICKS = 20  # empty ticks (about a second) before the writer sleeps until woken
MAX_RETRIES = 5
SPOOL_RETRY_S = 1.0  # how often a writer tries a PostgreSQL store that was away
PG_CONNECT_S = 3  # how long a writer's connection attempt to PostgreSQL may take

_EVENT_SQL = (
    "INSERT OR REPLACE INTO events(run_id, seq, ts, hook, phase, duration_ms, middleware, lap,"
    " tool_call_id, task, payload) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)
_MESSAGE_SQL = (
    "INSERT OR REPLACE INTO messages(run_id, position, seq, msg_id, type, tool_call_id, text, data,"
    " version, key) VALUES (?,?,?,?,?,?,?,?,?,?)"
)

@functools.lru_cache(maxsize=256)
def _run_sql(fields: tuple[str, ...]) -> str:
    """The upsert of a run's ``fields`` (the parameters: its id, the fields' values,
    then ``'running'`` if ``status`` is not among them)."""
    cols = ["id", *fields]
    if "status" not in fields:
        # SQLite checks NOT NULL before the conflict: an update of an existing run
        # must still carry a status for the INSERT half.
        cols.append("status")
    sets = ", ".join(f"{c}=excluded.{c}" for c in fields) or "id=id"
    return (f"INSERT INTO runs({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            f" ON CONFLICT(id) DO UPDATE SET {sets}")


@dataclass(frozen=True, slots=True)
class WriteTask:
    """A write a reader asks of the file's one writer (``Writer.submit``).

    ``fn(conn)`` runs on the writer thread, in a transaction of its own, once the
    records put before it are committed. It is best effort: an exception it raises is
    logged at debug level and counted in ``Writer.failed_tasks``, never warned about
    (what it writes can be found again: kept findings are a cache).
    """

    fn: Callable[[sqlite3.Connection], Any]


class Rows:
    """Rows ready to commit: built once from the records, kept as they are while a
    commit fails, and added to by later batches (run updates merge in order)."""

    __slots__ = ("events", "messages", "runs", "stale", "state", "tasks", "values", "wires")

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.messages: list[tuple[Any, ...]] = []
        self.state: list[tuple[Any, ...]] = []  # (tracer.record.state_keys)
        self.values: list[tuple[Any, ...]] = []
        self.runs: dict[str, dict[str, Any]] = {}
        self.wires: list[dict[str, Any]] = []
        self.stale: list[StaleRunsRecord] = []
        self.tasks: list[WriteTask] = []

    def add(self, other: Rows) -> None:
        self.events += other.events
        self.messages += other.messages
        self.state += other.state
        self.values += other.values
        for run_id, fields in other.runs.items():
            self.runs.setdefault(run_id, {}).update(fields)
        self.wires += other.wires
        self.stale += other.stale
        self.tasks += other.tasks

    def __len__(self) -> int:
        return (len(self.events) + len(self.messages) + len(self.runs) + len(self.wires)
                + len(self.stale) + len(self.tasks) + len(self.state) + len(self.values))

    def to_json(self) -> dict[str, Any]:
        """The rows as JSON-able lists (a batch kept in the spool: ``tracer.db.spool``;
        write tasks are not kept: what they write is a cache, found again)."""
        return {"events": [list(e) for e in self.events],
                "messages": [list(m) for m in self.messages],
                "state": [list(s) for s in self.state], "values": [list(v) for v in self.values],
                "runs": self.runs, "wires": self.wires,
                "stale": [list(s) for s in self.stale]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Rows:
        rows = cls()
        rows.events = [tuple(e) for e in data.get("events", [])]
        rows.messages = [tuple(m) for m in data.get("messages", [])]
        rows.state = [tuple(s) for s in data.get("state", [])]
        rows.values = [tuple(v) for v in data.get("values", [])]
        rows.runs = dict(data.get("runs", {}))
        rows.wires = list(data.get("wires", []))
        rows.stale = [StaleRunsRecord(*s) for s in data.get("stale", [])]
        return rows

    def run_ids(self) -> set[str]:
        """Every run these rows touch."""
        ids: set[Any] = set(self.runs)
        ids.update(e[0] for e in self.events)
        ids.update(m[0] for m in self.messages)
        ids.update(w.get("run_id") for w in self.wires)
        return ids


_FLUSH = object()
_STOP = object()


class Writer:
    """Batches records for one database file and writes them on one thread."""

    def __init__(self, path: str, *, redactor: Redactor = DEFAULT_REDACTOR,
                 linger: float = LINGER_S) -> None:
        self.path = path
        self.redactor = redactor
        self.linger = linger
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._wake = threading.Event()
        self._warned: set[str] = set()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._sink: tuple[int, list[Any]] | None = None  # (thread, records) of a deferred op
        self._attempts = 0  # failed commits in a row
        self._unindexed = 0  # messages written and not yet in the search index
        self.dropped = 0
        self.failed_tasks = 0  # write tasks that raised (``submit``)
        self._reaped = False  # the runs of dead processes closed (``close_dead``)
        self._refused: LooptraceError | None = None  # a damaged or foreign file
        # A PostgreSQL store: batches it cannot take now wait on local disk
        self._spool: Spool | None = Spool(path) if is_url(path) else None
        self._spool_next = 0.0  # (monotonic) when to try sending the spool again
        # A PostgreSQL store: the lock this writer holds while it lives, named in each
        # run it records; the runs it has open; when it next looks for orphans
        self._token = liveness.new_token() if self._spool is not None else 0
        self._open: set[str] = set()
        self._reap_next = 0.0
        self.spooled = 0  # batches kept in the spool by this writer
        self.unspooled = 0  # batches it sent from the spool (its own, or claimed)
        # Open once up front so a foreign or newer-schema file fails loudly at
        # construction time (in the user's code), not silently later. A file that
        # is merely unavailable (locked, read-only) only warns: writes retry later.
        # On an event loop (an agent built inside ``async def``, ``langgraph dev``)
        # no file is touched here: the writer thread opens it, and a file it cannot
        # use is reported there, once (see ``_commit``).
        if on_event_loop():
            return
        try:
            self._conn = self._connect(busy_timeout=2.0)
            self._conn.execute("PRAGMA busy_timeout = 30000")
        except AccessDenied:
            raise  # (credentials refused: the caller's to fix, not a passing outage)
        except DatabaseUnavailable as exc:
            self.warn("open", f"looptrace cannot open {safe(path)} now ({exc}); will retry")

    # -- hot path -----------------------------------------------------------
    def put(self, item: tuple[Any, ...]) -> None:
        sink = self._sink
        if sink is not None and sink[0] == threading.get_ident():
            sink[1].append(item)  # made by a deferred operation: handled in its place
            return
        if self._thread is None or self._closed:
            if _exiting:
                # At interpreter exit (e.g. a run's finaliser after close_all) no
                # thread can start: write this record here and now.
                self._write_now(item)
                return
            if self._thread is not None and self._thread.ident == threading.get_ident():
                # The writer itself while it closes (a run's finaliser run by the
                # garbage collector on this thread): it writes this before it stops.
                self._queue.put(item)
                return
            self._start()  # first record, or recording again after close()
        self._queue.put(item)

    def defer(self, fn: Any, *args: Any) -> None:
        """Run ``fn(*args)`` on the writer thread, in order with the records put
        around it; what it puts is written in its place. Bookkeeping that needs no
        answer on the agent's thread goes here: it then costs the agent one put."""
        self.put(Deferred(fn, args))

    def submit(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        """Have ``fn(conn)`` run on the writer thread with its connection, in a
        transaction of its own, after what was put before it is committed (then
        ``flush()`` waits for it). The way a reader writes the file: one writer.

        Args:
            fn: writes through the connection it is given; best effort (``WriteTask``).
        """
        self.put(WriteTask(fn))  # type: ignore[arg-type]

    def _write_now(self, item: tuple[Any, ...]) -> None:
        """At exit: build and commit one record here, one try."""
        rows = Rows()
        self._build([item], rows)
        try:
            if rows and not self._commit(rows):
                self.dropped += len(rows)
        except Exception:  # noqa: BLE001 - never raise at exit
            self.dropped += len(rows)

    def flush(self, wait: bool = True, timeout: float = 30.0) -> None:
        """Commit what was put so far: now, and with ``wait`` block until it is done.
        (Without ``wait``, as at the end of a run, nothing: what was put is committed
        at the writer's next tick, at most ``LINGER_S`` later.)"""
        if not wait:
            # (a run's end: it is committed at the writer's next tick, within
            # ``LINGER_S``, with whatever else has queued: one commit for every run
            # that ended meanwhile, not one per run)
            return
        if self._thread is None or not self._thread.is_alive():
            return
        done = threading.Event()
        self._queue.put((_FLUSH, done))
        self._wake.set()
        done.wait(timeout)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is not None and self._thread.is_alive():
            done = threading.Event()
            self._queue.put((_STOP, done))
            self._wake.set()
            done.wait(30.0)
        if self._conn is not None:
            with contextlib.suppress(Exception):  # (searched all the same: tracer.db.search)
                if self._unindexed:
                    with self._conn:
                        search.catch_up(self._conn)
                    self._unindexed = 0
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    # -- writer thread ------------------------------------------------------
    def _start(self) -> None:
        with self._start_lock:
            old = self._thread
            if old is not None and self._closed and old.is_alive():
                old.join(30.0)  # one writer per file: let the closing one finish first
            if self._thread is None or self._closed:
                self._closed = False
                t = threading.Thread(target=self._loop, name="looptrace-writer", daemon=True)
                self._thread = t
                t.start()

    def _loop(self) -> None:
        """Tick every ``linger`` while records come; sleep in ``get`` once idle.

        While the agent is recording, a put never wakes this thread: it commits on
        its own timer (or when a run ends), so the agent's thread is not made to
        hand over the GIL in the middle of a run. After ``IDLE_TICKS`` empty ticks it blocks on the
        queue, and the next record (or a flush) wakes it.
        """
        pending = Rows()  # built, not yet committed (a failed commit is retried as is)
        idle = IDLE_TICKS  # start asleep
        while True:
            batch: list[Any] = []
            if idle >= IDLE_TICKS:
                try:  # (a spool waiting to be sent: wake to try it again; runs open in
                    # a PostgreSQL store: wake to keep this writer's lock)
                    item = self._queue.get(timeout=SPOOL_RETRY_S if self._spool_waits()
                                           else liveness.KEEP_S if self._open else None)
                except queue.Empty:
                    self._send_spool()
                    self._keep_lock()
                    continue
                batch.append(item)
                if not self._is_control(item):
                    self._wake.wait(self.linger)  # linger so one commit carries many
            else:
                self._wake.wait(self.linger)
            self._wake.clear()
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            idle = 0 if batch else idle + 1
            waiters: list[threading.Event] = []
            stop = False
            records: list[Any] = []
            for it in batch:
                if it is _FLUSH:
                    continue
                if isinstance(it, tuple) and it and it[0] is _FLUSH:
                    waiters.append(it[1])
                elif isinstance(it, tuple) and it and it[0] is _STOP:
                    waiters.append(it[1])
                    stop = True
                else:
                    records.append(it)
            if records:
                self._build(records, pending)
            if self._spool is not None:
                self._send_spool(force=bool(waiters))
            if pending:
                try:
                    if self._commit(pending):
                        pending = Rows()
                    else:
                        idle = 0  # a failed commit is retried at the next tick
                except Exception as exc:  # noqa: BLE001 - this thread must never die
                    self.dropped += len(pending)
                    pending = Rows()
                    self.warn("writer", f"looptrace writer failed: {exc!r}")
            if stop:  # what was put while this batch was written (by this thread)
                late = [it for it in self._drain() if not self._is_control(it)]
                if late:
                    self._build(late, pending)
                    try:
                        if self._commit(pending):
                            pending = Rows()
                    except Exception as exc:  # noqa: BLE001
                        self.warn("writer", f"looptrace writer failed: {exc!r}")
            if stop and pending:  # the last try failed too: say what is lost
                self.dropped += len(pending)
                self.warn("write-drop", f"looptrace dropped {len(pending)} records it could "
                           f"not write to {safe(self.path)} before closing")
            for w in waiters:
                w.set()
            if stop:
                return

    def _drain(self) -> list[Any]:
        out = []
        while True:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                return out

    @staticmethod
    def _is_control(item: Any) -> bool:
        return item is _FLUSH or (isinstance(item, tuple) and bool(item) and
                                  (item[0] is _FLUSH or item[0] is _STOP))

    def _build(self, items: list[Any], into: Rows) -> None:
        """Add the rows of ``items`` to ``into`` (never raises: a batch that cannot be
        built is dropped with a warning)."""
        try:
            into.add(self._rows(items))
        except Exception as exc:  # noqa: BLE001 - must never happen, but never crash
            self.dropped += len(items)
            self.warn("serialize", f"looptrace could not serialise a batch: {exc!r}")

    def _commit(self, rows: Rows) -> bool:
        """Commit ``rows`` in one transaction. False: try again later; after
        ``MAX_RETRIES`` failures in a row they are dropped (and True is returned)."""
        spool = self._spool
        if spool is not None and spool.pending():
            return self._keep(rows)  # (behind the batches already waiting: in order)
        try:
            conn = self._conn or self._connect()
            self._conn = conn
            self._write(conn, rows)
            self._attempts = 0
            self._reaped = True
            self._run_tasks(conn, rows.tasks)
            return True
        except LooptraceError as exc:  # a foreign or newer file: retrying cannot help
            if spool is not None and isinstance(exc, DatabaseUnavailable):
                return self._keep(rows, exc)  # (a store away, or refusing us: kept)
            self.dropped += len(rows)
            self.warn("write-drop", f"looptrace cannot record into {safe(self.path)}: {exc}")
            return True
        except Exception as exc:  # noqa: BLE001 - locked, disk full, closed ...
            if spool is not None and isinstance(exc, sqlite3.OperationalError):
                return self._keep(rows, exc)  # (the connection lost, mid-batch too)
            return self._retry(rows, exc)

    def _retry(self, rows: Rows, exc: BaseException) -> bool:
        """A commit that failed: False (try again at the next tick), or after
        ``MAX_RETRIES`` in a row, drop the rows, say so, and True."""
        attempts = self._attempts + 1
        self._attempts = attempts
        if attempts >= MAX_RETRIES:
            self._attempts = 0
            self.dropped += len(rows)
            self.warn("write-drop", f"looptrace dropped {len(rows)} records after "
                       f"{attempts} failed writes to {safe(self.path)}: {exc}")
            return True
        self.warn("write", f"looptrace could not write to {safe(self.path)} ({exc});"
                   " retrying")
        time.sleep(min(0.2 * attempts, 1.0))
        return False

    # -- the spool of a PostgreSQL store ------------------------------------------
    def _keep(self, rows: Rows, exc: BaseException | None = None) -> bool:
        """Keep ``rows`` in the spool (the store cannot take them now); True: handled."""
        spool = self._spool
        assert spool is not None
        if exc is not None:
            self._drop_conn()
            self.warn("spool", f"looptrace cannot write to {safe(self.path)} now ({exc}); "
                       f"runs are kept on local disk in {spool.folder} and sent when it is "
                       "back")
        if spool.put(rows.to_json()):
            self.spooled += 1
        else:
            self.dropped += len(rows)
            self.warn("spool-full", f"looptrace's spool for {safe(self.path)} is full "
                       f"({spool.limit // (1024 * 1024)} MB, {MB_ENV}): runs recorded from "
                       "now on are dropped until the server is back")
        self._spool_next = min(self._spool_next, time.monotonic() + SPOOL_RETRY_S)
        return True

    def _spool_waits(self) -> bool:
        return self._spool is not None and bool(self._spool.mine())

    def _send_spool(self, force: bool = False) -> None:
        """Send what waits in the spool, oldest first, each batch in one transaction
        (at most every ``SPOOL_RETRY_S`` while the store is away; ``force``: a flush
        asked for it)."""
        spool = self._spool
        if spool is None or (not force and time.monotonic() < self._spool_next):
            return
        files = spool.mine()
        if not files:
            return
        self._spool_next = time.monotonic() + SPOOL_RETRY_S
        try:
            conn = self._conn or self._connect(busy_timeout=5.0)
            self._conn = conn
            for path in files:
                data = spool.read(path)
                if data is None:
                    continue
                # (a batch claimed from a dead process: its runs still running end)
                self._write(conn, Rows.from_json(data), dead=spool.origin(path))
                spool.done(path)
                self.unspooled += 1
        except Exception as exc:  # noqa: BLE001 - still away: the next tick tries again
            self._drop_conn()
            log.debug("looptrace spool for %s not sent yet: %r", safe(self.path), exc)
            return
        self._warned.discard("spool")  # (a next outage is said again)
        log.info("looptrace sent the runs kept on local disk to %s", safe(self.path))

    def _keep_lock(self) -> None:
        """An idle writer with runs open in a PostgreSQL store: make sure its connection,
        and so its lock (``tracer.db.liveness``), is still there; connect again (taking
        the lock again) if it was lost. Never raises: the next tick tries again."""
        if not self._open or self._spool is None or self._spool_waits():
            return  # (the spool's sending connects, and takes the lock, itself)
        try:
            conn = self._conn
            if conn is not None:
                try:
                    conn.execute("SELECT 1").fetchall()
                    conn.commit()
                    return
                except Exception:  # noqa: BLE001 - lost: make it again
                    self._drop_conn()
            self._conn = self._connect(busy_timeout=5.0)
        except Exception as exc:  # noqa: BLE001 - still away
            self._drop_conn()
            log.debug("looptrace cannot keep its lock on %s: %r", safe(self.path), exc)

    def _drop_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _write(self, conn: sqlite3.Connection, rows: Rows, dead: int | None = None) -> None:
        """Write ``rows`` in one transaction (all of them or none). ``dead``: the rows
        were recorded by that process, gone (a spooled batch claimed from it): its runs
        among them still ``running`` are closed (``close_spooled``)."""
        with conn:
            # (one statement per set of columns, its text made once: SQLite's
            # prepared statement is reused for every run that sets the same ones)
            by_cols: dict[tuple[str, ...], list[list[Any]]] = {}
            stamp = self._token if dead is None else 0  # (a dead process's runs: not ours)
            for run_id, fields in rows.runs.items():
                if stamp:  # (a PostgreSQL store: the run names this writer's lock)
                    fields = {**fields, "writer": stamp}
                    status = fields.get("status", "running")
                    if status == "running":
                        self._open.add(run_id)
                    else:
                        self._open.discard(run_id)
                values = [run_id, *fields.values()]
                if "status" not in fields:
                    values.append("running")
                by_cols.setdefault(tuple(fields), []).append(values)
            for names, params in by_cols.items():
                conn.executemany(_run_sql(names), params)
            if rows.events:
                conn.executemany(_EVENT_SQL, rows.events)
            if rows.messages:
                conn.executemany(_MESSAGE_SQL, rows.messages)
            if rows.values:
                conn.executemany(VALUES_SQL, rows.values)
            if rows.state:
                conn.executemany(STATE_SQL, rows.state)
            closed = _close_stale(conn, rows.stale) if rows.stale else set()
            if dead is not None:
                closed |= close_spooled(conn, rows.run_ids(), dead)
            if not self._reaped and engine_of(conn) == "sqlite":
                # (the first commit of this writer: the file opened. Not in a
                # PostgreSQL store, which processes on other hosts share: a pid
                # there says nothing about this host's processes)
                closed |= close_dead(conn)
            elif self._token and time.monotonic() >= self._reap_next:
                # (a PostgreSQL store: the runs whose writer's lock is gone, at the
                # first commit and every REAP_S)
                self._reap_next = time.monotonic() + liveness.REAP_S
                closed |= close_orphans(conn)
            for w in rows.wires:
                cols = list(w)
                conn.execute(
                    f"INSERT INTO wire({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    list(w.values()),
                )
            # The counts of a run that has ended, kept with the rows that end it (and
            # again if rows of it come later).
            refresh(conn, rows.run_ids() | closed)
            # The search index takes the messages' text a batch at a time.
            unindexed = self._unindexed + len(rows.messages)
            if unindexed >= search.BATCH:
                search.catch_up(conn)
                unindexed = 0
        self._unindexed = unindexed

    def _connect(self, busy_timeout: float = 30.0) -> sqlite3.Connection:
        """A connection to the file, its pages checked first (``verify_pages``); a file
        refused once (damaged, or not ours) is refused again without a look. (A
        PostgreSQL store: a connection attempt gives up after ``PG_CONNECT_S``.)"""
        if self._refused is not None:
            raise self._refused
        try:
            if self._spool is not None:
                from . import pg

                conn = pg.connect(self.path, busy_timeout=busy_timeout,
                                  connect_timeout=PG_CONNECT_S)
                liveness.hold(conn, self._token)  # type: ignore[arg-type]
                return conn  # type: ignore[return-value]
            return connect(self.path, busy_timeout=busy_timeout, verify=True,
                           done="looptrace records nothing into it")
        except NotALooptraceDatabase as exc:
            self._refused = exc
            raise

    def _run_tasks(self, conn: sqlite3.Connection, tasks: list[WriteTask]) -> None:
        """Each task in a transaction of its own, once the rows are committed."""
        for task in tasks:
            try:
                with conn:
                    task.fn(conn)
            except Exception as exc:  # noqa: BLE001 - best effort (see WriteTask)
                self.failed_tasks += 1
                log.debug("looptrace write task failed on %s: %r", self.path, exc)

    def _rows(self, items: list[Any]) -> Rows:
        """Serialise and redact ``items`` into rows, running deferred operations in
        their place (each record is built once: a failed commit retries the rows)."""
        red = self.redactor
        rows = Rows()
        events, messages, runs, wires = rows.events, rows.messages, rows.runs, rows.wires
        work = deque(items)
        while work:
            it = work.popleft()
            kind = type(it)
            if kind is Deferred:
                work.extendleft(reversed(self._run_deferred(it)))
            elif kind is EventRecord:
                payload = it.payload
                if payload is None:  # (most events: the record is the row)
                    events.append(it)
                    continue
                text = red(dumps(payload))
                if text == "null":  # a lazy payload that found nothing to say
                    events.append((*it[:10], None))
                    continue
                if "looptrace_truncated" in text or '{"__repr__":' in text:
                    self._lossy(text, f"an event payload of {it.hook}")
                events.append((*it[:10], text))
            elif kind is MessageRecord:
                msg = it.message
                try:
                    raw = message_json(msg)
                    data = red(raw)
                    text = search_text(msg)
                    # (the search text is made of the message's own strings: when its
                    # JSON held no secret, neither does it)
                    if data is not raw or red._extra is not None:
                        text = red(text)
                    if "looptrace_truncated" in data or "looptrace_fallback" in data:
                        self._lossy(data, f"a {getattr(msg, 'type', '')} message")
                except Exception as exc:  # noqa: BLE001
                    data = dumps({"type": getattr(msg, "type", "unknown"),
                                  "data": {"content": f"<unserialisable message: {exc!r}>"}})
                    text = ""
                messages.append((it.run_id, it.position, it.seq, getattr(msg, "id", None),
                                 getattr(msg, "type", None), tool_call_id_of(msg), text, data,
                                 it.version, message_key(msg)))
            elif kind is RunRecord:
                fields = it.fields() if callable(it.fields) else it.fields
                if "metadata" in fields and not isinstance(fields["metadata"], str):
                    fields = {**fields, "metadata": red(dumps(fields["metadata"]))}
                if isinstance(fields.get("error"), str):
                    fields = {**fields, "error": red(fields["error"])}
                known = runs.get(it.run_id)
                if known is None:  # (a copy: the record's own dict stays as it was put)
                    runs[it.run_id] = dict(fields)
                else:
                    known.update(fields)
            elif kind is StaleRunsRecord:
                rows.stale.append(it)
            elif kind is WriteTask:
                rows.tasks.append(it)
            elif kind is StateRecord:
                row, values = state_rows(it, red)
                if row is not None:
                    rows.state.append(row)
                for _run, _hash, data in values:
                    if "looptrace_truncated" in data or '"__repr__":' in data:
                        self._lossy(data, f"the state key {it.key}")
                rows.values += values
            elif kind is WireRecord:
                w = dict(it.row)
                for k in ("request_headers", "response_headers", "request_body",
                          "response_body", "chunks"):
                    if w.get(k) is not None:
                        v = w[k] if isinstance(w[k], str) else dumps(w[k], limit=4_000_000)
                        w[k] = red(v)
                wires.append(w)
            else:
                self.warn("record", f"looptrace got a record it does not know: {kind!r}")
        return rows

    def _run_deferred(self, op: Deferred) -> list[Any]:
        """Run a deferred operation; return the records it put."""
        made: list[Any] = []
        self._sink = (threading.get_ident(), made)
        try:
            op.fn(*op.args)
        except Exception as exc:  # noqa: BLE001 - keep what it made, say what failed
            self.warn("deferred", f"looptrace failed recording: {exc!r}")
        finally:
            self._sink = None
        return made

    def _lossy(self, text: str, what: str) -> None:
        """Warn (once per kind) that a record was cut or stored through its repr."""
        if "looptrace_truncated" in text:
            self.warn("truncated", f"looptrace truncated {what} that was too large to store"
                       " whole (a marker in the record says how much was cut)")
        else:
            self.warn("fallback", f"looptrace stored part of {what} through its repr:"
                       " it is not JSON-serialisable")

    def warn(self, key: str, text: str) -> None:
        """Warn once per kind of failure (later ones only go to the debug log): the
        writer's own, and the recording side's (a hook, a layer's probe, the proxy).

        Never raises: it is called from the hooks' own error handlers, where an
        exception would reach the agent (``-W error``, a logging handler that
        fails, blockbuster refusing a write to stderr on the event loop)."""
        with contextlib.suppress(Exception):
            if key in self._warned:
                log.debug(text)
                return
            self._warned.add(key)
            log.warning(text)
        # (e.g. ``-W error``: never let a warning break anything)
        with contextlib.suppress(Exception):
            warnings.warn(text, RuntimeWarning, stacklevel=2)


def _close_stale(conn: sqlite3.Connection, items: list[StaleRunsRecord]) -> set[str]:
    """Close the runs each record names (``StaleRunsRecord``); their ids."""
    closed: set[str] = set()
    for it in items:
        found = conn.execute(
            "SELECT id, pid FROM runs WHERE thread_id = ? AND parent_id IS NULL"
            " AND status = 'running' AND id != ? AND source IN ('middleware', 'callbacks')"
            " AND (pid IS NULL OR pid != ? OR started_at < ?)",
            [it.thread_id, it.run_id, it.pid, it.since]).fetchall()
        for run_id, pid in found:
            text = it.error.format(pid=pid if pid is not None else "unknown")
            ids = [run_id]
            while ids:  # the run, and its subagents' runs left running with it
                conn.executemany("UPDATE runs SET status = 'error', error = ?, ended_at = ?"
                                 " WHERE id = ? AND status = 'running'",
                                 [(text, it.ended_at, i) for i in ids])
                closed.update(ids)
                marks = ",".join("?" * len(ids))
                ids = [r[0] for r in conn.execute(
                    f"SELECT id FROM runs WHERE parent_id IN ({marks}) AND status = 'running'",
                    ids)]
    return closed


DEAD = ("looptrace: this run has no end in the record: the process that recorded it"
        " (process {pid}) exited or was killed while it was still running")


def close_dead(conn: sqlite3.Connection, now: float | None = None) -> set[str]:
    """Close the runs left ``running`` by a process that is gone (SIGKILL, ``os._exit``,
    a crash: no exit handler ran); their ids. A run is the dead process's when its pid
    names no process on this host, a zombie, or a process that started after the run
    did (the pid was reused, as a restarted container's often is). Runs without a pid
    are left alone. (The file does not say which host recorded a run: a run recorded
    on another host or in another pid namespace sharing the file is closed too, and its
    real end, when its process records it, replaces what was said here.)"""
    found = conn.execute("SELECT id, pid, started_at FROM runs WHERE status = 'running'"
                         " AND pid IS NOT NULL").fetchall()
    dead = [(rid, pid) for rid, pid, started in found
            if isinstance(pid, int) and process_gone(pid, started)]
    if not dead:
        return set()
    ended = time.time() if now is None else now
    conn.executemany("UPDATE runs SET status = 'error', error = ?, ended_at = ?"
                     " WHERE id = ? AND status = 'running'",
                     [(DEAD.format(pid=pid), ended, rid) for rid, pid in dead])
    return {rid for rid, _ in dead}


def close_orphans(conn: sqlite3.Connection, now: float | None = None,
                  grace: float | None = None) -> set[str]:
    """Close the runs a PostgreSQL store holds ``running`` whose process is gone (no one
    holds their writer's lock: ``tracer.db.liveness.orphans``), as ``close_dead`` closes
    a dead process's runs in a SQLite file, with the same words; their ids."""
    ended = time.time() if now is None else now
    dead = liveness.orphans(conn, now=ended,
                            grace=liveness.GRACE_S if grace is None else grace)
    conn.executemany("UPDATE runs SET status = 'error', error = ?, ended_at = ?"
                     " WHERE id = ? AND status = 'running'",
                     [(DEAD.format(pid=pid if pid is not None else "unknown"), ended, rid)
                      for rid, pid in dead])
    return {rid for rid, _ in dead}


def close_spooled(conn: sqlite3.Connection, run_ids: set[Any], pid: int,
                  now: float | None = None) -> set[str]:
    """Close ``run_ids`` left ``running`` by process ``pid``, which is gone (its spooled
    rows are being sent by another process: no end of them can come); their ids. The
    runs a batch names, not every run of that pid: a shared store holds other hosts'
    processes of the same pid."""
    ids = sorted(r for r in run_ids if isinstance(r, str))
    if not ids:
        return set()
    marks = ",".join("?" * len(ids))
    found = [r[0] for r in conn.execute(
        f"SELECT id FROM runs WHERE id IN ({marks}) AND status = 'running' AND pid = ?",
        [*ids, pid])]
    ended = time.time() if now is None else now
    conn.executemany("UPDATE runs SET status = 'error', error = ?, ended_at = ?"
                     " WHERE id = ? AND status = 'running'",
                     [(DEAD.format(pid=pid), ended, rid) for rid in found])
    return set(found)


_writers: dict[tuple[str, int], Writer] = {}
_writers_lock = threading.Lock()


def on_event_loop() -> bool:
    """True on a thread that runs an asyncio event loop: no blocking call here."""
    return asyncio._get_running_loop() is not None


# (imported on an event loop, e.g. by the handler ``looptrace run`` creates at the first
# run a server configures, the working directory is not read there: it blocks)
_CWD = [os.environ.get("PWD") or "/" if on_event_loop() else os.getcwd()]


def resolve_path(path: str | os.PathLike[str]) -> str:
    """``os.path.abspath`` without a system call on an event loop (where
    ``os.getcwd`` would block, and blockbuster refuses it): there the working
    directory last seen off the loop is used."""
    p = os.fspath(path)
    if is_url(p):  # a PostgreSQL store: no path
        return p
    if p == ":memory:" or os.path.isabs(p):
        return os.path.normpath(p) if p != ":memory:" else p
    if not on_event_loop():
        _CWD[0] = os.getcwd()
    return os.path.normpath(os.path.join(_CWD[0], p))


def get_writer(path: str | os.PathLike[str], redactor: Redactor = DEFAULT_REDACTOR) -> Writer:
    """The process-wide writer for ``path`` (one per file per redactor)."""
    key = (resolve_path(path), id(redactor))
    with _writers_lock:
        w = _writers.get(key)
        if w is None or w._closed:
            w = Writer(key[0], redactor=redactor)
            _writers[key] = w
        return w


_exiting = False


def flush_all() -> None:
    """Wait until every writer of this process has written what it holds."""
    with _writers_lock:
        writers = list(_writers.values())
    for w in writers:
        w.flush()


def close_all() -> None:
    with _writers_lock:
        writers = list(_writers.values())
        _writers.clear()
    for w in writers:
        w.close()


def _at_exit() -> None:
    global _exiting
    _exiting = True
    close_all()


def _after_fork() -> None:
    # Threads and connections do not survive fork: start afresh in the child.
    global _writers_lock
    _writers.clear()
    _writers_lock = threading.Lock()


atexit.register(_at_exit)
os.register_at_fork(after_in_child=_after_fork)
