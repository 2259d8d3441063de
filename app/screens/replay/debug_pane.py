"""The debugger on the Replay page: a live run paused at a breakpoint, and the ways to
pause one (``tracer.debug``; the channel is the trace database's ``debug_pauses``).

While the run shown is being recorded (or paused: a run paused at an error is recorded
as ``error`` until it goes on; the runs list and the header say "paused at an error",
``tracer.debug.channel.paused_status``), each reload of the replay (every ``state.LIVE_MS``) asks
the channel, read-only, whether it is paused:

- paused: the replay jumps to the pause's step once, and the panel "Paused in the
  debugger" shows what is pending (a model call's request, a tool call, the model's
  reply, a tool's result), fields to change it (the less common edits, ``insert``,
  ``tools``, ``settings``, ``model`` and a tool call's ``raise``, in a "More" expander;
  one edit per answer, as ``tracer.debug.edits`` takes them), and the controls Continue, Step,
  Step out (where there is something to step out of: a subagent, a subgraph; the panel
  says where it goes back to, and names the subagent a step went into), Next lap, Run to
  the end and Abort (keys F8, F10, Shift+F11, F9, Shift+F8, heard when no text
  field has focus; Abort has none);
- paused at several places at once (parallel tool calls): the pauses listed, one
  picked; the panel shows that one and its controls answer that one, by its id;
- a subagent run of it paused: where, and a button to open that run at its pause;
- not paused: "Pause at the next model call" and "Pause at the next hook", armed for
  this run (and its subagent runs). They pause once: answering the pause here clears
  what this session armed for the run.

The database is opened for writing only when a control is used. Trace text is shown
with ``st.text`` / ``st.code`` and as widget values only; a label that quotes it is
escaped (``app/kit/safe.py``). An edit is checked before anything is sent: bad JSON or an
edit that does not apply is one ``st.error`` line and the run stays paused.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st

from ...data.debugger import (
    armed_for,
    breakpoint_help,
    debug_answer,
    debug_arm,
    debug_clear,
    debug_validate,
    next_pause_waiter,
    paused_runs,
    raised_lines,
)
from ...data.run_view import RunView
from ...data.store import LooptraceError
from ...kit import state
from ...kit.safe import md_escape
from . import rewind_pane

# command, label, icon, keyboard shortcut
CONTROLS: tuple[tuple[str, str, str, str | None], ...] = (
    ("continue", "Continue", ":material/play_arrow:", "F8"),
    ("step", "Step", ":material/redo:", "F10"),
    ("out", "Step out", ":material/north_west:", "Shift+F11"),
    ("lap", "Next lap", ":material/skip_next:", "F9"),
    ("run", "Run to the end", ":material/fast_forward:", "Shift+F8"),
    ("abort", "Abort", ":material/stop_circle:", None),
)
HELP = {
    "continue": "Go on to the next breakpoint, with the change below if any (F8)",
    "step": ("Go on to the next hook firing of this run; at a tool call (before it runs): "
             "into the subagent it runs, at its first hook (F10)"),
    "out": ("Step out: run this subagent (or subgraph) to its end, breakpoints on the way "
            "still hitting, and pause back in its parent after the call (Shift+F11)"),
    "lap": "Go on to the next lap's model call (F9)",
    "run": "Run to the end: no more pauses in this run (Shift+F8)",
    "abort": "End the run here as an error: 'aborted in the debugger'",
}
# at a model call, what the panel can change
NOTHING, MESSAGE, DROP, SYSTEM, ANSWER = ("nothing", "a message's text", "drop a message",
                                          "the system prompt", "answer it yourself")
CHANGES = (NOTHING, MESSAGE, DROP, SYSTEM, ANSWER)
AT = {"before": "before the call", "after": "after the call", "error": "the call raised",
      "fire": ""}
# after an answer, the agent's time to reach its next pause (it polls every 20 ms; on
# PostgreSQL the wait ends at the pause's NOTIFY: app.data.debugger.next_pause_waiter)
WAIT_S = 0.3
ROLES = ("human", "ai", "system")  # of an inserted message (tracer.debug.edits)
RAISED = "raised in the debugger"  # a raise edit's text when none is given
# every field of the panel, by state key: what _answer hands edit_of
FIELD_KEYS = (state.DEBUG_TEXT, state.DEBUG_ARGS, state.DEBUG_CALLS, state.DEBUG_CHANGE,
              state.DEBUG_POSITION, state.DEBUG_INSERT, state.DEBUG_INSERT_AT,
              state.DEBUG_INSERT_ROLE, state.DEBUG_TOOLS, state.DEBUG_SETTINGS,
              state.DEBUG_MODEL, state.DEBUG_RAISE, state.DEBUG_RAISE_TEXT)
ARM_NOTE = ("Pauses only an agent armed with a debugger: TraceMiddleware(debug=True) or "
            "LOOPTRACE_DEBUG=1.")


class BadEdit(ValueError):
    """What was typed is not an edit (bad JSON, two changes at once)."""


def _settings(pend: dict[str, Any]) -> dict[str, Any]:
    given = pend.get("settings")
    return given if isinstance(given, dict) else {}


def pauses(path: str, view: RunView) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The pause of the run ``view`` shows (or None) and the pauses of its subagent runs;
    asked only of a run that has not completed (a run paused at an error reads
    ``error`` until it goes on)."""
    run = view.replay.run
    if run.summary.status == "completed":
        return None, []
    found = paused_runs(path)
    own = [p for p in found if p.get("run") == run.id]
    below = [p for p in found if p.get("parent_run") == run.id]
    if not own:
        return None, below
    ids = [p.get("pause") for p in own]
    if st.session_state.get(state.DEBUG_PICK) not in ids:
        st.session_state[state.DEBUG_PICK] = ids[0]  # (the oldest; the one picked is over)
    picked = own[ids.index(st.session_state[state.DEBUG_PICK])]
    return {**picked, "siblings": own}, below


