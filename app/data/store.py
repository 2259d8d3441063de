"""The database the app shows: its path, its stamp, opening it, and the one-line error.

``$LOOPTRACE_DB`` (``looptrace ui --db`` sets it), else a database built from the
bundled sample traces. Every cached load of the seam is keyed by the database's stamp
(``tracer.db.stamp``): it changes whenever the file (or its WAL) is written, so a run
still being recorded is reloaded and a finished one never is.
"""

from __future__ import annotations

import os
from typing import Any, NoReturn

import streamlit as st

from tracer.db.stamp import Stamp, stamp
from tracer.db.url import safe
from tracer.errors import LooptraceError, NotALooptraceDatabase, RunNotFound
from tracer.interop.exchange import build_sample_db, sample_db_path, sample_files
from tracer.read.loader import TraceDB

from ..kit.safe import md_escape

__all__ = ["ENV_VAR", "LooptraceError", "RunNotFound", "Stamp", "db_path", "db_stamp",
           "open_db", "show_error", "shown_db"]

ENV_VAR = "LOOPTRACE_DB"


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


def db_stamp(path: str) -> Stamp:
    """Changes whenever the database changes (``tracer.db.stamp.stamp``)."""
    return stamp(path)


def shown_db(path: str) -> str:
    """The database as the app shows it: a URL without its password."""
    return safe(path)


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
