"""What the middleware's hooks record: each event's payload, built from LangChain's objects.

``tracer.record.middleware`` adapts LangChain's hooks and decides *when* to record;
this module decides *what*: it turns a ``ModelRequest``, a tool call, its result
or an exception into the typed payloads of ``tracer.vocab.payloads``. The model call's
request is the one payload built lazily (``RequestPayload``): the hook keeps
references and the writer thread builds the JSON, off the agent's path.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage, ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.prebuilt.tool_node import TOOL_INVOCATION_ERROR_TEMPLATE
from langgraph.types import Command

from tracer.vocab.payloads import (
    ErrorPath,
    ErrorPayload,
    InterruptItem,
    InterruptPayload,
    ModelEnterPayload,
    ResumePayload,
    Signature,
    ToolEnterPayload,
    ToolExitPayload,
)
from tracer.vocab.tool_signatures import signatures

from .recorder import note_request

if TYPE_CHECKING:
    from langchain.agents.middleware import ModelRequest, ToolCallRequest
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool

    from .recorder import Recorder, RunState


def error_text(exc: BaseException) -> str:
    """The text an error is recorded with.

    Args:
        exc: the exception.

    Returns:
        ``"Type: message"``.
    """
    return f"{type(exc).__name__}: {exc}"


def error_payload(exc: BaseException, tool: BaseTool | None | bool = False) -> ErrorPayload:
    """The ``error`` payload of an exception that went through a hook.

    Args:
        exc: the exception.
        tool: for a tool call, the tool the call named (``None``: no such tool), so the
            payload says whether anything would have turned the exception into a
            message; ``False`` (the default) for any other hook.

    Returns:
        ``{"error", "type"}``, and for a tool call ``known_tool`` or ``handle_tool_error``.
    """
    payload: ErrorPayload = {"error": error_text(exc), "type": type(exc).__name__}
    if tool is None:
        payload["known_tool"] = False
    elif tool is not False:
        payload["handle_tool_error"] = bool(getattr(tool, "handle_tool_error", None))
    return payload


def interrupt_items(items: Any) -> list[InterruptItem]:
    """The interrupts of a pause, as recorded.

    Args:
        items: LangGraph's ``Interrupt`` objects (one, or a list or tuple of them), or
            plain values.

    Returns:
        One ``{"value", "id"}`` per interrupt.
    """
    return [{"value": getattr(it, "value", it), "id": getattr(it, "id", None)}
            for it in (items if isinstance(items, (list, tuple)) else [items])]


def interrupt_payload(exc: GraphInterrupt) -> InterruptPayload:
    """The payload of a wrap hook's ``interrupt`` phase.

    Args:
        exc: the ``GraphInterrupt`` that went through the hook.

    Returns:
        ``{"interrupts": [...]}``.
    """
    items = exc.args[0] if exc.args and isinstance(exc.args[0], (list, tuple)) else []
    return {"interrupts": interrupt_items(items)}


def resume_payload(config: RunnableConfig) -> ResumePayload | None:
    """The values a resumed invocation was given (``Command(resume=...)``).

    Args:
        config: the invocation's ``RunnableConfig``.

    Returns:
        ``{"resume": [...]}``, or ``None`` when the invocation resumes nothing.
    """
    try:
        pad = config["configurable"].get("__pregel_scratchpad")
        resume = list(getattr(pad, "resume", None) or [])
        return {"resume": resume} if resume else None
    except Exception:  # noqa: BLE001
        return None


# -- tool calls ------------------------------------------------------------------

def tool_enter_payload(request: ToolCallRequest) -> ToolEnterPayload:
    """The ``enter`` payload of a tool call.

    Args:
        request: the tool call as ``wrap_tool_call`` got it.

    Returns:
        ``{"name", "args", "known_tool"}``.
    """
    call = request.tool_call
    return {"name": call.get("name"), "args": call.get("args"),
            "known_tool": request.tool is not None}


def tool_exit_payload(tool: BaseTool | None,
                      result: object) -> tuple[ToolExitPayload, list[BaseMessage]]:
    """The ``exit`` payload of a tool call, and the messages its result carries.

    Args:
        tool: the tool the call named (``None``: no such tool).
        result: what the handler returned: a ``ToolMessage``, a ``Command``, or
            another value.

    Returns:
        The payload (see ``ToolExitPayload``) and the messages to record as the
        call's results.
    """
    if isinstance(result, ToolMessage):
        payload: ToolExitPayload = {"status": result.status}
        if result.status == "error":  # (rare: which path made it an error message)
            payload["error_path"] = error_path(tool, result)
        return payload, [result]
    if isinstance(result, Command):
        update = result.update if isinstance(result.update, dict) else {}
        msgs = [m for m in update.get("messages", ()) if isinstance(m, BaseMessage)]
        return {"command": True, "goto": jsonable_goto(result.goto),
                "update_keys": sorted(update)}, msgs
    return {"result_type": type(result).__name__}, []


# ToolNode's message for arguments that failed the tool's schema (``ToolInvocationError``).
_INVALID_ARGS = TOOL_INVOCATION_ERROR_TEMPLATE.split("{", 1)[0]


def error_path(tool: BaseTool | None, result: ToolMessage) -> ErrorPath:
    """Which path made a tool call's result an error ``ToolMessage``.

    Args:
        tool: the tool the call named (``None``: no such tool).
        result: the error ``ToolMessage``.

    Returns:
        One of ``ErrorPath`` (``tool_life.ERROR_PATHS`` says each in words).
    """
    if tool is None:
        return "unknown_tool"
    if isinstance(result.content, str) and result.content.startswith(_INVALID_ARGS):
        return "validation"
    if getattr(tool, "handle_tool_error", None):
        return "handle_tool_error"
    if getattr(tool, "handle_validation_error", None):
        return "handle_validation_error"
    return "returned"


def jsonable_goto(goto: object) -> list[str] | str | None:
    """A ``Command``'s ``goto`` as JSON: node names (``Send`` objects as text).

    Args:
        goto: ``Command.goto``.

    Returns:
        A list of names, one name, or ``None``.
    """
    if isinstance(goto, (list, tuple)):
        return [str(g) for g in goto]
    return str(goto) if goto else None


# -- model calls -----------------------------------------------------------------

class RequestPayload:
    """The ``enter`` payload of a model call: the request as the model gets it,
    without repeating the history.

    Built on the writer thread (``__looptrace_json__``), off the agent's path: the
    hook keeps references only (and, when a middleware rewrote the messages, the
    keys and changed messages). The writer handles a run's records in order, so
    the system prompt and tool schemas are written when they differ from what
    it last wrote.

    Args:
        rec: the recorder.
        run: the run the call belongs to.
        request: the ``ModelRequest`` as the tracer's wrap hook got it.
        state_msgs: the messages of the agent's state, which the run has recorded.
    """

    __slots__ = ("model", "n", "rewrite", "run", "settings", "system", "tool_choice", "tools")

    def __init__(self, rec: Recorder, run: RunState, request: ModelRequest[Any],
                 state_msgs: Sequence[BaseMessage]) -> None:
        msgs = request.messages
        self.run = run
        self.n = len(msgs)
        # A middleware rewrote the messages: which ones, decided now (``run.seen``
        # is the caller's); what the model finally got is compared with this list.
        same = msgs is state_msgs or (
            len(msgs) == len(state_msgs) and all(a is b for a, b in zip(msgs, state_msgs)))
        self.rewrite = None if same else rec.request_view(run, msgs)
        run.req_objs = state_msgs if same else list(msgs)
        self.system = request.system_prompt
        run.req_system = self.system
        # (Any: LangChain tools, or provider tool dicts, as the request lists them)
        self.tools: Sequence[Any] = request.tools or []
        self.model = run.model
        self.tool_choice = request.tool_choice
        self.settings = request.model_settings

    def __looptrace_json__(self) -> ModelEnterPayload:
        run = self.run
        payload: ModelEnterPayload = {"messages": self.n}
        if self.rewrite is not None:
            payload.update(self.rewrite)  # (message_keys, inline_*)
        tools = self.tools
        tools_key = hash(tuple(id(t) for t in tools))
        note_request(run, payload, system=self.system, tools=tools, tools_key=tools_key,
                     schemas=lambda: [tool_schema(t) for t in tools])
        if "tools" in payload:  # (written with the schemas: once, or when the tools change)
            sigs = _signatures(tools_key, tools, payload["tools"])
            if sigs:
                payload["signatures"] = sigs
        if self.model:
            payload["model"] = self.model
        if self.tool_choice is not None:
            payload["tool_choice"] = self.tool_choice
        if self.settings:
            payload["model_settings"] = self.settings
        return payload


# id(tool) -> (a reference to the tool, its description, its schema): tools live long,
# converting is slow.
_SCHEMAS: dict[int, tuple[Any, Any, dict[str, Any]]] = {}


# hash of the tools' ids -> (references to the tools, their schemas, their signatures):
# every run writes its tools once, and reading a signature (``inspect``) is slow.
_SIGNATURES: dict[int, tuple[list[Any], list[Any], dict[str, Signature]]] = {}


def _signatures(key: int, tools: Sequence[Any], schemas: list[Any]) -> dict[str, Signature]:
    """``tool_life.signatures`` of ``tools``, made once for the same tool objects with
    the same schema objects (``tool_schema`` keeps those while a tool is unchanged)."""
    entry = _SIGNATURES.get(key)
    if (entry is not None and len(entry[0]) == len(tools) and len(entry[1]) == len(schemas)
            and all(r() is t for r, t in zip(entry[0], tools))
            and all(a is b for a, b in zip(entry[1], schemas))):
        return entry[2]
    sigs = signatures(tools, schemas)
    try:
        refs = [weakref.ref(t) for t in tools]
    except TypeError:  # a dict (a provider's built-in tool): not kept
        return sigs
    if len(_SIGNATURES) > 1024:
        _SIGNATURES.clear()
    _SIGNATURES[key] = (refs, list(schemas), sigs)
    return sigs


def tool_schema(tool: object) -> dict[str, Any]:
    """A tool's schema as the model sees it (OpenAI's format), kept while the tool lives.

    Args:
        tool: a LangChain tool, a function, or a provider's tool dict.

    Returns:
        The schema; ``{"name"}`` alone when the tool cannot be converted.
    """
    entry = _SCHEMAS.get(id(tool))
    desc = getattr(tool, "description", None)
    if entry is not None and entry[0]() is tool and entry[1] == desc:
        return entry[2]
    from langchain_core.utils.function_calling import convert_to_openai_tool

    try:
        schema = convert_to_openai_tool(tool)  # type: ignore[arg-type]  # (it says which it takes)
    except Exception:  # noqa: BLE001
        return {"name": getattr(tool, "name", repr(tool))}
    try:
        ref: Any = weakref.ref(tool)
    except TypeError:  # a dict or another value that cannot be weakly referenced
        return schema
    if len(_SCHEMAS) > 4096:
        _SCHEMAS.clear()
    _SCHEMAS[id(tool)] = (ref, desc, schema)
    return schema


__all__ = ["RequestPayload", "error_path", "error_payload", "error_text", "interrupt_items",
           "interrupt_payload", "jsonable_goto", "resume_payload", "tool_enter_payload",
           "tool_exit_payload", "tool_schema"]
