"""Compare: two runs side by side, in sync, with the first divergence pointed out.

Pick two runs (nothing is compared until two are picked; defaults from
``?a=...&b=...``, else the newest two runs of one agent; and ``&row=N`` for the aligned
row the page shows as "row N / M", so a link opens that moment); what differs
(set-up, then behaviour, from its first divergence); one slider and its
buttons walk the alignment ``tracer.read.diff`` computed (lap by lap, hook by hook)
and both panes show their run at the aligned step; the differences at that
step, then every difference.
"""

from __future__ import annotations

import streamlit as st

from ...data import runs as run_list
from ...data.diff import RunDiff, cost_difference
from ...data.runs import RunCost, RunFilter, RunSummary, find_run, runs_page
from ...data.store import LooptraceError, open_db, show_error
from ...kit import state
from ...panes.compare_pane import (
    STYLE,
    render_divergence,
    render_every_difference,
    render_side,
    render_state_values,
    run_diff,
    run_label,
    step_at,
)
from ...panes.paged_picker import PAGE_SIZE, paged_run_picker


def compare_page() -> None:
    st.title("Compare two runs")
    st.html(STYLE)
    path = open_db()
    try:  # (the newest top-level runs: the default pair, without a link)
        newest, _, total = runs_page(path, RunFilter(top_level=True), PAGE_SIZE, 0)
    except LooptraceError as exc:
        show_error(exc)
    if not total and not runs_page(path, RunFilter(), 1, 0)[0]:
        st.info("No runs in this database yet.", icon=":material/info:")
        st.stop()
    qp = st.query_params
    pair = same_agent_pair(newest)  # (without a link: the newest two runs of one agent)
    c1, c2 = st.columns(2)
    with c1:
        a = paged_run_picker(
            path, "Run A", key=state.COMPARE_A, format_func=run_label, on_change=_set_row,
            args=(0,), current=st.session_state.get(state.COMPARE_A)
            or _default(path, qp.get("a"), pair and pair[1]))
    with c2:
        b = paged_run_picker(
            path, "Run B", key=state.COMPARE_B, format_func=run_label, on_change=_set_row,
            args=(0,), current=st.session_state.get(state.COMPARE_B)
            or _default(path, qp.get("b"), pair and pair[0]))
    if a is None or b is None:
        st.info("Pick two runs to compare (the same agent on two models, before and after "
                "a change ...).", icon=":material/compare:")
        return
    if qp.get("a") != a or qp.get("b") != b:
        qp["a"], qp["b"] = a, b
    try:
        d = run_diff(path, a, b)
    except LooptraceError as exc:
        show_error(exc)
    _summary(d)
    _cost(path, a, b)
    if not d.rows:
        st.info("Neither run has recorded steps.", icon=":material/info:")
        return
    row = _current_row(d)
    _controls(d, row)
    here = d.rows[row]
    st.text(f"row {row + 1} / {len(d.rows)}  ·  {here.segment}  ·  "
            + ("same in both runs" if here.same else "differs"))
    left, right = st.columns(2, gap="medium")
    with left:
        render_side(path, "A", d.a, *step_at(d, row, "a"))
    with right:
        render_side(path, "B", d.b, *step_at(d, row, "b"))
    at_row = [x for x in d.differences if (x.index_a, x.index_b) == (here.index_a, here.index_b)
              and (x.index_a is not None or x.index_b is not None)]
    if at_row:
        st.subheader("Differences at this step")
        for x in at_row:
            render_divergence(x)
    if not d.identical:
        render_every_difference(d)


def same_agent_pair(runs: list[RunSummary]) -> tuple[str, str] | None:
    """The newest two runs (of ``runs``, newest first) of the same agent: (newer, older);
    None when no agent has two."""
    seen: dict[str, str] = {}
    for r in runs:
        agent = r.agent_name or r.name
        if not agent:
            continue
        if agent in seen:
            return seen[agent], r.id
        seen[agent] = r.id
    return None


def _default(path: str, wanted: str | None, fallback: str | None) -> str | None:
    """The run a link names (an id or a unique prefix), else ``fallback``; None
    (nothing picked) without either."""
    if wanted:
        try:
            return find_run(path, wanted).id
        except LooptraceError:  # (not a run of this file: the default instead)
            pass
    return fallback


