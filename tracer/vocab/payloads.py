"""The payload of each kind of event: one typed definition for the writer and the reader.

An event's ``payload`` column is JSON. Each kind of event, named by its
``(hook, phase)``, has its payload declared here as a ``TypedDict`` (LangChain's
way for its own request overrides): the side that records an event builds the
dict through its type, and the side that reads it back names the same type, so
a key written in one module and read in another is spelled once. A TypedDict is
a plain ``dict`` at run time, so the stored JSON is byte for byte what it was,
and files written before these types existed read the same.

Kinds and the hooks that write them:

- ``ModelEnterPayload``: ``("wrap_model_call" | "model", "enter")``, and
  ``"sent"`` (what the model finally received).
- ``ModelExitPayload``: ``("wrap_model_call" | "model", "exit")``.
- ``ToolEnterPayload`` / ``ToolExitPayload``: ``("wrap_tool_call" | "tool", ...)``.
- ``ErrorPayload``: any hook's ``"error"`` phase, and ``("run", "error")``.
- ``InterruptPayload``: ``("interrupt", "fire")`` and a wrap hook's ``"interrupt"``.
- ``ResumePayload``: ``("resume", "fire")``.
- ``HistoryPayload``: ``("history", "fire")``, a change to the conversation.
- ``RunStartPayload``: ``("run", "start")``; ``RunEndPayload``: ``("run", "end")``.
- ``LayerPayload``: a wrap hook's ``"layer"`` phase (``TraceMiddleware.around``).
- ``NodePayload``: a node hook's ``"fire"`` (``before_model`` ...) and a ``("node",
  "fire")``, as the callback handler records them (the middleware records none).

``payload_type(hook, phase)`` names the type of an event's payload, and
``read_payload(kind, payload)`` is how a reader takes an event's payload as that type.

This module is at the bottom: it imports nothing of the project, and nothing of
LangChain (the read side imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Required, TypedDict, TypeVar, cast

ErrorPath = Literal["unknown_tool", "validation", "handle_tool_error",
                    "handle_validation_error", "returned"]
"""Which path made a tool call's result an error ``ToolMessage`` (``tool_life.ERROR_PATHS``
says each in words)."""


class Signature(TypedDict):
    """A tool's Python signature as text, and the parameters its schema leaves out."""

    signature: str | None
    hidden: list[str]


class ModelEnterPayload(TypedDict, total=False):
    """A model call's request, without repeating the history or what the run last wrote.

    ``messages``: how many messages the request held. ``message_keys`` (with
    ``inline_messages`` / ``inline_keys``): what it held when a layer rewrote the
    conversation. ``system`` / ``system_same`` and ``tools`` / ``tool_names``: each
    written when it changed, else named (``tracer.vocab.calls.Requests`` reads a call's
    whole request back). ``signatures``: with ``tools``, by tool name.
    """

    messages: int
    message_keys: list[str]
    inline_messages: list[Any]  # messages on the write side, their JSON when read back
    inline_keys: list[str]
    omitted_keys: list[str]
    system: Any  # a string, or a provider's content blocks
    system_same: bool
    tools: list[Any]  # the tool schemas as the model saw them (OpenAI's format)
    tool_names: list[str]
    signatures: dict[str, Signature]
    model: str | None
    tool_choice: Any  # whatever the request carried: a name, "auto", a provider dict
    model_settings: dict[str, Any]
    # seen from outside (``tracer.record.ingest``): the provider, what changed since the
    # previous call, and the Responses API's link to it
    provider: str
    changed: list[str]
    previous_response_id: str


class ModelExitPayload(TypedDict, total=False):
    """What a model call answered: its usage, stop reason and number of tool calls, and
    the model that answered, as its reply names it (``response_metadata``: a fallback's
    model, a dated version of the one asked)."""

    usage: dict[str, Any]
    stop_reason: str
    tool_calls: int
    model: str


class ToolEnterPayload(TypedDict, total=False):
    """A tool call as the model asked for it."""

    name: Required[str | None]
    args: Any  # the model's arguments, as it wrote them
    known_tool: bool


class ToolExitPayload(TypedDict, total=False):
    """How a tool call returned: a ``ToolMessage`` (``status``, and ``error_path`` when
    it is an error message), a ``Command`` (``command``, ``goto``, ``update_keys``), or
    another value (``result_type``)."""

    name: str
    status: str
    observed: str  # a run seen from outside: when the result was seen (with the next request)
    error_path: ErrorPath
    command: bool
    goto: list[str] | str | None
    update_keys: list[str]
    output: Any
    result_type: str


class ErrorPayload(TypedDict, total=False):
    """An exception that went through a hook (or ended the run): its text and type;
    ``node``: the graph node it surfaced at; for a tool call, whether anything would
    have turned it into a message (``known_tool``, ``handle_tool_error``)."""

    error: Required[str]
    type: str
    node: str
    name: str  # a tool's, as the callback handler records its error
    known_tool: bool
    handle_tool_error: bool


class InterruptItem(TypedDict):
    """One ``interrupt()``: the value it carried and its id."""

    value: Any  # what the graph passed to interrupt()
    id: str | None


class InterruptPayload(TypedDict):
    """A pause: the interrupts that made it."""

    interrupts: list[InterruptItem]


class ResumePayload(TypedDict):
    """A paused thread resumed, with the values given to it."""

    resume: list[Any]


class HistoryPayload(TypedDict, total=False):
    """A change to the conversation that is not an append: ``previous`` messages before,
    changed ``by`` a node; the new order (``keys``), what went (``removed``) and what
    was replaced in place (``replaced``)."""

    previous: Required[int]
    by: Required[str | None]
    keys: list[str]
    removed: list[str]
    replaced: list[str]


