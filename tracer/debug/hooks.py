"""The debugger as a processor of ``TraceMiddleware``'s hook firings
(``tracer.record.processors``): ``visit`` decides, cheaply, whether a firing is a
breakpoint (or needs the channel read first), and returns the work that pauses, waits
for the answer and makes its edit (blocking: an async hook runs it in a worker thread).

What the work returns is what the hook goes on with (see ``tracer.record.processors``):
the same objects when the pause was answered with no edit, or the edited ones. Edits
are ``tracer.vocab.edits.Edit``s, made by ``tracer.record.edit_apply``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from langchain.agents.middleware import ModelResponse
from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.errors import GraphInterrupt

from tracer.errors import DebugAborted, DebugRaised
from tracer.record.edit_apply import (
    apply_request,
    apply_tool_call,
    apply_tool_result,
    reply_message,
    tool_message_of,
)
from tracer.record.processors import AFTER, BEFORE, ERROR, FIRE, LAYER, Site, Work
from tracer.vocab.content import content_text
from tracer.vocab.edits import Edit, describe_json, edits_of

from .breakpoints import Moment
from .raised import exception_json
from .session import (
    Debugger,
    aimessage_of,
    arm,
    in_thread,
    message_json,
    request_json,
    tool_call_json,
)

if TYPE_CHECKING:
    from langchain.agents.middleware import ModelRequest, ToolCallRequest

    from tracer.record.edit_apply import ToolResult

    # (LangChain's type parameter: the user's own context type, never read here)
    _Request: TypeAlias = ModelRequest[Any]

__all__ = ["DebugAborted", "DebugProcessor", "DebugRaised", "arm_processor", "visit"]

JSON: TypeAlias = dict[str, Any]  # (what a pause shows, as JSON)
# an answer's edit -> (what the hook goes on with, before, after); None -> unchanged
Apply: TypeAlias = Callable[[JSON | None], object]


@dataclass(slots=True)
class _Visit:
    moment: Moment
    pending: Callable[[], JSON]
    apply: Apply
    unchanged: object
    tool_call_id: str | None = None
    changed: bool = False  # ``unchanged`` is changed already (edits made from now on)


class DebugProcessor:
    """The debugger as ``TraceMiddleware`` holds it: a ``tracer.record.processors``
    ``HookProcessor`` over one ``Debugger``."""

    __slots__ = ("_mw", "debugger")

    def __init__(self, debugger: Debugger) -> None:
        self.debugger = debugger
        self._mw: Callable[[], object] | None = None

    def bind(self, db: str) -> None:
        self.debugger.bind(db)

    def attach(self, middleware: object) -> None:
        """The middleware that holds this processor (``tracer.record.processors.arm``):
        the debugger watches the nodes of its graph too (``node:NAME``,
        ``tracer.debug.nodes``), and says the ``layer:NAME`` breakpoints its agent
        cannot hit."""
        from .nodes import watch

        self._mw = weakref.ref(middleware)
        self.debugger.hold(middleware)
        watch(self.debugger, middleware)

    def visit(self, site: Site) -> Work | None:
        mw = self._mw() if self._mw is not None else None
        if mw is not None:
            self.debugger.check_layers(mw)
        return visit(self.debugger, site)


def arm_processor(debug: object, db: str) -> DebugProcessor | None:
    """The armer the package's root registers (``tracer/__init__.py``): the debugger
    ``debug=`` or ``LOOPTRACE_DEBUG`` arms (``tracer.debug.session.arm``), as a processor."""
    dbg = arm(debug, db)
    return None if dbg is None else DebugProcessor(dbg)


def visit(dbg: Debugger, site: Site) -> Work | None:
    """The debugger's ``HookProcessor.visit``: None, or the pause to make."""
    make = _VISITS.get(site.at)
    v = make(dbg, site) if make is not None else None
    if v is None:
        return None
    m, run = v.moment, site.run
    due = dbg.io_due(m)
    if not due and dbg.decide(run, m) is None:
        return (lambda: v.unchanged) if v.changed else None

    def work() -> object:
        if due:
            dbg.io(site.recorder, run, m)
        reason = dbg.decide(run, m)
        if reason is None:
            return v.unchanged
        return dbg.resolve(site.recorder, run, site.middleware, m, reason, v.pending(),
                           v.apply, v.tool_call_id)

    return _Pause(work)


class _Pause:
    """The debugger's work at one hook firing: called in a sync hook; in an async one,
    run in the debugger's own threads (``session.in_thread``: one per pause waiting, and
    a cancelled call's pause closed as cancelled)."""

    __slots__ = ("work",)

    def __init__(self, work: Callable[[], object]) -> None:
        self.work = work

    def __call__(self) -> object:
        return self.work()

    async def off_loop(self) -> object:
        return await in_thread(self.work)


