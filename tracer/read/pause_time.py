"""Time spent paused in the debugger is never tool or model time.

A call the debugger paused (before it ran, after it returned, where it raised) is
recorded with the duration from its ``enter`` to its ``exit``, the person's thinking
and typing included: a tool result given in the debugger read "returned in 9170.1 ms"
and the Timeline drew a 73 s tool bar for a tool that never ran. Each ``debug`` event
says how long its pause waited (``waited_s``); ``without_pauses`` takes that time out
of the ``exit`` / ``error`` of the call the pause stood in (a tool call by its
``tool_call_id``, the model call of the lap), so every reader (captions, the Timeline,
the replay's JSON and the HTML export, ``looptrace show``) says what the call itself
took. ``paused_ms`` gives what was taken out, to say it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

__all__ = ["given_in_debugger", "paused_ms", "without_pauses"]


def _waited_ms(ev: Any) -> float:
    p = ev.payload if isinstance(ev.payload, dict) else {}
    w = p.get("waited_s")
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not w > 0:
        return 0.0
    return float(w) * 1000 if w < 1e9 else 0.0


def paused_ms(events: Sequence[Any]) -> dict[int, float]:
    """{seq of a call's exit or error: the milliseconds its pauses waited}."""
    tools: dict[str | None, float] = {}
    model: float | None = None
    out: dict[int, float] = {}
    for ev in events:
        if ev.hook in TOOL_HOOKS:
            if ev.phase == "enter":
                tools[ev.tool_call_id] = 0.0
            elif ev.phase == "debug" and ev.tool_call_id in tools:
                tools[ev.tool_call_id] += _waited_ms(ev)
            elif ev.phase in ("exit", "error") and ev.tool_call_id in tools:
                waited = tools.pop(ev.tool_call_id) if ev.phase == "exit" else tools[
                    ev.tool_call_id]
                if waited:
                    out[ev.seq] = waited
        elif ev.hook in MODEL_HOOKS:
            if ev.phase == "enter":
                model = 0.0
            elif ev.phase == "debug" and model is not None:
                model += _waited_ms(ev)
            elif ev.phase in ("exit", "error") and model is not None:
                if model:
                    out[ev.seq] = model
                model = None if ev.phase == "exit" else model
    return out


def without_pauses(events: list[Any]) -> list[Any]:
    """``events`` with each call's pause time taken out of its ``duration_ms`` (events
    are ``EventRecord`` named tuples; the others are the same objects)."""
    if not any(ev.phase == "debug" for ev in events):
        return events
    paused = paused_ms(events)
    if not paused:
        return events
    return [ev._replace(duration_ms=max(ev.duration_ms - paused[ev.seq], 0.0))
            if ev.seq in paused and ev.duration_ms is not None else ev for ev in events]


def given_in_debugger(events: Sequence[Any]) -> set[str]:
    """The ``tool_call_id`` of each tool call whose result was typed in the debugger (a
    ``debug`` event with outcome ``edited`` and an edit of kind ``tool_result``, or
    ``result`` after the call): its ToolMessage is the person's, not the tool's."""
    out: set[str] = set()
    for ev in events:
        if ev.phase != "debug" or ev.hook not in TOOL_HOOKS or not ev.tool_call_id:
            continue
        p = ev.payload if isinstance(ev.payload, dict) else {}
        edit = p.get("edit")
        if p.get("outcome") == "edited" and isinstance(edit, dict) and edit.get("kind") in (
                "tool_result", "result"):
            out.add(str(ev.tool_call_id))
    return out
