"""The debugger's channel on PostgreSQL: LISTEN/NOTIFY carries its news at once.

A SQLite file is re-read when ``PRAGMA data_version`` says it changed, and a paused
agent asks for its answer every ``POLL_S``. A PostgreSQL store has neither a shared
page cache to read nor a cheap file to poll: a round trip per hook firing would be the
agent's cost. So every write to the channel (``tracer.debug.channel``: a breakpoint
armed or cleared, a pause opened or answered) sends a ``NOTIFY`` in its transaction
(``notify``; delivered at its commit, from any machine), and the agent's process keeps
one connection of its own listening (``Waker``: a daemon thread, started with the
first pause or breakpoint read, one per debugger):

- ``breaks_changed()`` is a memory read, as ``PRAGMA data_version`` is: the
  breakpoints are read again only after a NOTIFY said they changed (or after the
  listening connection was made again: what it missed meanwhile is read);
- ``wait(pause_id, timeout)`` wakes the paused agent when its answer's NOTIFY arrives;
  the caller still reads the answer from the table, and asks again after ``timeout``
  anyway (a NOTIFY can be missed only while the connection is lost);
- ``wait_paused(timeout)`` wakes the debugger's side (the ``looptrace debug`` prompt,
  the app's panel after an answer) when any run of the store pauses: it then reads
  the open pauses, rather than reading them every 50 ms.

The notifications name the store (its schema, ``current_schema()``): several stores
in one database never wake each other. The listening connection is not from a pool: a
pooled connection given back keeps its ``LISTEN``s.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

__all__ = ["CHANNEL", "Waker", "is_pg", "notify"]

CHANNEL = "looptrace_debug"
RETRY_S = 1.0  # the listening connection lost: try again after this


def is_pg(conn: Any) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def notify(conn: Any, what: str) -> None:
    """In ``conn``'s transaction: tell the listeners of this store ``what`` (``breaks``,
    ``paused:<id>``, ``answered:<id>``); nothing on a SQLite file."""
    if is_pg(conn):
        conn.execute("SELECT pg_notify(?, current_schema() || '|' || ?)", [CHANNEL, what])


class Waker:
    """One listening connection to the store ``db`` (a URL) in a daemon thread."""

    def __init__(self, db: str) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._events: dict[int, threading.Event] = {}
        self._breaks = True  # (nothing read yet)
        self._paused = threading.Event()  # a pause opened since ``clear_paused``
        self.listening = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._raw: Any = None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="looptrace-debug-listen")
                self._thread.start()

    def breaks_changed(self) -> bool:
        """Whether the breakpoints may have changed since this was last asked (True
        until the connection listens, and after it was made again)."""
        self.start()
        with self._lock:
            changed, self._breaks = self._breaks, False
        return changed

    def expect(self, pause_id: int) -> None:
        """Pause ``pause_id`` waits for its answer: its NOTIFY is kept from now on (call
        before reading the table the first time, so none falls between)."""
        self.start()
        with self._lock:
            self._events.setdefault(pause_id, threading.Event())

    def wait(self, pause_id: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for pause ``pause_id``'s answer to be
        notified (``expect`` it first); whether it was."""
        with self._lock:
            ev = self._events.setdefault(pause_id, threading.Event())
        got = ev.wait(timeout)
        ev.clear()
        return got

    def clear_paused(self) -> None:
        """Forget the pauses notified so far: call it before reading the open pauses,
        so that one opened after the read still wakes ``wait_paused``."""
        self.start()
        self._paused.clear()

    def wait_paused(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a run of the store to pause (or for
        ``wake``; at once when one paused since ``clear_paused``); whether one did."""
        return self._paused.wait(timeout)

    def wake(self) -> None:
        """End a ``wait_paused`` now (its caller has something else to look at)."""
        self._paused.set()

    def forget(self, pause_id: int) -> None:
        with self._lock:
            self._events.pop(pause_id, None)

    def _heard(self, payload: str, schema: str) -> None:
        where, _, what = payload.partition("|")
        if where != schema:
            return
        with self._lock:
            if what == "breaks":
                self._breaks = True
            elif what.startswith("paused:"):
                self._paused.set()
            elif what.startswith("answered:"):
                with contextlib.suppress(ValueError):
                    pid = int(what.split(":", 1)[1])
                    ev = self._events.get(pid)
                    if ev is not None:  # (another process's pause: not ours)
                        ev.set()

    def _run(self) -> None:
        from tracer.db.pg import open_raw

        while not self._stop.is_set():
            try:
                raw = open_raw(self.db)
                self._raw = raw
                schema = str(raw.execute("SELECT current_schema()").fetchone()[0])
                raw.execute(f"LISTEN {CHANNEL}")
                with self._lock:  # (what was missed before: read it)
                    self._breaks = True
                    self._paused.set()
                    for ev in self._events.values():
                        ev.set()
                self.listening.set()
                while not self._stop.is_set():
                    for n in raw.notifies(timeout=RETRY_S):
                        self._heard(n.payload, schema)
            except Exception:  # noqa: BLE001 - the server away: listen again later
                self.listening.clear()
                with contextlib.suppress(Exception):
                    if self._raw is not None:
                        self._raw.close()
                self._raw = None
                self._stop.wait(RETRY_S)

    def close(self) -> None:
        self._stop.set()
        raw = self._raw
        if raw is not None:
            with contextlib.suppress(Exception):
                raw.close()
        if self._thread is not None:
            self._thread.join(RETRY_S * 3)