def _edits(raw: object) -> tuple[Edit, ...]:
    """The answer's edits (one, or a list made in order); () for none."""
    return () if raw is None else edits_of(raw)


# -- node hooks: pause and go on (nothing to edit) -----------------------------------
def _node(dbg: Debugger, site: Site) -> _Visit:
    state = site.state
    msgs = state.get("messages") if isinstance(state, dict) else None
    msgs = msgs if isinstance(msgs, list) else []

    def pending() -> JSON:
        from .nodes import state_json

        last = [message_json(m, i) for i, m in enumerate(msgs)][-3:]
        return {"kind": "state", "hook": site.hook, "messages_count": len(msgs),
                "last_messages": last, "state": state_json(state)}

    return _Visit(dbg.moment(site.run, site.hook, FIRE), pending, lambda e: None, None)


# -- before a call (at the tracer, or inside one middleware's layer) -----------------
def _before(dbg: Debugger, site: Site) -> _Visit:
    if site.hook == "wrap_tool_call":
        return _tool_before(dbg, site)
    request = cast("_Request", site.request)
    rd = dbg.state(site.run)
    sticky = bool(rd.sticky) and site.at == BEFORE
    if sticky:  # (edits an earlier answer marked from_now_on: made here again, and said)
        for raw in rd.sticky:
            request, _ = apply_request(request, Edit.of(raw))
            site.recorder.event(site.run, site.hook, "debug", middleware=site.middleware,
                                payload={"command": "from now on", "outcome": "edited",
                                         "edit": raw, "change": describe_json(raw)})

    def text() -> str:
        return " ".join(str(getattr(m, "content", "")) for m in request.messages).lower()

    def apply(raw: JSON | None) -> object:
        edits = _edits(raw)
        if not edits:
            return request, None
        new, reply = request, None
        for edit in edits:  # (in order; an answer given ends them)
            new, reply = apply_request(new, edit)
            if edit.from_now_on:
                rd.sticky.append(edit.to_json())
            if reply is not None:
                break
        before = request_json(request)
        after = ({"reply": message_json(reply)} if reply is not None else request_json(new))
        if len(edits) > 1:
            return (new, reply), before, after
        return (new, reply), _changed(before, edits[0]), _changed(after, edits[0])

    def pending() -> JSON:
        return {**request_json(request), "seen_at": _seen_at(site)}

    model = getattr(request, "model", None)
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or "")
    m = dbg.moment(site.run, site.hook, BEFORE if site.at == BEFORE else LAYER, text=text,
                   layer=site.layer, model=name, messages=request.messages)
    if site.inner and dbg.finding_armed():
        # (the request as the model receives it is checked itself: a middleware may have
        # made it break the provider's protocol after the record was written)
        recorded = m.findings
        m.findings = lambda: set(recorded()) | request_rules(site.run.id, request.messages)
    return _Visit(m, pending, apply, (request, None), changed=sticky)


def request_rules(run_id: str, messages: Sequence[BaseMessage]) -> set[str]:
    """The protocol rules (``tracer.checks.protocol``) the messages of a request break,
    for any provider: a dangling tool call, a result with no call ..."""
    from tracer.checks.base import PROVIDERS, Call, ModelInput, ProtocolMessage, is_empty_content
    from tracer.checks.protocol import check_model_call

    role = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
    turns = []
    for i, msg in enumerate(messages):
        calls = tuple(Call(c.get("id"), str(c.get("name")), True)
                      for c in getattr(msg, "tool_calls", None) or ())
        calls += tuple(Call(c.get("id"), str(c.get("name")), False)
                       for c in getattr(msg, "invalid_tool_calls", None) or ())
        kind = role.get(msg.type, "other")
        turns.append(ProtocolMessage(msg.id or f"request-{i}", kind, calls,
                          getattr(msg, "tool_call_id", None),
                          kind == "assistant" and not calls and is_empty_content(msg.content)))
    mc = ModelInput(0, 0, turns, False, None)
    return {f.rule for f in check_model_call(run_id, mc, PROVIDERS)}


def _seen_at(site: Site) -> str:
    """Where the request a model-call pause shows stands in the onion, in words."""
    if site.inner:
        return "innermost: the request as the model receives it, after every middleware"
    if site.layer is not None:
        return f"inside {site.layer}: the middleware listed after it may still change it"
    return (f"at {site.middleware}: the middleware listed after it may still change it "
            "(looptrace debug, or trace.innermost() last in the list, pauses where the "
            "model receives it)")


def _tool_before(dbg: Debugger, site: Site) -> _Visit:
    request = cast("ToolCallRequest", site.request)
    call = tool_call_json(request)

    def apply(raw: JSON | None) -> object:
        edits = _edits(raw)
        if not edits:
            return request, None
        new, given = request, None
        for edit in edits:
            new, given = apply_tool_call(new, edit)
            if given is not None:
                break
        after = ({"result": message_json(given)} if given is not None
                 else {"tool_call": tool_call_json(new)})
        return (new, given), {"tool_call": call}, after

    m = dbg.moment(site.run, site.hook, BEFORE if site.at == BEFORE else LAYER,
                   tool=call["name"], layer=site.layer, args=call["args"],
                   messages=_messages(request), call_id=call["id"])
    return _Visit(m, lambda: {"kind": "tool_call", "tool_call": call}, apply,
                  (request, None), call["id"])


