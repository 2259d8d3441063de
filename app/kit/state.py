"""Every ``st.session_state`` key of the app, and the replay's state: which run,
which step, how fast.

The app reads and writes ``st.session_state`` only through the names declared
here (``tests/app/test_app_structure.py`` fails on a raw string key anywhere else).
Two kinds of key:

- plain keys, which Streamlit keeps when the page changes (the replay's run and
  step, the toggles that stay on from page to page);

The browser holds the replay (``app/panes/replayer_component.py``): it steps and
plays by itself and reports the step it shows (``shown_step``); the app moves
it only through ``move_to`` (a counter the browser follows once per change).
- widget keys (``key=`` of a widget whose value the app reads or sets), which
  Streamlit deletes when the page changes: a widget that must keep its value
  across pages mirrors it into a plain key.

The replay's run and step are mirrored into the URL (``?run=...&step=...``) so a
link opens that exact moment. ``step`` in the URL is the number the page shows
(1-based: "Step 10 / 34" is ``step=10``); the state keeps the 0-based index of
``tracer.read.steps.Replay.steps``. ``step=0`` (and anything below 1, or not a
number) opens the first step, a number past the end the last step.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

# -- the replay (plain keys) -----------------------------------------------------------
RUN = "lt_run"  # run id being replayed
STEP = "lt_step"  # current step index (0-based): the step the browser last reported
GOTO = "lt_goto"  # counts the app's own moves of the step (the browser follows each once)
SPEED = "lt_speed"  # the replayer's speed, kept for its next mount
HELD = "lt_held"  # the version of the run the browser said it holds (not sent again)
PAINTED = "lt_painted"  # this session's replayer has painted a run: pages are drawn whole
LEAN = "lt_lean"  # the replay page was drawn lean (the replayer first): drawn whole once painted
KEEP_HELD = "lt_keep_held"  # the full run the lean page asked for keeps what the browser holds
WINDOW = "lt_window"  # (run id, start, stop) of the window of a large run sent to the browser
SENT = "lt_sent"  # how many times this session was sent a run (each send unique: see _replayer)
STACK = "lt_stack"  # [(run id, step)] to return to from a subagent
HIGHLIGHT = "lt_highlight"  # extra message keys to highlight (from a finding)
SEEN = "lt_url_seen"  # the last few (run, step) URLs adopted or written
NO_STEP = "lt_no_step"  # a run was just opened without a step: a live one opens at its end
LAST_DRAWN = "lt_last_drawn"  # (run id, steps, running) at the last draw: follows a live run
PAGE_STATUS = "lt_page_status"  # what the header said of the run (status, tokens) when drawn
HEADER_RUN = "lt_header_run"  # the run the header (outside the replay fragment) shows
SHOW_WIRE = "lt_show_wire"  # the wire formats pane stays on from page to page
SHOW_FLOORPLAN = "lt_show_floorplan"  # so does the floor plan
RENDER_MS = "_lt_render_ms"  # server-side time of the last replay render (benchmarks/bench_app.py)

# -- the replay's widgets ----------------------------------------------------------------
REPLAYER = "lt_replayer"  # the replayer component (its events: step, speed, open, reload)
RUN_PICK = "run_pick"  # the run picker (the Replay's sidebar, the Presenter, the Timeline)
WIRE_TOGGLE = "show_wire"
FLOORPLAN_TOGGLE = "show_floorplan"

# -- the Runs page -------------------------------------------------------------------------
RUNS_FILTER = "lt_runs_filter"  # the filter the page index belongs to
RUNS_PAGE = "runs_page_index"  # which page of runs (0-based)
RUNS_TABLE = "runs_table"  # the table (app/screens/runs/runs_grid.py; its event: a row clicked)
OPEN_PICK = "open_pick"  # the "Open a run" picker
GROUP_THREADS = "group_threads"  # the "Group by thread" toggle
THREAD_PICK = "thread_pick"  # the Runs page's "Open a conversation" picker (grouped)

# -- the Conversations page ----------------------------------------------------------------
THREAD = "thread"  # its thread picker

# -- the Compare page ----------------------------------------------------------------------
COMPARE_ROW = "cmp_row"  # the aligned row shown (0-based; a plain key)
COMPARE_SLIDER = "cmp_slider"  # its slider (1-based)
COMPARE_A = "cmp_a"  # the picker of run A
COMPARE_B = "cmp_b"  # the picker of run B

# -- the Wire page ---------------------------------------------------------------------------
WIRE_RUN = "wire_run"  # its run picker

# -- the paged run pickers (app/panes/paged_picker.py) ----------------------------------------------
PICKER_PAGES = "lt_picker_pages"  # {picker key: the page of runs it shows} (a plain key)

# -- "Fork here" (app/screens/replay/fork_pane.py) ---------------------------------------------------------
FORK_TOGGLE = "show_fork"  # the "Fork here (what if)" toggle
FORK_ERROR = "lt_fork_error"  # why the last fork started here failed, shown once (a plain key)

# -- the debugger's panel (app/screens/replay/debug_pane.py) -------------------------------------------------
DEBUG_PAUSE = "lt_debug_pause"  # the pause the panel's fields were filled for (the replay jumped there)
DEBUG_PICK = "lt_debug_pick"  # the pause the panel shows, of a run's several at once (its id)
DEBUG_ERROR = "lt_debug_error"  # (pause, message): why the last answer was refused (a plain key)
DEBUG_ARMED = "lt_debug_armed"  # the runs this session armed a "pause at the next ..." for
DEBUG_CHANGE = "dbg_change"  # at a model call: what to change (a selectbox)
DEBUG_POSITION = "dbg_position"  # at a model call: which message
DEBUG_TEXT = "dbg_text"  # the text given: a message, the system prompt, a reply, a tool result
DEBUG_ARGS = "dbg_args"  # at a tool call: its arguments as JSON
DEBUG_CALLS = "dbg_calls"  # a reply's tool calls as JSON
DEBUG_INSERT = "dbg_insert"  # at a model call: the text of a message to insert ("More changes")
DEBUG_INSERT_AT = "dbg_insert_at"  # its position
DEBUG_INSERT_ROLE = "dbg_insert_role"  # its role: human, ai or system
DEBUG_TOOLS = "dbg_tools"  # at a model call: the tools to keep offering
DEBUG_SETTINGS = "dbg_settings"  # at a model call: the model settings as JSON
DEBUG_MODEL = "dbg_model"  # at a model call: another model (an init_chat_model name or offline)
DEBUG_RAISE = "dbg_raise"  # at a tool call: raise instead of running it (a checkbox)
DEBUG_RAISE_TEXT = "dbg_raise_text"  # the error's text
DEBUG_REWIND_STEP = "dbg_rewind_step"  # the step a rewind goes back to (app/screens/replay/rewind_pane.py)
DEBUG_REWIND_EDIT = "dbg_rewind_edit"  # the edit made there, as JSON (optional)
DEBUG_SPEC = "dbg_spec"  # a breakpoint to arm for the run shown (any spec, SPEC if EXPR)

# -- the Playground page (app/panes/playground_pane.py; its edit form is the debugger's, DEBUG_*) --
PLAY_RUN = "play_run"  # its run picker
PLAY_CALL = "play_call"  # its model call picker
PLAY_ASK = "play_ask"  # who answers: offline, recorded, the agent's own model, another
PLAY_MODEL = "play_model"  # another model's init_chat_model name
PLAY_FILLED = "lt_play_filled"  # the call (run:step) the edit form was filled for (a plain key)
PLAY_RESULT = "lt_play_result"  # (call, the last answer's JSON) (a plain key)
PLAY_ERROR = "lt_play_error"  # (call, why the last send failed, one line) (a plain key)

# -- notes (app/screens/replay/notes_pane.py) ----------------------------------------------------------------
NOTE_TEXT = "note_text"  # the notes box's text
NOTE_TAGS = "note_tags"  # its tags
NOTE_ON = "note_on"  # on this step or on the whole run
NOTE_SAID = "lt_note_said"  # what the last note written said (ok or error), shown once (a plain key)

# -- access (``looptrace ui --password``: app/kit/access.py) ---------------------------------
ACCESS_OK = "lt_access_ok"  # this browser session gave the password (a plain key)
ACCESS_PASSWORD = "lt_access_password"  # the password field
ACCESS_FAILED = "lt_access_failed"  # digests of the values this session gave wrong (a plain key)
ACCESS_SESSION = "lt_access_session"  # this session's name in the guess limiter (a plain key)

SPEEDS = (0.5, 1.0, 2.0, 4.0)
LIVE_MS = 2000  # milliseconds between reloads of a run still being recorded


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def init() -> None:
    defaults = {STEP: 0, GOTO: 0, SPEED: 1.0, STACK: [], HIGHLIGHT: ()}
    for k, v in defaults.items():
        if k not in st.session_state:
            st.session_state[k] = v


# -- the step in a URL --------------------------------------------------------------------
def url_step(index: int) -> str:
    """The ``step`` of a link to step ``index``: the number the page shows."""
    return str(int(index) + 1)


def step_index(value: Any) -> int:
    """The step index a link's ``step`` names (1-based; 0, junk or less: the first).
    Not clamped to the run's length: the page does that."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return 0
    return max(number, 1) - 1


