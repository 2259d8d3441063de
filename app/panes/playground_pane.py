"""The playground pane: one recorded model call re-sent, edited, to a chosen model, its
answer beside the recorded one (``tracer.wire.playground``, through ``app/data/``).

``render_playground(path, run, step, agent)`` shows the model call at or after ``step``
of ``run`` as the model received it, the debugger's edit form for a model call (one
edit: a message's text, drop a message, the system prompt, and under "More changes" an
inserted message, the tools offered, the settings: ``debug_pane.request_form``, the
same fields and the same ``edit_of``), who answers (``offline``, ``recorded``, the
agent's own model when the run's agent is known, or any ``init_chat_model`` name), and
after "Send" the two answers side by side, where the new one came from, and the request
in OpenAI, Anthropic and Ollama form (tabs). A refused edit, an unknown model, a
missing key or a network error is one ``st.error`` line. Nothing is written.

Trace text is shown with ``st.text`` / ``st.code`` and as widget values only; a line
that quotes it in markdown is escaped (``app/kit/safe.py``). ``render_link`` is the Replay
page's way here.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from .. import navigation
from ..data.playground import playground, playground_call
from ..data.run_view import RunView
from ..data.store import LooptraceError
from ..kit import state
from ..kit.safe import md_escape
from ..screens.replay import debug_pane

OFFLINE, RECORDED, AGENT, OTHER = ("offline", "recorded", "the agent's own model",
                                   "another model")
TITLES = {"openai": "OpenAI", "anthropic": "Anthropic", "ollama": "Ollama"}
ASK_HELP = ("offline: no network, no key: the recorded answer when this run, its subagents "
            "or its reruns and forks recorded a call with the same request, else an answer "
            "that says what the model would have been sent. recorded: the recorded provider "
            "and model (your key). The agent's own model: the model its factory gives "
            "create_agent. Another model: an init_chat_model name such as "
            "openai:gpt-4.1-mini (your key).")


def render_link(view: RunView, i: int) -> None:
    """On the Replay page: this step's model call (or the next one) in the playground."""
    run = view.replay.run
    if not run.summary.model_calls:
        return
    st.page_link(navigation.page("playground"), icon=":material/science:",
                 label="Re-send this model call in the playground",
                 query_params={"run": run.id, "step": state.url_step(i)})


def render_playground(path: str, run_id: str, step: int, agent: str | None) -> None:
    """The pane for the model call at or after ``step`` (from 1) of ``run_id``."""
    try:
        call = playground_call(path, run_id, step)
    except LooptraceError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
        return
    pend: dict[str, Any] = call["pending"]
    tag = f"{call['run']}:{call['step']}"
    if st.session_state.get(state.PLAY_FILLED) != tag or state.DEBUG_CHANGE not in st.session_state:
        debug_pane.fill_request(pend)  # (a new call, or Streamlit dropped the fields)
        st.session_state[state.PLAY_FILLED] = tag
    with st.container(border=True, key="playground"):
        _request(call, pend)
        debug_pane.request_form(pend, answer=False, model=False)
        model = _who(agent)
        if st.button("Send", key="play_send", icon=":material/send:", type="primary"):
            with st.spinner(md_escape(f"Asking {model or 'the model'} ...")):
                _send(path, call, pend, model, agent, tag)
        failed = st.session_state.get(state.PLAY_ERROR)
        if isinstance(failed, tuple) and len(failed) == 2 and failed[0] == tag:
            st.error(md_escape(failed[1]), icon=":material/error:")
    done = st.session_state.get(state.PLAY_RESULT)
    if isinstance(done, tuple) and len(done) == 2 and done[0] == tag:
        _result(done[1])