def _tag(p: dict[str, Any]) -> str:
    return f"{p.get('run')}:{p.get('pause')}"


def follow(view: RunView, p: dict[str, Any]) -> None:
    """A pause seen for the first time: its fields filled in, the replay moved to its step
    (once the replay holds that step: the next reload, if not yet)."""
    tag = _tag(p)
    if st.session_state.get(state.DEBUG_PAUSE) == tag:
        if not _filled(p.get("pending") or {}):
            _fill(p.get("pending") or {})  # (Streamlit dropped the fields: another page was shown)
        return
    step = p.get("step")
    if isinstance(step, int) and step > len(view.replay):
        return  # (recorded after this replay was loaded)
    st.session_state[state.DEBUG_PAUSE] = tag
    _fill(p.get("pending") or {})
    if isinstance(step, int) and step >= 1:
        state.move_to(step - 1)


def _filled(pend: dict[str, Any]) -> bool:
    """Whether the fields of what is pending still hold their values."""
    kind = pend.get("kind")
    if kind == "tool_call":
        return state.DEBUG_ARGS in st.session_state
    if kind == "model_request":
        return state.DEBUG_CHANGE in st.session_state
    return state.DEBUG_TEXT in st.session_state


def _fill(pend: dict[str, Any]) -> None:
    """The fields' first values for a new pause."""
    kind = pend.get("kind")
    st.session_state.pop(state.DEBUG_ERROR, None)
    st.session_state.pop(state.PLAY_FILLED, None)  # (the playground fills them again)
    st.session_state[state.DEBUG_TEXT] = ""
    st.session_state[state.DEBUG_CALLS] = ""
    if kind == "tool_call":
        st.session_state[state.DEBUG_ARGS] = _dumps((pend.get("tool_call") or {}).get("args") or {})
        st.session_state[state.DEBUG_RAISE] = False
        st.session_state[state.DEBUG_RAISE_TEXT] = ""
    elif kind == "model_request":
        st.session_state[state.DEBUG_CHANGE] = NOTHING
        st.session_state[state.DEBUG_POSITION] = max(0, len(pend.get("messages") or ()) - 1)
        st.session_state[state.DEBUG_INSERT] = ""
        st.session_state[state.DEBUG_INSERT_AT] = len(pend.get("messages") or ())
        st.session_state[state.DEBUG_INSERT_ROLE] = ROLES[0]
        st.session_state[state.DEBUG_TOOLS] = [str(t) for t in pend.get("tools") or ()]
        st.session_state[state.DEBUG_SETTINGS] = _dumps(_settings(pend))
        st.session_state[state.DEBUG_MODEL] = ""
    elif kind in ("model_reply", "tool_result"):
        msg = pend.get("message") or {}
        st.session_state[state.DEBUG_TEXT] = str(msg.get("text") or "")
        st.session_state[state.DEBUG_CALLS] = _dumps(_calls(msg)) if kind == "model_reply" else ""


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _calls(msg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": c.get("name"), "args": c.get("args") or {}, "id": c.get("id")}
            for c in msg.get("tool_calls") or []]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# -- the panel -------------------------------------------------------------------------
