"""Runs: the runs in the database, a page at a time, filtered; open one in the replay."""

from __future__ import annotations

from app.bootstrap import ensure_navigation

ensure_navigation()

import datetime as dt

import streamlit as st

from app import data, runs_table
from app.safe import md_escape
from app.subagents import run_label
from tracer.errors import LooptraceError
from tracer.run_list import HEALTH_CLASSES, RunFilter

PAGE_SIZE = 100
PAGE = "runs_page_index"

st.title("Runs")
path = data.open_db()
st.caption(f"Database: {md_escape(path)}")

top = st.columns([4, 3, 3], vertical_alignment="bottom")
search = top[0].text_input("Search messages", key="search", placeholder="text in any message")
statuses = top[1].multiselect("Status", ["completed", "running", "error", "interrupted"],
                              key="status_filter")
agent_filter = top[2].text_input("Agent / name contains", key="agent_filter")
more = st.columns([3, 3, 4], vertical_alignment="bottom")
healths = more[0].multiselect("Health", HEALTH_CLASSES, key="health_filter",
                              help="what `looptrace check` found (runs are checked once, "
                                   "when first shown; 'unchecked': not yet)")
days = more[1].date_input("Started between", value=(), key="started_filter",
                          help="a day, or a first and a last day")
parent = more[2].text_input("Subagent runs of", key="parent_filter",
                            placeholder="a run id: its subagent runs, listed")


def _range(picked: object) -> tuple[float | None, float | None]:
    """Epoch seconds from the start of the first picked day to the end of the last."""
    chosen = [d for d in (picked if isinstance(picked, (tuple, list)) else [picked])
              if isinstance(d, dt.date)]
    if not chosen:
        return None, None
    first = dt.datetime.combine(min(chosen), dt.time())
    last = dt.datetime.combine(max(chosen), dt.time()) + dt.timedelta(days=1)
    return first.timestamp(), last.timestamp()


since, until = _range(days)
flt = RunFilter(status=tuple(statuses), name=agent_filter or None, health=tuple(healths),
                since=since, until=until, parent_id=parent.strip() or None,
                top_level=not parent.strip(), search=search or None)
if st.session_state.get("_runs_filter") != flt:  # a new filter starts at its first page
    st.session_state["_runs_filter"] = flt
    st.session_state[PAGE] = 0


def _turn(delta: int) -> None:
    st.session_state[PAGE] = max(0, int(st.session_state.get(PAGE, 0)) + delta)


# One period for good: changing a fragment's run_every takes a full app run, and
# doing that from the fragment's own timer races with it (on the Replay page that
# blanked the page: "Bad delta path index").
REFRESH_S = 2.0


@st.fragment(run_every=REFRESH_S)
def table() -> None:
    page_no = int(st.session_state.get(PAGE, 0))
    try:
        runs, below, total = data.runs_page(path, flt, PAGE_SIZE, page_no * PAGE_SIZE)
        if not runs and page_no and total:  # (the runs on the last page went)
            st.session_state[PAGE] = page_no = (total - 1) // PAGE_SIZE
            runs, below, total = data.runs_page(path, flt, PAGE_SIZE, page_no * PAGE_SIZE)
    except LooptraceError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
        return
    if not runs:
        filtered = flt != RunFilter(top_level=True)
        st.info("No runs match." if filtered else "No runs recorded yet.",
                icon=":material/info:")
        return
    shown = [*runs, *below]
    badges = data.health(path, [r.id for r in shown])
    df = runs_table.runs_frame(shown, lambda r: badges.get(r.id, "–"))
    df["open"] = ["replay?run=" + i for i in df["id"]]
    first = page_no * PAGE_SIZE + 1
    nav = st.columns([2, 2, 6], vertical_alignment="center")
    nav[0].button("Previous", key="runs_prev", icon=":material/chevron_left:",
                  disabled=page_no == 0, on_click=_turn, args=(-1,))
    nav[1].button("Next", key="runs_next", icon=":material/chevron_right:",
                  disabled=first + len(runs) > total, on_click=_turn, args=(1,))
    kind = "top-level runs (their subagent runs nested)" if flt.top_level else "runs"
    nav[2].caption(f"{kind} {first:,}–{first + len(runs) - 1:,} of {total:,}")
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
    labels = {r.id: run_label(r) for r in shown}
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
