"""Runs: every run in the database, sortable and filterable; open one in the replay."""

from __future__ import annotations

from app.bootstrap import ensure_navigation

ensure_navigation()

import streamlit as st

from app import data, health, runs_table
from app.safe import md_escape
from app.subagents import run_label
from tracer.errors import LooptraceError

st.title("Runs")
path = data.open_db()
st.caption(f"Database: {md_escape(path)}")

top = st.columns([4, 3, 3], vertical_alignment="bottom")
search = top[0].text_input("Search messages", key="search", placeholder="text in any message")
statuses = top[1].multiselect("Status", ["completed", "running", "error", "interrupted"],
                              key="status_filter")
agent_filter = top[2].text_input("Agent / name contains", key="agent_filter")

try:
    checks_available = __import__("importlib").util.find_spec("tracer.check") is not None
except (ImportError, ValueError):
    checks_available = False


def _health(path: str, run) -> str:  # type: ignore[no-untyped-def]
    try:
        view = data.load_view(path, run.id)
    except LooptraceError:
        return "–"
    if view.findings_pending:
        return "checking…"
    if view.findings_error:
        return "check failed"
    return health.badge(view.findings)


# One period for good: changing a fragment's run_every takes a full app run, and
# doing that from the fragment's own timer races with it (on the Replay page that
# blanked the page: "Bad delta path index").
REFRESH_S = 2.0


@st.fragment(run_every=REFRESH_S)
def table() -> None:
    try:
        runs = data.runs(path, search or None)
    except LooptraceError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
        return
    if not runs:
        st.info("No runs match." if search else "No runs recorded yet.", icon=":material/info:")
        return
    if statuses:
        runs = [r for r in runs if r.status in statuses]
    if agent_filter:
        needle = agent_filter.lower()
        runs = [r for r in runs if needle in (r.name or "").lower()
                or needle in (r.agent_name or "").lower()]
    do_health = checks_available and len(runs) <= 200
    df = runs_table.runs_frame(runs, (lambda r: _health(path, r)) if do_health else None)
    df["open"] = ["replay?run=" + i for i in df["id"]]
    st.dataframe(
        df, hide_index=True, key="runs_table", on_select="rerun", selection_mode="single-row",
        column_order=["run", "status", "health", "agent", "started", "duration_s", "laps",
                      "model_calls", "tool_calls", "errors", "tokens", "open", "id"],
        column_config={
            "run": st.column_config.TextColumn("run", help="subagent runs are nested (↳)"),
            "started": st.column_config.DatetimeColumn("started", format="YYYY-MM-DD HH:mm:ss"),
            "duration_s": st.column_config.NumberColumn("duration", format="%.2f s"),
            "open": st.column_config.LinkColumn("open", display_text="replay ↗"),
            "id": st.column_config.TextColumn("id", width="small"),
        },
    )
    sel = (st.session_state.get("runs_table") or {}).get("selection", {}).get("rows") or []
    ids = list(df["id"])
    labels = {r.id: run_label(r) for r in runs}
    chosen = ids[sel[0]] if sel and sel[0] < len(ids) else None
    if chosen and chosen != st.session_state.get("_runs_last_sel"):
        st.session_state["open_pick"] = chosen  # a row was just selected in the table
    st.session_state["_runs_last_sel"] = chosen
    if st.session_state.get("open_pick") not in ids:
        st.session_state["open_pick"] = ids[0]
    cols = st.columns([5, 2], vertical_alignment="bottom")
    pick = cols[0].selectbox("Open a run", ids, format_func=lambda i: labels.get(i, i),
                             key="open_pick")
    with cols[1]:
        st.page_link("pages/replay.py", label="Open in replay", icon=":material/play_circle:",
                     query_params={"run": pick})
        st.page_link("pages/timeline.py", label="Timeline", icon=":material/timeline:",
                     query_params={"run": pick})


table()
