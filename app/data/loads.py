"""One run, loaded and prepared for the replay page: cached per (database path, run id,
database stamp), so a run still being recorded is reloaded and a finished one never is.

``load_view`` gives the ``RunView`` (``app/data/run_view.py``) of a run; ``load_replay`` and
``load_run`` its replay and its record.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from tracer.read.loader import Run, TraceDB
from tracer.read.steps import Replay, build_replay

from .run_view import RunView, build_run_view
from .store import db_stamp

__all__ = ["load_replay", "load_run", "load_view"]


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
