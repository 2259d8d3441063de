"""Runs of a loop seen from outside: model calls observed on the wire or in spans.

The tracer records a loop from inside (hooks, callbacks). A loop that ran
without it (a hand-rolled loop on a provider's SDK, another framework, another
language) is seen only from outside: the HTTP exchanges a proxy recorded, or
the spans an OpenTelemetry instrumentor sent. ``RunBuilder`` writes what such
an observer saw as an ordinary run, through the same ``Recorder`` and in the
same event format the callback handler uses for a loop without middleware
(``model`` enter/exit/error, ``tool`` exit, message rows), so replay, checks,
diff and export need nothing special.

What an outside observer cannot know is not invented. A model call is known
(its request and response); a tool result is known only as the message the
loop sent back with the next request, so it becomes a ``tool`` *exit* event at
that time with ``observed`` in its payload, unless the observer saw the tool
run (a tool span), in which case ``tool`` gives it with its own times. No
middleware hook is recorded; the run's ``metadata.observed`` says what saw it,
and the app marks the hooks as unknown.

Messages carry no ids on the wire, so a conversation's continuity is decided
by content: ``signature`` is what two copies of one message share (a client
re-sends the assistant message in its own shape), and a request continues a
conversation when its messages extend the previous request and its reply
(``extends``). The builder reuses the message objects of the part already
seen, so the recorder sees a conversation that grows, and gives new messages
ids of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from tracer.vocab.payloads import ModelEnterPayload
from tracer.vocab.records import RunRecord, tool_name

from .recorder import Recorder, ResponsePayload, RunState, begin_lap, end_lap, note_request

Signature = tuple[Any, ...]
_M = TypeVar("_M", bound=BaseMessage)


def _text(m: BaseMessage) -> str:
    c = m.content
    if isinstance(c, str):
        return c.strip()
    parts = []
    for b in c or ():
        if isinstance(b, str):
            parts.append(b)
        elif isinstance(b, dict) and isinstance(b.get("text"), str):
            parts.append(b["text"])
    return "".join(parts).strip()


def _args(a: Any) -> str:
    return json.dumps(a, sort_keys=True, default=str)


def signature(m: BaseMessage) -> Signature:
    """What two copies of one message share, however a client re-sent it: its
    type, its text, its tool calls (name and arguments; ids when both copies
    have them are compared by ``same``) and the call a tool result answers."""
    calls = tuple((c.get("name"), _args(c.get("args")), c.get("id") or "")
                  for c in getattr(m, "tool_calls", None) or ())
    return (m.type, _text(m), calls, getattr(m, "tool_call_id", None) or "")


def same(a: Signature, b: Signature) -> bool:
    """Whether two signatures are one message. Lenient where clients differ: an
    assistant message that asked for tools may come back without its text, and
    a call id missing on one side (Ollama's client drops them) is not a change."""
    if a[0] != b[0] or a[3] != b[3] or len(a[2]) != len(b[2]):
        return False
    for (na, aa, ia), (nb, ab, ib) in zip(a[2], b[2], strict=True):
        if na != nb or aa != ab or (ia and ib and ia != ib):
            return False
    return a[1] == b[1] or bool(a[2] and (not a[1] or not b[1]))


def extends(prefix: Sequence[Signature], sigs: Sequence[Signature]) -> bool:
    """Whether ``sigs`` starts with ``prefix`` (and is not shorter)."""
    return len(sigs) >= len(prefix) and all(
        same(p, s) for p, s in zip(prefix, sigs, strict=False))


class RunBuilder:
    """Writes one run from observed model calls (and tool runs, when seen).

    ``call`` takes the conversation a model call was sent (system prompt apart),
    as LangChain messages; the part that continues what the run has seen keeps
    the run's own objects. Times are the observed ones (seconds since the epoch).
    """

    def __init__(self, recorder: Recorder, *, name: str | None, source: str,
                 observed: str, started_at: float, thread_id: str | None = None,
                 parent: RunState | None = None, parent_tool_call_id: str | None = None,
                 agent_name: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        self.rec = recorder
        self.metadata = {**(metadata or {}), "observed": observed}
        self.run = recorder.start_run(name=name, thread_id=thread_id, parent=parent,
                                      parent_tool_call_id=parent_tool_call_id, source=source,
                                      agent_name=agent_name, metadata=self.metadata)
        self.rec.writer.put(RunRecord(self.run.id, {"started_at": started_at}))
        self.rec.event(self.run, "run", "start", ts=started_at, payload={"name": name})
        self.objs: list[BaseMessage] = []
        self.sigs: list[Signature] = []
        self.model: str | None = None
        self.system: Any = None
        self.tools: list[str] | None = None
        self.calls = 0
        self.last_ts = started_at
        self._n = 0

    @property
    def id(self) -> str:
        return self.run.id

    def _own(self, m: _M) -> _M:
        """``m`` with an id of the run's own (observed messages have none)."""
        self._n += 1
        if isinstance(m, ToolMessage) or m.id:
            return m
        return m.model_copy(update={"id": f"{self.metadata['observed']}-m{self._n}"})

    def note(self, **fields: Any) -> None:
        """Add ``fields`` to the run's metadata (what the observer could not see)."""
        if any(self.metadata.get(k) != v for k, v in fields.items()):
            self.metadata = {**self.metadata, **fields}
            self.rec.writer.put(RunRecord(self.run.id, {"metadata": self.metadata}))

    def align(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``messages`` with the run's own objects for the part it has seen."""
        out: list[BaseMessage] = []
        for i, m in enumerate(messages):
            sig = signature(m)
            if i < len(self.sigs) and same(self.sigs[i], sig):
                out.append(self.objs[i])
            else:
                out.append(self._own(m))
        return out

    def continues(self, messages: Sequence[BaseMessage]) -> bool:
        """Whether a request of ``messages`` continues this run's conversation."""
        return extends(self.sigs, [signature(m) for m in messages])

    def tool(self, m: ToolMessage, *, ts: float, end_ts: float | None = None,
             name: str | None = None, args: Any = None, error: str | None = None) -> None:
        """A tool run the observer saw (a tool span): ``enter`` and ``exit`` (or
        ``error``) at its own times, its result recorded as the call's answer."""
        run = self.run
        tcid = m.tool_call_id
        self.rec.event(run, "tool", "enter", tool_call_id=tcid, ts=ts,
                       payload={"name": name or m.name, "args": args})
        dur = (end_ts - ts) * 1000 if end_ts is not None else None
        # (the status as the tracer writes it, so that a diff sees no difference)
        if error is not None:
            seq = self.rec.event(run, "tool", "error", tool_call_id=tcid, ts=end_ts or ts,
                                 duration_ms=dur, payload={"name": name or m.name,
                                                           "status": "error", "error": error})
        else:
            seq = self.rec.event(run, "tool", "exit", tool_call_id=tcid, ts=end_ts or ts,
                                 duration_ms=dur, payload={"name": name or m.name,
                                                           "status": m.status or "success"})
        self.rec.tool_result(run, seq, m)
        self.last_ts = max(self.last_ts, end_ts or ts)

    def call(self, messages: Sequence[BaseMessage], *, ts: float, end_ts: float | None,
             reply: AIMessage | None = None, error: str | None = None, system: Any = None,
             tools: Sequence[Any] | None = None, model: str | None = None,
             extra: dict[str, Any] | None = None) -> int:
        """One model call: sent ``messages``, answered ``reply`` (or failed with
        ``error``). Tool results in it that the run has not seen are recorded as
        sent back at ``ts``. Returns the seq of the call's ``enter`` event."""
        rec, run = self.rec, self.run
        convo = self.align(messages)
        for m in convo:
            if isinstance(m, ToolMessage) and ("t:" + m.tool_call_id) not in run.seen:
                seq = rec.event(run, "tool", "exit", tool_call_id=m.tool_call_id, ts=ts,
                                payload={"observed": "sent back with the next request"})
                rec.tool_result(run, seq, m)
        begin_lap(run)
        payload: ModelEnterPayload = {"messages": len(convo), "model": model}
        payload.update(cast("ModelEnterPayload", extra or {}))
        changed = self._changes(system, tools, model)
        if changed:
            payload["changed"] = changed
        note_request(run, payload, system=system, tools=list(tools) if tools else None,
                     tools_key=hash(_args(list(tools or ()))), schemas=lambda: list(tools or ()))
        # (a change the sync finds comes before the call that received it)
        enter = rec.sync_messages(
            run, lambda: rec.event(run, "model", "enter", ts=ts, payload=payload), convo)
        dur = (end_ts - ts) * 1000 if end_ts is not None else None
        if error is not None or reply is None:
            rec.event(run, "model", "error", ts=end_ts or ts, duration_ms=dur,
                      payload={"error": error or "no response"})
        else:
            reply = self._own(reply)
            seq = rec.event(run, "model", "exit", ts=end_ts or ts, duration_ms=dur,
                            payload=ResponsePayload(run, [reply]))
            rec.message(run, seq, len(convo), reply)
            convo = [*convo, reply]
        end_lap(run)
        rec.update_totals(run)
        self.objs = list(convo)
        self.sigs = [signature(m) for m in convo]
        self.calls += 1
        self.last_ts = max(self.last_ts, end_ts or ts)
        if model and run.model is None:
            run.model = model
        return enter

    def _changes(self, system: Any, tools: Sequence[Any] | None, model: str | None) -> list[str]:
        """What differs from the previous call: shown, never hidden."""
        names = [tool_name(t) for t in tools or ()]
        out = []
        if self.calls:
            if system != self.system:
                out.append("system prompt")
            if names != self.tools:
                out.append("tools")
            if model != self.model:
                out.append("model")
        self.system, self.tools, self.model = system, names, model
        return out

    def end(self, status: str = "completed", *, ts: float | None = None,
            error: str | None = None) -> None:
        """End the run at ``ts`` (the last observed time by default)."""
        run = self.run
        ts = ts if ts is not None else self.last_ts
        if status == "completed":
            run.end_seen = True
            self.rec.event(run, "run", "end", ts=ts)
        elif status == "error":
            run.end_seen = True
            self.rec.event(run, "run", "error", ts=ts, payload={"error": error or ""})
        self.rec.end_run(run, status, error)
        self.rec.writer.put(RunRecord(run.id, {"ended_at": ts}))

    def reopen(self) -> None:
        """The conversation went on after it ended (a follow-up question)."""
        run = self.run
        run.ended = False
        run.end_seen = False
        self.rec.writer.put(RunRecord(run.id, {"status": "running", "ended_at": None}))
        self.rec.event(run, "run", "start", ts=self.last_ts, payload={"continued": True})