def render(path: str, view: RunView, p: dict[str, Any] | None,
           below: list[dict[str, Any]]) -> None:
    """The panel of a paused run; the subagent runs paused under it; or, on a run being
    recorded and not paused, the buttons that pause it."""
    run = view.replay.run
    for k, sub in enumerate(below):
        _subagent_note(k, sub)
    if p is not None:
        _panel(path, p)
    elif run.summary.status == "running":
        _arm_buttons(path, run.id)


def _subagent_note(k: int, p: dict[str, Any]) -> None:
    step = p.get("step")
    name = str(p.get("run_name") or "subagent")
    with st.container(horizontal=True, vertical_alignment="center", key=f"debug_sub_{k}"):
        st.warning(md_escape(f"Paused in subagent {name} ({str(p.get('run'))[:12]}) at step "
                             f"{step}: {p.get('hook')} {AT.get(str(p.get('at')), '')}"),
                   icon=":material/pause_circle:")
        st.button("Open it", key=f"debug_open_{k}", icon=":material/subdirectory_arrow_right:",
                  on_click=_open_sub, args=(str(p.get("run")),
                                            (step - 1) if isinstance(step, int) else 0))


def _open_sub(run_id: str, index: int) -> None:
    state.open_run(run_id, index, push=True)


def _where(p: dict[str, Any]) -> str:
    at = AT.get(str(p.get("at")), str(p.get("at")))
    return (f"Step {p.get('step')} · {p.get('hook')}{', ' + at if at else ''} · "
            f"breakpoint: {p.get('reason')}")


def _panel(path: str, p: dict[str, Any]) -> None:
    pend: dict[str, Any] = p.get("pending") or {}
    kind = str(pend.get("kind") or p.get("pending_kind") or "state")
    tag = _tag(p)
    with st.container(border=True, key="debug_pause"):
        st.markdown("##### :material/pause_circle: Paused in the debugger")
        _pick(p.get("siblings") or [p])
        st.text(_where(p))
        _nested(pend)
        SHOW.get(kind, _show_state)(pend)
        FIELDS.get(kind, _no_fields)(pend)
        failed = st.session_state.get(state.DEBUG_ERROR)
        if isinstance(failed, tuple) and len(failed) == 2 and failed[0] == tag:
            st.error(md_escape(failed[1]), icon=":material/error:")
        with st.container(horizontal=True, key="debug_controls"):
            for command, label, icon, key in CONTROLS:
                if command == "out" and not isinstance(pend.get("out"), dict):
                    continue  # (nothing to step out of)
                st.button(label, key=f"debug_{command}", icon=icon, help=HELP[command],
                          shortcut=key, type="primary" if command == "continue" else "secondary",
                          on_click=_answer,
                          args=(path, str(p.get("run")), p.get("parent_run"), command, pend,
                                tag, p.get("pause")))
        rewind_pane.render(path, p)


