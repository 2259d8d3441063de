"""Compare: two runs side by side, in sync, with the first divergence pointed out.

Pick two runs (defaults from ``?a=...&b=...``, and ``&row=N`` for the aligned
row, 0-based, so a link opens that moment); one slider walks the alignment
that ``tracer.diff`` computed (lap by lap, hook by hook), and both panes show
their run at the aligned step. Trace text goes through ``st.text`` /
``st.code`` only (a diff is ``st.code(language="diff")``), never markdown.
"""

from app.bootstrap import ensure_navigation

ensure_navigation()

from typing import Any

import streamlit as st

from app import data
from app.graph_component import graph_data, render_graph
from tracer.diff import Divergence, RunDiff, diff_replays, message_text
from tracer.errors import LooptraceError
from tracer.replay import Replay

ROW = "cmp_row"  # the aligned row shown (a plain key: survives page switches)
SLIDER = "cmp_slider"
SHOWN = 8  # the latest messages shown per side (the step's own are always among them)


@st.cache_resource(show_spinner=False, max_entries=8)
def _diff(path: str, a: str, b: str, stamp: Any) -> RunDiff:
    return diff_replays(data.load_replay(path, a), data.load_replay(path, b))


def _label(r: Any) -> str:
    name = r.name or r.agent_name or "run"
    child = "  (subagent)" if r.parent_id else ""
    return f"{name}  ·  {r.status}  ·  {r.laps} laps  ·  {r.id[:10]}{child}"


def _default(ids: list[str], wanted: str | None, fallback: int) -> int:
    if wanted:
        for i, rid in enumerate(ids):
            if rid == wanted or rid.startswith(wanted):
                return i
    return min(fallback, len(ids) - 1)


# Our own constant CSS (no trace text): two graphs side by side need less height.
STYLE = ("<style>.st-key-cmp_gbox_A, .st-key-cmp_gbox_B "
         "{ --lt-graph-max-height: 380px; }</style>")


def _int(value: Any) -> int:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return 0


def _set_row(i: int) -> None:
    st.session_state[ROW] = i
    st.session_state[SLIDER] = i + 1  # the slider counts rows from 1, as the page does


def _on_slider() -> None:
    st.session_state[ROW] = int(st.session_state[SLIDER]) - 1


def _on_pick() -> None:
    _set_row(0)


def _step_at(rows: list[Any], row: int, side: str) -> tuple[int | None, bool]:
    """The step of one side at ``row`` (or its last step before it) and whether it is exact."""
    for i in range(row, -1, -1):
        idx = rows[i].step_a if side == "a" else rows[i].step_b
        if idx is not None:
            return idx, i == row
    return None, False


def _pane(tag: str, rp: Replay, idx: int | None, exact: bool) -> None:
    s = rp.run.summary
    st.text(f"{tag}: {s.name or s.agent_name or 'run'}  ·  {s.status}  ·  {s.laps} laps")
    st.page_link("pages/replay.py", label="Open in replay", icon=":material/play_circle:",
                 query_params={"run": s.id, "step": str(idx or 0)})
    if not rp.steps:
        st.info("This run has no recorded steps.", icon=":material/info:")
        return
    i = idx if idx is not None else 0
    step = rp.steps[i]
    ev = step.event
    where = f"step {i + 1} / {len(rp.steps)}  ·  lap {ev.lap}  ·  {ev.hook} {ev.phase}"
    st.text(where if exact or idx is None else f"{where}  (no counterpart in {tag} here)")
    with st.container(key=f"cmp_gbox_{tag}"):
        render_graph(graph_data(rp, i, keyboard=False), key=f"cmp_graph_{tag}")
    st.text(step.caption)
    new = set(step.new_keys)
    msgs = rp.messages_at(i)
    with st.container(border=True):
        system = rp.system_prompt()
        if system:
            with st.expander("System prompt", icon=":material/settings:"):
                st.text(system)
        if len(msgs) > SHOWN:
            st.caption(f"{len(msgs) - SHOWN} earlier messages not shown")
        for m in msgs[-SHOWN:]:
            if m.key in new:
                st.badge("added at this step", color="orange", icon=":material/arrow_forward:")
            st.code(message_text(m), language=None, wrap_lines=True)


def _divergence(d: Divergence) -> None:
    st.code(f"[{d.kind}] {d.description}", language=None, wrap_lines=True)
    if d.detail:
        st.code(d.detail, language="diff")


