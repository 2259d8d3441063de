"""Where ``TraceMiddleware`` asks its debugger, one function per kind of hook firing,
each in a sync and an async form (the async form does its database work and its
waiting in a worker thread: the event loop never blocks).

Each returns what the hook goes on with: the same objects when nothing paused or the
pause was answered with no edit, or the edited ones. ``mw`` is the middleware (its
recorder and name); ``run`` its run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracer.vocab.content import content_text

from .breakpoints import Moment
from .edits import DebugRaised, apply_reply, apply_request, apply_tool_call, apply_tool_result
from .session import (
    DebugAborted,
    Debugger,
    aimessage_of,
    in_thread,
    message_json,
    request_json,
    tool_call_json,
)

__all__ = [
    "DebugAborted",
    "DebugRaised",
    "aafter_model_call",
    "aafter_tool_call",
    "abefore_model_call",
    "abefore_tool_call",
    "after_model_call",
    "after_tool_call",
    "anode",
    "aon_error",
    "before_model_call",
    "before_tool_call",
    "node",
    "on_error",
]

_Visit = tuple[Moment, Callable[[], dict[str, Any]], Callable[[Any], Any], Any, str | None]


def _go(dbg: Debugger, mw: Any, run: Any, v: _Visit) -> Any:
    m, pending, apply, unchanged, tcid = v
    if dbg.io_due(m):
        dbg.io(mw.recorder, run, m)
    dbg.check_layers(mw)
    reason = dbg.decide(run, m)
    if reason is None:
        return unchanged
    return dbg.resolve(mw.recorder, run, mw.name, m, reason, pending(), apply, tcid)


async def _ago(dbg: Debugger, mw: Any, run: Any, v: _Visit) -> Any:
    m, pending, apply, unchanged, tcid = v
    if dbg.io_due(m):
        await in_thread(dbg.io, mw.recorder, run, m)
    dbg.check_layers(mw)
    reason = dbg.decide(run, m)
    if reason is None:
        return unchanged
    return await in_thread(dbg.resolve, mw.recorder, run, mw.name, m, reason, pending(),
                           apply, tcid)


# -- node hooks: pause and go on (nothing to edit) -----------------------------------
def _node(dbg: Debugger, run: Any, hook: str, state: Any) -> _Visit:
    msgs = state.get("messages") if isinstance(state, dict) else None

    def pending() -> dict[str, Any]:
        from .nodes import state_json

        last = [message_json(m, i) for i, m in enumerate(msgs or [])][-3:]
        return {"kind": "state", "hook": hook, "messages_count": len(msgs or []),
                "last_messages": last, "state": state_json(state)}

    return (dbg.moment(run, hook, "fire"), pending, lambda e: None, None, None)


def node(dbg: Debugger, mw: Any, run: Any, hook: str, state: Any) -> None:
    _go(dbg, mw, run, _node(dbg, run, hook, state))


async def anode(dbg: Debugger, mw: Any, run: Any, hook: str, state: Any) -> None:
    await _ago(dbg, mw, run, _node(dbg, run, hook, state))


# -- wrap_model_call ----------------------------------------------------------------
def _model_before(dbg: Debugger, run: Any, request: Any, layer: str | None = None) -> _Visit:
    def text() -> str:
        return " ".join(str(getattr(m, "content", "")) for m in request.messages).lower()

    def apply(edit: dict[str, Any] | None) -> Any:
        if edit is None:
            return request, None
        new, reply = apply_request(request, edit)
        before = request_json(request)
        after = ({"reply": message_json(reply)} if reply is not None else request_json(new))
        return (new, reply), _changed(before, after, edit), _changed(after, before, edit)

    at = "before" if layer is None else "layer"
    model = getattr(request, "model", None)
    name = str(getattr(model, "model_name", None) or getattr(model, "model", None) or "")
    return (dbg.moment(run, "wrap_model_call", at, text=text, layer=layer, model=name,
                       messages=request.messages),
            lambda: request_json(request), apply, (request, None), None)


def before_model_call(dbg: Debugger, mw: Any, run: Any, request: Any) -> tuple[Any, Any]:
    """(the request, an AIMessage to answer with instead of the model, or None)."""
    out: tuple[Any, Any] = _go(dbg, mw, run, _model_before(dbg, run, request))
    return out


async def abefore_model_call(dbg: Debugger, mw: Any, run: Any,
                             request: Any) -> tuple[Any, Any]:
    out: tuple[Any, Any] = await _ago(dbg, mw, run, _model_before(dbg, run, request))
    return out


def _model_after(dbg: Debugger, run: Any, response: Any) -> _Visit:
    ai = aimessage_of(response)

    def apply(edit: dict[str, Any] | None) -> Any:
        if edit is None or ai is None:
            return response
        new = apply_reply(ai, edit)
        result = getattr(response, "result", None)
        if result is None:
            out = new
        else:
            out = type(response)(result=[new if m is ai else m for m in result],
                                 structured_response=getattr(response, "structured_response",
                                                             None))
        return out, message_json(ai), message_json(new)

    def text() -> str:
        return str(content_text(ai.content)) if ai is not None else ""

    return (dbg.moment(run, "wrap_model_call", "after", result=text, text=text),
            lambda: {"kind": "model_reply", "message": message_json(ai) if ai else None},
            apply, response, None)


def after_model_call(dbg: Debugger, mw: Any, run: Any, response: Any) -> Any:
    return _go(dbg, mw, run, _model_after(dbg, run, response))


async def aafter_model_call(dbg: Debugger, mw: Any, run: Any, response: Any) -> Any:
    return await _ago(dbg, mw, run, _model_after(dbg, run, response))


# -- wrap_tool_call -----------------------------------------------------------------
def _tool_before(dbg: Debugger, run: Any, request: Any, layer: str | None = None) -> _Visit:
    call = tool_call_json(request)

    def apply(edit: dict[str, Any] | None) -> Any:
        if edit is None:
            return request, None
        new, given = apply_tool_call(request, edit)
        after = ({"result": message_json(given)} if given is not None
                 else {"tool_call": tool_call_json(new)})
        return (new, given), {"tool_call": call}, after

    at = "before" if layer is None else "layer"
    return (dbg.moment(run, "wrap_tool_call", at, tool=call["name"], layer=layer,
                       args=call["args"], messages=_messages(request)),
            lambda: {"kind": "tool_call", "tool_call": call}, apply, (request, None),
            call["id"])


def before_tool_call(dbg: Debugger, mw: Any, run: Any, request: Any) -> tuple[Any, Any]:
    """(the tool call request, a ToolMessage to return instead of running it, or None)."""
    out: tuple[Any, Any] = _go(dbg, mw, run, _tool_before(dbg, run, request))
    return out


async def abefore_tool_call(dbg: Debugger, mw: Any, run: Any,
                            request: Any) -> tuple[Any, Any]:
    out: tuple[Any, Any] = await _ago(dbg, mw, run, _tool_before(dbg, run, request))
    return out


def _tool_after(dbg: Debugger, run: Any, request: Any, result: Any) -> _Visit:
    from langchain_core.messages import ToolMessage

    call = tool_call_json(request)
    msg = result if isinstance(result, ToolMessage) else None
    error = msg is not None and getattr(msg, "status", None) == "error"

    def apply(edit: dict[str, Any] | None) -> Any:
        if edit is None or msg is None:
            return result
        new = apply_tool_result(msg, edit)
        return new, message_json(msg), message_json(new)

    pending = {"kind": "tool_result", "tool_call": call,
               "message": message_json(msg) if msg is not None else None}
    def text() -> str:
        return str(content_text(msg.content)) if msg is not None else ""

    return (dbg.moment(run, "wrap_tool_call", "after", tool=call["name"], error=error,
                       args=call["args"], result=text, text=text,
                       messages=_messages(request)),
            lambda: pending, apply, result, call["id"])


def after_tool_call(dbg: Debugger, mw: Any, run: Any, request: Any, result: Any) -> Any:
    return _go(dbg, mw, run, _tool_after(dbg, run, request, result))


async def aafter_tool_call(dbg: Debugger, mw: Any, run: Any, request: Any,
                           result: Any) -> Any:
    return await _ago(dbg, mw, run, _tool_after(dbg, run, request, result))


# -- inside one middleware's layer of the onion (trace.around) ----------------------
def in_layer(dbg: Debugger, mw: Any, run: Any, hook: str, request: Any,
             layer: str) -> tuple[Any, Any]:
    """(the call as it goes on down, what to answer with instead of going down)."""
    v = (_model_before if hook == "wrap_model_call" else _tool_before)(dbg, run, request, layer)
    out: tuple[Any, Any] = _go(dbg, mw, run, v)
    return out


async def ain_layer(dbg: Debugger, mw: Any, run: Any, hook: str, request: Any,
                    layer: str) -> tuple[Any, Any]:
    v = (_model_before if hook == "wrap_model_call" else _tool_before)(dbg, run, request, layer)
    out: tuple[Any, Any] = await _ago(dbg, mw, run, v)
    return out


# -- a tool or the model raised -------------------------------------------------------
def _error(dbg: Debugger, run: Any, hook: str, request: Any, exc: BaseException) -> _Visit:
    from langchain_core.messages import ToolMessage

    tool = hook == "wrap_tool_call"
    call = tool_call_json(request) if tool else None

    def apply(edit: dict[str, Any] | None) -> Any:
        if edit is None:
            return None
        if tool:
            assert call is not None
            new: Any = ToolMessage(content=edit["text"], tool_call_id=call["id"],
                                   name=call["name"])
        else:
            new = apply_reply(None, edit)
        return new, {"error": repr(exc)[:500]}, message_json(new)

    pending: dict[str, Any] = {"kind": "error", "where": "tool" if tool else "model",
                               "error": repr(exc)[:2000]}
    if call is not None:
        pending["tool_call"] = call
    def text() -> str:
        return f"{type(exc).__name__}: {exc}".lower()

    return (dbg.moment(run, hook, "error", tool=call["name"] if call else None, error=True,
                       args=call["args"] if call else None, text=text),
            lambda: pending, apply, None, call["id"] if call else None)


def on_error(dbg: Debugger, mw: Any, run: Any, hook: str, request: Any,
             exc: BaseException) -> Any:
    """What to go on with instead of raising ``exc`` (a ToolMessage, an AIMessage), or
    None: raise it."""
    return _go(dbg, mw, run, _error(dbg, run, hook, request, exc))


async def aon_error(dbg: Debugger, mw: Any, run: Any, hook: str, request: Any,
                    exc: BaseException) -> Any:
    return await _ago(dbg, mw, run, _error(dbg, run, hook, request, exc))


def _messages(request: Any) -> Any:
    """The conversation a tool call request carries in its state, or None."""
    state = getattr(request, "state", None)
    return state.get("messages") if isinstance(state, dict) else None


def _changed(a: dict[str, Any], b: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any]:
    """What of request ``a`` the edit touched (the whole request is in the record)."""
    k = edit["kind"]
    if k in ("message", "drop", "insert"):
        p = int(edit["position"])
        msgs = a.get("messages") or []
        return {"position": p, "message": msgs[p] if 0 <= p < len(msgs) else None,
                "messages": len(msgs)}
    key = {"system": "system", "tools": "tools", "settings": "settings",
           "model": "model"}.get(k)
    if key is not None:
        return {key: a.get(key)}
    return {x: a[x] for x in ("reply",) if x in a} or {"model": a.get("model")}
