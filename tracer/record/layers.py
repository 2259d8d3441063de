"""The onion, one layer at a time (opt-in): what each wrap layer changed.

``trace.around(A, B, C)`` returns the middleware list ``[trace, A, probe, B,
probe, C, probe]``, with a probe just inside every middleware that wraps model
or tool calls. A probe has only the wrap hooks (no graph node: the agent's graph
is the same), changes nothing, and records, for the layer just outside it:

- ``request``: what the layer changed in the request on the way in (messages,
  system prompt, tools, model, settings; a tool call's arguments);
- ``attempt``: the layer called the rest of the onion again (a retry, a
  fallback to another model), with the model or arguments of that attempt;
- ``error``: an exception came out of the rest of the onion into the layer
  (which may retry, fall back, or turn it into a result);
- ``response``: what the layer changed in the response on the way out (the
  model's reply, a tool's result; also what the layer was given,
  ``inner_messages``).

Each is an event ``(wrap_model_call | wrap_tool_call, "layer")`` named after
the layer (``middleware``), with ``payload["what"]`` saying which. How the
layers pass what they saw to each other: a context variable holds, for the
call in progress, the request as the layer above last passed it down and the
response a probe below last passed up (so each probe compares with its
neighbour, not with the tracer). Parallel tool calls run in their own
contexts, so their layers do not mix. Without ``around`` nothing of this runs.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ToolCallRequest
from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.errors import GraphInterrupt

from tracer.vocab.payloads import LayerPayload
from tracer.vocab.records import tool_name

from .processors import BEFORE, Down, HookProcessor, Site, Work, adrive, drive
from .processors import LAYER as LAYER_AT
from .recorder import same_message

if TYPE_CHECKING:
    from .recorder import Recorder, RunState


class Traced(Protocol):
    """What a probe needs of the tracer it reports to (``TraceMiddleware``): its
    recorder, its name and its processors (``tracer.record.processors``)."""

    recorder: Recorder

    @property
    def name(self) -> str: ...

    @property
    def processors(self) -> tuple[HookProcessor, ...]: ...

LAYER = "layer"


class Frame:
    """One call in progress at one depth of the onion."""

    __slots__ = ("below", "entered", "parent", "raised", "request", "returned", "run")

    def __init__(self, run: RunState, request: Any, below: str | None,
                 parent: Frame | None = None) -> None:
        self.run = run
        self.parent = parent  # the frame above (the layer that called this one)
        self.request = request  # as passed down to the layer below ...
        self.below = below  # ... (its name; None: the model or the tool itself)
        self.entered = 0  # how often that layer called on (its probe was entered)
        self.returned: object = None  # what its probe passed back up to it
        self.raised: BaseException | None = None  # what came up into it, raised


FRAME: contextvars.ContextVar[Frame | None] = contextvars.ContextVar(
    "looptrace_layer", default=None)


def _overrides(mw: object, *hooks: str) -> bool:
    cls = type(mw)
    return any(getattr(cls, h, None) is not getattr(AgentMiddleware, h, None) for h in hooks)


def wraps_calls(mw: object) -> bool:
    """Whether ``mw`` overrides a wrap hook of ``AgentMiddleware``."""
    return _overrides(mw, "wrap_model_call", "awrap_model_call", "wrap_tool_call",
                      "awrap_tool_call")


class LayerProbe(AgentMiddleware):
    """Just inside ``layer``: records what ``layer`` did to the calls passing through."""

    def __init__(self, trace: Traced, layer: object) -> None:
        super().__init__()
        self.trace = trace
        self.layer = str(getattr(layer, "name", type(layer).__name__))
        # the next layer inside this one that wraps each kind of call (set by ``around``)
        self.below: dict[str, str | None] = {"wrap_model_call": None, "wrap_tool_call": None}
        self._name = f"looptrace.probe[{self.layer}]"
        # (a layer that wraps only tool calls passes model calls through, and the
        # other way round: its probe does too, so nothing is put on it)
        self._models = _overrides(layer, "wrap_model_call", "awrap_model_call")
        self._tools = _overrides(layer, "wrap_tool_call", "awrap_tool_call")

    @property
    def name(self) -> str:
        return self._name

    # -- model calls ----------------------------------------------------------
    def _enter(self, request: Any, hook: str, tool_call_id: str | None) -> Frame | None:
        try:
            above = FRAME.get()
            if above is None:
                return None
            run = above.run
            above.entered += 1
            rec = self.trace.recorder
            if above.entered > 1:
                rec.event(run, hook, LAYER, middleware=self.layer, tool_call_id=tool_call_id,
                          payload=_attempt(request, above.entered))
            changed = (_model_changes(rec, run, above.request, request)
                       if hook == "wrap_model_call" else _tool_changes(above.request, request))
            if changed is not None:
                rec.event(run, hook, LAYER, middleware=self.layer, tool_call_id=tool_call_id,
                          payload=changed)
            if hook == "wrap_model_call":  # the last view the model's own call is compared to
                run.req_objs = list(request.messages)
                run.req_system = request.system_prompt
            return Frame(run, request, self.below[hook], above)
        except Exception as exc:  # noqa: BLE001 - the tracer must never break the agent
            self.trace.recorder.writer.warn("layer", f"looptrace failed in a probe: {exc!r}")
            return None

    def _exit(self, frame: Frame | None, hook: str, tool_call_id: str | None,
              response: object) -> None:
        if frame is None:
            return
        try:
            settle(self.trace.recorder, frame, hook, tool_call_id, response)
            above = frame.parent
            if above is not None:
                above.returned = response
                above.raised = None  # (an earlier attempt's exception was retried away)
        except Exception as exc:  # noqa: BLE001
            self.trace.recorder.writer.warn("layer", f"looptrace failed in a probe: {exc!r}")

    def _raised(self, frame: Frame | None, hook: str, tool_call_id: str | None,
                exc: BaseException) -> None:
        if frame is None or isinstance(exc, GraphInterrupt):
            return
        try:
            # (frame.parent: inside the except clause the context still holds this
            # probe's own frame; it is reset only in the finally that follows)
            above = frame.parent
            if above is not None:
                above.raised = exc
            error: LayerPayload = {"what": "error", "error": f"{type(exc).__name__}: {exc}",
                                   "type": type(exc).__name__}
            self.trace.recorder.event(
                frame.run, hook, LAYER, middleware=self.layer, tool_call_id=tool_call_id,
                payload=error)
        except Exception as inner:  # noqa: BLE001
            self.trace.recorder.writer.warn("layer", f"looptrace failed in a probe: {inner!r}")

    def _call(self, request: Any, hook: str) -> Generator[Down | Work, object, object]:
        """One call through this probe, for both forms (``processors.drive`` and
        ``adrive`` run it): recorded as the layer outside changed it, and asked of the
        tracer's processors (a breakpoint inside this layer) before it goes on down."""
        tcid = request.tool_call.get("id") if hook == "wrap_tool_call" else None
        frame = self._enter(request, hook, tcid)
        token = FRAME.set(frame) if frame is not None else None
        try:
            given: object = None
            for p in self.trace.processors if frame is not None else ():
                work = p.visit(Site(self.trace.recorder, self.trace.name, frame.run,  # type: ignore[union-attr]
                                    hook, LAYER_AT, request=request, layer=self.layer))
                if work is not None:
                    request, given = yield work  # type: ignore[misc]
            response = answered(given, hook) if given is not None else (yield Down(request))
        except BaseException as exc:
            self._raised(frame, hook, tcid, exc)
            raise
        finally:
            if token is not None:
                FRAME.reset(token)
        self._exit(frame, hook, tcid, response)
        return response

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        if not self._models:
            return handler(request)
        return drive(self._call(request, "wrap_model_call"), handler)

    async def awrap_model_call(self, request: Any,
                               handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if not self._models:
            return await handler(request)
        return await adrive(self._call(request, "wrap_model_call"), handler)

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        if not self._tools:
            return handler(request)
        return drive(self._call(request, "wrap_tool_call"), handler)

    async def awrap_tool_call(self, request: Any,
                              handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if not self._tools:
            return await handler(request)
        return await adrive(self._call(request, "wrap_tool_call"), handler)


# the run of the model call in progress, set by a tracer with an innermost probe
INNER: contextvars.ContextVar[RunState | None] = contextvars.ContextVar(
    "looptrace_inner", default=None)


class InnerProbe(AgentMiddleware):
    """The innermost layer of the onion (``trace.innermost()``; ``looptrace debug`` puts
    one last in every agent's list): where the tracer's processors (the debugger) see
    each model call as the model receives it, after every middleware. The tracer then
    asks them there, not at its own layer. It records nothing and adds no graph node."""

    def __init__(self, trace: Traced) -> None:
        super().__init__()
        self.trace = trace
        self._name = f"looptrace.innermost[{trace.name}]"

    @property
    def name(self) -> str:
        return self._name

    def _call(self, request: Any) -> Generator[Down | Work, object, object]:
        run = INNER.get()
        given: object = None
        for p in self.trace.processors if run is not None else ():
            work = p.visit(Site(self.trace.recorder, self.trace.name, run,  # type: ignore[arg-type]
                                "wrap_model_call", BEFORE, request=request, inner=True))
            if work is not None:
                request, given = yield work  # type: ignore[misc]
        if given is not None:
            return answered(given, "wrap_model_call")
        return (yield Down(request))

    def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        return drive(self._call(request), handler)

    async def awrap_model_call(self, request: Any,
                               handler: Callable[[Any], Awaitable[Any]]) -> Any:
        return await adrive(self._call(request), handler)


def answered(message: Any, hook: str) -> Any:
    """What a processor (the debugger) answered a call with instead of the rest of the
    onion (an AIMessage, a ToolMessage), as a handler returns it."""
    if hook == "wrap_model_call":
        from langchain.agents.middleware import ModelResponse

        return ModelResponse(result=[message])
    return message


def settle(rec: Recorder, frame: Frame, hook: str, tool_call_id: str | None,
           response: object) -> None:
    """On the way out: record what the layer just inside ``frame``'s owner
    (``frame.below``) did to the response: changed what its inside passed up, turned
    an exception from its inside into a result, or answered without calling its
    inside at all (a short-circuit: a cache, a guard, a canned reply)."""
    layer = frame.below
    if layer is None:
        return
    inner = frame.returned
    payload: LayerPayload | None = None
    if frame.entered == 0:
        payload = {"what": "short-circuit", "type": type(response).__name__}
    elif inner is None and frame.raised is not None:
        exc = frame.raised
        payload = _response_changes(None, response, {
            "what": "response", "changed": ["recovered"],
            "recovered": f"{type(exc).__name__}: {exc}"}, recovered=True)
    elif inner is not None and response is not inner:
        changed = _response_changes(inner, response, {"what": "response"})
        if len(changed) > 1:  # (more than ``what``)
            payload = changed
            if "inline_messages" in changed:
                # what the layer was given (at the innermost such layer: the tool's own
                # result, the model's own reply), so a replay can serve that and let the
                # layer rewrite it again (tracer/whatif/cassette.py)
                payload["inner_messages"] = _messages_of(inner)
    if payload is not None:
        rec.event(frame.run, hook, LAYER, middleware=layer, tool_call_id=tool_call_id,
                  payload=payload)


# -- what changed ----------------------------------------------------------------


def model_name(model: object) -> str:
    for attr in ("model_name", "model"):
        v = getattr(model, attr, None)
        if isinstance(v, str) and v:
            return v
    return type(model).__name__


def _attempt(request: ModelRequest[Any] | ToolCallRequest, attempt: int) -> LayerPayload:
    if isinstance(request, ModelRequest):
        return {"what": "attempt", "attempt": attempt, "model": model_name(request.model)}
    return {"what": "attempt", "attempt": attempt, "args": request.tool_call.get("args")}


def _model_changes(rec: Recorder, run: RunState, before: ModelRequest[Any],
                   after: ModelRequest[Any]) -> LayerPayload | None:
    out: LayerPayload = {"what": "request"}
    a, b = before.messages, after.messages
    if not (a is b or (len(a) == len(b) and all(
            x is y or same_message(x, y) for x, y in zip(a, b)))):
        out["changed"] = ["messages"]
        out["messages"] = len(b)
        view = rec.request_view(run, b)
        if "message_keys" in view:
            out["message_keys"] = view["message_keys"]
        if "inline_messages" in view:
            out["inline_messages"] = view["inline_messages"]
        if "inline_keys" in view:
            out["inline_keys"] = view["inline_keys"]
    if before.system_prompt != after.system_prompt:
        out.setdefault("changed", []).append("system")
        out["system"] = after.system_prompt
    if [id(t) for t in before.tools or ()] != [id(t) for t in after.tools or ()]:
        out.setdefault("changed", []).append("tools")
        out["tool_names"] = [tool_name(t) for t in after.tools or ()]
    if before.model is not after.model:
        out.setdefault("changed", []).append("model")
        out["model"] = model_name(after.model)
    for field in ("tool_choice", "model_settings", "response_format"):
        x, y = getattr(before, field, None), getattr(after, field, None)
        if x is not y and x != y:
            out.setdefault("changed", []).append(field)
            out[field] = y
    return out if len(out) > 1 else None


def _tool_changes(before: ToolCallRequest, after: ToolCallRequest) -> LayerPayload | None:
    out: LayerPayload = {"what": "request"}
    if before.tool_call != after.tool_call:
        out["changed"] = ["tool_call"]
        out["args"] = after.tool_call.get("args")
        out["name"] = after.tool_call.get("name")
    if before.tool is not after.tool:
        out.setdefault("changed", []).append("tool")
    return out if len(out) > 1 else None


def _messages_of(response: object) -> list[BaseMessage]:
    result = getattr(response, "result", None)
    if isinstance(result, list):
        return [m for m in result if isinstance(m, BaseMessage)]
    if isinstance(response, BaseMessage):
        return [response]
    update = getattr(response, "update", None)  # a Command
    if isinstance(update, dict):
        return [m for m in update.get("messages", ()) if isinstance(m, BaseMessage)]
    return []


def _response_changes(inner: object, outer: object, out: LayerPayload, *,
                      recovered: bool = False) -> LayerPayload:
    """``out`` with what the layer changed in the response added (``recovered``: the
    result it made in place of an exception)."""
    a, b = _messages_of(inner), _messages_of(outer)
    if recovered:  # the result the layer made in place of the exception
        out["inline_messages"] = b
        if b and isinstance(b[0], ToolMessage):
            out["status"] = b[0].status
        return out
    if type(inner) is not type(outer):
        out["changed"] = ["type"]
        out["type"] = type(outer).__name__
    if not (len(a) == len(b) and all(x is y or same_message(x, y) for x, y in zip(a, b))):
        out.setdefault("changed", []).append("messages")
        out["inline_messages"] = b
        if b and isinstance(b[0], ToolMessage):
            out["status"] = b[0].status
    if getattr(inner, "structured_response", None) is not getattr(
            outer, "structured_response", None):
        out.setdefault("changed", []).append("structured_response")
    return out