def main() -> None:
    st.title("Compare two runs")
    st.html(STYLE)
    path = data.open_db()
    runs = data.runs(path)
    if not runs:
        st.info("No runs in this database yet.", icon=":material/info:")
        st.stop()
    top = [r for r in runs if not r.parent_id] or runs
    ordered = top + [r for r in runs if r not in top]
    ids = [r.id for r in ordered]
    label = {r.id: _label(r) for r in ordered}
    qp = st.query_params
    c1, c2 = st.columns(2)
    with c1:
        a = st.selectbox("Run A", ids, index=_default(ids, qp.get("a"), 1),
                         format_func=label.__getitem__, key="cmp_a", on_change=_on_pick)
    with c2:
        b = st.selectbox("Run B", ids, index=_default(ids, qp.get("b"), 0),
                         format_func=label.__getitem__, key="cmp_b", on_change=_on_pick)
    if qp.get("a") != a or qp.get("b") != b:
        qp["a"], qp["b"] = a, b
    try:
        d = _diff(path, a, b, data.db_stamp(path))
    except LooptraceError as exc:
        data.show_error(exc)
        return
    rows = d.rows
    first = d.first_divergence
    if d.identical:
        st.success("Identical: same hooks, tool calls, arguments, answers and status "
                   "(ids, timings and token counts are ignored).", icon=":material/check:")
    if d.setup:
        st.info("Set up differently (model, system prompt or tools):", icon=":material/tune:")
        for x in d.setup:
            _divergence(x)
    if first is not None:
        st.warning(f"The runs behave differently: {len(d.differences) - len(d.setup)} "
                   f"differences. First divergence, in lap {first.lap}:",
                   icon=":material/call_split:")
        _divergence(first)
    elif d.setup:
        st.success("Same behaviour: the same hooks, tool calls, arguments, answers and "
                   "status.", icon=":material/check:")
    if not rows:
        st.info("Neither run has recorded steps.", icon=":material/info:")
        return
    last = len(rows) - 1
    if ROW not in st.session_state:  # a fresh session: follow ?row= (0-based, clamped)
        st.session_state[ROW] = _int(qp.get("row"))
    row = max(0, min(_int(st.session_state.get(ROW)), last))
    st.session_state[ROW] = row
    if qp.get("row") != str(row):
        qp["row"] = str(row)
    if st.session_state.get(SLIDER) != row + 1:
        st.session_state[SLIDER] = row + 1
    nav = st.columns([1, 1, 1, 1, 2], vertical_alignment="bottom")
    nav[0].button("First", icon=":material/first_page:", key="cmp_first",
                  on_click=_set_row, args=(0,), width="stretch")
    nav[1].button("Back", icon=":material/chevron_left:", key="cmp_prev",
                  on_click=_set_row, args=(max(0, row - 1),), width="stretch")
    nav[2].button("Forward", icon=":material/chevron_right:", key="cmp_next",
                  on_click=_set_row, args=(min(last, row + 1),), width="stretch")
    nav[3].button("Last", icon=":material/last_page:", key="cmp_last",
                  on_click=_set_row, args=(last,), width="stretch")
    goal = first or (d.setup[0] if d.setup else None)
    if goal is not None:
        target = d.row_of(step_a=goal.step_a, step_b=goal.step_b)
        what = "first divergence" if first else "first difference"
        nav[4].button(f"Jump to {what}", icon=":material/call_split:",
                      key="cmp_jump", on_click=_set_row, args=(target,), type="primary",
                      width="stretch")
    st.slider("Aligned step", 1, max(last + 1, 2), key=SLIDER, on_change=_on_slider,
              disabled=last == 0,
              help="One slider drives both runs, step by step along the alignment.")
    here = rows[row]
    st.text(f"row {row + 1} / {len(rows)}  ·  {here.segment}  ·  "
            + ("same in both runs" if here.same else "differs"))
    ia, exact_a = _step_at(rows, row, "a")
    ib, exact_b = _step_at(rows, row, "b")
    left, right = st.columns(2, gap="medium")
    with left:
        _pane("A", d.a, ia, exact_a)
    with right:
        _pane("B", d.b, ib, exact_b)
    at_row = [x for x in d.differences if (x.step_a, x.step_b) == (here.step_a, here.step_b)
              and (x.step_a is not None or x.step_b is not None)]
    if at_row:
        st.subheader("Differences at this step")
        for x in at_row:
            _divergence(x)
    if not d.identical:
        with st.expander(f"Every difference, lap by lap ({len(d.differences)})"):
            for ld in d.laps:
                if ld.identical:
                    continue
                st.text(ld.segment)
                for x in ld.differences:
                    st.code(f"[{x.kind}] {x.description}", language=None, wrap_lines=True)
                if ld.message_diff:
                    st.code(ld.message_diff, language="diff")
        if d.message_diff:
            with st.expander("Conversation diff (final messages)"):
                st.code(d.message_diff, language="diff")


main()
