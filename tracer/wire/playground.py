"""The playground: any model call, recorded or paused, re-sent to a chosen model.

``playground(db, run, step, edit=..., model=...)`` takes the model call at (or after)
``step`` of a recorded run, exactly as the model received it (its messages, with their
tool calls and tool results: a multi-turn request; its system prompt and tool schemas),
makes one edit (``tracer.vocab.edits.Edit``: message, drop, insert, system, tools,
settings), asks ``model`` (an ``init_chat_model`` name with the user's
key, ``recorded``: the recorded provider and model through ``init_chat_model``, or
``offline``: an echo model, no network, no key), and returns the new answer beside the
recorded one, with the request in each provider's wire format (rendered by the
adapters' own request builders, ``tracer.wire.render``). Nothing is written: the run
stays as it was recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tracer.debug.session import message_json
from tracer.errors import LooptraceError, RenderError, StepOutOfRange
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.record.edit_apply import chat_model, edit_messages
from tracer.vocab.edits import Edit
from tracer.vocab.records import MODEL_HOOKS

from .providers import PROVIDERS
from .render import ModelCall, model_call, model_call_events, model_for, render_request

__all__ = ["PlayResult", "playground"]

EDITS = ("message", "drop", "insert", "system", "tools", "settings")


@dataclass
class PlayResult:
    run: str
    step: int  # the model call's step (from 1)
    call: int  # the model call's number in the run (from 1)
    model: str
    edit: dict[str, Any] | None
    request: dict[str, Any]
    recorded: dict[str, Any] | None  # the AIMessage the run recorded for this call
    answer: dict[str, Any]  # the chosen model's AIMessage
    wire: dict[str, Any] = field(default_factory=dict)  # provider -> request body (or error)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "step": self.step, "model_call": self.call,
                "model": self.model, "edit": self.edit, "request": self.request,
                "recorded_answer": self.recorded, "answer": self.answer, "wire": self.wire}


def _pending(call: ModelCall, settings: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "model_request",
            "messages": [message_json(m, i) for i, m in enumerate(call.messages)],
            "system": call.system, "settings": settings,
            "tools": [t["function"].get("name") for t in call.tools], "model": call.model}


def _edited(call: ModelCall, edit: Edit) -> tuple[ModelCall, dict[str, Any]]:
    if edit.kind == "system":
        return replace(call, system=edit.text), {}
    if edit.kind == "tools":
        keep = set(edit.names or ())
        return replace(call, tools=[t for t in call.tools
                                    if t["function"].get("name") in keep]), {}
    if edit.kind == "settings":
        return call, dict(edit.settings or {})
    return replace(call, messages=edit_messages(call.messages, edit)), {}


def _model(name: str, call: ModelCall, settings: dict[str, Any]) -> tuple[Any, str]:
    if name == "recorded":
        if not call.model:
            msg = "the record names no model for this call: pass a model name"
            raise LooptraceError(msg)
        name = f"{call.provider}:{call.model}" if call.provider else str(call.model)
    try:
        llm: Any = chat_model(name)
    except Exception as exc:  # noqa: BLE001 - a missing key, an unknown provider ...
        msg = f"cannot build the model {name!r}: {exc}".splitlines()[0]
        raise LooptraceError(msg) from None
    if settings:
        llm = llm.bind(**settings)
    return llm, name


def playground(db: str | Path, run: str, step: int, *, edit: Any = None,
               model: str = "offline", providers: tuple[str, ...] = PROVIDERS) -> PlayResult:
    """Re-send the model call at or after ``step`` of ``run`` (see the module)."""
    with TraceDB(db) as tdb:
        rid = tdb.resolve(run)
        loaded = tdb.run(rid)
    replay = build_replay(loaded)
    n = len(replay.steps)
    if not 1 <= int(step) <= n:
        msg = f"step {step} is outside the run's steps (1..{n})"
        raise StepOutOfRange(msg)
    seq = replay.steps[int(step) - 1].event.seq
    enters = model_call_events(loaded)
    enter = next((e for e in enters if e.seq >= seq), None)
    if enter is None:
        msg = f"no model call at or after step {step}"
        raise StepOutOfRange(msg)
    call = model_call(replay, enter)
    clean = None
    settings: dict[str, Any] = {}
    if edit is not None:
        made = Edit.of(edit).check(_pending(call, settings))
        if made.kind not in EDITS:
            msg = f"the playground takes the edits {', '.join(EDITS)}, not {made.kind!r}"
            raise LooptraceError(msg)
        clean = made.to_json()
        call, settings = _edited(call, made)
    llm, label = _model(model, call, settings)
    if call.tools:
        try:
            llm = llm.bind_tools(call.tools)
        except NotImplementedError:
            pass
    try:
        answer = llm.invoke(call.lc_messages())
    except Exception as exc:  # noqa: BLE001 - the provider's own refusal, said in one line
        msg = f"the model answered with an error: {type(exc).__name__}: {exc}".splitlines()[0]
        raise LooptraceError(msg) from None
    wire: dict[str, Any] = {}
    for provider in providers:
        try:
            wire[provider] = render_request(provider, call.messages if not call.system else
                                            call.lc_messages(), model=model_for(provider, call),
                                            tools=call.tools)
        except RenderError as exc:
            wire[provider] = {"error": str(exc)}
    step_of = {s.event.seq: s.index + 1 for s in replay.steps}
    return PlayResult(rid, step_of.get(enter.seq, int(step)), call.index + 1, label, clean,
                      _pending(call, settings), _recorded(loaded, enter.seq),
                      message_json(answer), wire)


def _recorded(run: Any, enter_seq: int) -> dict[str, Any] | None:
    """The AIMessage the run recorded at the exit of the call opened at ``enter_seq``."""
    exit_seq = next((e.seq for e in run.events if e.seq > enter_seq and e.hook in MODEL_HOOKS
                     and e.phase in ("exit", "error")), None)
    if exit_seq is None:
        return None
    for m in run.messages:
        if m.seq == exit_seq and m.type == "ai":
            try:
                return message_json(m.to_langchain())
            except Exception:  # noqa: BLE001
                return {"type": "ai", "text": m.text}
    return None