def move_to(index: int) -> None:
    """The app moves the replay to step ``index`` (a finding, a link, a subagent's
    return): the browser goes there once, pausing playback."""
    st.session_state[STEP] = int(index)
    st.session_state[GOTO] = int(st.session_state.get(GOTO) or 0) + 1


def set_step(index: int) -> None:
    move_to(index)
    st.session_state[HIGHLIGHT] = ()


def shown_step(index: int) -> None:
    """The browser reports the step it shows (the user stepped there, or playback
    paused there): the state follows; the browser is not sent anywhere."""
    st.session_state[STEP] = int(index)
    st.session_state[HIGHLIGHT] = ()


def show_finding(step: int | None, message_keys: tuple[str, ...]) -> None:
    """A finding's button: go to its step (pausing), highlight the messages involved."""
    if step is not None:
        set_step(step)
    st.session_state[HIGHLIGHT] = tuple(message_keys)


def open_run(run_id: str, step: int = 0, *, push: bool = False) -> None:
    """Switch the replay to ``run_id`` (``push``: remember where we came from)."""
    if push and st.session_state.get(RUN):
        stack = list(st.session_state.get(STACK) or [])
        stack.append((st.session_state[RUN], int(st.session_state.get(STEP) or 0)))
        st.session_state[STACK] = stack
    st.session_state[RUN] = run_id
    move_to(step)
    st.session_state[HIGHLIGHT] = ()


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
        move_to(step_index(step))  # clamped by the page
        st.session_state[NO_STEP] = step is None
        st.session_state[HIGHLIGHT] = ()
        st.session_state[STACK] = []
    elif step is not None and step_index(step) != st.session_state.get(STEP):
        move_to(step_index(step))


def sync_url(run_id: str, index: int) -> None:
    """Mirror the current run and step into the URL (only when they changed)."""
    qp = st.query_params
    step = url_step(index)
    if qp.get("run") != run_id or qp.get("step") != step:
        qp["run"] = run_id
        qp["step"] = step
    seen = list(st.session_state.get(SEEN) or [])
    if not seen or seen[-1] != (run_id, step):
        st.session_state[SEEN] = [*seen[-5:], (run_id, step)]


def keep_toggle(widget: str, plain: str, *, default: bool = False) -> None:
    """Before drawing the toggle ``widget``: give it the value kept under ``plain``, or
    on with ``default`` (widget keys are deleted when the page changes; plain keys are
    not)."""
    if widget not in st.session_state:
        st.session_state[widget] = bool(st.session_state.get(plain)) or default


def kept_toggle(widget: str, plain: str) -> bool:
    """After drawing the toggle ``widget``: its value, kept under ``plain`` too."""
    on = bool(st.session_state.get(widget))
    st.session_state[plain] = on
    return on
