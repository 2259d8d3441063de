"""A recorded run as a cassette: what every call was sent and what it gave back.

``Cassette.load(db, run_id)`` reads a run and its subagent runs and lists, in order:

- each **model call**: the request as the tracer recorded it (the messages in their
  versions of then, the system prompt, the tools offered, the model, its settings)
  and what came back (the response messages, or the errors of the attempts that
  failed before it: a fallback's rate-limited primary, a retry); when a wrap layer
  rewrote the reply and the run was recorded with ``around``, the model's own reply,
  which the layer rewrites again in a rerun;
- each **tool call**: its name, arguments and what it gave back (the ``ToolMessage``,
  a ``Command`` carrying it, or the exception it raised); when a wrap layer rewrote
  the result on its way out and the run was recorded with ``around``, the tool's own
  result (what the innermost rewriting layer was given), so that the layer rewrites
  it again in a rerun; and the state keys it changed (``tracer.whatif.tool_writes``), which
  a rerun that serves its result writes again;
- each model call made **inside a node hook** (a summariser's own, in
  ``before_model``: kept on that hook's event, ``model_calls``);
- each **human decision** a paused run was resumed with;
- the run's **input** (the messages it was started with).

Requests are compared by content (``Request``), never by id or time: the readable form
of each message (``tracer.read.diff.message_text``: type, text, tool calls and their
arguments, a tool result's status), redacted as the writer redacts, the system prompt,
the tool names, the model and its settings. ``Cassette.match_model`` finds the first
unused recorded call with an equal request; on a miss, ``Miss`` holds a unified diff
against the nearest recorded request.

Read-only: nothing here writes to the file. Used by the what-if rerun
(``tracer.whatif.player``, ``tracer.whatif.rerun``).
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from tracer.errors import RerunError
from tracer.read.calls import ModelCall as Decoded
from tracer.read.calls import call_at
from tracer.read.loader import Message, Run, TraceDB, content_text
from tracer.read.steps import Replay, build_replay
from tracer.vocab.calls import CallRequest, Usage
from tracer.vocab.payloads import ResumePayload, read_payload
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

from .tool_writes import StateWrite, StoreWrite, store_writes_of, writes_of

__all__ = [
    "Cassette",
    "Miss",
    "ModelCall",
    "Outcome",
    "Request",
    "RerunError",
    "ToolCall",
    "request_of_messages",
]

# the oldest schema a rerun reads: 4 recorded the state a rerun redoes (schema 5 changed
# only how the search index takes new messages)
RERUN_SCHEMA = 4


# A random id inside a message's text (Deep Agents names a summary's file after one) is
# an id: not compared.
_UUID = re.compile(
    r"(?<![0-9a-f])[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}(?![0-9a-f])")


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _message_text(m: Message) -> str:
    from tracer.read.diff import message_text  # (diff imports replay: read on first use)

    return message_text(m)


@dataclass(frozen=True)
class Request:
    """What a model call was sent, as compared: one readable line block per message."""

    system: str | None
    messages: tuple[str, ...]
    tools: tuple[str, ...] | None  # sorted tool names (None: not known)
    model: str | None = None
    settings: str | None = None  # canonical JSON of the model settings

    def lines(self) -> list[str]:
        out = [f"[system] {self.system}" if self.system is not None else "[system] (none)"]
        for text in self.messages:
            out.extend(text.splitlines() or [""])
        out.append(f"[tools] {', '.join(self.tools) if self.tools is not None else '?'}")
        if self.model:
            out.append(f"[model] {self.model}")
        if self.settings:
            out.append(f"[settings] {self.settings}")
        return out

    def matches(self, other: Request) -> bool:
        """Equal by content; a model, tool list or settings one side does not know is
        not compared."""
        if self.system != other.system or self.messages != other.messages:
            return False
        if self.tools is not None and other.tools is not None and self.tools != other.tools:
            return False
        if self.model and other.model and self.model != other.model:
            return False
        return not (self.settings and other.settings and self.settings != other.settings)

    def diff(self, other: Request, label_a: str = "recorded", label_b: str = "now") -> str:
        return "\n".join(difflib.unified_diff(self.lines(), other.lines(), label_a, label_b,
                                              lineterm=""))


def request_of_messages(messages: list[Message], *, system: str | None,
                        tools: list[str] | None, model: str | None = None,
                        settings: Any = None) -> Request:
    """A ``Request`` from recorded-form messages (a system message among them is taken
    as the system prompt when ``system`` is None)."""
    texts = []
    for m in messages:
        if m.type == "system":
            if system is None:
                system = content_text(m.content)
            continue
        texts.append(_UUID.sub("<id>", _message_text(m)))
    return Request(system, tuple(texts), tuple(sorted(tools)) if tools is not None else None,
                   model or None, _canon(settings) if settings else None)


@dataclass
class Outcome:
    """What one call gave back: a response (messages in ``messages_to_dict`` form, a
    ``Command`` for a tool that returned one) or an exception (its type and text)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # "Type: message", as the tracer records errors
    error_type: str | None = None
    command: bool = False
    update_keys: tuple[str, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.error is not None


@dataclass
class ModelCall:
    """One recorded model call: its request and what came back, attempt by attempt."""

    run_id: str
    index: int  # the index of its ``enter`` step in the run's replay (0-based)
    request: Request
    hook: str = "wrap_model_call"  # who recorded it: the middleware, or callbacks ("model")
    end: int = -1  # the index of its last step (exit or error)
    outcomes: list[Outcome] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0
    # the model's own reply, when a wrap layer rewrote it on its way out (``around``
    # records what the innermost rewriting layer was given): served in its place
    own: list[dict[str, Any]] | None = None

    @property
    def answered(self) -> bool:
        return bool(self.outcomes) and not self.outcomes[-1].is_error


@dataclass
class ToolCall:
    """One recorded tool call: what was asked and what came back, attempt by attempt."""

    run_id: str
    index: int  # the index of its ``enter`` step in the run's replay (0-based)
    tool_call_id: str | None
    name: str
    args: Any
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0
    end: int = -1  # the index of its last step (exit or error)
    # the tool's own result, when a wrap layer rewrote it on its way out (``around``
    # records what the innermost rewriting layer was given): served in its place
    own: list[dict[str, Any]] | None = None
    # the state keys the call changed (its Command's, or a tool writing to its channel),
    # each with its value before and after: made again when the result is served
    writes: dict[str, StateWrite] = field(default_factory=dict)
    # its writes to the LangGraph store, in order: made again when the result is served
    store: list[StoreWrite] = field(default_factory=list)

    def matches(self, name: str, args: Any) -> bool:
        return self.name == name and _canon(self.args) == _canon(args)


@dataclass
class Miss:
    """No recorded model call has this request: the nearest one and how they differ."""

    request: Request
    nearest: ModelCall | None
    diff: str

    def explain(self) -> str:
        if self.nearest is None:
            return "no recorded model call is left to compare it with"
        return (f"the request differs from the nearest recorded one (step "
                f"{self.nearest.index + 1}):\n{self.diff}")


@dataclass
class Cassette:
    """A run and its subagent runs read as calls and answers (see the module doc)."""

    root: Run
    runs: dict[str, Run]
    replays: dict[str, Replay]
    model_calls: dict[str, list[ModelCall]]
    tool_calls: dict[str, list[ToolCall]]
    resumes: list[Any]
    input: list[dict[str, Any]]
    thread_id: str | None = None
    # the model calls made inside a node hook (a summariser's, in before_model), kept on
    # that hook's event: answered by content, apart from the agent's own calls
    hook_calls: dict[str, list[ModelCall]] = field(default_factory=dict)

    # -- reading ---------------------------------------------------------------
    @classmethod
    def load(cls, db: TraceDB, run_id: str) -> Cassette:
        if db.schema_version < RERUN_SCHEMA:
            msg = (f"{db.path} was recorded with schema {db.schema_version}; rerun reads "
                   f"schema {RERUN_SCHEMA} and later: record into the file once (that migrates it "
                   "in place) or import its export into a new file, then rerun")
            raise RerunError(msg)
        root = db.run(db.resolve(run_id))
        runs = {root.id: root}
        for child in db.subagent_runs([root.id]):
            runs[child.id] = db.run(child.id)
        replays = {rid: build_replay(r) for rid, r in runs.items()}
        models = {rid: _model_calls(rp) for rid, rp in replays.items()}
        tools = {rid: _tool_calls(rp) for rid, rp in replays.items()}
        resumes: list[Any] = []
        for ev in root.events:
            resumed = read_payload(ResumePayload, ev.payload)
            if ev.hook == "resume" and "resume" in resumed:
                value = resumed["resume"]
                if isinstance(value, list) and len(value) == 1:
                    value = value[0]  # (the middleware records the task's resume values)
                resumes.append(value)
        return cls(root, runs, replays, models, tools, resumes, _input_of(root),
                   root.summary.thread_id, {rid: _hook_calls(rp) for rid, rp in replays.items()})

    @property
    def replay(self) -> Replay:
        return self.replays[self.root.id]

    def child_of(self, tool_call_id: str | None) -> str | None:
        """The subagent run started by the root's tool call ``tool_call_id``."""
        for rid, r in self.runs.items():
            if tool_call_id and r.summary.parent_tool_call_id == tool_call_id:
                return rid
        return None

    # -- matching -------------------------------------------------------------
    def match_model(self, run_id: str, request: Request, used: set[int],
                    hook: str | None = None) -> ModelCall | Miss:
        """The first recorded model call of ``run_id`` (recorded by ``hook``, if given)
        not in ``used`` (by ``id``) whose request equals ``request``, or a ``Miss`` with
        the nearest one."""
        calls = [c for c in self.model_calls.get(run_id, []) if hook is None or c.hook == hook]
        for c in calls:
            if id(c) not in used and c.request.matches(request):
                return c
        return self.miss(calls, request, used)

    def miss(self, calls: list[ModelCall], request: Request, used: set[int]) -> Miss:
        left = [c for c in calls if id(c) not in used]
        if not left:
            return Miss(request, None, "")
        now = "\n".join(request.lines())
        best = max(left, key=lambda c: difflib.SequenceMatcher(
            None, "\n".join(c.request.lines()), now, autojunk=False).ratio())
        return Miss(request, best, best.request.diff(request))

    def match_hook_call(self, run_id: str, request: Request,
                        used: set[int]) -> ModelCall | None:
        """The first unused model call made inside a node hook of ``run_id`` whose
        request equals ``request``."""
        return next((c for c in self.hook_calls.get(run_id, [])
                     if id(c) not in used and c.request.matches(request)), None)

    def match_tool(self, run_id: str, tool_call_id: str | None, name: str, args: Any,
                   used: set[int]) -> ToolCall | None:
        """The recorded tool call with this id and the same name and arguments (else the
        first unused one with the same name and arguments)."""
        calls = [c for c in self.tool_calls.get(run_id, []) if id(c) not in used]
        for c in calls:
            if tool_call_id and c.tool_call_id == tool_call_id and c.matches(name, args):
                return c
        for c in calls:
            if c.matches(name, args):
                return c
        return None


# -- building ----------------------------------------------------------------------


def _error_outcome(p: dict[str, Any]) -> Outcome:
    text = str(p.get("error") or "Exception: (no message)")
    return Outcome(error=text, error_type=str(p.get("type") or text.split(":", 1)[0]))


def _model_calls(rp: Replay) -> list[ModelCall]:
    out: list[ModelCall] = []
    current: ModelCall | None = None
    decoded: Decoded | None = None
    by_key = rp.run.message_by_key
    for step in rp.steps:
        ev = step.event
        if ev.hook not in MODEL_HOOKS:
            continue
        p = ev.payload if isinstance(ev.payload, dict) else {}
        if ev.phase == "enter":
            # (the system prompt as text, content blocks too: as the live request's
            # system message is compared)
            decoded = call_at(rp.run, ev.seq)
            req = decoded.request if decoded is not None else CallRequest()
            msgs = rp.messages_at(step.index)
            current = ModelCall(rp.run.id, step.index, request_of_messages(
                msgs, system=req.system, tools=req.tool_names, model=req.model,
                settings=req.settings), hook=ev.hook)
            out.append(current)
        elif current is None:
            continue
        elif ev.phase == "layer" and p.get("what") == "error":
            current.outcomes.append(_error_outcome(p))
            current.own = None  # (a later attempt's reply is the one rewritten)
        elif (ev.phase == "layer" and p.get("what") == "response" and current.own is None
              and isinstance(p.get("inner_messages"), list)):
            # the model's own reply, before the innermost layer that rewrote it
            current.own = [d for d in p["inner_messages"] if isinstance(d, dict)]
        elif ev.phase == "exit":
            current.outcomes.append(Outcome(
                messages=current.own or [by_key[k].data for k in step.new_keys
                                         if k in by_key]))
            current.tokens = (decoded.usage.total or 0) if decoded is not None else 0
            current.seconds = (ev.duration_ms or 0.0) / 1000
            current.end = step.index
            current = None
        elif ev.phase == "error":
            current.outcomes.append(_error_outcome(p))
            current.seconds = (ev.duration_ms or 0.0) / 1000
            current.end = step.index
            current = None
        elif ev.phase == "interrupt":
            current = None
    return out


def _hook_calls(rp: Replay) -> list[ModelCall]:
    """The model calls made inside node hooks (``model_calls`` of a hook's event)."""
    out: list[ModelCall] = []
    for step in rp.steps:
        p = step.event.payload
        if not isinstance(p, dict) or not isinstance(p.get("model_calls"), list):
            continue
        for c in p["model_calls"]:
            if not isinstance(c, dict) or not isinstance(c.get("messages"), list):
                continue
            msgs = [Message(i, 0, (d.get("data") or {}).get("id"), str(d.get("type")),
                            (d.get("data") or {}).get("tool_call_id"), "", d)
                    for i, d in enumerate(c["messages"]) if isinstance(d, dict)]
            response = c.get("response")
            out.append(ModelCall(
                rp.run.id, step.index, request_of_messages(msgs, system=None, tools=None),
                hook="node", end=step.index,
                outcomes=[Outcome(messages=[response] if isinstance(response, dict) else [])],
                tokens=Usage.of(c).total or 0))
    return out


def _tool_calls(rp: Replay) -> list[ToolCall]:
    out: list[ToolCall] = []
    open_: dict[str, ToolCall] = {}
    # A call that raised, by id, until the next model call: recorded from callbacks
    # alone (``looptrace run``), a retry inside the agent (ToolRetryMiddleware) is
    # another start of the same call, not another call (the rerun layer, outermost,
    # sees one request and serves its outcomes in turn, as for a recorded layer's).
    raised: dict[str, ToolCall] = {}
    by_key = rp.run.message_by_key
    for step in rp.steps:
        ev = step.event
        if ev.hook in MODEL_HOOKS:
            raised.clear()
        if ev.hook not in TOOL_HOOKS:
            continue
        p = ev.payload if isinstance(ev.payload, dict) else {}
        tcid = ev.tool_call_id or ""
        if ev.phase == "enter":
            again = raised.pop(tcid, None) if tcid else None
            if again is not None and again.matches(str(p.get("name")), p.get("args")):
                open_[tcid] = again  # (a retry: its outcome is the call's next)
                continue
            call = ToolCall(rp.run.id, step.index, ev.tool_call_id, str(p.get("name")),
                            p.get("args"))
            out.append(call)
            open_[tcid] = call
            continue
        found = open_.get(tcid)
        if found is None:
            continue
        if ev.phase == "layer" and p.get("what") == "error":
            found.outcomes.append(_error_outcome(p))
            found.own = None  # (a later attempt's result is the one rewritten)
        elif (ev.phase == "layer" and p.get("what") == "response" and found.own is None
              and isinstance(p.get("inner_messages"), list)):
            found.own = [d for d in p["inner_messages"] if isinstance(d, dict)]
        elif ev.phase == "exit":
            keys = list(step.new_keys) or (["t:" + tcid] if tcid else [])
            msgs = found.own if found.own else [by_key[k].data for k in keys if k in by_key]
            found.outcomes.append(Outcome(messages=msgs, command=bool(p.get("command")),
                                          update_keys=tuple(p.get("update_keys") or ())))
            found.seconds = (ev.duration_ms or 0.0) / 1000
            found.end = step.index
            del open_[tcid]
        elif ev.phase == "error":
            found.outcomes.append(_error_outcome(p))
            found.seconds = (ev.duration_ms or 0.0) / 1000
            found.end = step.index
            del open_[tcid]
            if tcid:
                raised[tcid] = found
        elif ev.phase == "interrupt":
            del open_[tcid]
    for call in out:
        call.writes = writes_of(rp.run.state, call.tool_call_id)
        call.store = store_writes_of(rp.run.state, call.tool_call_id)
    return out


def _input_of(run: Run) -> list[dict[str, Any]]:
    """The messages the run was started with: those recorded at its first event that
    holds messages, before any model call."""
    first_call = next((ev.seq for ev in run.events if ev.hook in MODEL_HOOKS), None)
    firsts = [m for m in run.messages if first_call is None or m.seq <= first_call]
    if not firsts:
        return []
    seq = min(m.seq for m in firsts)
    return [m.data for m in firsts if m.seq == seq and m.type in ("human", "system")]
