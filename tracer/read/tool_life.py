"""A tool call's life: the schema the model saw, the Python behind it, the path it took.

The read side of the tool's record (``tool_life``, ``schema_at``, ``signature_at``): what
the inspector shows at a tool step. The signatures are written by
``tracer.vocab.tool_signatures`` (with the tool schemas, on the writer thread); how a call that
raised ended is the words of its step's caption (``tracer.read.captions``, where
``ERROR_PATHS`` also lives: the middleware records ``error_path`` on an error
ToolMessage, and ``handle_tool_error`` on an exception that went through).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tracer.vocab.payloads import (
    ErrorPayload,
    ModelEnterPayload,
    Signature,
    ToolEnterPayload,
    ToolExitPayload,
    read_payload,
)
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS, EventRecord
from tracer.vocab.tool_signatures import annotation_text, schema_params, signature_text, signatures

from .captions import ERROR_PATHS, PROPAGATED, PROPAGATES, captions

if TYPE_CHECKING:
    from .steps import Replay


def _model_enters(replay: Replay) -> list[tuple[int, ModelEnterPayload]]:
    """(seq, payload) of every model call's ``enter`` event, in order."""
    return [(e.seq, read_payload(ModelEnterPayload, e.payload)) for e in replay.run.events
            if e.hook in MODEL_HOOKS and e.phase == "enter"]


def schema_at(replay: Replay, seq: int, name: str) -> dict[str, Any] | None:
    """The schema of tool ``name`` as the model saw it in the latest model call at or
    before event ``seq`` that wrote the tool schemas (they are written when they change)."""
    found = None
    for at, p in _model_enters(replay):
        if at > seq:
            break
        tools = p.get("tools")
        if isinstance(tools, list):
            found = next((t for t in tools if schema_params(t)[0] == name), None)
    return found


def signature_at(replay: Replay, seq: int, name: str) -> Signature | None:
    """``{"signature", "hidden"}`` of tool ``name`` as recorded with its schema."""
    found = None
    for at, p in _model_enters(replay):
        if at > seq:
            break
        sigs = p.get("signatures")
        if isinstance(p.get("tools"), list):
            found = sigs.get(name) if isinstance(sigs, dict) else None
    return found if isinstance(found, dict) else None


@dataclass(frozen=True, slots=True)
class ToolLife:
    name: str
    tool_call_id: str | None
    args: Any  # as the model asked for them
    schema: dict[str, Any] | None  # as the model saw it
    signature: str | None  # the Python behind it
    hidden: tuple[str, ...]  # parameters injected by LangChain, not in the schema
    outcome: str | None  # how the call ended, in words (None: not ended by this step)


def _outcome(ev: EventRecord, caption: str = "") -> str | None:
    if ev.phase == "error":
        err = read_payload(ErrorPayload, ev.payload)
        # What became of the exception is the step's caption's (read from the record).
        return caption or f"Raised {err.get('error', 'an exception')}."
    if ev.phase == "interrupt":
        return "Paused for a human (an interrupt) inside the call."
    if ev.phase != "exit":
        return None
    # (a payload read back from JSON is what the writer built: ``ToolExitPayload``)
    p = read_payload(ToolExitPayload, ev.payload)
    if p.get("status") == "error":
        path = ERROR_PATHS.get(str(p.get("error_path")), "")
        return "Came back as an error ToolMessage" + (f": {path}." if path else ".")
    if p.get("command"):
        return ("Returned a Command: its update carries the ToolMessage that answers the "
                "call (same tool_call_id), as ToolNode requires.")
    return "Returned a ToolMessage that answers the call (same tool_call_id)."


def tool_life(replay: Replay, index: int) -> ToolLife | None:
    """The tool call of step ``index`` (None at a step of no tool call): its schema as
    the model saw it, its Python signature, and how it ended as of this step."""
    if not replay.steps:
        return None
    i = replay.clamp(index)
    ev = replay.steps[i].event
    if ev.hook not in TOOL_HOOKS or not ev.tool_call_id:
        return None
    tcid = ev.tool_call_id
    enter = name = args = None
    outcome = None
    said = captions(replay)
    for st in replay.steps[:i + 1]:
        e = st.event
        if e.tool_call_id != tcid or e.hook not in TOOL_HOOKS:
            continue
        p = read_payload(ToolEnterPayload, e.payload)
        if e.phase == "enter" and enter is None:
            enter, name, args = e, p.get("name"), p.get("args")
        elif e.phase in ("exit", "error", "interrupt") and e.hook == ev.hook:
            outcome = _outcome(e, said[st.index])
    if name is None:
        return None
    seq = enter.seq if enter is not None else ev.seq
    sig = signature_at(replay, seq, str(name))
    return ToolLife(str(name), tcid, args, schema_at(replay, seq, str(name)),
                    sig.get("signature") if sig else None,
                    tuple(sig.get("hidden") or ()) if sig else (), outcome)


def signature_note(replay: Replay) -> str:
    """What the inspector says where a tool's Python signature is missing: why, as the
    record shows it (TraceMiddleware records signatures with the tool schemas)."""
    traced = any(e.middleware and "Trace" in e.middleware and e.phase in ("enter", "exit")
                 and (e.hook in MODEL_HOOKS or e.hook in TOOL_HOOKS) for e in replay.run.events)
    if traced:
        return "(not recorded: no model call of this run wrote the tool schemas)"
    if replay.run.observed:
        return ("(not recorded: this run was seen from outside, where a tool's Python "
                "signature never shows; TraceMiddleware records it with the tool schemas)")
    return ("(not recorded: this run was recorded without TraceMiddleware, which records a "
            "tool's Python signature with the tool schemas)")


__all__ = ["ERROR_PATHS", "PROPAGATED", "PROPAGATES", "ToolLife", "annotation_text", "schema_at",
           "signature_at", "signature_note", "signature_text", "signatures", "tool_life"]