def _nested(pend: dict[str, Any]) -> None:
    """Where the pause stands among nested runs: the subagent stepped into (its parent
    run and the call), and where Step out goes back to."""
    into = pend.get("into")
    if isinstance(into, dict):
        st.text(f"Stepped into subagent {into.get('subagent')}, from run "
                f"{str(into.get('parent_run'))[:12]}'s {into.get('tool') or 'tool'} call "
                f"{into.get('tool_call')}")
    out = pend.get("out")
    if isinstance(out, dict):
        st.caption(md_escape(f"Step out: {out.get('from')} runs to its end, then the run "
                             f"pauses {out.get('to')}"))


def _label(p: dict[str, Any]) -> str:
    call = (p.get("pending") or {}).get("tool_call") or {}
    what = f": {call.get('name')} {_one_line(json.dumps(call.get('args')))[:80]}" if call else ""
    return f"pause {p.get('pause')} · {p.get('hook')} {AT.get(str(p.get('at')), '')}{what}"


def _pick(siblings: list[dict[str, Any]]) -> None:
    """Several pauses of the run at once: which one the panel shows and answers."""
    if len(siblings) < 2:
        return
    labels = {q.get("pause"): _label(q) for q in siblings}
    st.radio(f"{len(siblings)} pauses at once: the one answered here",
             options=list(labels), format_func=lambda k: labels.get(k, str(k)),
             key=state.DEBUG_PICK)


# -- what is pending, shown ---------------------------------------------------------------
def _code(text: Any) -> None:
    st.code(str(text), language=None, wrap_lines=True)


def _show_message(m: dict[str, Any]) -> None:
    head = f"[{m['position']}] " if "position" in m else ""
    head += str(m.get("type") or "?")
    if m.get("name"):
        head += f" · {m['name']}"
    if m.get("status") == "error":
        head += " · error"
    st.text(head)
    if m.get("text"):
        _code(m["text"])
    if m.get("tool_calls"):
        st.code(_dumps(_calls(m)), language="json", wrap_lines=True)


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _show_request(pend: dict[str, Any]) -> None:
    msgs = list(pend.get("messages") or [])
    tools = ", ".join(str(t) for t in pend.get("tools") or []) or "none"
    st.text(f"A model call waits: model {pend.get('model')} · {_n(len(msgs), 'message')} · "
            f"tools: {tools}")
    if pend.get("settings"):
        st.text("Settings: " + json.dumps(pend["settings"], default=str))
    with st.expander(f"The request as the model will receive it ({_n(len(msgs), 'message')})",
                     expanded=len(msgs) <= 4):
        if pend.get("system") is not None:
            st.text("System prompt")
            _code(pend["system"])
        for m in msgs:
            _show_message(m)


def _show_tool_call(pend: dict[str, Any]) -> None:
    call = pend.get("tool_call") or {}
    st.text(f"A tool call waits to run: {call.get('name')} (id {call.get('id')})")
    st.code(_dumps(call.get("args") or {}), language="json", wrap_lines=True)


def _show_reply(pend: dict[str, Any]) -> None:
    st.text("The model answered (the AIMessage, before the agent goes on):")
    _show_message(pend.get("message") or {"type": "ai", "text": "(no AIMessage)"})


def _show_result(pend: dict[str, Any]) -> None:
    call = pend.get("tool_call") or {}
    st.text(f"The tool {call.get('name')} returned (the ToolMessage, before the agent "
            "goes on):")
    _show_message(pend.get("message") or {"type": "tool", "text": "(no ToolMessage)"})


