"""SQLite's errors while writing, as one line each (``tracer.errors``).

``with storage_errors(path):`` around a write turns a full disk into
``DatabaseFull``, a damaged file into ``NotALooptraceDatabase`` and any other
trouble into ``DatabaseUnavailable``, each saying nothing was written (SQLite
rolled the transaction back). ``sqlite3.IntegrityError`` passes through: a key
already there is the caller's business, not the file's.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .errors import DatabaseFull, DatabaseUnavailable, NotALooptraceDatabase


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's SQLITE_FULL (the disk, or the file's page limit)."""
    return isinstance(exc, sqlite3.OperationalError) and (
        getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" or "full" in str(exc))


@contextlib.contextmanager
def storage_errors(db_path: str | Path, *, done: str = "nothing was written") -> Iterator[None]:
    """See the module's docstring; ``done`` says what the failed write left behind."""
    try:
        yield
    except sqlite3.IntegrityError:
        raise
    except sqlite3.OperationalError as exc:
        if is_full(exc):
            msg = (f"{db_path}: the disk is full ({exc}); {done} "
                   "(free some space, e.g. with looptrace prune, and try again)")
            raise DatabaseFull(msg) from None
        msg = f"{db_path} cannot be written ({exc}); {done}"
        raise DatabaseUnavailable(msg) from None
    except sqlite3.DatabaseError as exc:
        msg = f"{db_path} is damaged ({exc}); {done}"
        raise NotALooptraceDatabase(msg) from None
