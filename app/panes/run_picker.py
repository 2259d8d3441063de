"""The run picker every page shows, and the one run they all open on.

The run a page shows is ``state.RUN`` (a plain key: kept from page to page), so the
Replay, Presenter, Timeline and Wire pages open on the same run (``choose_run``,
``load_chosen``); a deep link
(``?run=``) or a pick on any page changes it for all of them. The Replay page
keeps its picker in the sidebar (``app/panes/subagents.py``); the Presenter, whose
sidebar is hidden for the projector, and the Timeline use ``run_picker`` (the same
widget key: one picker per page).
"""

from __future__ import annotations

import streamlit as st

from .. import navigation
from ..data import loads
from ..data.run_view import RunView
from ..data.runs import RunFilter, RunSummary, find_run, newest_top_level, recent_runs, runs_page
from ..data.steps import plural
from ..data.store import LooptraceError, RunNotFound, show_error
from ..kit import state
from ..kit.safe import md_escape
from .paged_picker import paged_run_picker
from .subagents import picked, run_labels


def _picked() -> None:
    value = st.session_state.get(state.RUN_PICK)
    if value and value != st.session_state.get(state.RUN):
        adopt(str(value))


def run_picker(path: str, current: str, *, title: str = "Run") -> None:
    """A picker of the newest runs (and ``current``, the run shown): picking one opens
    it on every page."""
    runs = recent_runs(path)
    if all(r.id != current for r in runs):
        try:
            runs = [loads.load_run(path, current).summary, *runs]
        except LooptraceError:  # (an unknown run: the page says so itself)
            pass
    labels = run_labels(path, runs)
    picked(current, labels)
    st.selectbox(title, list(labels), format_func=lambda i: labels.get(i, i),
                 key=state.RUN_PICK, on_change=_picked, placeholder="Pick a run")


def adopt(run_id: str) -> None:
    """A run picked on a page (a picker, the Wire page's own): every page opens on it."""
    if run_id != st.session_state.get(state.RUN):
        state.open_run(run_id)
        st.session_state[state.STACK] = []


def choose_run(path: str) -> str | None:
    """The run to show: the state (after a deep link), else the newest top-level run."""
    current = st.session_state.get(state.RUN)
    if current:
        return str(current)
    newest = newest_top_level(path)  # (one row: not every run of the file)
    if newest is None:
        return None
    st.session_state[state.RUN] = newest.id
    st.session_state[state.NO_STEP] = True
    return newest.id


def load_chosen(path: str) -> RunView:
    """The run view of the run every page opens on (``choose_run``); an unknown run is a clear message, not a traceback."""
    run_id = choose_run(path)
    if run_id is None:
        st.info("No runs recorded in this database yet. Record one with TraceMiddleware, "
                "or run `looptrace demo`.", icon=":material/info:")
        st.stop()
    try:
        view = loads.load_view(path, run_id)
    except RunNotFound as exc:
        st.error(f"{md_escape(str(exc))}. Pick a run on the Runs page.", icon=":material/error:")
        st.page_link(navigation.page("runs"), label="Runs", icon=":material/list:")
        st.stop()
    except LooptraceError as exc:
        show_error(exc)
    if view.replay.run.id != run_id:  # a prefix was given
        st.session_state[state.RUN] = view.replay.run.id
    if st.session_state.pop(state.NO_STEP, False) and view.replay.run.summary.status == "running" and len(view.replay):
        st.session_state[state.STEP] = len(view.replay) - 1  # watch a live run at its end
    return view


def call_run_label(r: RunSummary) -> str:
    """A run as the model-call pages (Wire, Playground) offer it."""
    return (f"{r.name or r.agent_name or 'run'}  ·  {r.provider or '?'}  ·  "
            f"{plural(r.model_calls, 'model call')}  ·  {r.id[:12]}")


def pick_call_run(path: str, key: str, picked: str | None) -> tuple[str, str | None]:
    """The run a model-call page (Wire, Playground) shows, picked under ``key``: the run
    every page shows (``state.RUN``) unless the link names another, else the newest
    (``picked``: what ``key`` holds);
    the page stops with a line when there is none. The other pages then open on it.
    Returns the run picked and the run the link named (found), if any."""
    qp = st.query_params
    try:
        newest = runs_page(path, RunFilter(), 1, 0)[0]
    except LooptraceError as exc:
        show_error(exc)
    if not newest:
        st.info("No runs recorded in this database yet.", icon=":material/info:")
        st.stop()
    state.init()
    wanted = qp.get("run") or st.session_state.get(state.RUN) or choose_run(path)
    linked: str | None = None
    if wanted:
        try:
            linked = find_run(path, wanted).id
        except LooptraceError:
            st.error(f"no run {wanted!r} in this database; showing the newest run instead",
                     icon=":material/error:")
    run_id = paged_run_picker(
        path, "Run", key=key, format_func=call_run_label, placeholder="Pick a run",
        current=picked or linked or newest[0].id)
    if run_id is None:
        st.info("Pick a run.", icon=":material/info:")
        st.stop()
    adopt(run_id)  # (the other pages open on the run picked here)
    return run_id, linked
