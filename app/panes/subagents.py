"""The run header of the replay: which run, its status, the run picker, and
the way into and out of nested subagent runs (each opens as its own replay)."""

from __future__ import annotations

import time

import streamlit as st

from ..data import loads
from ..data.debugger import shown_statuses
from ..data.run_view import RunView
from ..data.runs import RunSummary, costs, recent_runs
from ..data.store import LooptraceError
from ..kit import state
from ..kit.safe import md_escape

STATUS_COLOUR = {"completed": "green", "running": "blue", "error": "red", "interrupted": "orange",
                 "handoff": "violet", "stopped": "gray", "paused": "orange",
                 "paused at an error": "red"}


def run_label(r: RunSummary, status: str | None = None) -> str:
    """A run as the pickers list it: its name, status (``status``: the one shown, as
    ``shown_statuses`` gives it; else the one recorded), its id's first 12
    characters and the time it started (runs of one name started in the same second
    share 8 characters; issue 47)."""
    name = r.name or r.agent_name or "run"
    started = time.strftime("%H:%M:%S", time.localtime(r.started_at)) if r.started_at else "–"
    return (f"{'↳ ' if r.parent_id else ''}{name} · {status or r.status} · {r.id[:12]} · "
            f"{started}")


def run_labels(path: str, runs: list[RunSummary]) -> dict[str, str]:
    """{run id: its picker label}, with the status the header shows."""
    shown = shown_statuses(path, runs)
    return {r.id: run_label(r, shown.get(r.id)) for r in runs}


def picked(run_id: str, labels: dict[str, str]) -> None:
    """Set the Run picker (``state.RUN_PICK``) to ``run_id`` before it is drawn, on every
    draw: the browser keeps the label it was last sent for a keyed selectbox, so when only
    the label changes (the run's status, paused -> completed) it went on showing the old
    one, and sent it back as the value. A value the script sets is sent again."""
    st.session_state[state.RUN_PICK] = run_id if run_id in labels else None


def _pick() -> None:
    value = st.session_state.get(state.RUN_PICK)
    if value and value != st.session_state.get(state.RUN):
        state.open_run(value)
        st.session_state[state.STACK] = []


def _open_child(child_id: str) -> None:
    state.open_run(child_id, push=True)


def _to_parent(parent_id: str, step: int) -> None:
    stack = list(st.session_state.get(state.STACK) or [])
    if stack and stack[-1][0] == parent_id:
        _, step = stack.pop()
        st.session_state[state.STACK] = stack
    state.open_run(parent_id, step)


def _picker(path: str, view: RunView) -> None:
    """The sidebar's run picker."""
    run = view.replay.run
    runs = recent_runs(path)  # (the newest: not every run of a large file)
    # (the run shown as the header has it: the same load, so the same status)
    runs = [run.summary, *(r for r in runs if r.id != run.id)] if all(
        r.id != run.id for r in runs) else [run.summary if r.id == run.id else r for r in runs]
    ids = [r.id for r in runs]
    labels = run_labels(path, runs)
    picked(run.id, labels)
    with st.sidebar:
        st.selectbox("Run", ids, format_func=lambda i: labels.get(i, i), key=state.RUN_PICK,
                     on_change=_pick, placeholder="Pick a run")


def cost_line(path: str, run_id: str) -> str:
    """"  ·  cost $0.0123" (with the subagent runs: ``tracer.read.cost``), or nothing when
    the costs cannot be had."""
    c = costs(path, [run_id])[0].get(run_id)
    return f"  ·  cost {c.text()}" if c is not None else ""


def render_run_header(path: str, view: RunView, *, picker: bool = True) -> None:
    """The header; ``picker=False`` leaves the sidebar's run picker out (a lean first
    page: the picker's scripts would load before the replayer's)."""
    run = view.replay.run
    s = run.summary
    st.session_state[state.HEADER_RUN] = run.id
    if picker:
        _picker(path, view)
    head = st.columns([6, 3], vertical_alignment="center")
    with head[0]:
        # (the cost with the full header: a lean first page does not wait for the
        # price table, about 1 s to load the first time)
        cost = cost_line(path, s.id) if picker else ""
        st.text(f"{s.name or s.agent_name or 'run'}  ·  {s.id}  ·  {s.tokens_phrase}{cost}")
    with head[1]:
        # (a run paused in the debugger: "paused", not the "running" or "error" recorded)
        status = shown_statuses(path, [s])[s.id]
        status = status if status in STATUS_COLOUR else "unknown status"  # badges are markdown
        st.badge(status, color=STATUS_COLOUR.get(status, "gray"))  # type: ignore[arg-type]
    if s.parent_id:
        try:
            back = loads.load_view(path, s.parent_id).index_of_tool_call(
                s.parent_tool_call_id) or 0
        except LooptraceError:  # the parent is not in this database
            back = 0
        st.button("Back to the parent run", key="to_parent", icon=":material/arrow_upward:",
                  on_click=_to_parent, args=(s.parent_id, back))
    # (a run above this one is not offered as its subagent: parents in a cycle)
    above = {s.parent_id, *(rid for rid, _ in st.session_state.get(state.STACK) or [])}
    children = [c for c in run.children if c.id not in above]
    if children:
        with st.container(horizontal=True, horizontal_alignment="left", vertical_alignment="center",
                          key="children"):
            st.caption(f"Subagent runs ({len(children)}):")
            for k, child in enumerate(children[:8]):
                name = (child.name or child.agent_name or "subagent")[:40]
                # a button label is markdown: the (untrusted) name is escaped
                st.button(f"{md_escape(name)} · {child.status if child.status in STATUS_COLOUR else '?'}",
                          key=f"open_child_{k}", icon=":material/subdirectory_arrow_right:",
                          help="Open this subagent run as its own nested replay",
                          on_click=_open_child, args=(child.id,))
