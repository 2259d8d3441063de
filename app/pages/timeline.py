"""Timeline: the run over wall-clock time, and tokens per lap."""

from __future__ import annotations

from app.bootstrap import ensure_navigation

ensure_navigation()

import streamlit as st

from app import data, state, timeline
from app.replay_view import load

st.title("Timeline")
path = data.open_db()
state.init()
state.adopt_query_params()
view = load(path)
run = view.replay.run
st.text(f"{run.summary.name or run.summary.agent_name or 'run'}  ·  {run.id}  ·  "
        f"{run.summary.status}  ·  {len(view.replay)} steps")
st.page_link("pages/replay.py", label="Open in replay", icon=":material/play_circle:",
             query_params={"run": run.id})
if not view.replay.steps:
    st.info("This run has no events.", icon=":material/info:")
    st.stop()
st.subheader("Hooks, model calls and tool calls over time")
st.plotly_chart(timeline.timeline_figure(view.replay), key="timeline_chart")
st.subheader("Tokens per lap")
rows = timeline.tokens_per_lap(view.replay)
if rows:
    st.plotly_chart(timeline.tokens_figure(view.replay), key="tokens_chart")
else:
    st.caption("No token usage was recorded for this run.")