class RunStartPayload(TypedDict, total=False):
    """A run's start: its name, the agent's middleware stack, or ``continued``; ``graph``:
    ``"create_agent"`` when the callback handler saw a ``create_agent`` graph start (its
    ``ls_integration``), so that one without middleware is not taken for a hand-rolled
    loop."""

    name: str | None
    stack: Any
    continued: bool
    graph: str


class RunEndPayload(TypedDict, total=False):
    """``("run", "end")``: how a run ended that is not a failure and gave no answer of
    its own. ``handoff``: a ``Command(goto=..., graph=Command.PARENT)`` handed the
    conversation to the parent graph's ``goto`` nodes (LangGraph's multi-agent handoff);
    ``stopped``: the caller stopped reading the run's stream (why, in words)."""

    handoff: dict[str, Any]  # {"goto": [node names], "graph": "parent"}
    stopped: str


class LayerPayload(TypedDict, total=False):
    """What one wrap layer did (``tracer.record.layers``): ``what`` is ``"attempt"``,
    ``"request"``, ``"response"``, ``"error"`` or ``"short-circuit"``; the other keys
    say what changed.

    ``attempt``: the attempt's number, with its ``model`` (a model call) or ``args`` (a
    tool call). ``request``: ``changed`` names what, each with its new value (a model
    call's ``messages`` as in ``ModelEnterPayload``: how many, ``message_keys`` and the
    inlined ones; ``system``, ``tool_names``, ``model``, ``tool_choice``,
    ``model_settings``, ``response_format``; a tool call's ``name`` and ``args``).
    ``response``: ``changed`` (``type``, ``messages``, ``structured_response``,
    ``recovered``), the new ``inline_messages`` with their ``status`` (a ToolMessage),
    ``inner_messages`` (what the layer was given), ``recovered`` (the exception the layer
    turned into a result). ``error``: the exception's text and ``type``.
    ``short-circuit``: the ``type`` of what the layer answered with.
    """

    what: Required[str]
    attempt: int
    changed: list[str]
    recovered: str
    error: str
    type: str
    model: str
    args: Any  # a tool call's arguments, as the layer passed them on
    name: str | None
    messages: int
    message_keys: list[str]
    inline_messages: list[Any]  # messages on the write side, their JSON when read back
    inline_keys: list[str]
    inner_messages: list[Any]  # (as ``inline_messages``)
    status: str
    system: Any  # (as ``ModelEnterPayload.system``)
    tool_names: list[str]
    tool_choice: Any
    model_settings: Any
    response_format: Any  # whatever the request carried: a schema, a strategy's JSON


class NodePayload(TypedDict, total=False):
    """A node hook that ran, as the callback handler saw it: the ``node`` (a ``("node",
    ...)`` event), the state keys its update wrote (``update_keys``), where it jumped
    (``jump_to``) or went (``goto``: a ``Command``'s), and the model calls made inside
    it (``model_calls``: what each was sent and answered)."""

    node: str
    update_keys: list[str]
    jump_to: Any  # the update's ``jump_to``: a node name ("end", "model" ...)
    goto: str
    model_calls: list[Any]


P = TypeVar("P", bound=Mapping[str, Any])

_MODEL = ("wrap_model_call", "model")
_TOOL = ("wrap_tool_call", "tool")
_NODES = ("before_agent", "before_model", "after_model", "after_agent", "node")
_KINDS: dict[tuple[str, str], type[Mapping[str, Any]]] = {
    **{(h, "enter"): ModelEnterPayload for h in _MODEL},
    **{(h, "sent"): ModelEnterPayload for h in _MODEL},
    **{(h, "exit"): ModelExitPayload for h in _MODEL},
    **{(h, "enter"): ToolEnterPayload for h in _TOOL},
    **{(h, "exit"): ToolExitPayload for h in _TOOL},
    **{(h, "fire"): NodePayload for h in _NODES},
    ("interrupt", "fire"): InterruptPayload,
    ("resume", "fire"): ResumePayload,
    ("history", "fire"): HistoryPayload,
    ("run", "start"): RunStartPayload,
    ("run", "end"): RunEndPayload,
}


def payload_type(hook: str, phase: str) -> type[Mapping[str, Any]] | None:
    """The ``TypedDict`` of the payload of an event ``(hook, phase)`` (None: a kind of
    event that carries no payload, such as a wrap hook's ``"sent"`` of a tool call)."""
    if phase == "error":
        return ErrorPayload
    if phase == "interrupt":
        return InterruptPayload
    if phase == "layer":
        return LayerPayload
    return _KINDS.get((hook, phase))


def read_payload(kind: type[P], payload: object) -> P:
    """An event's payload read back, as ``kind`` (the type ``payload_type`` names).

    A ``TypedDict`` is a plain ``dict`` at run time: a dict payload is returned as it
    is (what the writer built through the same type); anything else (None, a payload
    of a file from elsewhere) reads as an empty one, so ``.get`` finds nothing.
    """
    return cast("P", payload if isinstance(payload, dict) else {})


__all__ = ["ErrorPath", "ErrorPayload", "HistoryPayload", "InterruptItem", "InterruptPayload",
           "LayerPayload", "ModelEnterPayload", "ModelExitPayload", "NodePayload",
           "ResumePayload", "RunEndPayload", "RunStartPayload", "Signature", "ToolEnterPayload",
           "ToolExitPayload", "payload_type", "read_payload"]
