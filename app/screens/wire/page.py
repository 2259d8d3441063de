"""Wire: one model call as OpenAI, Anthropic and Ollama carry it, diffed.

Pick a run and a model call (defaults from ``?run=...&step=...``, the same
deep link as the replay: the model call at or before that step). The page
shows the differences that matter as a table, the three request (and
response) bodies side by side with their annotations, and a line diff of any
two of them. Bodies are untrusted: ``st.code(language=None)`` and
``st.code(language="diff")`` only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import streamlit as st

from ... import navigation
from ...data import loads
from ...data.store import LooptraceError, open_db, show_error
from ...data.wire import PROVIDERS, body_diff, call_at, call_label, model_call_events
from ...kit import state
from ...panes.run_picker import pick_call_run
from ...panes.wire_pane import TITLES, call_view, render_call, warm_up


def wire_page() -> None:
    st.title("Wire formats")
    warm_up()
    path = open_db()
    qp = st.query_params
    run_id, linked = pick_call_run(path, state.WIRE_RUN, st.session_state.get(state.WIRE_RUN))
    try:
        replay = loads.load_replay(path, run_id)
    except LooptraceError as exc:
        show_error(exc)
    calls = model_call_events(replay.run)
    if not calls:
        st.info("This run made no model call.", icon=":material/info:")
        st.stop()

    step_of = {s.event.seq: s.index for s in replay.steps}
    url_run = linked if qp.get("run") else None
    at = None
    if run_id == url_run and qp.get("step") is not None and replay.steps:
        i = replay.clamp(state.step_index(qp.get("step")))
        at = call_at(replay.run, replay.steps[i].event.seq)
    seqs = [c.seq for c in calls]
    index = seqs.index(at.seq) if at is not None else 0
    seq = st.selectbox("Model call", seqs, index=index, key=f"wire_call_{run_id}",
                       format_func=lambda s: call_label(calls[seqs.index(s)], seqs.index(s),
                                                        step_of.get(s, 0) + 1))
    step = state.url_step(step_of.get(seq, 0))
    if qp.get("run") != run_id or qp.get("step") != step:
        qp["run"] = run_id
        qp["step"] = step
    st.page_link(navigation.page("replay"), label="Open this step in the replay",
                 icon=":material/play_circle:", query_params={"run": run_id, "step": step})

    with st.spinner("Rendering the three wire formats ..."):
        view = call_view(path, replay, seq)
    # two bodies a row, each as tall as its text: one scroll for the page, and room for
    # the JSON at a laptop's width (four columns, each scrolling on its own, were cramped)
    render_call(view, key="page", height=None, per_row=2)

    st.subheader("Line diff")
    pair = st.columns(2)
    title = cast("Callable[[str], str]", TITLES.get)  # (the overloaded get defeats inference)
    with pair[0]:
        a = st.selectbox("From", PROVIDERS, index=0, format_func=title, key="wire_diff_a")
    with pair[1]:
        b = st.selectbox("To", PROVIDERS, index=1, format_func=title, key="wire_diff_b")
    what = st.segmented_control("Diff", ("Request", "Response"), default="Request",
                                key="wire_diff_part") or "Request"
    assert a is not None and b is not None  # (an index is given: never None)
    ba, bb = view.bodies[a], view.bodies[b]
    left = ba.request if what == "Request" else ba.response
    right = bb.request if what == "Request" else bb.response
    if a == b:
        st.caption("Pick two different providers.")
    elif left is None or right is None:
        st.caption("One of the two has no body to compare.")
    else:
        st.code(body_diff(left, right, f"{a} ({ba.source})", f"{b} ({bb.source})") or
                "(identical)", language="diff")

