"""The replay's state: which run, which step, playing or not, how fast.

Kept in ``st.session_state`` under plain keys (not widget keys, which
Streamlit deletes when the page changes), and mirrored into the URL
(``?run=...&step=...``) so a link opens that exact moment. ``step`` in the URL
is the 0-based step index; the page shows it 1-based ("Step N / M").
"""

from __future__ import annotations

from typing import Any

import streamlit as st

RUN = "lt_run"  # run id being replayed
STEP = "lt_step"  # current step index (0-based)
PLAYING = "lt_playing"
SPEED = "lt_speed"
STACK = "lt_stack"  # [(run id, step)] to return to from a subagent
HIGHLIGHT = "lt_highlight"  # extra message keys to highlight (from a finding)
WINDOW = "lt_window"  # how many messages the pane shows
SEEN = "lt_url_seen"  # the last few (run, step) URLs adopted or written
NO_STEP = "lt_no_step"  # a run was just opened without a step: a live one opens at its end

SPEEDS = (0.5, 1.0, 2.0, 4.0)
BASE_INTERVAL = 1.2  # seconds per step at 1x
DEFAULT_WINDOW = 24


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def init() -> None:
    defaults = {STEP: 0, PLAYING: False, SPEED: 1.0, STACK: [], HIGHLIGHT: (),
                WINDOW: DEFAULT_WINDOW}
    for k, v in defaults.items():
        if k not in st.session_state:
            st.session_state[k] = v


def step_ms() -> int:
    """Milliseconds per step while playing, else 0 (the graph component keeps the time)."""
    if not st.session_state.get(PLAYING):
        return 0
    speed = float(st.session_state.get(SPEED) or 1.0)
    return round(BASE_INTERVAL * 1000 / speed)


LIVE_MS = 2000  # milliseconds between reloads of a run still being recorded


def after_tick(step: int, tick_step: int, n_steps: int) -> int | None:
    """Where a playback tick sent while ``tick_step`` was shown leaves the replay,
    now at ``step`` of ``n_steps``: the next step, the same step (a tick for a
    step already left: the user stepped, or a tick was sent twice), or None
    when the last step is reached (playback stops)."""
    if tick_step != step:
        return step
    if step >= n_steps - 1:
        return None
    return step + 1


def set_step(index: int) -> None:
    st.session_state[STEP] = int(index)
    st.session_state[HIGHLIGHT] = ()


def open_run(run_id: str, step: int = 0, *, push: bool = False) -> None:
    """Switch the replay to ``run_id`` (``push``: remember where we came from)."""
    if push and st.session_state.get(RUN):
        stack = list(st.session_state.get(STACK) or [])
        stack.append((st.session_state[RUN], int(st.session_state.get(STEP) or 0)))
        st.session_state[STACK] = stack
    st.session_state[RUN] = run_id
    st.session_state[STEP] = int(step)
    st.session_state[PLAYING] = False
    st.session_state[HIGHLIGHT] = ()
    st.session_state[WINDOW] = DEFAULT_WINDOW


def adopt_query_params() -> None:
    """At a full run of the page: follow ``?run=&step=`` when the link differs
    from the state (an opened link); the state is written back by ``sync_url``."""
    qp = st.query_params
    run = qp.get("run")
    if not run:
        return
    step = qp.get("step")
    seen = list(st.session_state.get(SEEN) or [])
    if (run, step) in seen:
        return  # a URL the app wrote (maybe a step or two ago): not a new link
    st.session_state[SEEN] = [*seen[-5:], (run, step)]
    if run != st.session_state.get(RUN):
        st.session_state[RUN] = run
        st.session_state[STEP] = step if step is not None else 0  # clamped by the page
        st.session_state[NO_STEP] = step is None
        st.session_state[PLAYING] = False
        st.session_state[HIGHLIGHT] = ()
        st.session_state[STACK] = []
    elif step is not None and step != str(st.session_state.get(STEP)):
        st.session_state[STEP] = step


def sync_url(run_id: str, step: int) -> None:
    """Mirror the current run and step into the URL (only when they changed)."""
    qp = st.query_params
    if qp.get("run") != run_id or qp.get("step") != str(step):
        qp["run"] = run_id
        qp["step"] = str(step)
    seen = list(st.session_state.get(SEEN) or [])
    if not seen or seen[-1] != (run_id, str(step)):
        st.session_state[SEEN] = [*seen[-5:], (run_id, str(step))]
