"""The floor plan pane: the six hooks against the run's middleware stack, live.

One row per hook (``tracer.read.floorplan.floor_plan``), each with the middleware on it
in execution order; each cell says whether it fires at this step, fired before,
fires later, never fires or is not recorded, what it is for and what it did.
Middleware names and what they did come from the trace: they are drawn with
``st.text`` only. Shown on the Replay and Presenter pages behind a toggle (or
``?floorplan=1`` in the URL).
"""

from __future__ import annotations

import streamlit as st

from ...data.drawing import (
    ACTIVE,
    NOW,
    STATE_LABEL,
    UNSEEN,
    Cell,
    Row,
    floor_plan,
    run_stack,
    shape,
)
from ...data.run_view import RunView
from ...kit import state

STATE_COLOUR = {NOW: "primary", ACTIVE: "blue", "fired": "green", "later": "gray",
                "never": "gray", UNSEEN: "orange"}

STYLE = """<style>
.st-key-floorplan [data-testid="stText"] { font-size: 0.86rem; line-height: 1.35; }
.st-key-floorplan [class*="st-key-fpc_"] { background: var(--lt-fp-bg, transparent); }
.st-key-floorplan [class*="st-key-fpc_"][class*="_now"] {
  --lt-fp-bg: rgba(255, 75, 75, 0.10); border-color: rgba(255, 75, 75, 0.85); }
.st-key-floorplan [class*="st-key-fpc_"][class*="_active"] {
  --lt-fp-bg: rgba(28, 131, 225, 0.08); }
.st-key-floorplan [class*="st-key-fpc_"][class*="_unseen"],
.st-key-floorplan [class*="st-key-fpc_"][class*="_never"] { opacity: 0.7; }
.st-key-floorplan [class*="st-key-fpr_"][class*="_on"] { border-color: rgba(255, 75, 75, 0.55); }
</style>"""


def _source_note(view: RunView) -> str:
    info = run_stack(view.replay)
    if info.recorded:
        return ("The middleware list as the run recorded it at its start (read from the "
                "compiled graph by trace.attach).")
    return ("The middleware list as the events show it: a middleware that never fired is not "
            "known (record the list with trace.attach(agent)).")


def render_floor_plan(view: RunView, index: int) -> None:
    """The floor plan at step ``index``."""
    rp = view.replay
    st.html(STYLE)
    with st.container(key="floorplan", border=True):
        st.markdown(f"**Floor plan** · the six hooks against this run's middleware, at step "
                    f"{index + 1}")
        if rp.run.observed:
            st.text("A run seen from outside (its traffic or its spans): hooks and middleware "
                    "cannot be seen, so there is no floor plan.")
            return
        st.caption("before_* hooks run in list order, after_* in reverse; the first in the "
                   "list is the outermost wrapper of every model and tool call.")
        st.text(_source_note(view))
        for row in floor_plan(rp, index):
            _row(row)


def _row(row: Row) -> None:
    """One hook: its name, what it can do and its order on the left; the middleware on
    it, in execution order, on the right."""
    on = "_on" if row.active else ""
    with st.container(key=f"fpr_{row.hook}{on}", border=True):
        left, right = st.columns([1, 4], gap="small")
        with left:
            st.markdown(f"**`{row.hook}`**")
            st.text(f"can: {', '.join(row.can)}\n{row.order}")
        with right:
            if not row.cells:
                st.text("no middleware on this hook: the loop passes straight through")
            with st.container(horizontal=True, gap="small"):
                for j, c in enumerate(row.cells):
                    _cell(row.hook, j, c)


def _cell(hook: str, j: int, c: Cell) -> None:
    with st.container(key=f"fpc_{hook}_{j}_{c.state}", border=True, width=330, gap=None):
        with st.container(horizontal=True, gap="small", vertical_alignment="center"):
            st.badge(STATE_LABEL[c.state], color=STATE_COLOUR.get(c.state, "gray"))  # type: ignore[arg-type]
            st.text(f"{c.position or '?'}. {c.middleware}"
                    + (f"  ×{c.fired}" if c.fired > 1 else ""))
        st.text(c.role if c.known else f"(not in looptrace's table) {c.role}")
        if c.did:
            st.text(f"last: {c.did}")
        if c.note:  # (about this middleware: in its own cell, never under the hook's name)
            st.text(c.note)


def render_floor_plan_section(view: RunView, index: int) -> None:
    """The toggle, and the floor plan when it is on (a run without middleware hooks has
    no stack to lay out: it says so instead)."""
    if shape(view.replay) == "loop":
        st.caption("No floor plan: this run has no middleware hooks (a loop of its own, or "
                   "one seen from outside), so there is no middleware stack to lay out.")
        return
    state.keep_toggle(state.FLOORPLAN_TOGGLE, state.SHOW_FLOORPLAN,
                      default=st.query_params.get("floorplan") == "1")
    st.toggle("Floor plan: the six hooks against this run's middleware",
              key=state.FLOORPLAN_TOGGLE)
    if state.kept_toggle(state.FLOORPLAN_TOGGLE, state.SHOW_FLOORPLAN):
        render_floor_plan(view, index)
