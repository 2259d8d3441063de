"""The replay: ONE fragment renders the controls, the graph and the messages
from the step kept in ``st.session_state``, so the two panes always agree.

The graph component in the browser keeps all the time: while playing it shows
a step for the step's interval, then sends a 'tick' and the fragment reruns on
the next step (controls.on_key); while the run is still being recorded it
sends a 'reload' every couple of seconds. So playing, pausing and changing
speed are plain fragment reruns, and the fragment has no ``run_every`` timer.
(Switching ``run_every`` on every play and pause, through a full app run, raced
with the timer's own reruns: Streamlit's page went blank with "Bad delta path
index" about once in ten pauses.) The fragment reruns the whole app only when
what is drawn outside it changed: another run, or the run's status. Used by the
Replay page and, with ``presenter=True``, by the Presenter page (large type,
graph and messages only, the caption as narration, keyboard only).
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from tracer.errors import LooptraceError, RunNotFound

from . import data, navigation, state
from .controls import key_handler, render_controls
from .findings_pane import render_findings
from .floorplan_pane import render_floor_plan_section
from .graph_component import graph_data, render_graph
from .inspector import render_caption, render_inspector
from .messages_pane import render_messages
from .run_view import RunView
from .safe import md_escape
from .subagents import render_run_header, render_subagent_jump
from .wire_pane import render_wire_pane, warm_up

STYLE = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 3.6rem; }
.st-key-narration [data-testid="stText"] { font-size: 1.05rem; line-height: 1.45; }
.st-key-presenter { --lt-graph-max-height: 64vh; }
.st-key-presenter [data-testid="stText"] { font-size: 1.35rem; line-height: 1.5; }
.st-key-presenter [data-testid="stCode"] code { font-size: 1.15rem; }
.st-key-presenter .st-key-narration [data-testid="stText"] { font-size: 1.75rem;
  font-weight: 500; }
.st-key-presenter .st-key-counter p { font-size: 2rem; font-weight: 700; margin: 0; }
.st-key-presenter .st-key-floorplan [data-testid="stText"] { font-size: 1rem; }
</style>"""


def choose_run(path: str) -> str | None:
    """The run to show: the state (after a deep link), else the newest top-level run."""
    current = st.session_state.get(state.RUN)
    if current:
        return str(current)
    newest = data.newest_top_level(path)  # (one row: not every run of the file)
    if newest is None:
        return None
    st.session_state[state.RUN] = newest.id
    st.session_state[state.NO_STEP] = True
    return newest.id


def load(path: str) -> RunView:
    """The run view for the state's run; an unknown run is a clear message, not a traceback."""
    run_id = choose_run(path)
    if run_id is None:
        st.info("No runs recorded in this database yet. Record one with TraceMiddleware, "
                "or run `looptrace demo`.", icon=":material/info:")
        st.stop()
    try:
        view = data.load_view(path, run_id)
    except RunNotFound as exc:
        st.error(f"{md_escape(str(exc))}. Pick a run on the Runs page.", icon=":material/error:")
        st.page_link(navigation.page("runs"), label="Runs", icon=":material/list:")
        st.stop()
    except LooptraceError as exc:
        data.show_error(exc)
    if view.replay.run.id != run_id:  # a prefix was given
        st.session_state[state.RUN] = view.replay.run.id
    if st.session_state.pop(state.NO_STEP, False) and _running(view) and len(view.replay):
        st.session_state[state.STEP] = len(view.replay) - 1  # watch a live run at its end
    return view


def show_replay(*, presenter: bool = False) -> None:
    """The Replay page (or, with ``presenter``, the Presenter page) of the state's run."""
    path = data.open_db()
    state.init()
    state.adopt_query_params()
    view = load(path)
    if not presenter:
        warm_up()  # (the wire formats pane, a toggle away)
    st.html(STYLE)
    if not presenter:
        render_run_header(path, view)
    st.session_state[state.PAGE_STATUS] = view.replay.run.summary.status
    st.fragment(_body)(path, presenter)
    if not presenter:
        render_findings(view)