def _show_error(pend: dict[str, Any]) -> None:
    where = {"tool": "a tool", "node": f"the node {pend.get('node')}"}.get(
        str(pend.get("where")), "the model")
    st.text(f"The call raised ({where}):")
    _code("\n".join(raised_lines(pend)))
    if pend.get("tool_call"):
        _show_tool_call({"tool_call": pend["tool_call"]})


def _show_state(pend: dict[str, Any]) -> None:
    st.text(f"The hook {pend.get('hook')} fires ({_n(int(pend.get('messages_count') or 0), 'message')}; "
            "the last ones below). Nothing to change here.")
    for m in pend.get("last_messages") or []:
        _show_message(m)
    if pend.get("state"):
        st.text("The whole state:")
        _code(json.dumps(pend["state"], indent=2, ensure_ascii=False))


def _show_node(pend: dict[str, Any]) -> None:
    what = ("before it runs: the state it will receive" if pend.get("at") == "before"
            else "after it ran: the update it returned")
    st.text(f"The graph node {pend.get('node')}, {what}:")
    _code(json.dumps(pend.get("state") or {}, indent=2, ensure_ascii=False))


SHOW: dict[str, Callable[[dict[str, Any]], None]] = {
    "model_request": _show_request, "tool_call": _show_tool_call, "model_reply": _show_reply,
    "tool_result": _show_result, "error": _show_error, "state": _show_state,
    "node": _show_node,
}


# -- the fields that change it --------------------------------------------------------------
def _no_fields(pend: dict[str, Any]) -> None:
    return None


def _fields_tool_call(pend: dict[str, Any]) -> None:
    cols = st.columns(2)
    cols[0].text_area("Give the result yourself (the tool does not run; empty: it runs)",
                      key=state.DEBUG_TEXT, height=120)
    cols[1].text_area("Or change its arguments (JSON)", key=state.DEBUG_ARGS, height=120)
    with st.expander("More: make the call raise", key="debug_more_tool"):
        st.checkbox("Raise an error instead of running the tool", key=state.DEBUG_RAISE)
        st.text_input("The error's text", key=state.DEBUG_RAISE_TEXT, placeholder=RAISED)


def _prefill(pend: dict[str, Any]) -> None:
    """The text field follows what is being changed (a message's text, the system
    prompt; empty for an answer)."""
    change = st.session_state.get(state.DEBUG_CHANGE)
    msgs = list(pend.get("messages") or [])
    text = ""
    if change == MESSAGE:
        pos = int(st.session_state.get(state.DEBUG_POSITION) or 0)
        text = str(msgs[pos].get("text") or "") if 0 <= pos < len(msgs) else ""
    elif change == SYSTEM:
        text = str(pend.get("system") or "")
    st.session_state[state.DEBUG_TEXT] = text


def request_form(pend: dict[str, Any], *, answer: bool = True, model: bool = True) -> None:
    """The fields that change a model call (one edit; ``edit_of`` reads them), filled
    for ``pend`` by ``fill_request`` first: the debugger's, and the playground's
    (``answer``/``model`` False: no "answer it yourself", no other model field)."""
    _fields_request(pend, CHANGES if answer else CHANGES[:-1], model=model)


def fill_request(pend: dict[str, Any]) -> None:
    """The request form's first values for the model call ``pend`` (another page's, the
    playground's: the panel fills its fields again at its pause)."""
    _fill(pend)
    st.session_state.pop(state.DEBUG_PAUSE, None)


