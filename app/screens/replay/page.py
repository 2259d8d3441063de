"""The replay page (and, with ``presenter=True``, the Presenter page).

The browser plays the run: ONE component (``app/panes/replayer_component.py``, the
replayer the HTML export uses too) draws the controls, the caption, the graph
and the message list from the run's JSON and steps it locally, so the panes
agree by construction and a key press shows at once. One fragment holds the
replayer and what needs Python at the step the browser settled on: the
floor plan, the step inspector and the wire formats. The
fragment reruns the whole app only when what is drawn outside it changed:
another run, or what the header says of it (its status, tokens and model calls).

The replayer first: a session's first replay page is drawn lean, the run's header
and the replayer only, so that the browser's first work is the run (Streamlit's
run picker, toggles, JSON viewers and tables cost a fresh browser its scripts and
hundreds of milliseconds of rendering: issue 29). Once the replayer has painted
the run it says so ("painted") and the page is drawn whole, the run not sent again.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from ... import navigation
from ...data import loads
from ...data.debugger import shown_statuses
from ...data.notes import notes
from ...data.run_view import RunView
from ...data.runs import newest_top_level
from ...data.store import LooptraceError, open_db
from ...kit import state
from ...kit.safe import md_escape
from ...panes.playground_pane import render_link as render_playground_link
from ...panes.replayer_component import event, render_replayer, replayer_data, window_at
from ...panes.run_picker import load_chosen, run_picker
from ...panes.subagents import render_run_header
from ...panes.wire_pane import render_wire_pane, warm_up
from . import debug_pane
from .findings_pane import render_findings
from .floorplan_pane import render_floor_plan_section
from .fork_pane import render_fork_pane
from .inspector import render_inspector
from .notes_pane import note_markers, render_presenter_notes

STYLE = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 3.6rem; }
</style>"""


def warm(path: str, *, wait_s: float = 120.0) -> None:
    """Load the run a bare ``/replay`` opens (the newest top-level run) as its first
    visit would: the run, its replay, the JSON of the window the browser is sent first
    and its findings (a large run's are found on a thread: waited for, up to
    ``wait_s``), so that its caches hold them (``app/serve.py``)."""
    newest = newest_top_level(path)
    if newest is None:
        return
    view = loads.load_view(path, newest.id)
    view.json(window_at(len(view.replay), 0))
    deadline = time.monotonic() + wait_s
    while view.findings_pending and time.monotonic() < deadline:
        time.sleep(0.1)


def replay_page() -> None:
    """The Replay page: the run as an animated two-pane walkthrough."""
    show_replay()


def show_replay(*, presenter: bool = False) -> None:
    """The Replay page (or, with ``presenter``, the Presenter page) of the state's run."""
    path = open_db()
    state.init()
    state.adopt_query_params()
    view = load_chosen(path)
    lean = not presenter and not st.session_state.get(state.PAINTED)
    st.session_state[state.LEAN] = lean
    if not presenter:
        warm_up()  # (the wire formats pane, a toggle away)
    st.html(STYLE)
    if not presenter:
        render_run_header(path, view, picker=not lean)
    else:  # (its sidebar is hidden: the picker and the way back are on the page)
        pick, back = st.columns([5, 1], vertical_alignment="bottom")
        with pick:
            run_picker(path, view.replay.run.id)
        with back:
            st.page_link(navigation.page("replay"), label="Replay",
                         icon=":material/play_circle:", query_params={"run": view.replay.run.id})
    st.session_state[state.PAGE_STATUS] = _drawn_for(path, view)
    if not st.session_state.pop(state.KEEP_HELD, False):
        st.session_state[state.HELD] = None  # (a full run: the replayer may be a new one)
    st.fragment(_body)(path, presenter)
    if not lean and not presenter:
        render_findings(view)


def _status(path: str, view: RunView) -> str:
    """The run's status as the header shows it ("paused" while paused in the debugger)."""
    s = view.replay.run.summary
    return shown_statuses(path, [s])[s.id]


