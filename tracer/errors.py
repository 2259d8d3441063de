"""One-line domain errors, and SQLite's errors translated into them.

Every error looptrace reports to a user is a ``LooptraceError``; the CLI (``tracer.cli``)
turns each into one line (``looptrace CMD: message``), the app into one ``st.error``.
Errors a caller may also catch as ``ValueError`` (a bad option, a malformed stream)
subclass it too. SQLite's own errors never reach a user raw: ``storage_errors`` (around
a write) and ``open_error`` (opening a file, ``tracer.db.schema.connect``) translate them.

The tree::

    LooptraceError
    ├── NotALooptraceDatabase
    ├── DatabaseUnavailable
    │   └── DatabaseFull
    ├── NewerSchemaError
    ├── TraceFileError
    │   └── OtlpFormatError (also ValueError)
    ├── RunNotFound
    ├── RunConflict
    ├── OtelUnavailable
    ├── OtlpExportError
    ├── UsageError
    │   ├── InvalidOption (also ValueError)
    │   │   └── BadEdit (also RerunError)
    │   └── PricesFileError
    ├── StepOutOfRange
    ├── StoreFailed
    ├── RerunError
    │   ├── RerunDiverged
    │   ├── BadEdit (also InvalidOption)
    │   └── CassetteMiss
    ├── MalformedStream (also ValueError)
    └── RenderError
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path


class LooptraceError(Exception):
    """Base class for every error looptrace reports to a user."""


class NotALooptraceDatabase(LooptraceError):
    """The file is not SQLite, or is SQLite written by something else."""


class DatabaseUnavailable(LooptraceError):
    """The database cannot be opened or written right now (locked, read-only, missing dir)."""


class AccessDenied(DatabaseUnavailable):
    """A PostgreSQL store's server refused the credentials (wrong password, unknown role,
    not allowed)."""


class NewerSchemaError(LooptraceError):
    """The database was written by a newer looptrace."""


class TraceFileError(LooptraceError):
    """An exported trace file is malformed."""


class RunNotFound(LooptraceError):
    """No run with that id."""


class ThreadNotFound(RunNotFound):
    """No run recorded under that thread id."""


class OtlpFormatError(TraceFileError, ValueError):
    """An OTLP request or file is malformed (not protobuf/JSON OTLP, bad ids ...)."""


class OtelUnavailable(LooptraceError):
    """The optional OpenTelemetry packages are not installed (``looptrace[otel]``)."""


class OtlpExportError(LooptraceError):
    """An OTLP endpoint refused the spans or could not be reached."""


class UsageError(LooptraceError):
    """A command's options do not fit together (or a server cannot start with them)."""


class InvalidOption(UsageError, ValueError):
    """An option has a value looptrace cannot use (an unknown provider, health filter,
    proxy mode or emulator script, a threshold out of range)."""


class PricesFileError(UsageError):
    """The user's prices file (``--prices``, ``$LOOPTRACE_PRICES``) cannot be read or
    does not fit its format (``tracer.read.cost``)."""


class NotPaused(UsageError):
    """A debugger's answer (resume, get_pending) for a run that is not paused."""


class DebugAborted(LooptraceError):
    """Raised in the agent when the debugger aborts the run ("aborted in the debugger")."""

    def __init__(self, message: str = "aborted in the debugger") -> None:
        super().__init__(message)


class DebugRaised(LooptraceError):
    """What a tool call raises when the debugger's ``raise`` edit says so."""


class RerunError(LooptraceError):
    """A run cannot be rerun or forked as asked (no recorded input, a step out of
    range, an edit the step cannot take, an agent factory that cannot be imported)."""


class BadEdit(InvalidOption, RerunError):
    """An edit (``tracer.vocab.edits.Edit``) that is not one, or does not apply where it
    is asked: one line, and nothing is written."""


class RerunDiverged(RerunError):
    """A rerun agent asked for something its record does not hold, before the fork."""


class CassetteMiss(RerunError):
    """A model call the cassette does not hold (with the diff to the nearest one)."""


class StepOutOfRange(LooptraceError):
    """A step number that the run does not have."""


class StoreFailed(LooptraceError):
    """Records could not be committed: nothing of the batch was written."""


class DatabaseFull(DatabaseUnavailable):
    """The disk (or the file's size limit) is full: nothing was written."""


class RunConflict(LooptraceError):
    """A run id to import is already stored with other content."""


class MalformedStream(LooptraceError, ValueError):
    """A provider's streamed response that cannot be reassembled (``tracer.wire``)."""


class RenderError(LooptraceError):
    """A request cannot be rendered (adapter missing or its builder changed)."""


# -- SQLite's errors, as one line each ------------------------------------------------


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's SQLITE_FULL (the disk, or the file's page limit)."""
    return isinstance(exc, sqlite3.OperationalError) and (
        getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" or "full" in str(exc))


def disk_full(path: str, exc: BaseException) -> bool:
    """Whether ``exc`` came of a full disk: SQLITE_FULL, or an I/O error (the WAL's
    shared-memory file could not be made) where the file's disk has no room left."""
    if "full" in str(exc):
        return True
    if "disk I/O error" not in str(exc):
        return False
    try:
        return shutil.disk_usage(Path(path).resolve().parent).free < 64 * 1024
    except OSError:
        return False


def open_error(path: str, exc: sqlite3.DatabaseError) -> LooptraceError:
    """What opening ``path`` as a looptrace database failed with, as one line: a full
    disk, a file in use or unwritable now, or a file that is not a usable database.

    Args:
        path: the database file.
        exc: SQLite's error while reading or setting up the file.

    Returns:
        ``DatabaseFull``, ``DatabaseUnavailable`` or ``NotALooptraceDatabase``.
    """
    if isinstance(exc, sqlite3.OperationalError):
        if disk_full(path, exc):
            return DatabaseFull(f"{path}: the disk is full ({exc}); nothing was written "
                                "(free some space, e.g. with looptrace prune, and try again)")
        return DatabaseUnavailable(f"{path} cannot be used right now ({exc})")
    return NotALooptraceDatabase(f"{path} is not a usable SQLite database ({exc})")


@contextlib.contextmanager
def storage_errors(db_path: str | Path, *, done: str = "nothing was written") -> Iterator[None]:
    """Around a write: a full disk becomes ``DatabaseFull``, a damaged file
    ``NotALooptraceDatabase`` and any other trouble ``DatabaseUnavailable``, each saying
    what the failed write left behind (``done``: SQLite rolled the transaction back).
    ``sqlite3.IntegrityError`` passes through: a key already there is the caller's
    business, not the file's."""
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