def _fields_request(pend: dict[str, Any], changes: tuple[str, ...] = CHANGES, *,
                    model: bool = True) -> None:
    msgs = list(pend.get("messages") or [])
    change = st.selectbox("Change before the call", changes, key=state.DEBUG_CHANGE,
                          on_change=_prefill, args=(pend,))
    if change in (MESSAGE, DROP) and msgs:
        st.selectbox("Message", list(range(len(msgs))), key=state.DEBUG_POSITION,
                     on_change=_prefill, args=(pend,),
                     format_func=lambda i: f"[{i}] {msgs[i].get('type')}: "
                                           f"{_one_line(str(msgs[i].get('text') or ''))[:80]}")
    if change == MESSAGE:
        st.text_area("Its new text (this call's request only)", key=state.DEBUG_TEXT)
    elif change == SYSTEM:
        st.text_area("The new system prompt", key=state.DEBUG_TEXT)
    elif change == ANSWER:
        st.text_area("The answer (the model is not asked)", key=state.DEBUG_TEXT)
        st.text_area("Tool calls of the answer (JSON, optional)", key=state.DEBUG_CALLS,
                     placeholder='[{"name": "get_weather", "args": {"city": "Oslo"}}]')
    _more_request(pend, msgs, model=model)


def _more_request(pend: dict[str, Any], msgs: list[dict[str, Any]], *,
                  model: bool = True) -> None:
    """The less common changes of a model call, one at a time: a field left as it was
    filled is no change."""
    offered = [str(t) for t in pend.get("tools") or ()]
    with st.expander("More changes: insert a message, the tools offered, the model "
                     "settings" + (", the model" if model else ""), key="debug_more_request"):
        st.text_area("Insert a message (empty: none)", key=state.DEBUG_INSERT, height=80)
        cols = st.columns(2)
        cols[0].number_input("At position (0 first; " + str(len(msgs)) + ": at the end)",
                             min_value=0, max_value=len(msgs), step=1,
                             key=state.DEBUG_INSERT_AT)
        cols[1].selectbox("Its role", ROLES, key=state.DEBUG_INSERT_ROLE)
        st.multiselect("The tools offered (take one out: the model does not see it)",
                       offered, key=state.DEBUG_TOOLS)
        st.text_area("The model settings (JSON object, merged into the call's)",
                     key=state.DEBUG_SETTINGS, height=80)
        if model:
            st.text_input("Another model (an init_chat_model name such as "
                          "openai:gpt-4.1-mini, or offline; empty: the same)",
                          key=state.DEBUG_MODEL)


def _fields_reply(pend: dict[str, Any]) -> None:
    cols = st.columns(2)
    cols[0].text_area("The reply's text", key=state.DEBUG_TEXT, height=120)
    cols[1].text_area("Its tool calls (JSON: drop one, change its arguments)",
                      key=state.DEBUG_CALLS, height=120)


def _fields_result(pend: dict[str, Any]) -> None:
    st.text_area("The ToolMessage's text", key=state.DEBUG_TEXT, height=120)


def _fields_node(pend: dict[str, Any]) -> None:
    st.text_area("State keys to change: a JSON object, merged through the graph's reducers "
                 "into what the node receives (before) or into its update (after); empty: "
                 "no change", key=state.DEBUG_TEXT, height=100,
                 placeholder='{"count": 3}')


def _fields_error(pend: dict[str, Any]) -> None:
    if pend.get("where") == "node":
        _fields_node(pend)
        return
    what = ("A result instead of the error (empty: it raises)" if pend.get("where") == "tool"
            else "An answer instead of the error (empty: it raises)")
    st.text_area(what, key=state.DEBUG_TEXT, height=100)


FIELDS: dict[str, Callable[[dict[str, Any]], None]] = {
    "model_request": _fields_request, "tool_call": _fields_tool_call,
    "model_reply": _fields_reply, "tool_result": _fields_result, "error": _fields_error,
    "node": _fields_node,
}


# -- from the fields to an edit -----------------------------------------------------------
def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{what} are not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        raise BadEdit(msg) from None


def _call_list(text: str) -> list[dict[str, Any]]:
    value = _json(text, "the tool calls") if text.strip() else []
    if not isinstance(value, list):
        msg = "the tool calls must be a JSON list of {\"name\": ..., \"args\": {...}}"
        raise BadEdit(msg)
    return value


