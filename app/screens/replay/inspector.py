"""The step inspector: what this hook saw and changed, for the current step.

Event fields, the payload (the request summary the model got, the tool call's
arguments, the result status, the error), the messages the step added, the
caption, and the notes on the step and the run with a box to write one. Everything from the trace goes through ``st.json`` / ``st.text``.
"""

from __future__ import annotations

import difflib
from typing import Any

import streamlit as st

from ...data.run_view import RunView
from ...data.steps import LayerPayload, content_text, read_payload, signature_note, tool_life
from .notes_pane import render_notes_box


def event_fields(view: RunView, index: int) -> dict[str, Any]:
    step = view.replay.steps[index]
    ev = step.event
    t0 = view.replay.steps[0].event.ts
    fields: dict[str, Any] = {
        "step": index + 1, "seq": ev.seq, "hook": ev.hook,
        "phase": ev.phase, "node": step.node,
        "kind": step.kind, "lap": ev.lap, "middleware": ev.middleware,
        "duration_ms": None if ev.duration_ms is None else round(ev.duration_ms, 3),
        "t_offset_ms": round((ev.ts - t0) * 1000, 3),
        "tool_call_id": ev.tool_call_id, "task": ev.task,
        "edge": " -> ".join(step.edge) if step.edge else None,
        "tool_calls_in_flight": list(step.active_tools),
    }
    return {k: v for k, v in fields.items() if v not in (None, [], "")}


def layer_diff(view: RunView, step_index: int, previous: int | None) -> str:
    """What a layer changed in the messages of a request: a unified diff of the
    messages (type and text) before and after it."""
    rp = view.replay

    def lines(i: int | None) -> list[str]:
        if i is None:
            return []
        out = []
        for n, m in enumerate(rp.messages_at(i)):
            first, *rest = content_text(m.content).split("\n") or [""]
            out.append(f"{m.type} #{n}: {first}")
            out += [f"    {line}" for line in rest]  # (each line its own, in the diff)
        return out

    return "\n".join(difflib.unified_diff(lines(previous), lines(step_index), "above",
                                          "after this layer", lineterm="", n=0))


def render_layers(view: RunView, index: int) -> None:
    """The onion of the current call, outermost layer first (``trace.around``)."""
    layers = view.replay.layers_of(index)
    if not layers:
        return
    st.caption(f"The layers of this call, outermost first ({len(layers)} changed something)")
    enter = next((s.index for s in reversed(view.replay.steps[:layers[0].index])
                  if s.event.phase == "enter"), None)
    previous = enter
    for s in layers:
        p = read_payload(LayerPayload, s.event.payload)
        mark = "  <- this step" if s.index == index else ""
        st.text(f"step {s.index + 1} · {s.event.middleware} · {p.get('what')}"
                f" · {', '.join(map(str, p.get('changed') or ())) or ''}{mark}")
        if p.get("what") == "request" and "message_keys" in p:
            diff = layer_diff(view, s.index, previous)
            if diff:
                st.code(diff, language="diff", wrap_lines=True)
            previous = s.index


def render_tool_life(view: RunView, index: int) -> None:
    """At a tool step: the tool's JSON schema as the model saw it, beside the Python
    behind it, and the path the call took (``tracer.read.tool_life``)."""
    life = tool_life(view.replay, index)
    if life is None:
        return
    st.caption(f"The tool call's life: {life.name} as the model saw it, and as Python runs it")
    left, right = st.columns(2)
    with left:
        st.caption("JSON schema the model saw (from the model call's request)")
        if life.schema is not None:
            st.json(life.schema, expanded=True)
        else:
            st.text("(not recorded: no model call of this run wrote the tool schemas)")
        st.caption("Arguments the model sent")
        st.json(life.args if isinstance(life.args, (dict, list)) else {"args": life.args},
                expanded=True)
    with right:
        st.caption("Python signature (the function LangChain runs)")
        if life.signature:
            st.code(life.signature, language=None, wrap_lines=True)
        else:
            st.text(signature_note(view.replay))
        if life.hidden:
            st.text(f"Not in the schema, injected by LangChain: {', '.join(life.hidden)} "
                    "(a ToolRuntime carries the call id, the state, the store and the "
                    "config; the model never sees or fills it).")
        if life.outcome:
            st.caption("How the call ended")
            st.text(life.outcome)


def render_inspector(view: RunView, index: int, path: str | None = None) -> None:
    """The step inspector at step ``index``; with the database's ``path``, its notes box
    (``app/screens/replay/notes_pane.py``: the notes on this step and the run, and a form to add one)."""
    if not view.replay.steps:
        return
    step = view.replay.steps[index]
    by_key = view.replay.run.message_by_key
    with st.container(border=True, key="inspector"):
        st.markdown(f"**Step inspector** · step {index + 1}")
        st.caption(f"Step {index + 1} is the step the replay last stopped on: during "
                   "playback the inspector stays there, and follows when the replay pauses "
                   "or is stepped.")
        cols = st.columns([2, 3, 3])
        with cols[0]:
            st.caption("Event")
            st.json(event_fields(view, index), expanded=True)
        with cols[1]:
            st.caption("Payload: what the hook saw / changed")
            payload = step.event.payload
            if payload is None:
                st.text("(no payload)")
            else:
                st.json(payload, expanded=1)
        with cols[2]:
            st.caption(f"Messages added at this step ({len(step.new_keys)})")
            if not step.new_keys:
                st.text("(none)")
            for k in step.new_keys:
                m = by_key.get(k)
                if m is not None:
                    st.json(m.data, expanded=1)
        render_tool_life(view, index)
        render_layers(view, index)
        if path is not None:
            render_notes_box(path, view, index)
