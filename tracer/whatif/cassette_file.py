"""Writing a cassette file in record mode: the runs a test recorded, ADDED to it.

A cassette is a trace file (``tracer.interop.exchange``: a header line, then one line per
stored row). ``--looptrace-record`` never drops what the file holds: the runs of the
block are appended after the runs already there, whose lines stay as they were (a
pull request's diff shows the new runs and the header's run count, nothing else). A
file of an older schema is written again whole, its runs as the import migrated them
(rows of two schemas never share a file). The file is replaced atomically (a test
interrupted while writing leaves the old cassette), and processes adding to one
cassette at once (xdist workers) take turns.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from tracer.db.tables import SCHEMA_VERSION
from tracer.errors import LooptraceError
from tracer.interop.exchange import FORMAT, FORMAT_VERSION, export_lines, read_trace
from tracer.read.loader import TraceDB

__all__ = ["append_runs"]


def _run_lines(db_path: Path, run_ids: list[str]) -> tuple[list[str], int]:
    """The row lines of ``run_ids`` and their subagent runs, and how many runs."""
    lines: list[str] = []
    count = 0
    with TraceDB(db_path) as db:
        for rid in run_ids:
            out = list(export_lines(db, rid))
            count += int(json.loads(out[0])["runs"])
            lines += out[1:]
    return lines, count


def _kept(path: Path, migrated: Path | None) -> tuple[dict[str, object], list[str], int]:
    """The header, the row lines and the run count of the cassette ``path`` as they are
    (or, for an older schema, as ``migrated``, the database it was imported into,
    holds them)."""
    header, rows = read_trace(path)  # (a file that is not a trace is refused here)
    count = sum(1 for table, _ in rows if table == "runs")
    if int(header.get("schema_version", 0)) == SCHEMA_VERSION or migrated is None:
        text = path.read_text(encoding="utf-8")
        lines = [ln for ln in text.split("\n") if ln.strip()][1:]
        return header, lines, count
    with TraceDB(migrated) as db:
        roots = [r.id for r in db.runs() if r.parent_id is None]
    lines, count = _run_lines(migrated, roots)
    return {**header, "schema_version": SCHEMA_VERSION}, lines, count


def append_runs(path: Path, db_path: Path, run_ids: list[str], *,
                migrated: Path | None = None) -> None:
    """Add the runs ``run_ids`` of ``db_path`` (with their subagent runs) to the
    cassette ``path`` (created when missing). ``migrated``: the database the existing
    cassette was imported into (used only when it is of an older schema)."""
    if not run_ids:
        msg = f"{path}: no run was recorded in the block: nothing to write"
        raise LooptraceError(msg)
    new, added = _run_lines(db_path, run_ids)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.parent):  # (xdist workers adding to one cassette: one at a time)
        if path.exists():
            header, old, count = _kept(path, migrated)
        else:
            header = {"format": FORMAT, "version": FORMAT_VERSION,
                      "schema_version": SCHEMA_VERSION, "root": run_ids[0]}
            old, count = [], 0
        header = {**header, "runs": count + added}
        tmp = path.with_name(f"{path.name}.{os.getpid()}.writing")
        with tmp.open("w", encoding="utf-8") as f:
            f.write(json.dumps(header) + "\n")
            for line in (*old, *new):
                f.write(line + "\n")
        os.replace(tmp, path)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (``flock`` on the folder itself: the cassette is
    replaced, so its own inode cannot hold a lock; no lock file is left behind). Where
    there is no ``fcntl`` (Windows), no lock."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing the last descriptor releases the lock)
