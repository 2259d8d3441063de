"""What if, on the Replay page: this run's forks and replays, and "Fork here".

A replay or fork of the run is listed with a link to Compare opened at the fork's
aligned row; a fork says which run it forks. "Fork here" picks an edit at the current
step (a message of the conversation, the step's tool result, or the system prompt)
and shows the exact ``looptrace replay`` command; when ``looptrace ui --agent
MODULE:FACTORY`` named the agent (``LOOPTRACE_AGENT``), a button runs it and links the
fork. Trace text is shown with ``st.text`` / ``st.code`` and as widget values only.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import streamlit as st

from tracer.fork_links import AGENT_ENV, Fork, fork_argv, forks_of, origin_of
from tracer.loader import TraceDB, content_text
from tracer.records import TOOL_HOOKS

from . import navigation
from .compare_pane import run_diff
from .run_view import RunView

TOGGLE = "show_fork"


def _compare_link(path: str, a: str, b: str, step: int | None, label: str) -> None:
    row = 1
    if step is not None:
        try:
            row = run_diff(path, a, b).row_of(step_a=step - 1) + 1
        except Exception:  # noqa: BLE001 - a link without its row is still a link
            row = 1
    st.page_link(navigation.page("compare"), label=label, icon=":material/compare_arrows:",
                 query_params={"a": a, "b": b, "row": str(row)})


def render_fork_pane(path: str, view: RunView, i: int) -> None:
    run = view.replay.run
    origin = origin_of(run.metadata)
    if origin is not None:
        of, step = origin
        what = f"forks run {of[:12]} at step {step}" if step else f"replays run {of[:12]}"
        st.text(f"This run {what}.")
        _compare_link(path, of, run.id, step, f"Compare with run {of[:12]}")
    with TraceDB(path) as db:
        forks: list[Fork] = forks_of(db, run.id)
    for f in forks:
        _compare_link(path, run.id, f.run_id, f.step, f"Compare with its {f.label}")
    if not st.toggle("Fork here (what if)", key=TOGGLE):
        return
    _fork_form(path, view, i)


def _fork_form(path: str, view: RunView, i: int) -> None:
    run = view.replay.run
    step = i + 1
    msgs = view.replay.messages_at(i)
    ev = view.replay.steps[i].event if view.replay.steps else None
    kinds = ["message", "system prompt"]
    if ev is not None and ev.hook in TOOL_HOOKS:
        kinds.insert(0, "tool result")
    kind = st.radio("Edit at this step", kinds, horizontal=True, key="fork_kind")
    edit: dict[str, object]
    if kind == "message":
        if not msgs:
            st.text("No message at this step.")
            return
        pos = st.selectbox("Message", list(range(len(msgs))), key="fork_pos",
                           format_func=lambda p: f"{p}: [{msgs[p].type}] "
                                                 f"{' '.join(msgs[p].text.split())[:70]}")
        text = st.text_area("Its new content", value=content_text(msgs[int(pos)].content),
                            key=f"fork_text_{pos}")
        edit = {"kind": "message", "position": int(pos), "text": text}
    elif kind == "tool result":
        text = st.text_area("The tool's new result", key="fork_result")
        edit = {"kind": "tool_result", "text": text}
    else:
        text = st.text_area("The new system prompt",
                            value=view.replay.system_prompt() or "", key="fork_system")
        edit = {"kind": "system", "text": text}
    agent = os.environ.get(AGENT_ENV)
    argv = fork_argv(run.id, step, edit, agent=agent or "MODULE:FACTORY", db=path)
    st.code(shlex.join(argv), language="bash")
    if not agent:
        st.caption("Run it in your agent's folder (MODULE:FACTORY: see the README's "
                   "\"What if\"), or start the app with `looptrace ui --agent MODULE:FACTORY`"
                   " to run forks from here.")
        return
    if st.button("Run the fork", key="fork_run", icon=":material/call_split:"):
        with st.spinner("Forking: the steps before this one come from the record..."):
            done = subprocess.run([sys.executable, "-m", "tracer", *argv[1:], "--json"],
                                  capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:
            st.error("The fork failed:", icon=":material/error:")
            st.code(done.stderr.strip() or done.stdout.strip(), language="text")
            return
        out = json.loads(done.stdout)
        st.code(json.dumps(out["served"]) + "\nlive: " + json.dumps(out["live"]),
                language="json")
        _compare_link(path, run.id, str(out["run"]), step, f"Compare with the fork "
                      f"{str(out['run'])[:12]}")
        st.page_link(navigation.page("replay"), label="Open the fork",
                     icon=":material/play_circle:", query_params={"run": str(out["run"])})