def _drawn_for(path: str, view: RunView) -> str:
    """What the header says (status, tokens, model calls): redrawn when it changes."""
    return f"{_status(path, view)}|{(s := view.replay.run.summary).total_tokens}|{s.model_calls}"


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


def _key(view: RunView, window: tuple[int, int] | None, status: str) -> str:
    """The version of the run the browser holds: a new key makes it load the run again
    (``status``: as shown, so a pause's end sends it again)."""
    s = view.replay.run.summary
    return f"{s.id}:{len(view.replay)}:{status}" + (f":{window[0]}" if window else "")


def _window(view: RunView, i: int) -> tuple[int, int] | None:
    """The window of a large run the browser holds: kept while it holds step ``i``."""
    n = len(view.replay)
    kept = st.session_state.get(state.WINDOW)
    if (isinstance(kept, tuple) and len(kept) == 3 and kept[0] == view.replay.run.id
            and kept[1] <= i < kept[2] and window_at(n, i) is not None):
        return int(kept[1]), min(int(kept[2]), n)
    window = window_at(n, i)
    st.session_state[state.WINDOW] = (view.replay.run.id, *window) if window else None
    return window


def _reported(view: RunView, name: str) -> tuple[str, int] | None:
    """Event ``name``'s "<version held>|<step index>", when it is about the run this page
    shows (the callback was drawn for ``view``: still the page's run?): (version, step)."""
    held, _, index = (event(name) or "").rpartition("|")
    shown = view.replay.run.id
    if held.split(":", 1)[0] == shown == st.session_state.get(state.RUN) and index.isdigit():
        return held, view.replay.clamp(index)
    return None


def _on_window(view: RunView) -> None:
    """The browser needs step j, outside the window it holds (or playback nears its end)."""
    said = _reported(view, "window")
    if said is not None:
        j = said[1]
        window = window_at(len(view.replay), j)
        st.session_state[state.WINDOW] = (view.replay.run.id, *window) if window else None
        state.shown_step(j)


def _markers(path: str, view: RunView) -> list[dict[str, Any]]:
    """The findings and the notes on steps as marks on the scrubber's tick strip."""
    return [{"step": st, "severity": f.severity}
            for f, st in zip(view.findings, view.finding_indexes) if st is not None
            ] + note_markers(notes(path, view.replay.run.id))


def _on_step(view: RunView) -> None:
    """The browser settled on a step ("<version held>|<index>"). A report from outside
    the window the app now sends is from the window the browser was leaving (sent just
    before it asked for another): followed, it would send the app back there while the
    browser waits for the new window."""
    said = _reported(view, "step")
    kept = st.session_state.get(state.WINDOW)
    if (said is not None and isinstance(kept, tuple) and len(kept) == 3
            and kept[0] == view.replay.run.id and not kept[1] <= said[1] < kept[2]):
        return
    if said is not None:
        state.shown_step(said[1])
        st.session_state[state.HELD] = said[0]


def _on_need() -> None:
    st.session_state[state.HELD] = None


def _on_painted(view: RunView) -> None:
    """The browser painted the run it was given (on a lean page): it holds that version;
    the page is drawn whole (``_draw``)."""
    held, _, _ = (event("painted") or "").rpartition("|")
    st.session_state[state.PAINTED] = True
    if held.split(":", 1)[0] == view.replay.run.id == st.session_state.get(state.RUN):
        st.session_state[state.HELD] = held
        st.session_state[state.KEEP_HELD] = True  # (by the full run that follows)


def _on_speed() -> None:
    value = event("speed")
    try:
        speed = float(value or "")
    except ValueError:
        return
    if speed in state.SPEEDS:
        st.session_state[state.SPEED] = speed


def _on_open(view: RunView) -> None:
    value = event("open")
    run_id = (value or "").rsplit(":", 1)[0]
    if any(c.id == run_id for c in view.replay.run.children):
        state.open_run(run_id, push=True)


