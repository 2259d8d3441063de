"""A writer that commits on the caller's thread and says when it could not.

The tracer's background ``tracer.db.writer.Writer`` never raises: an agent must not fail
because its trace could not be written, so a failed commit is retried and, after
a few tries, dropped with a warning. A receiver is the other way round: it must
tell its client whether what it acknowledged is stored (OTLP answers 503 and the
exporter retries). ``SyncWriter`` builds and redacts records exactly as the
background writer does, but ``flush`` commits them in one transaction on the
calling thread and raises ``StoreFailed`` when that fails (disk full, read-only,
locked past its timeout): nothing of the batch is written, nothing is retried
behind the caller's back.
"""

from __future__ import annotations

import threading
from typing import Any

from tracer.db.writer import Rows, Writer
from tracer.errors import StoreFailed


class SyncWriter(Writer):
    """``Writer``'s interface (``put``, ``flush``, ``close``), committing in ``flush``."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self._items: list[Any] = []
        self._items_lock = threading.Lock()
        self.problem: str | None = None

    def put(self, item: tuple[Any, ...]) -> None:
        sink = self._sink
        if sink is not None and sink[0] == threading.get_ident():
            sink[1].append(item)  # made by a deferred operation: handled in its place
            return
        with self._items_lock:
            self._items.append(item)

    def flush(self, wait: bool = True, timeout: float = 30.0) -> None:
        """Commit every record put so far, in one transaction; raise ``StoreFailed``.
        (``wait=False``, a run's end asking the writer not to linger: nothing, the
        caller's own flush commits it with the rest.)"""
        if not wait:
            return
        with self._items_lock:
            items, self._items = self._items, []
        if not items:
            return
        rows = Rows()
        self._build(items, rows)
        if not rows:
            return
        dropped = self.dropped
        self.problem = None
        self._attempts = 0  # (never reach the background writer's "drop after N tries")
        ok = self._commit(rows)
        self._attempts = 0
        if not ok or self.dropped != dropped:
            self.dropped = dropped
            msg = f"could not write to {self.path}: {self.problem or 'commit failed'}"
            raise StoreFailed(msg)

    def discard(self) -> None:
        """Forget the records put and not committed."""
        with self._items_lock:
            self._items = []

    def close(self) -> None:
        self.discard()
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    def warn(self, key: str, text: str) -> None:
        self.problem = text  # (said by the caller, with the trace it concerns)
