"""Runs: the runs in the database, a page at a time, filtered; open one in the replay.

The database's path; filters (message or note text, status, agent or name, health,
the tags of the runs' notes, the days started, the subagent runs of one run); then the table of runs, subagent
runs nested under their parent and forks and reruns under the run they fork
or replay (with the fork's step and edit), with a health badge each (what ``looptrace
check`` found), refreshed every couple of seconds so runs being recorded show
up; a picker and links to open a run in the replay or the timeline.
"""

from __future__ import annotations

import datetime as dt
from urllib.parse import quote

import pandas as pd
import streamlit as st

from ... import navigation
from ...data import runs as run_list
from ...data import threads as conversations
from ...data.debugger import paused_runs, paused_status
from ...data.forks import forks_below
from ...data.notes import note_tags
from ...data.runs import HEALTH_CLASSES, RunFilter, RunSummary, health
from ...data.store import LooptraceError, open_db, shown_db
from ...data.threads import ThreadSummary
from ...data.wire import usage_why
from ...kit import state
from ...kit.safe import md_escape
from ...panes.subagents import run_labels
from . import runs_grid, runs_table

PAGE_SIZE = 100
# One period for good: changing a fragment's run_every takes a full app run, and
# doing that from the fragment's own timer races with it (on the Replay page that
# blanked the page: "Bad delta path index").
REFRESH_S = 2.0
STATUSES = ["completed", "running", "error", "interrupted", "handoff", "stopped"]
FIRST = RunFilter(top_level=True)
TAGS_SHOWN = 12  # the most used tags offered as a filter  # what the page shows before any filter is set


def runs_page() -> None:
    st.title("Runs")
    path = open_db()
    st.caption(f"Database: {md_escape(shown_db(path))}")
    flt = _filters(path)
    if st.toggle("Group by thread", key=state.GROUP_THREADS,
                 help="the conversations: the runs of one thread id as turns"):
        _threads(path, flt)
        return
    if st.session_state.get(state.RUNS_FILTER) != flt:  # a new filter starts at its first page
        st.session_state[state.RUNS_FILTER] = flt
        st.session_state[state.RUNS_PAGE] = 0
    _table(path, flt)


def _filters(path: str) -> RunFilter:
    """The filters. What a first visit loads is kept light (issue 29): the status and
    health filters are pills (a multiselect loads ten scripts), and the day and parent
    filters wait in a popover, whose widgets (the date picker's scripts) the browser
    loads only when it is opened; a filter set there is named under the row."""
    top = st.columns([4, 3, 2], vertical_alignment="bottom")
    search = top[0].text_input("Search messages and notes", key="search",
                               placeholder="text in any message or note")
    agent = top[1].text_input("Agent / name contains", key="agent_filter")
    with top[2].popover("More filters", icon=":material/filter_list:", width="stretch"):
        # (an empty tuple, no day picked yet, works; the stub does not list it)
        days = st.date_input("Started between", value=(),  # type: ignore[arg-type]
                             key="started_filter", help="a day, or a first and a last day")
        parent = st.text_input("Subagent runs of", key="parent_filter",
                               placeholder="a run id: its subagent runs, listed").strip()
    tags = [t for t, _n in note_tags(path)][:TAGS_SHOWN]
    # (six statuses, five healths; the tags of the notes in the file, when there are some)
    more = st.columns([3, 2, 2] if tags else [3, 2], vertical_alignment="bottom")
    statuses = more[0].pills("Status", STATUSES, selection_mode="multi", key="status_filter")
    healths = more[1].pills("Health", HEALTH_CLASSES, selection_mode="multi",
                            key="health_filter",
                            help="what `looptrace check` found (runs are checked once, "
                                 "when first shown; 'unchecked': not yet)")
    tagged = more[2].pills("Note tags", tags, selection_mode="multi", key="tag_filter",
                           format_func=md_escape,
                           help="runs with a note so tagged (looptrace note, the step "
                                "inspector, MCP add_note)") if tags else []
    since, until = _range(days)
    hidden = [f"started {_days(days)}" if since is not None else "",
              f"subagent runs of {parent}" if parent else ""]
    if any(hidden):
        st.caption(md_escape("More filters: " + "; ".join(h for h in hidden if h)))
    return RunFilter(status=tuple(statuses), name=agent or None, health=tuple(healths),
                     since=since, until=until, parent_id=parent or None,
                     top_level=not parent, search=search or None,
                     tags=tuple(t for t in tagged or () if t in tags))


def _days(picked: object) -> str:
    """The picked day, or first and last day, as text."""
    chosen = sorted(d for d in (picked if isinstance(picked, (tuple, list)) else [picked])
                    if isinstance(d, dt.date))
    return " – ".join(dict.fromkeys(d.isoformat() for d in (chosen[0], chosen[-1])))


