"""Replay controls: play / pause, step, first / last, speed, jumps, scrubber,
and the keyboard shortcuts. Every control acts through a callback that
changes the state before the fragment reruns, so the graph and the message
pane are always drawn from the same, already updated step."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from tracer.replay import Replay

from . import state
from .graph_component import key_action
from .run_view import RunView
from .scrubber import legend, render_ticks, seek_target


def _go(rp: Replay, index: int) -> None:
    state.set_step(rp.clamp(index))


def _step_by(rp: Replay, delta: int) -> None:
    _go(rp, int(st.session_state.get(state.STEP) or 0) + delta)


def _play(rp: Replay) -> None:
    if int(st.session_state.get(state.STEP) or 0) >= len(rp) - 1:
        state.set_step(0)
    st.session_state[state.PLAYING] = True


def _pause() -> None:
    st.session_state[state.PLAYING] = False


def _tick(rp: Replay, tick_step: int) -> None:
    """The graph component's playback timer fired while it showed ``tick_step``."""
    if not st.session_state.get(state.PLAYING):
        return
    step = rp.clamp(st.session_state.get(state.STEP))
    following = state.after_tick(step, tick_step, len(rp))
    if following is None:
        st.session_state[state.PLAYING] = False
    else:
        st.session_state[state.STEP] = following


def _toggle(rp: Replay) -> None:
    if st.session_state.get(state.PLAYING):
        _pause()
    else:
        _play(rp)


def _jump(view: RunView, kind: str) -> None:
    found = view.find(int(st.session_state.get(state.STEP) or 0), kind)
    if found is not None:
        state.set_step(found)


def _on_key(rp: Replay) -> None:
    """A keyboard shortcut or a timer event sent by the graph component."""
    action, arg = key_action()
    if action == "tick" and arg is not None:
        _tick(rp, arg)
    elif action == "toggle":
        _toggle(rp)
    elif action == "first":
        _go(rp, 0)
    elif action == "last":
        _go(rp, len(rp) - 1)
    elif action in ("next", "prev"):
        _step_by(rp, 1 if action == "next" else -1)
    # "reload": the fragment's rerun reloads the run


def key_handler(view: RunView) -> Callable[[], None]:
    """The graph component's callback for the replay of ``view``."""
    return lambda: _on_key(view.replay)


def _on_scrub(rp: Replay) -> None:
    # The browser can send back a slider value the app set a step or two ago (a
    # timer rerun, or a click, racing the update): that echo is not a seek.
    value = st.session_state.get(state.SCRUB)
    recent = list(st.session_state.get(state.SCRUB_SET) or [])
    if value is None or value in recent[:-1]:
        return
    _go(rp, int(value) - 1)


def _on_seek(rp: Replay) -> None:
    target = seek_target()
    if target is not None:
        _go(rp, target)


def _on_speed() -> None:
    value = st.session_state.get(state.SPEED_PICK)
    if value is not None:
        st.session_state[state.SPEED] = float(value)


def render_controls(view: RunView, index: int) -> None:
    """The control bar, the tick strip and the scrubber for step ``index``."""
    replay = view.replay
    n = len(replay)
    last = max(0, n - 1)
    playing = bool(st.session_state.get(state.PLAYING))
    bar = st.columns([0.7, 0.7, 1.5, 0.7, 0.7, 1.3, 1.4, 1.3, 1.4, 3.0],
                     vertical_alignment="center", gap="small")
    bar[0].button("", key="first", icon=":material/first_page:", help="First step (Home)",
                  on_click=_go, args=(replay, 0), disabled=index == 0, width="stretch")
    bar[1].button("", key="step_prev", icon=":material/chevron_left:",
                  help="Step back (left arrow)", on_click=_step_by, args=(replay, -1),
                  disabled=index == 0, width="stretch")
    if playing:
        bar[2].button("Pause", key="pause", icon=":material/pause:", on_click=_pause,
                      type="primary", width="stretch")
    else:
        bar[2].button("Play", key="play", icon=":material/play_arrow:", on_click=_play,
                      args=(replay,), type="primary", disabled=n < 2, width="stretch")
    bar[3].button("", key="step_next", icon=":material/chevron_right:",
                  help="Step forward (right arrow)", on_click=_step_by, args=(replay, 1),
                  disabled=index >= last, width="stretch")
    bar[4].button("", key="last", icon=":material/last_page:", help="Last step (End)",
                  on_click=_go, args=(replay, last), disabled=index >= last, width="stretch")
    bar[5].markdown(f"**Step {index + 1} / {n}**" if n else "**Step 0 / 0**")
    for col, (kind, label, icon) in zip(bar[6:9], (
            ("model", "Model", ":material/psychology:"),
            ("tool", "Tool", ":material/build:"),
            ("error", "Error", ":material/error:"))):
        col.button(label, key=f"next_{kind}", icon=icon, on_click=_jump, args=(view, kind),
                   help=f"Jump to the next {kind if kind == 'error' else kind + ' call'}",
                   disabled=view.find(index, kind) is None, width="stretch")
    if st.session_state.get(state.SPEED_PICK) not in state.SPEEDS:
        st.session_state[state.SPEED_PICK] = float(st.session_state.get(state.SPEED) or 1.0)
    bar[9].segmented_control("Speed", state.SPEEDS, format_func=lambda s: f"{s:g}x",
                             key=state.SPEED_PICK, on_change=_on_speed,
                             label_visibility="collapsed")
    markers = [{"step": s, "severity": f.severity}
               for f, s in zip(view.findings, view.finding_steps) if s is not None]
    if n > 1:
        render_ticks(view.kinds, index, markers, on_seek=lambda: _on_seek(replay))
        if st.session_state.get(state.SCRUB) != index + 1:
            st.session_state[state.SCRUB] = index + 1
        recent = list(st.session_state.get(state.SCRUB_SET) or [])
        if not recent or recent[-1] != index + 1:
            st.session_state[state.SCRUB_SET] = [*recent[-3:], index + 1]
        st.slider("Step", 1, n, key=state.SCRUB, on_change=_on_scrub, args=(replay,),
                  label_visibility="collapsed")
        st.caption(legend() + " · keys: ← → step · space play / pause · Home / End")