def edit_of(pend: dict[str, Any], values: dict[str, Any]) -> dict[str, Any] | None:
    """The edit the fields' ``values`` (by state key) make of what is ``pend``ing, or None
    for no change; ``BadEdit`` for what cannot be one."""
    kind = pend.get("kind")
    text = str(values.get(state.DEBUG_TEXT) or "")
    if kind == "tool_call" and values.get(state.DEBUG_RAISE):
        raw = str(values.get(state.DEBUG_ARGS) or "")
        given = (pend.get("tool_call") or {}).get("args") or {}
        if text.strip() or (raw.strip() and _json(raw, "the arguments") != given):
            msg = "raise, give the result or change the arguments: one of them, not two"
            raise BadEdit(msg)
        return {"kind": "raise",
                "text": str(values.get(state.DEBUG_RAISE_TEXT) or "").strip() or RAISED}
    if kind == "tool_call":
        given = (pend.get("tool_call") or {}).get("args") or {}
        raw = str(values.get(state.DEBUG_ARGS) or "")
        args = _json(raw, "the arguments") if raw.strip() else given  # (empty: unchanged)
        changed = args != given
        if text.strip() and changed:
            msg = "give the result or change the arguments, not both"
            raise BadEdit(msg)
        if text.strip():
            return {"kind": "tool_result", "text": text}
        return {"kind": "tool_args", "args": args} if changed else None
    if kind == "model_request":
        edits = [e for e in (_main_edit(values, text), *_more_edits(pend, values))
                 if e is not None]
        if len(edits) > 1:
            msg = ("one change at a time: " + " and ".join(e["kind"] for e in edits) +
                   " were both asked (set the others back, or Step and change the next)")
            raise BadEdit(msg)
        return edits[0] if edits else None
    if kind == "model_reply":
        reply: dict[str, Any] = pend.get("message") or {}
        calls = _call_list(str(values.get(state.DEBUG_CALLS) or ""))
        if text == str(reply.get("text") or "") and calls == _calls(reply):
            return None
        return {"kind": "reply", "text": text, "tool_calls": calls}
    if kind == "tool_result":
        same = text == str((pend.get("message") or {}).get("text") or "")
        return None if same else {"kind": "tool_result", "text": text}
    if (kind == "node" or (kind == "error" and pend.get("where") == "node")) and text.strip():
        return {"kind": "state", "text": text}
    if kind == "error" and text.strip():
        return {"kind": "tool_result" if pend.get("where") == "tool" else "reply", "text": text}
    return None


def _main_edit(values: dict[str, Any], text: str) -> dict[str, Any] | None:
    """The edit the "Change before the call" box asks of a model call."""
    change = values.get(state.DEBUG_CHANGE)
    pos = int(values.get(state.DEBUG_POSITION) or 0)
    if change == MESSAGE:
        return {"kind": "message", "position": pos, "text": text}
    if change == DROP:
        return {"kind": "drop", "position": pos}
    if change == SYSTEM:
        return {"kind": "system", "text": text}
    if change == ANSWER:
        calls = _call_list(str(values.get(state.DEBUG_CALLS) or ""))
        return {"kind": "reply", "text": text, "tool_calls": calls}
    return None


def _more_edits(pend: dict[str, Any], values: dict[str, Any]) -> list[dict[str, Any]]:
    """The edits the "More changes" fields ask of a model call: each field changed from
    what it was filled with (a field Streamlit dropped, None, is no change)."""
    out: list[dict[str, Any]] = []
    inserted = str(values.get(state.DEBUG_INSERT) or "")
    if inserted.strip():
        at = values.get(state.DEBUG_INSERT_AT)
        out.append({"kind": "insert", "text": inserted,
                    "position": len(pend.get("messages") or ()) if at is None else at,
                    "role": values.get(state.DEBUG_INSERT_ROLE) or ROLES[0]})
    keep = values.get(state.DEBUG_TOOLS)
    if keep is not None and list(keep) != [str(t) for t in pend.get("tools") or ()]:
        out.append({"kind": "tools", "names": list(keep)})
    raw = str(values.get(state.DEBUG_SETTINGS) or "")
    if raw.strip():
        settings = _json(raw, "the model settings")
        if settings != _settings(pend):
            out.append({"kind": "settings", "settings": settings})
    model = str(values.get(state.DEBUG_MODEL) or "").strip()
    if model:
        out.append({"kind": "model", "model": model})
    return out