def _request(call: dict[str, Any], pend: dict[str, Any]) -> None:
    msgs = list(pend.get("messages") or [])
    tools = ", ".join(str(t) for t in pend.get("tools") or []) or "none"
    st.text(f"Model call {call['model_call']} (step {call['step']}) · model "
            f"{pend.get('model')} · {len(msgs)} message{'' if len(msgs) == 1 else 's'} · "
            f"tools: {tools}")
    with st.expander("The request as the model received it", expanded=False):
        if pend.get("system") is not None:
            st.text("System prompt")
            st.code(str(pend["system"]), language=None, wrap_lines=True)
        for m in msgs:
            st.text(f"[{m.get('position')}] {m.get('type')}"
                    + (f" · {m['name']}" if m.get("name") else ""))
            if m.get("text"):
                st.code(str(m["text"]), language=None, wrap_lines=True)
            if m.get("tool_calls"):
                st.code(_dumps(m["tool_calls"]), language="json", wrap_lines=True)


def _who(agent: str | None) -> str:
    """Who answers: the model name ``tracer.wire.playground`` takes."""
    choices = [OFFLINE, RECORDED, *([AGENT] if agent else []), OTHER]
    ask = st.radio("Who answers", choices, horizontal=True, key=state.PLAY_ASK,
                   help=ASK_HELP)
    if ask == OTHER:
        name = st.text_input("The model (an init_chat_model name)", key=state.PLAY_MODEL,
                             placeholder="openai:gpt-4.1-mini")
        return str(name or "").strip()
    if ask == AGENT and agent:
        st.caption(md_escape(f"The model of {agent}"))
        return "agent"
    return RECORDED if ask == RECORDED else OFFLINE


def _send(path: str, call: dict[str, Any], pend: dict[str, Any], model: str,
          agent: str | None, tag: str) -> None:
    """The edit made of the form, the call re-sent; the answer, or why not in one line."""
    st.session_state.pop(state.PLAY_ERROR, None)
    values = {k: state.get(k) for k in debug_pane.FIELD_KEYS}
    try:
        if not model:
            msg = "name the model: an init_chat_model name such as openai:gpt-4.1-mini"
            raise debug_pane.BadEdit(msg)
        edit = debug_pane.edit_of(pend, values)
        out = playground(path, str(call["run"]), int(call["step"]), edit, model, agent)
    except (debug_pane.BadEdit, LooptraceError) as exc:
        st.session_state[state.PLAY_ERROR] = (tag, _one_line(str(exc)))
        return
    except Exception as exc:  # noqa: BLE001 - whatever a provider's client raises: one line
        st.session_state[state.PLAY_ERROR] = (tag, _one_line(f"{type(exc).__name__}: {exc}"))
        return
    st.session_state[state.PLAY_RESULT] = (tag, out)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:500]


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _answer(m: dict[str, Any] | None, key: str) -> None:
    with st.container(key=key):
        if m is None:
            st.caption("None recorded.")
            return
        st.code(str(m.get("text") or "(no text)"), language=None, wrap_lines=True)
        calls = [{"name": c.get("name"), "args": c.get("args")}
                 for c in m.get("tool_calls") or []]
        if calls:
            st.text("Tool calls")
            st.code(_dumps(calls), language="json", wrap_lines=True)


def _result(out: dict[str, Any]) -> None:
    with st.container(key="play_result"):
        if out.get("edit"):
            st.text("Edited: " + json.dumps(out["edit"], ensure_ascii=False))
        cols = st.columns(2)
        with cols[0]:
            st.markdown("**Recorded answer**")
            _answer(out.get("recorded_answer"), "play_recorded")
        with cols[1]:
            st.markdown(f"**{md_escape(out.get('model') or 'the model')} answers**")
            _answer(out.get("answer"), "play_answer")
            st.text(str(out.get("served") or ""))
        st.text("The request sent, in each provider's form (built offline by its adapter)")
        wire: dict[str, Any] = out.get("wire") or {}
        names = [p for p in TITLES if p in wire]
        for tab, p in zip(st.tabs([TITLES[p] for p in names]), names):
            with tab:
                body = wire[p]
                if isinstance(body, dict) and set(body) == {"error"}:
                    st.error(md_escape(f"Cannot render {TITLES[p]}: {body['error']}"),
                             icon=":material/error:")
                else:
                    st.code(_dumps(body), language="json", wrap_lines=True)
