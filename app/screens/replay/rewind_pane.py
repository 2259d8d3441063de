"""Rewind, in the debugger's panel (``app/screens/replay/debug_pane.py``): go back to a step of the
paused run and go on from there with an edit, as a fork of it
(``tracer.debug.channel.rewind``, through ``app.data.debug_rewind``).

A step picker (1 to the step paused at), an optional edit as JSON (one a fork makes,
or a list of model-call edits), and a button. The steps before the one picked come
from the record with no model or tool call; the fork pauses at the same breakpoints
after it, and the run paused here stays paused. Where the agent cannot be built
again, the panel says why instead. A rewind that cannot be (a bad edit, a step the
record has no call at or after to make the edit at) is one error line, and nothing
is written.
"""

from __future__ import annotations

import json
import time
from typing import Any

import streamlit as st

from ...data.debugger import debug_rewind
from ...data.store import LooptraceError
from ...kit import state
from ...kit.safe import md_escape

WAIT_S = 0.3  # the agent's time to start the fork and pause again


def _tag(p: dict[str, Any]) -> str:
    return f"rewind:{p.get('run')}:{p.get('pause')}"


def render(path: str, p: dict[str, Any]) -> None:
    said = (p.get("pending") or {}).get("rewind") or {}
    step = p.get("step")
    with st.expander("Rewind to an earlier step", icon=":material/history:"):
        if not said.get("can"):
            st.caption(md_escape("Cannot rewind: " + str(
                said.get("why") or "this pause was made by a looptrace that cannot rewind")))
            return
        top = step if isinstance(step, int) and step >= 1 else 1
        st.number_input("Step", min_value=1, max_value=top, value=1, step=1,
                        key=state.DEBUG_REWIND_STEP,
                        help=f"Go back to this step (1 to {top}, the step paused at): the "
                             "steps before it come from the record, no model or tool call")
        st.text_area("Edit at that step (JSON, optional)", key=state.DEBUG_REWIND_EDIT,
                     height=80, placeholder='{"kind": "system", "text": "Be brief."}, or a '
                     "list of model-call edits")
        failed = st.session_state.get(state.DEBUG_ERROR)
        if isinstance(failed, tuple) and len(failed) == 2 and failed[0] == _tag(p):
            st.error(md_escape(failed[1]), icon=":material/error:")
        st.button("Rewind", key="debug_rewind", icon=":material/history:",
                  help="A fork of this run from the step, with the edit; this run stays "
                       "paused",
                  on_click=_rewind, args=(path, p))


def _rewind(path: str, p: dict[str, Any]) -> None:
    raw = str(state.get(state.DEBUG_REWIND_EDIT) or "").strip()
    try:
        try:
            edits: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError as exc:
            msg = f"the edit is not valid JSON ({exc.msg} at column {exc.colno})"
            raise LooptraceError(msg) from None
        step = int(state.get(state.DEBUG_REWIND_STEP) or 1)
        debug_rewind(path, str(p.get("run")), step, edits, p.get("pause"))
    except LooptraceError as exc:
        st.session_state[state.DEBUG_ERROR] = (_tag(p), " ".join(str(exc).split())[:300])
        return
    st.session_state.pop(state.DEBUG_ERROR, None)
    time.sleep(WAIT_S)