def _answer(path: str, run_id: str, parent: str | None, command: str, pend: dict[str, Any],
            tag: str, pause: int | None = None) -> None:
    """A control: the edit made of the fields checked first (nothing sent if it is not
    one), what this session armed for the run cleared, then the answer sent."""
    values = {k: state.get(k) for k in FIELD_KEYS}
    try:
        edit = None if command == "abort" else edit_of(pend, values)
        if edit is not None:
            edit = debug_validate(edit, pend)
        armed = set(st.session_state.get(state.DEBUG_ARMED) or ())
        for rid in (run_id, parent):
            if rid and rid in armed:  # ("pause at the next ..." pauses once)
                debug_clear(path, rid)
                armed.discard(rid)
        st.session_state[state.DEBUG_ARMED] = sorted(armed)
        wait = next_pause_waiter(path)
        debug_answer(path, run_id, command, edit, pause)
    except (BadEdit, LooptraceError) as exc:
        st.session_state[state.DEBUG_ERROR] = (tag, _one_line(str(exc)))
        return
    st.session_state.pop(state.DEBUG_ERROR, None)
    wait(WAIT_S)


# -- pausing a run that is not paused ---------------------------------------------------------
def _arm_buttons(path: str, run_id: str) -> None:
    armed = armed_for(path, run_id)
    with st.container(horizontal=True, vertical_alignment="center", key="debug_arm"):
        st.button("Pause at the next model call", key="debug_arm_model",
                  icon=":material/pause:", help=ARM_NOTE, on_click=_arm,
                  args=(path, "model", run_id))
        st.button("Pause at the next hook", key="debug_arm_step", icon=":material/pause:",
                  help=ARM_NOTE, on_click=_arm, args=(path, "step", run_id))
        spec = st.text_input("Breakpoint", key=state.DEBUG_SPEC, label_visibility="collapsed",
                             placeholder="node:NAME, tool:get_order if args.order_id == 42",
                             help=breakpoint_help())
        st.button("Arm", key="debug_arm_spec", icon=":material/pause:", help=ARM_NOTE,
                  on_click=_arm, args=(path, str(spec or "").strip(), run_id),
                  disabled=not str(spec or "").strip())
        if armed:
            st.caption(md_escape("Armed for this run: " + ", ".join(armed)))
            st.button("Clear", key="debug_arm_clear", icon=":material/close:",
                      on_click=_clear, args=(path, run_id))
    failed = st.session_state.get(state.DEBUG_ERROR)
    if isinstance(failed, tuple) and len(failed) == 2 and failed[0] == f"arm:{run_id}":
        st.error(md_escape(failed[1]), icon=":material/error:")


def _arm(path: str, spec: str, run_id: str) -> None:
    try:
        debug_arm(path, spec, run_id)
    except LooptraceError as exc:
        st.session_state[state.DEBUG_ERROR] = (f"arm:{run_id}", _one_line(str(exc)))
        return
    armed = set(st.session_state.get(state.DEBUG_ARMED) or ())
    st.session_state[state.DEBUG_ARMED] = sorted(armed | {run_id})


def _clear(path: str, run_id: str) -> None:
    try:
        debug_clear(path, run_id)
    except LooptraceError as exc:
        st.session_state[state.DEBUG_ERROR] = (f"arm:{run_id}", _one_line(str(exc)))
        return
    armed = set(st.session_state.get(state.DEBUG_ARMED) or ())
    st.session_state[state.DEBUG_ARMED] = sorted(armed - {run_id})
