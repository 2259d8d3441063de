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
from typing import Any, NoReturn

import streamlit as st

from tracer.check import findings_for
from tracer.errors import LooptraceError, NotALooptraceDatabase
from tracer.exchange import build_sample_db, sample_files
from tracer.findings_store import health_badge, stored_health
from tracer.fork_links import Fork, forks_among
from tracer.loader import Run, RunSummary, TraceDB
from tracer.replay import Replay, build_replay
from tracer.run_list import RunFilter

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
    """Every run (or every run with ``search`` in its messages): for small files and
    tests; the pages list ``runs_page`` or ``recent_runs``."""
    return load_runs(path, db_stamp(path), search)


@st.cache_data(show_spinner=False, max_entries=64)
def _load_page(path: str, stamp: Any, f: RunFilter, limit: int,
               offset: int) -> tuple[list[RunSummary], list[RunSummary], int]:
    with TraceDB(path) as db:
        page = db.runs(f, limit=limit, offset=offset)
        total = db.count_runs(f)
        below = db.subagent_runs([r.id for r in page]) if f.top_level else []
    return page, below, total


def runs_page(path: str, f: RunFilter, limit: int,
              offset: int) -> tuple[list[RunSummary], list[RunSummary], int]:
    """One page of the runs ``f`` selects (newest first), the subagent runs below them
    (with ``f.top_level``), and how many runs ``f`` selects in all."""
    return _load_page(path, db_stamp(path), f, limit, offset)


def recent_runs(path: str, limit: int = 200) -> list[RunSummary]:
    """The newest ``limit`` runs (for a run picker: not every run of a large file)."""
    return _load_page(path, db_stamp(path), RunFilter(), limit, 0)[0]


@st.cache_data(show_spinner=False, max_entries=64)
def _load_forks(path: str, stamp: Any, run_ids: tuple[str, ...],
                since: float | None) -> tuple[list[RunSummary], dict[str, Fork]]:
    with TraceDB(path) as db:
        forks = forks_among(db, list(run_ids), since)
        missing = [f for f in forks if f not in run_ids]
        return (db.runs(ids=missing) if missing else []), forks


def forks_below(path: str, runs: list[RunSummary]) -> tuple[list[RunSummary], dict[str, Fork]]:
    """The forks and replays of ``runs`` (``tracer.fork_links``), by run id, and those of
    them not among ``runs``: what the Runs page nests under the run they fork."""
    starts = [r.started_at for r in runs if r.started_at is not None]
    return _load_forks(path, db_stamp(path), tuple(r.id for r in runs),
                       min(starts) if starts else None)


def newest_top_level(path: str) -> RunSummary | None:
    page = _load_page(path, db_stamp(path), RunFilter(top_level=True), 1, 0)[0]
    return page[0] if page else None


@st.cache_data(show_spinner=False, max_entries=64)
def _health(path: str, stamp: Any, run_ids: tuple[str, ...]) -> dict[str, str]:
    with TraceDB(path) as db:
        out = stored_health(db, run_ids)
        rest = [r for r in run_ids if r not in out]
        if rest:  # found now (and kept, for the runs that have ended)
            for rid, found in findings_for(db, rest).items():
                out[rid] = health_badge(found)  # (the one health function)
    return out


def health(path: str, run_ids: list[str]) -> dict[str, str]:
    """The health badge of each of ``run_ids``: kept by an earlier check, or found now
    (``tracer.findings_store``); "check failed" for a run the checks cannot read."""
    try:
        return _health(path, db_stamp(path), tuple(run_ids))
    except Exception:  # noqa: BLE001 - a broken checker must not break the runs list
        return {r: "check failed" for r in run_ids}


@st.cache_data(show_spinner=False, max_entries=16)
def _validate(path: str, stamp: Any) -> None:
    TraceDB(path).close()


def show_error(exc: BaseException) -> NoReturn:
    """A one-line message for a LooptraceError (never a traceback), then stop."""
    text = str(exc) if isinstance(exc, LooptraceError) else f"{type(exc).__name__}: {exc}"
    st.error(md_escape(text), icon=":material/error:")
    st.stop()


def open_db() -> str:
    """The database path, validated: shows ``st.error`` and stops the page if unusable."""
    try:
        path = db_path()
        _validate(path, db_stamp(path))
    except LooptraceError as exc:
        show_error(exc)
    return path
