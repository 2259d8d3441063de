"""What the Compare page draws: one run's side at an aligned step, and a difference.

The alignment itself is ``tracer.read.diff``'s (pure, tested directly). Trace text goes
through ``st.text`` / ``st.code`` only (a diff is ``st.code(language="diff")``),
never markdown.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from .. import navigation
from ..data import loads
from ..data.diff import Divergence, RunDiff, diff_replays, message_text
from ..data.drawing import replay_json
from ..data.steps import Replay, captions, key_label, plural
from ..data.store import db_stamp
from ..kit import state
from .replayer_component import render_replayer, replayer_data

SHOWN = 8  # the latest messages shown per side (the step's own are always among them)

# Our own constant CSS (no trace text): two graphs side by side need less height.
STYLE = ("<style>.st-key-cmp_gbox_A, .st-key-cmp_gbox_B "
         "{ --lt-graph-max-height: 380px; }</style>")


@st.cache_resource(show_spinner=False, max_entries=8)
def _diff(path: str, a: str, b: str, stamp: Any) -> RunDiff:
    return diff_replays(loads.load_replay(path, a), loads.load_replay(path, b))


def run_diff(path: str, a: str, b: str) -> RunDiff:
    """The (cached) alignment and differences of runs ``a`` and ``b``."""
    return _diff(path, a, b, db_stamp(path))


@st.cache_resource(show_spinner=False, max_entries=8)
def _json(path: str, run_id: str, stamp: Any) -> dict[str, Any]:
    return replay_json(loads.load_replay(path, run_id), payloads=False)


GRAPH_ONLY = {"controls": False, "caption": False, "messages": False}


def run_label(r: Any) -> str:
    name = r.name or r.agent_name or "run"
    child = "  (subagent)" if r.parent_id else ""
    return f"{name}  ·  {r.status}  ·  {plural(r.laps, 'lap')}  ·  {r.id[:12]}{child}"


def step_at(d: RunDiff, row: int, side: str) -> tuple[int | None, bool]:
    """The step of one side at ``row`` (or its last step before it) and whether it is exact."""
    for i in range(row, -1, -1):
        idx = d.rows[i].index_a if side == "a" else d.rows[i].index_b
        if idx is not None:
            return idx, i == row
    return None, False


def render_side(path: str, tag: str, rp: Replay, idx: int | None, exact: bool) -> None:
    """One run at its aligned step: a link into the replay, the graph, the caption and
    the latest messages (those the step added marked)."""
    s = rp.run.summary
    st.text(f"{tag}: {s.name or s.agent_name or 'run'}  ·  {s.status}  ·  {plural(s.laps, 'lap')}")
    st.page_link(navigation.page("replay"), label="Open in replay",
                 icon=":material/play_circle:",
                 query_params={"run": s.id, "step": state.url_step(idx or 0)})
    if not rp.steps:
        st.info("This run has no recorded steps.", icon=":material/info:")
        return
    i = idx if idx is not None else 0
    step = rp.steps[i]
    ev = step.event
    where = f"step {i + 1} / {len(rp.steps)}  ·  lap {ev.lap}  ·  {ev.hook} {ev.phase}"
    st.text(where if exact or idx is None else f"{where}  (no counterpart in {tag} here)")
    with st.container(key=f"cmp_gbox_{tag}"):
        # The replayer, its graph only, held at the aligned step by the page.
        run_json = _json(path, s.id, db_stamp(path))
        render_replayer(replayer_data(run_json, i, key=s.id, goto=i, keyboard=False,
                                      parts=GRAPH_ONLY), key=f"cmp_graph_{tag}")
    st.text(captions(rp)[i])
    new = set(step.new_keys)
    msgs = rp.messages_at(i)
    with st.container(border=True):
        system = rp.system_prompt()
        if system:
            with st.expander("System prompt", icon=":material/settings:"):
                st.text(system)
        if len(msgs) > SHOWN:
            st.caption(f"{plural(len(msgs) - SHOWN, 'earlier message')} not shown")
        for m in msgs[-SHOWN:]:
            if m.key in new:
                st.badge("added at this step", color="orange", icon=":material/arrow_forward:")
            st.code(message_text(m), language=None, wrap_lines=True)


def render_divergence(d: Divergence) -> None:
    st.code(f"[{d.kind}] {d.description}", language=None, wrap_lines=True)
    if d.detail:
        st.code(d.detail, language="diff")


def render_state_values(d: RunDiff, x: Divergence) -> None:
    """A divergence in a state key: says so, and shows the key's value in each run at
    its aligned step, side by side (the diff of the two is ``x.detail``, above)."""
    if x.kind != "state" or not x.key:
        return
    label = key_label(x.key)
    st.text(f"The runs part in their state, not in their messages: the {label} "
            "differs. Its value in each run at that step:")
    cols = st.columns(2, gap="medium")
    for col, tag, rp, idx in ((cols[0], "A", d.a, x.index_a), (cols[1], "B", d.b, x.index_b)):
        with col, st.container(key=f"cmp_state_{tag}"):
            values = rp.run.state.compared_at(rp.steps[idx].event.seq) if idx is not None else {}
            if x.key not in values:
                st.text(f"{tag}: the {label} is not set")
                continue
            st.text(f"{tag}: the {label}")
            st.code(json.dumps(values[x.key], indent=1, ensure_ascii=False, sort_keys=True,
                               default=str), language="json", wrap_lines=True)


def render_every_difference(d: RunDiff) -> None:
    """All differences, lap by lap, and the diff of the final conversations."""
    with st.expander(f"Every difference, lap by lap ({len(d.differences)})"):
        for ld in d.laps:
            if ld.identical:
                continue
            st.text(ld.segment)
            for x in ld.differences:
                st.code(f"[{x.kind}] {x.description}", language=None, wrap_lines=True)
            if ld.message_diff:
                st.code(ld.message_diff, language="diff")
        if d.run_level:
            st.text("the runs as a whole")
        for x in d.run_level:  # (so the list holds as many as the title counts)
            st.code(f"[{x.kind}] {x.description}", language=None, wrap_lines=True)
    if d.message_diff:
        with st.expander("Conversation diff (final messages)"):
            st.code(d.message_diff, language="diff")