def _range(picked: object) -> tuple[float | None, float | None]:
    """Epoch seconds from the start of the first picked day to the end of the last."""
    chosen = [d for d in (picked if isinstance(picked, (tuple, list)) else [picked])
              if isinstance(d, dt.date)]
    if not chosen:
        return None, None
    first = dt.datetime.combine(min(chosen), dt.time())
    last = dt.datetime.combine(max(chosen), dt.time()) + dt.timedelta(days=1)
    return first.timestamp(), last.timestamp()


def _turn(delta: int) -> None:
    st.session_state[state.RUNS_PAGE] = max(0, int(st.session_state.get(state.RUNS_PAGE, 0))
                                            + delta)


@st.fragment(run_every=REFRESH_S)
def _table(path: str, flt: RunFilter) -> None:
    page_no = int(st.session_state.get(state.RUNS_PAGE, 0))
    try:
        runs, below, total = run_list.runs_page(path, flt, PAGE_SIZE, page_no * PAGE_SIZE)
        if not runs and page_no and total:  # (the runs on the last page went)
            st.session_state[state.RUNS_PAGE] = page_no = (total - 1) // PAGE_SIZE
            runs, below, total = run_list.runs_page(path, flt, PAGE_SIZE, page_no * PAGE_SIZE)
    except LooptraceError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
        return
    _paused(path)
    if not runs:
        filtered = flt != FIRST
        st.info("No runs match." if filtered else "No runs recorded yet.",
                icon=":material/info:")
        return
    df, shown = table_frame(path, flt, runs, below)
    df["open"] = ["replay?run=" + quote(i, safe="") for i in df["id"]]
    first = page_no * PAGE_SIZE + 1
    nav = st.columns([2, 2, 6], vertical_alignment="center")
    nav[0].button("Previous", key="runs_prev", icon=":material/chevron_left:",
                  disabled=page_no == 0, on_click=_turn, args=(-1,))
    nav[1].button("Next", key="runs_next", icon=":material/chevron_right:",
                  disabled=first + len(runs) > total, on_click=_turn, args=(1,))
    kind = ("top-level runs (their subagent runs, forks and reruns nested)" if flt.top_level
            else "runs")
    last = first + len(runs) - 1
    # (a search counts no further than the next page: tracer.db.search, run_list.runs_page)
    of = (f"more than {first + PAGE_SIZE - 1:,}" if flt.search and total > first + PAGE_SIZE - 1
          else f"{total:,}")
    nav[2].caption(f"{kind} {first:,}–{last:,} of {of}")
    ids = list(df["id"])
    if st.session_state.get(state.OPEN_PICK) not in ids:
        st.session_state[state.OPEN_PICK] = ids[0]
    runs_grid.render_runs_grid(runs_grid.grid_data(df, st.session_state[state.OPEN_PICK]),
                               on_select=_select)
    _open_a_run(ids, run_labels(path, shown),
                {r.id: r.thread_id for r in shown if r.thread_id})
    picked = next((r for r in shown if r.id == st.session_state.get(state.OPEN_PICK)), None)
    if picked is not None and picked.total_tokens is None and picked.model_calls:
        _no_usage(path, picked)


def _no_usage(path: str, run: RunSummary) -> None:
    """Under the picker: why the picked run's tokens read "not reported" (issue 47), as
    ``looptrace show`` says it, when its captured requests say."""
    why = usage_why(path, run.id)
    st.caption(md_escape(
        f"Tokens not reported: {why}." if why else
        "Tokens not reported: no model call of this run reported usage (its provider sent "
        "none, and no captured request says why)."))


def _paused(path: str) -> None:
    """The runs paused in the debugger now, with a link to each one's pause."""
    paused = paused_runs(path)
    if not paused:
        return
    n = len(paused)
    with st.container(border=True, key="paused_runs"):
        st.warning(f"{n} run{'s' if n != 1 else ''} paused in the debugger",
                   icon=":material/pause_circle:")
        for p in paused[:10]:
            name = str(p.get("run_name") or "run")
            where = f"{name} · {str(p.get('run'))[:12]} · step {p.get('step')} · {p.get('hook')}"
            if p.get("parent_run"):
                where += f" (a subagent of {str(p['parent_run'])[:12]})"
            step = p.get("step")
            query = {"run": str(p.get("run"))}
            if isinstance(step, int):
                query["step"] = str(step)
            st.page_link(navigation.page("replay"), label=md_escape(where),
                         icon=":material/play_circle:", query_params=query)


