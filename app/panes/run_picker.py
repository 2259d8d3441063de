"""The run picker every page shows, and the one run they all open on.

The run a page shows is ``state.RUN`` (a plain key: kept from page to page), so the
Replay, Presenter, Timeline and Wire pages open on the same run; a deep link
(``?run=``) or a pick on any page changes it for all of them. The Replay page
keeps its picker in the sidebar (``app/panes/subagents.py``); the Presenter, whose
sidebar is hidden for the projector, and the Timeline use ``run_picker`` (the same
widget key: one picker per page).
"""

from __future__ import annotations

import streamlit as st

from .. import data
from ..data import LooptraceError, loads
from ..kit import state
from .subagents import run_labels


def _picked() -> None:
    value = st.session_state.get(state.RUN_PICK)
    if value and value != st.session_state.get(state.RUN):
        adopt(str(value))


def run_picker(path: str, current: str, *, title: str = "Run") -> None:
    """A picker of the newest runs (and ``current``, the run shown): picking one opens
    it on every page."""
    runs = data.recent_runs(path)
    if all(r.id != current for r in runs):
        try:
            runs = [loads.load_run(path, current).summary, *runs]
        except LooptraceError:  # (an unknown run: the page says so itself)
            pass
    labels = run_labels(path, runs)
    if st.session_state.get(state.RUN_PICK) != current:
        st.session_state[state.RUN_PICK] = current if current in labels else None
    st.selectbox(title, list(labels), format_func=lambda i: labels.get(i, i),
                 key=state.RUN_PICK, on_change=_picked, placeholder="Pick a run")


def adopt(run_id: str) -> None:
    """A run picked on a page (a picker, the Wire page's own): every page opens on it."""
    if run_id != st.session_state.get(state.RUN):
        state.open_run(run_id)
        st.session_state[state.STACK] = []