def _set_row(i: int) -> None:
    st.session_state[state.COMPARE_ROW] = i
    st.session_state[state.COMPARE_SLIDER] = i + 1  # the slider counts from 1, as the page


def _on_slider() -> None:
    st.session_state[state.COMPARE_ROW] = int(st.session_state[state.COMPARE_SLIDER]) - 1


def _summary(d: RunDiff) -> None:
    """Identical, set up differently, behaving differently (and where it starts)."""
    first = d.first_divergence
    if d.identical:
        st.success("Identical: same hooks, tool calls, arguments, answers and status "
                   "(ids, timings and token counts are ignored).", icon=":material/check:")
    if d.setup:
        st.info("Set up differently (model, system prompt or tools):", icon=":material/tune:")
        for x in d.setup:
            render_divergence(x)
    # (one count, in "Every difference" below: the banners give the verdict, no count)
    if first is not None:
        st.warning(f"The runs behave differently. First divergence, in lap {first.lap}:",
                   icon=":material/call_split:")
        render_divergence(first)
        render_state_values(d, first)
    elif d.same_behaviour and d.setup:
        st.success("Same behaviour: the same hooks, tool calls, arguments, answers and "
                   "status.", icon=":material/check:")
    elif not d.identical:
        st.warning("The runs behave differently:", icon=":material/call_split:")
        for x in d.run_level:
            render_divergence(x)


def cost_text(a: RunCost | None, b: RunCost | None) -> str:
    """The two runs' costs (with their subagent runs) and what B cost more than A."""
    if a is None or b is None:
        return "Cost: not known (the costs cannot be had)"
    return (f"Cost: A {a.total.text()}  ·  B {b.total.text()}  ·  B − A: "
            f"{cost_difference(a.total, b.total)}")


def _cost(path: str, a: str, b: str) -> None:
    """What each run cost and the difference (a fork against the run it forks)."""
    costs = run_list.costs(path, [a, b])[0]
    st.text(cost_text(costs.get(a), costs.get(b)))


def _current_row(d: RunDiff) -> int:
    """The row shown: the state's, or ``?row=`` (as shown: 1-based) in a fresh session;
    clamped, and mirrored into the URL and the slider."""
    qp = st.query_params
    last = len(d.rows) - 1
    if state.COMPARE_ROW not in st.session_state:
        st.session_state[state.COMPARE_ROW] = state.step_index(qp.get("row"))
    row = max(0, min(int(st.session_state[state.COMPARE_ROW]), last))
    st.session_state[state.COMPARE_ROW] = row
    if qp.get("row") != str(row + 1):
        qp["row"] = str(row + 1)
    if st.session_state.get(state.COMPARE_SLIDER) != row + 1:
        st.session_state[state.COMPARE_SLIDER] = row + 1
    return row


def _controls(d: RunDiff, row: int) -> None:
    """First, back, forward, last, a jump to the first divergence, and the slider."""
    last = len(d.rows) - 1
    nav = st.columns([1, 1, 1, 1, 2], vertical_alignment="bottom")
    nav[0].button("First", icon=":material/first_page:", key="cmp_first",
                  on_click=_set_row, args=(0,), width="stretch")
    nav[1].button("Back", icon=":material/chevron_left:", key="cmp_prev",
                  on_click=_set_row, args=(max(0, row - 1),), width="stretch")
    nav[2].button("Forward", icon=":material/chevron_right:", key="cmp_next",
                  on_click=_set_row, args=(min(last, row + 1),), width="stretch")
    nav[3].button("Last", icon=":material/last_page:", key="cmp_last",
                  on_click=_set_row, args=(last,), width="stretch")
    first = d.first_divergence
    goal = first or (d.setup[0] if d.setup else None)
    if goal is not None:
        target = d.row_of(index_a=goal.index_a, index_b=goal.index_b)
        what = "first divergence" if first else "first difference"
        nav[4].button(f"Jump to {what}", icon=":material/call_split:",
                      key="cmp_jump", on_click=_set_row, args=(target,), type="primary",
                      width="stretch")
    st.slider("Aligned step", 1, max(last + 1, 2), key=state.COMPARE_SLIDER,
              on_change=_on_slider,
              disabled=last == 0,
              help="One slider drives both runs, step by step along the alignment.")
