"""What if, on the Replay page: this run's forks and reruns, and "Fork here".

A replay or fork of the run is listed with a link to Compare opened at the fork's
aligned row; a fork says which run it forks. "Fork here" picks an edit at the current
step (a message of the conversation, the step's tool result, or the system prompt)
and shows the exact ``looptrace rerun`` command; when ``looptrace ui --agent
MODULE:FACTORY`` named the agent (``LOOPTRACE_AGENT``), or the run is a demo agent's
(the bundled samples: ``tracer.demo.factories``), a button starts it in the
background (a child process, ``python -m tracer replay ... --token``) and opens the
fork's run as soon as it is recorded: the replayer follows it live to its end. Trace text is shown with ``st.text`` / ``st.code`` and as widget values only.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import streamlit as st

from ... import navigation
from ...data.forks import (
    AGENT_ENV,
    Fork,
    child_env,
    demo_agent,
    fork_argv,
    forks_of,
    origin_of,
    run_tagged,
)
from ...data.run_view import RunView
from ...data.steps import TOOL_HOOKS, content_text
from ...kit import state
from ...panes.compare_pane import run_diff

# How long "Run the fork" waits for the fork's run to appear (the child imports the
# agent's module first); a fork that fails before says why.
START_TIMEOUT_S = 120.0


def _compare_link(path: str, a: str, b: str, step: int | None, label: str) -> None:
    row = 1
    if step is not None:
        try:
            row = run_diff(path, a, b).row_of(index_a=step - 1) + 1
        except Exception:  # noqa: BLE001 - a link without its row is still a link
            row = 1
    st.page_link(navigation.page("compare"), label=label, icon=":material/compare_arrows:",
                 query_params={"a": a, "b": b, "row": str(row)})


def render_fork_pane(path: str, view: RunView, i: int) -> None:
    run = view.replay.run
    origin = origin_of(run.metadata)
    if origin is not None:
        of, step = origin
        what = f"forks run {of[:12]} at step {step}" if step else f"reruns run {of[:12]}"
        st.text(f"This run {what}.")
        _compare_link(path, of, run.id, step, f"Compare with run {of[:12]}")
    forks: list[Fork] = forks_of(path, run.id)
    for f in forks:
        _compare_link(path, run.id, f.run_id, f.step, f"Compare with its {f.label}")
    if not st.toggle("Fork here (what if)", key=state.FORK_TOGGLE):
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
    # the agent `looptrace ui --agent` named, or the demo's own for a demo or sample run
    agent = os.environ.get(AGENT_ENV) or demo_agent(run.summary.name, run.summary.model)
    argv = fork_argv(run.id, step, edit, agent=agent or "MODULE:FACTORY", db=path)
    st.code(shlex.join(argv), language="bash")
    if not agent:
        st.caption("Run it in your agent's folder (MODULE:FACTORY: see \"What if\" in "
                   "looptrace's docs), or start the app with `looptrace ui --agent MODULE:FACTORY`"
                   " to run forks from here.")
        return
    st.button("Run the fork", key="fork_run", icon=":material/call_split:",
              on_click=_start_fork, args=(path, argv))
    failed = st.session_state.pop(state.FORK_ERROR, None)
    if failed:
        st.error("The fork failed:", icon=":material/error:")
        st.code(failed, language="text")


def _start_fork(path: str, argv: list[str]) -> None:
    """Start the fork in the background and open its run as soon as it is recorded."""
    token = uuid.uuid4().hex
    log = Path(tempfile.gettempdir()) / f"looptrace-fork-{token[:12]}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tracer", *argv[1:], "--token", token],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            cwd=os.getcwd(), env={**os.environ, **child_env(path)}, start_new_session=True)
    threading.Thread(target=proc.wait, daemon=True).start()  # (reaped when it ends)
    fork = _wait_for_run(path, token, proc)
    if fork is None:
        text = log.read_text("utf-8", "replace").strip() if log.exists() else ""
        st.session_state[state.FORK_ERROR] = text[-4000:] or f"exit {proc.returncode}"
        return
    st.session_state[state.FORK_TOGGLE] = False
    state.open_run(fork, 10**9, push=True)  # (at its last step: followed as it grows)


def _wait_for_run(path: str, token: str, proc: subprocess.Popen[bytes]) -> str | None:
    """The id of the run recorded with ``token``, once there; None if the child ended
    (or the wait timed out) without one."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        ended = proc.poll() is not None
        found = run_tagged(path, token)
        if found is not None:
            return found
        if ended:
            return None
        time.sleep(0.2)
    return None