def table_frame(path: str, flt: RunFilter, runs: list[RunSummary],
                below: list[RunSummary]) -> tuple[pd.DataFrame, list[RunSummary]]:
    """The table of a page of ``runs`` (and the subagent runs ``below`` them): forks and
    replays nested under the run they fork or rerun, a health badge each; and the runs
    in it."""
    shown = [*runs, *below]
    if flt.top_level:  # forks and reruns under the run they fork or rerun
        more, forks = forks_below(path, shown)
        shown += more
    else:
        forks = {}
    badges = health(path, [r.id for r in shown])
    costs, problem = run_list.costs(path, [r.id for r in shown])
    if problem:
        st.warning(md_escape(f"No costs: {problem}"), icon=":material/warning:")
    return runs_table.runs_frame(shown, lambda r: badges.get(r.id, "–"), forks, costs,
                                 paused_status(path)), shown


def warm(path: str) -> None:
    """Load what this page's first visit shows (the first page of top-level runs, their
    health, forks and table), so that its caches hold it (``app/serve.py``). Twice: the
    health found the first time is kept in the file, which changes its stamp (the
    caches' key); the second time reads it back."""
    for _ in range(2):
        runs, below, _total = run_list.runs_page(path, FIRST, PAGE_SIZE, 0)
        table_frame(path, FIRST, runs, below)


def _select() -> None:
    """A row was clicked in the table: the picker follows it."""
    chosen = runs_grid.selected()
    if chosen:
        st.session_state[state.OPEN_PICK] = chosen


def _open_a_run(ids: list[str], labels: dict[str, str],
                threads: dict[str, str] | None = None) -> None:
    """The picker (following the row selected in the table) and the links to open it
    (and its conversation, for a run recorded under a thread id)."""
    cols = st.columns([5, 2], vertical_alignment="bottom")
    pick = cols[0].selectbox("Open a run", ids, format_func=lambda i: labels.get(i, i),
                             key=state.OPEN_PICK)
    with cols[1]:
        st.page_link(navigation.page("replay"), label="Open in replay",
                     icon=":material/play_circle:", query_params={"run": pick})
        st.page_link(navigation.page("timeline"), label="Timeline", icon=":material/timeline:",
                     query_params={"run": pick})
        thread = (threads or {}).get(pick)
        if thread:
            st.page_link(navigation.page("threads"), label="Conversation",
                         icon=":material/forum:", query_params={"thread": thread})


GROUP_RUNS = 2000  # the newest runs a filter is applied to when grouping by thread


def _threads(path: str, flt: RunFilter) -> None:
    """The runs grouped by thread: one row a conversation (its turns, times, statuses,
    tokens, cost, interrupts and resumes), and a link to open one. With a filter set, the
    threads of the newest runs it selects."""
    try:
        rows = conversations.threads(path)
        if flt != FIRST:
            runs, _below, _total = run_list.runs_page(path, flt, GROUP_RUNS, 0)
            keep = {r.thread_id for r in runs if r.thread_id}
            rows = [t for t in rows if t.thread_id in keep]
    except LooptraceError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
        return
    if not rows:
        st.info("No conversations match: no run here recorded a thread id.",
                icon=":material/info:")
        return
    st.caption(f"{len(rows):,} conversation{'s' if len(rows) != 1 else ''} "
               "(the runs of one thread id, each run a turn)")
    st.dataframe(threads_frame(rows), hide_index=True, key="threads_table",
                 width="stretch")
    ids = [t.thread_id for t in rows]
    cols = st.columns([5, 2], vertical_alignment="bottom")
    if st.session_state.get(state.THREAD_PICK) not in ids:
        st.session_state[state.THREAD_PICK] = ids[0]
    pick = cols[0].selectbox("Open a conversation", ids, key=state.THREAD_PICK)
    with cols[1]:
        st.page_link(navigation.page("threads"), label="Open conversation",
                     icon=":material/forum:", query_params={"thread": pick})


def threads_frame(rows: list[ThreadSummary]) -> pd.DataFrame:
    """The threads as the grouped table shows them."""
    def when(ts: float | None) -> str:
        return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else ""

    return pd.DataFrame({
        "thread": [t.thread_id for t in rows],
        "turns": [t.turns for t in rows],
        "first": [when(t.first_at) for t in rows],
        "last": [when(t.last_at) for t in rows],
        "statuses": [", ".join(f"{n} {s}" for s, n in t.statuses.items()) for t in rows],
        "tokens": ["not reported" if t.tokens is None else f"{t.tokens:,}" for t in rows],
        "cost": [t.cost.short() for t in rows],
        "interrupts": [t.interrupts for t in rows],
        "resumes": [t.resumes for t in rows],
    })