def _replayer(path: str, view: RunView, i: int, *, presenter: bool, live: bool = False) -> None:
    """The replayer at step ``i``: the browser's from here on."""
    window = _window(view, i)
    status = _status(path, view)
    key = _key(view, window, status)
    held = st.session_state.get(state.HELD) == key
    run_json = None if held else view.json(window)
    if run_json is not None and status != run_json["run"]["status"]:
        # (paused in the debugger: its calls still wait, none "ended"; not cached)
        run_json = {**run_json, "run": {**run_json["run"], "status": status}}
    data = replayer_data(
        run_json, i, key=key, goto=int(st.session_state.get(state.GOTO) or 0),
        live_ms=state.LIVE_MS if live or _running(view) else 0, presenter=presenter,
        markers=_markers(path, view), highlight=tuple(st.session_state.get(state.HIGHLIGHT) or ()),
        speed=float(st.session_state.get(state.SPEED) or 1.0), subagents=not presenter,
        paint=bool(st.session_state.get(state.LEAN)))
    if not held:
        # Each send of a run differs from the last (a count): Streamlit sends a large
        # message it has sent before as a reference to the browser's copy, which the
        # browser may have dropped ("Cached ForwardMsg MISS"): a window asked for again
        # (End, a few steps, Home) then never arrived (tests/browser/test_browser_long_run.py).
        sent = int(st.session_state.get(state.SENT) or 0) + 1
        st.session_state[state.SENT] = data["sent"] = sent
    render_replayer(data, on_step=lambda: _on_step(view), on_speed=_on_speed,
                    on_open=lambda: _on_open(view), on_need=_on_need,
                    on_window=lambda: _on_window(view), on_painted=lambda: _on_painted(view))


def _body(path: str, presenter: bool) -> None:
    t0 = time.perf_counter()
    try:
        _draw(path, presenter)
    finally:  # server-side render time of the last step, read by benchmarks/bench_app.py
        st.session_state[state.RENDER_MS] = (time.perf_counter() - t0) * 1000


def _draw(path: str, presenter: bool) -> None:
    try:
        view = loads.load_view(path, str(st.session_state.get(state.RUN)))
    except LooptraceError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
        return
    if st.session_state.get(state.LEAN) and st.session_state.get(state.PAINTED):
        st.rerun(scope="app")  # the lean page, drawn whole now that the replayer has painted
    pause, below = debug_pane.pauses(path, view) if not presenter else (None, [])
    if pause is not None:
        debug_pane.follow(view, pause)  # (a new pause: the replay jumps to its step)
    i = _advance(view)
    if _drawn_for(path, view) != st.session_state.get(state.PAGE_STATUS) or (
            not presenter and view.replay.run.id != st.session_state.get(state.HEADER_RUN)):
        st.rerun(scope="app")  # the header shows another run, or another status
    state.sync_url(view.replay.run.id, i)
    if presenter:
        with st.container(key="presenter"):
            st.text(view.replay.run.summary.name or view.replay.run.id)
            _replayer(path, view, i, presenter=True)
            render_presenter_notes(path, view, i)
            render_floor_plan_section(view, i)
            st.caption("Keyboard: → next · ← back · space play / pause · Home / End")
        return
    debug_pane.render(path, view, pause, below)  # (app/screens/replay/debug_pane.py: paused in the debugger)
    _replayer(path, view, i, presenter=False, live=pause is not None or bool(below))  # (its "Open subagent" opens a call's subagent run)
    if st.session_state.get(state.LEAN):
        return  # (the rest once the replayer has painted)
    render_floor_plan_section(view, i)
    render_inspector(view, i, path)
    _wire(path, view, i)
    render_fork_pane(path, view, i)  # (app/screens/replay/fork_pane.py: what if)
    render_playground_link(view, i)  # (app/panes/playground_pane.py: this call, re-sent)


def _wire(path: str, view: RunView, i: int) -> None:
    """The provider wire formats of the current model call, when switched on."""
    state.keep_toggle(state.WIRE_TOGGLE, state.SHOW_WIRE)
    st.toggle("Wire formats of this model call (OpenAI · Anthropic · Ollama)",
              key=state.WIRE_TOGGLE)
    if state.kept_toggle(state.WIRE_TOGGLE, state.SHOW_WIRE):
        render_wire_pane(path, view.replay, i)