# -- after a call ---------------------------------------------------------------------
def _after(dbg: Debugger, site: Site) -> _Visit:
    if site.hook == "wrap_tool_call":
        return _tool_after(dbg, site)
    response = site.result
    ai = aimessage_of(response)

    def apply(raw: JSON | None) -> object:
        edits = _edits(raw)
        if not edits or ai is None:
            return response
        new = reply_message(edits[-1], like=ai)
        out: object = new
        if isinstance(response, ModelResponse):
            out = ModelResponse(result=[new if m is ai else m for m in response.result],
                                structured_response=response.structured_response)
        return out, message_json(ai), message_json(new)

    def text() -> str:
        return str(content_text(ai.content)) if ai is not None else ""

    return _Visit(dbg.moment(site.run, site.hook, AFTER, result=text, text=text,
                            reply=ai),
                  lambda: {"kind": "model_reply", "message": message_json(ai) if ai else None},
                  apply, response)


def _tool_after(dbg: Debugger, site: Site) -> _Visit:
    request = cast("ToolCallRequest", site.request)
    result = site.result
    call = tool_call_json(request)
    tcid = call["id"]
    msg = tool_message_of(result, tcid)  # (a Deep Agents task returns a Command)
    error = msg is not None and msg.status == "error"

    def apply(raw: JSON | None) -> object:
        edits = _edits(raw)
        if not edits or msg is None:
            return result
        new = cast("ToolResult", result)
        for edit in edits:
            new = apply_tool_result(new, edit, tcid)
        return new, message_json(msg), message_json(tool_message_of(new, tcid))

    pending: JSON = {"kind": "tool_result", "tool_call": call,
                     "message": message_json(msg) if msg is not None else None}

    def text() -> str:
        return str(content_text(msg.content)) if msg is not None else ""

    m = dbg.moment(site.run, site.hook, AFTER, tool=call["name"], error=error,
                   args=call["args"], result=text, text=text, messages=_messages(request),
                   call_id=tcid)
    return _Visit(m, lambda: pending, apply, result, tcid)


# -- a tool or the model raised -------------------------------------------------------
def _error(dbg: Debugger, site: Site) -> _Visit | None:
    exc = site.error
    if exc is None or isinstance(exc, GraphInterrupt | DebugAborted | DebugRaised):
        return None  # (a pause of the graph, or the debugger's own: not the run's error)
    tool = site.hook == "wrap_tool_call"
    call = tool_call_json(cast("ToolCallRequest", site.request)) if tool else None

    def apply(raw: JSON | None) -> object:
        edits = _edits(raw)
        if not edits:
            return None
        edit = edits[-1]
        new: BaseMessage
        if call is not None:
            new = ToolMessage(content=str(edit.text), tool_call_id=str(call["id"]),
                              name=call["name"])
        else:
            new = reply_message(edit)
        return new, {"error": repr(exc)[:500]}, message_json(new)

    pending: JSON = {"kind": "error", "where": "tool" if tool else "model",
                     "error": repr(exc)[:2000], "exception": exception_json(exc)}
    if call is not None:
        pending["tool_call"] = call

    def text() -> str:
        return f"{type(exc).__name__}: {exc}".lower()

    m = dbg.moment(site.run, site.hook, ERROR, tool=call["name"] if call else None,
                   error=True, args=call["args"] if call else None, text=text,
                   call_id=call["id"] if call else None)
    return _Visit(m, lambda: pending, apply, None, call["id"] if call else None)


_VISITS: dict[str, Callable[[Debugger, Site], _Visit | None]] = {
    FIRE: _node, BEFORE: _before, LAYER: _before, AFTER: _after, ERROR: _error}


def _messages(request: object) -> object:
    """The conversation a tool call request carries in its state, or None."""
    state = getattr(request, "state", None)
    return state.get("messages") if isinstance(state, dict) else None


def _changed(a: JSON, edit: Edit) -> JSON:
    """What of request ``a`` the edit touched (the whole request is in the record)."""
    k = edit.kind
    if k in ("message", "drop", "insert"):
        p = int(edit.position or 0)
        msgs = cast("list[JSON]", a.get("messages") or [])
        return {"position": p, "message": msgs[p] if 0 <= p < len(msgs) else None,
                "messages": len(msgs)}
    if k in ("system", "tools", "settings", "model"):
        return {k: a.get(k)}
    return {x: a[x] for x in ("reply",) if x in a} or {"model": a.get("model")}
