"""The playground: any model call, recorded or paused, re-sent to a chosen model.

``playground(db, run, step, edit=..., model=...)`` takes the model call at (or after)
``step`` of a recorded run, exactly as the model received it (its messages, with their
tool calls and tool results: a multi-turn request; its system prompt and tool schemas),
makes one edit (``tracer.vocab.edits.Edit``: message, drop, insert, system, tools,
settings), asks ``model``, and returns the new answer beside the recorded one, with the
request in each provider's wire format (rendered by the adapters' own request builders,
``tracer.wire.render``). Nothing is written: the run stays as it was recorded.

``model`` is one of:

- an ``init_chat_model`` name (``openai:gpt-4.1-mini``), with the user's key;
- ``recorded``: the recorded provider and model, through ``init_chat_model``;
- ``agent``: the model of the agent ``agent=`` names (a factory or ``module:factory``,
  as a rerun takes it: ``tracer.whatif.agent_model``);
- ``offline`` (no network, no key): cassette-style, the recorded answer of the same
  request when one of the store's recorded calls had it (compared by content as a rerun
  compares, ``tracer.whatif.cassette.Request``: the messages, the system prompt, the
  tools offered, the settings), looked for in the run, its subagent runs, its reruns and
  forks (and, for a fork, the run it forks and that run's other forks); else an answer
  that says it is offline and what the model would have been sent (how many messages,
  the last one, the system prompt, the tools, the settings). ``PlayResult.served`` says
  which, in one line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tracer.debug.session import message_json
from tracer.errors import LooptraceError, RenderError, StepOutOfRange
from tracer.read.fork_links import forks_of, origin_of
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.record.edit_apply import chat_model, edit_messages
from tracer.vocab.edits import Edit
from tracer.vocab.records import MODEL_HOOKS

from .providers import PROVIDERS
from .render import ModelCall, model_call, model_call_events, model_for, render_request

__all__ = ["MODELS", "PlayResult", "pending_at", "playground"]

EDITS = ("message", "drop", "insert", "system", "tools", "settings")
# the model names that are not init_chat_model names
MODELS = ("offline", "recorded", "agent")
FAMILY_MAX = 25  # the most runs an offline answer is looked for in (the run first)


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
    served: str = ""  # where the answer came from, one line (offline: which record, or none)

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "step": self.step, "model_call": self.call,
                "model": self.model, "edit": self.edit, "request": self.request,
                "recorded_answer": self.recorded, "answer": self.answer,
                "served": self.served, "wire": self.wire}


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


def _model(name: str, call: ModelCall, settings: dict[str, Any],
           agent: Any = None) -> tuple[Any, str]:
    if name == "agent":
        if agent is None:
            msg = "model 'agent' asks the agent's own model: name the agent (--agent MODULE:FACTORY)"
            raise LooptraceError(msg)
        from tracer.whatif.agent_model import agent_model

        llm: Any = agent_model(agent)
        named = getattr(llm, "model_name", None) or getattr(llm, "model", None)
        label = (f"agent {agent if isinstance(agent, str) else getattr(agent, '__name__', '')}"
                 + (f" ({named})" if isinstance(named, str) else ""))
        return (llm.bind(**settings) if settings else llm), label
    if name == "recorded":
        if not call.model:
            msg = "the record names no model for this call: pass a model name"
            raise LooptraceError(msg)
        name = f"{call.provider}:{call.model}" if call.provider else str(call.model)
    try:
        llm = chat_model(name)
    except Exception as exc:  # noqa: BLE001 - a missing key, an unknown provider ...
        msg = f"cannot build the model {name!r}: {exc}".splitlines()[0]
        raise LooptraceError(msg) from None
    if settings:
        llm = llm.bind(**settings)
    return llm, name


@dataclass
class _Call:
    run: str
    loaded: Any  # the run (tracer.read.loader.Run)
    step: int  # the model call's step (from 1)
    enter_seq: int
    call: ModelCall


def _call_at(db: str | Path, run: str, step: int) -> _Call:
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
    step_of = {s.event.seq: s.index + 1 for s in replay.steps}
    return _Call(rid, loaded, step_of.get(enter.seq, int(step)), enter.seq,
                 model_call(replay, enter))


def pending_at(db: str | Path, run: str, step: int) -> dict[str, Any]:
    """The model call at or after ``step`` of ``run`` as the playground takes its edit:
    ``{"run", "step", "model_call", "pending"}`` (``pending``: the debugger's form of a
    model request, the one ``Edit.check`` and the edit forms read)."""
    c = _call_at(db, run, step)
    return {"run": c.run, "step": c.step, "model_call": c.call.index + 1,
            "pending": _pending(c.call, {})}


def playground(db: str | Path, run: str, step: int, *, edit: Any = None,
               model: str = "offline", agent: Any = None,
               providers: tuple[str, ...] = PROVIDERS) -> PlayResult:
    """Re-send the model call at or after ``step`` of ``run`` (see the module); ``agent``:
    the factory (or ``module:factory``) whose model ``model="agent"`` asks."""
    c = _call_at(db, run, step)
    call = c.call
    clean = None
    settings: dict[str, Any] = {}
    if edit is not None:
        made = Edit.of(edit).check(_pending(call, settings))
        if made.kind not in EDITS:
            msg = f"the playground takes the edits {', '.join(EDITS)}, not {made.kind!r}"
            raise LooptraceError(msg)
        clean = made.to_json()
        call, settings = _edited(call, made)
    if model == "offline":
        answer, served, label = *_offline(db, c, call, settings), "offline"
    else:
        llm, label = _model(model, call, settings, agent)
        answer, served = _ask(llm, call), f"asked {label}"
    wire: dict[str, Any] = {}
    for provider in providers:
        try:
            wire[provider] = render_request(provider, call.messages if not call.system else
                                            call.lc_messages(), model=model_for(provider, call),
                                            tools=call.tools)
        except RenderError as exc:
            wire[provider] = {"error": str(exc)}
    return PlayResult(c.run, c.step, call.index + 1, label, clean, _pending(call, settings),
                      _recorded(c.loaded, c.enter_seq), answer, wire, served)


def _ask(llm: Any, call: ModelCall) -> dict[str, Any]:
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
    return message_json(answer)


# -- offline ---------------------------------------------------------------------------
def _family(db: TraceDB, run: Any) -> list[str]:
    """The runs an offline answer is looked for in: the run, its reruns and forks, and
    for a rerun or fork the run it replays and that run's other reruns and forks."""
    out = [run.id]
    origin = origin_of(run.metadata)
    roots = [run.id] if origin is None else [run.id, origin[0]]
    for root in roots:
        for rid in [root, *(f.run_id for f in forks_of(db, root))]:
            if rid not in out:
                out.append(rid)
    return out[:FAMILY_MAX]


