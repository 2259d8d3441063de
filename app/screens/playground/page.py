"""Playground: one model call of a recorded run re-sent, edited, to a chosen model.

Pick a run and a model call (defaults from ``?run=...&step=...``, the Replay page's
deep link: the model call at or after that step); the pane
(``app/panes/playground_pane.py``) makes one edit, asks ``offline``, ``recorded``, the
agent's own model (when the run's agent is known: ``looptrace ui --agent``, or a demo
run's) or any ``init_chat_model`` name, and shows the new answer beside the recorded
one with the request in OpenAI, Anthropic and Ollama form. Nothing is written.
"""

from __future__ import annotations

import streamlit as st

from ... import navigation
from ...data import loads
from ...data.playground import agent_of
from ...data.store import LooptraceError, open_db, show_error
from ...data.wire import call_label, model_call_events
from ...kit import state
from ...panes.playground_pane import render_playground
from ...panes.run_picker import pick_call_run


def playground_page() -> None:
    st.title("Playground")
    st.caption("Re-send a recorded model call, edited, to a model of your choice, and see "
               "its answer beside the recorded one. Nothing is written.")
    path = open_db()
    qp = st.query_params
    run_id, linked = pick_call_run(path, state.PLAY_RUN, st.session_state.get(state.PLAY_RUN))
    try:
        replay = loads.load_replay(path, run_id)
    except LooptraceError as exc:
        show_error(exc)
    calls = model_call_events(replay.run)
    if not calls:
        st.info("This run made no model call.", icon=":material/info:")
        st.stop()
    step_of = {s.event.seq: s.index for s in replay.steps}
    seqs = [c.seq for c in calls]
    index = 0
    if run_id == linked and qp.get("run") and qp.get("step") is not None and replay.steps:
        i = replay.clamp(state.step_index(qp.get("step")))
        at = replay.steps[i].event.seq  # (the call at or after the step; else the last)
        index = next((k for k, s in enumerate(seqs) if s >= at), len(seqs) - 1)
    seq = st.selectbox("Model call", seqs, index=index, key=f"{state.PLAY_CALL}_{run_id}",
                       format_func=lambda s: call_label(calls[seqs.index(s)], seqs.index(s),
                                                        step_of.get(s, 0) + 1))
    step = state.url_step(step_of.get(seq, 0))
    if qp.get("run") != run_id or qp.get("step") != step:
        qp["run"] = run_id
        qp["step"] = step
    st.page_link(navigation.page("replay"), label="Open this step in the replay",
                 icon=":material/play_circle:", query_params={"run": run_id, "step": step})
    render_playground(path, run_id, int(step), agent_of(replay.run.summary))

