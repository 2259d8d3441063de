"""Timeline: the run over wall-clock time, tokens and cost per lap.

The run (from ``?run=``, as the replay), a link back to the replay, then three
plotly charts: hooks, model calls and tool calls on lanes, tokens per lap, and the
cost of each lap's model calls (``tracer.read.cost``).
"""

from __future__ import annotations

import streamlit as st

from ... import navigation
from ...data.notes import notes
from ...data.runs import costs
from ...data.steps import plural
from ...data.store import open_db
from ...kit import state
from ...kit.safe import md_escape
from ...panes.run_picker import load_chosen, run_picker
from . import timeline


def timeline_page() -> None:
    st.title("Timeline")
    path = open_db()
    state.init()
    state.adopt_query_params()
    view = load_chosen(path)
    run = view.replay.run
    run_picker(path, run.id)
    if st.query_params.get("run") != run.id:  # (a reload opens the run shown)
        st.query_params["run"] = run.id
    st.text(f"{run.summary.name or run.summary.agent_name or 'run'}  ·  {run.id}  ·  "
            f"{run.summary.status}  ·  {plural(len(view.replay), 'step')}")
    st.page_link(navigation.page("replay"), label="Open in replay", icon=":material/play_circle:",
                 query_params={"run": run.id})
    if not view.replay.steps:
        st.info("This run has no events.", icon=":material/info:")
        st.stop()
    st.subheader("Hooks, model calls and tool calls over time")
    st.plotly_chart(timeline.timeline_figure(view.replay, notes(path, run.id)),
                    key="timeline_chart")
    st.subheader("Tokens per lap")
    if timeline.tokens_per_lap(view.replay):
        st.plotly_chart(timeline.tokens_figure(view.replay), key="tokens_chart")
    else:
        st.caption("No token usage was recorded for this run.")
    st.subheader("Cost per lap")
    cost = costs(path, [run.id])[0].get(run.id)
    rows = timeline.cost_per_lap(cost) if cost is not None else []
    if cost is None or not rows:
        st.caption("No model call to price in this run.")
        return
    st.text(f"The run's own model calls: {cost.own.text()}"
            + (f"; with its subagent runs: {cost.total.text()}" if cost.subagents else ""))
    if all(r["usd"] is None for r in rows):  # (a chart of nothing on a made-up axis)
        models = ", ".join(dict.fromkeys(str(k.model or "an unnamed model")
                                         for k in cost.calls)) or "its model"
        st.caption(f"No price known for {md_escape(models)}: no cost to chart.")
        return
    st.plotly_chart(timeline.cost_figure(rows), key="cost_chart")
