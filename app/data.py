"""Where the app's data comes from: the database path and cached loads.

Everything reaches the panes through ``tracer.loader.TraceDB`` and
``tracer.replay.build_replay``. Loads are cached per (database path, run id,
database stamp): the stamp changes whenever the file (or its WAL) is written,
so a run still being recorded is reloaded and a finished one never is.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

from tracer.errors import LooptraceError, NotALooptraceDatabase
from tracer.exchange import build_sample_db, sample_files
from tracer.loader import Run, RunSummary, TraceDB
from tracer.replay import Replay, build_replay

from .run_view import RunView, build_run_view
from .safe import md_escape

ENV_VAR = "LOOPTRACE_DB"


def sample_db_path() -> Path:
    """The database built from the bundled ``sample_traces/`` (rebuilt when they change)."""
    cache = Path(tempfile.gettempdir()) / f"looptrace-{os.getuid()}"
    cache.mkdir(parents=True, exist_ok=True)
    return cache / "samples.db"


@st.cache_resource(show_spinner=False)
def _built_sample_db(newest: float) -> str:
    return str(build_sample_db(sample_db_path()))


def db_path() -> str:
    """The database the app shows: ``$LOOPTRACE_DB``, else the bundled samples.

    Raises ``LooptraceError`` with a one-line message when there is nothing to show.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return env
    files = sample_files()
    if not files:
        msg = "no database given (set LOOPTRACE_DB or run `looptrace ui --db PATH`) " \
              "and no bundled sample traces found"
        raise NotALooptraceDatabase(msg)
    return _built_sample_db(max(f.stat().st_mtime for f in files))


def db_stamp(path: str) -> tuple[float, int, float]:
    """Changes whenever the database (or its write-ahead log) changes."""
    p = Path(path)
    try:
        st_main = p.stat()
    except OSError:
        return (0.0, 0, 0.0)
    try:
        wal = Path(path + "-wal").stat()
        wal_key = (wal.st_mtime, wal.st_size)
    except OSError:
        wal_key = (0.0, 0)
    return (st_main.st_mtime + wal_key[0], st_main.st_size + wal_key[1], wal_key[0])


@st.cache_data(show_spinner=False, max_entries=64)
def load_runs(path: str, stamp: Any, search: str | None = None) -> list[RunSummary]:
    with TraceDB(path) as db:
        return db.runs(search=search or None)


@st.cache_resource(show_spinner=False, max_entries=16)
def _load_view(path: str, run_id: str, stamp: Any) -> RunView:
    with TraceDB(path) as db:
        run = db.run(db.resolve(run_id))
    return build_run_view(build_replay(run))


def load_view(path: str, run_id: str) -> RunView:
    """The prepared replay of ``run_id`` (or a unique prefix of it); cached, and
    reloaded when the database changes. Raises ``RunNotFound`` for an unknown id."""
    return _load_view(path, run_id, db_stamp(path))


def load_replay(path: str, run_id: str) -> Replay:
    return load_view(path, run_id).replay


def load_run(path: str, run_id: str) -> Run:
    return load_replay(path, run_id).run


def runs(path: str, search: str | None = None) -> list[RunSummary]:
    return load_runs(path, db_stamp(path), search)


def show_error(exc: BaseException) -> None:
    """A one-line message for a LooptraceError (never a traceback), then stop."""
    text = str(exc) if isinstance(exc, LooptraceError) else f"{type(exc).__name__}: {exc}"
    st.error(md_escape(text), icon=":material/error:")
    st.stop()


def open_db() -> str:
    """The database path, validated: shows ``st.error`` and stops the page if unusable."""
    try:
        path = db_path()
        runs(path)
    except LooptraceError as exc:
        show_error(exc)
    return path