def _running(view: RunView) -> bool:
    return view.replay.run.summary.status == "running"


def _advance(view: RunView) -> int:
    """The step to draw now: the state's step, clamped; watching the last step of
    a run being recorded follows the new steps as they arrive."""
    replay = view.replay
    i = replay.clamp(st.session_state.get(state.STEP))
    seen = st.session_state.get(state.LAST_DRAWN)  # (run id, steps, running) at the last draw
    st.session_state[state.LAST_DRAWN] = (replay.run.id, len(replay), _running(view))
    # The last steps of a run often arrive with its end: follow them too.
    if (isinstance(seen, tuple) and len(seen) == 3 and seen[0] == replay.run.id and seen[2]
            and i == seen[1] - 1 and len(replay) > seen[1]):
        i = len(replay) - 1
    st.session_state[state.STEP] = i
    return i


def _timing(view: RunView) -> dict[str, Any]:
    """The graph component's timers: playback's step time, the live reload's period."""
    return {"play_ms": state.step_ms(), "live_ms": state.LIVE_MS if _running(view) else 0}


def _body(path: str, presenter: bool) -> None:
    t0 = time.perf_counter()
    try:
        _draw(path, presenter)
    finally:  # server-side render time of the last step, read by tests/bench_app.py
        st.session_state[state.RENDER_MS] = (time.perf_counter() - t0) * 1000


def _draw(path: str, presenter: bool) -> None:
    try:
        view = data.load_view(path, str(st.session_state.get(state.RUN)))
    except LooptraceError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
        return
    i = _advance(view)
    if view.replay.run.summary.status != st.session_state.get(state.PAGE_STATUS) or (
            not presenter and view.replay.run.id != st.session_state.get(state.HEADER_RUN)):
        st.rerun(scope="app")  # the header shows another run, or another status
    state.sync_url(view.replay.run.id, i)
    if presenter:
        _presenter(view, i)
        return
    render_controls(view, i)
    render_subagent_jump(view, i)
    render_caption(view, i)
    left, right = st.columns([5, 6], gap="medium")
    with right:
        scroll_to = render_messages(view, i)
    with left:
        render_graph(graph_data(view.replay, i, names=view.tool_names,
                                colours=view.colour_index, scroll_to=scroll_to,
                                **_timing(view)),
                     on_key=key_handler(view))
    render_floor_plan_section(view, i)
    render_inspector(view, i)
    _wire(path, view, i)


def _wire(path: str, view: RunView, i: int) -> None:
    """The provider wire formats of the current model call, when switched on."""
    state.keep_toggle(state.WIRE_TOGGLE, state.SHOW_WIRE)
    st.toggle("Wire formats of this model call (OpenAI · Anthropic · Ollama)",
              key=state.WIRE_TOGGLE)
    if state.kept_toggle(state.WIRE_TOGGLE, state.SHOW_WIRE):
        render_wire_pane(path, view.replay, i)


def _presenter(view: RunView, i: int) -> None:
    n = len(view.replay)
    with st.container(key="presenter"):
        top = st.columns([3, 1], vertical_alignment="center")
        with top[0]:
            st.text(view.replay.run.summary.name or view.replay.run.id)
        with top[1], st.container(key="counter"):
            st.markdown(f"Step {i + 1} / {n}" if n else "Step 0 / 0")
        render_caption(view, i)
        left, right = st.columns([1, 1], gap="large")
        with right:
            scroll_to = render_messages(view, i, height=720)
        with left:
            render_graph(graph_data(view.replay, i, names=view.tool_names,
                                    colours=view.colour_index, scroll_to=scroll_to,
                                    **_timing(view)),
                         on_key=key_handler(view))
        render_floor_plan_section(view, i)
        st.caption("Keyboard: → next · ← back · space play / pause · Home / End")
