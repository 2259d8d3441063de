"""The message pane: the conversation as of the current step.

Human, AI (text and each tool call: name, arguments, id), tool results
(tool_call_id, error status) and the system prompt folded. A tool result has
the colour of the call it answers; a call with no answer yet is marked
pending; the messages the current step added are highlighted (and scrolled
into view by the graph component).

Message contents are untrusted: they go through ``st.text`` and ``st.code``
only, never markdown or HTML. The only HTML written here is a ``<style>`` block
built from our own integers and palette colours.
"""

from __future__ import annotations

import streamlit as st

from tracer.replay import Replay

from . import state
from .palette import HIGHLIGHT
from .run_view import MessageView, RunView

ROLE_BADGE = {"human": ("Human", "blue"), "ai": ("AI", "violet"), "tool": ("Tool result", "green"),
              "system": ("System", "gray")}


def visible(view: RunView, index: int) -> list[MessageView]:
    """The message views shown at step ``index``, oldest first."""
    return [view.view(m) for m in view.replay.messages_at(index)]


def _style(rules: list[str]) -> None:
    if rules:
        st.html("<style>" + "\n".join(rules) + "</style>")


def render_messages(view: RunView, index: int, *, big: bool = False,
                    height: int | None = 620) -> str | None:
    """Draw the pane; return the container key of the message to scroll to."""
    replay: Replay = view.replay
    shown = replay.messages_at(index)
    msgs = [view.view(m) for m in shown]
    notes = [replay.version_note(m) for m in shown]
    step = replay.steps[index] if replay.steps else None
    new = set(step.new_keys) | set(replay.changed_at(index)) if step else set()
    new |= set(st.session_state.get(state.HIGHLIGHT) or ())
    pending = replay.pending_calls(index) if replay.steps else set()
    omitted = replay.omitted_at(index)
    window = int(st.session_state.get(state.WINDOW) or state.DEFAULT_WINDOW)
    start = max(0, len(msgs) - window)
    rules: list[str] = []
    scroll_to: str | None = None
    box = st.container(height=height, key="messages") if height else st.container(key="messages")
    with box:
        system = replay.system_prompt()
        if system:
            with st.expander("System prompt", icon=":material/settings:"):
                st.text(system)
        if start:
            st.button(f"Show {min(start, window)} earlier messages ({start} hidden)",
                      key="more_messages", icon=":material/expand_less:",
                      on_click=_more, args=(window,))
        if not msgs:
            st.caption("No messages yet at this step.")
        used: set[str] = set()
        for mv, note in zip(msgs[start:], notes[start:]):
            hot = mv.key in new
            ckey = f"msg-{mv.position}"
            while ckey in used:  # a rewritten history can repeat a position
                ckey += "-x"
            used.add(ckey)
            if hot:
                scroll_to = ckey
                rules.append(f".st-key-{ckey} {{ outline: 3px solid {HIGHLIGHT}; "
                             f"background: color-mix(in srgb, {HIGHLIGHT} 12%, transparent); }}")
            if mv.colour:
                rules.append(f".st-key-{ckey} {{ border-left: 7px solid {mv.colour} !important; }}")
            with st.container(border=True, key=ckey):
                if mv.key in omitted:
                    st.badge("not sent to the model: the loop never appended it",
                             color="red", icon=":material/block:")
                if note:  # our words with middleware names from the run: plain text
                    with st.container(key=f"note-{ckey}"):
                        st.text(note)
                    rules.append(f".st-key-note-{ckey}, .st-key-note-{ckey} * {{ color: #b25e00; "
                                 "font-size: 0.9rem; }}")
                _message(mv, index, hot, pending, rules, big, ckey)
    _style(rules)
    return scroll_to


def _more(window: int) -> None:
    st.session_state[state.WINDOW] = window * 2


def _message(mv: MessageView, index: int, hot: bool, pending: set[str], rules: list[str],
             big: bool, ckey: str) -> None:
    label, colour = ROLE_BADGE.get(mv.role, ("Message", "gray"))
    marker = f" · :material/play_arrow: **step {index + 1}**" if hot else ""
    st.caption(f":{colour}-badge[{label}] · #{mv.position}{marker}")  # our own words only
    if mv.role == "tool":
        status = "error" if mv.status == "error" else (mv.status or "success")
        st.text(f"answers tool_call_id {mv.tool_call_id}  ·  status: {status}"
                + (f"  ·  tool: {mv.name}" if mv.name else ""))
        if status == "error":
            st.badge("error", color="red", icon=":material/error:")
        if mv.text:
            st.code(mv.text, language=None, wrap_lines=True)
    elif mv.text:
        st.text(mv.text)
    for j, call in enumerate(mv.calls):
        tkey = "tc-" + ckey[4:] + f"-{j}"
        rules.append(f".st-key-{tkey} {{ border-left: 7px solid {call.colour}; "
                     f"padding-left: 10px; }}")
        with st.container(key=tkey):
            st.text(f"tool call  {call.name}   id {call.id}")
            if call.id in pending:
                st.badge("pending: no result yet", color="orange", icon=":material/hourglass_top:")
            st.code(call.args, language="json", wrap_lines=True)
    for bad in mv.invalid_calls:
        st.badge("invalid tool call", color="red")
        st.code(bad, language=None, wrap_lines=True)