def _offline(db: str | Path, c: _Call, call: ModelCall,
             settings: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The recorded answer of the same request, else what the model would have been sent."""
    from langchain_core.messages import AIMessage, messages_from_dict

    from tracer.whatif.cassette import Cassette
    from tracer.whatif.player import live_request_of

    names = [str(t["function"].get("name")) for t in call.tools]
    request = live_request_of(list(call.messages), system=call.system, tools=names,
                              settings=settings or None)
    with TraceDB(db) as tdb:
        for rid in _family(tdb, c.loaded):
            try:
                cassette = Cassette.load(tdb, rid)
            except LooptraceError:
                continue
            for run_id, calls in cassette.model_calls.items():
                for mc in calls:
                    if not (mc.answered and mc.outcomes[-1].messages
                            and mc.request.matches(request)):
                        continue
                    msgs = messages_from_dict(mc.outcomes[-1].messages)
                    ai = next((m for m in msgs if isinstance(m, AIMessage)), None)
                    if ai is None:
                        continue
                    name = cassette.runs[run_id].summary.name or "run"
                    return message_json(ai), (
                        f"offline: the recorded answer of the same request ({name} "
                        f"{run_id[:12]}, step {mc.index + 1})")
    return message_json(AIMessage(_would_send(call, settings))), (
        "offline: no recorded call of this run or its forks had this request; no model "
        "was asked")


def _would_send(call: ModelCall, settings: dict[str, Any]) -> str:
    """The offline answer to a request no record holds: what the model would be sent."""
    msgs = call.messages
    parts = [(f"[offline] No model was asked, and no recorded call had this request. The "
             f"model would have been sent {len(msgs)} message{'' if len(msgs) == 1 else 's'}")]
    if msgs:
        last = msgs[-1]
        text = " ".join(_text_of(last).split())
        cut = text[:200] + (" ..." if len(text) > 200 else "")
        who = last.type + (f" {last.name}" if getattr(last, "name", None) else "")
        calls = getattr(last, "tool_calls", None) or []
        said = f"{cut!r}" if cut else "(no text)"
        if calls:
            said += " calling " + ", ".join(str(t.get("name")) for t in calls)
        parts.append(f", the last a {who} message: {said}")
    system = call.system
    parts.append(f"; a system prompt of {len(system)} characters" if system
                 else "; no system prompt")
    names = [str(t["function"].get("name")) for t in call.tools]
    parts.append(f"; the tools {', '.join(names)}" if names else "; no tools")
    if settings:
        parts.append(f"; the settings {json.dumps(settings, sort_keys=True, default=str)}")
    return "".join(parts) + "."


def _text_of(m: Any) -> str:
    content = getattr(m, "content", "")
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", "")) if isinstance(b, dict) else str(b)
                    for b in content or [])


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
