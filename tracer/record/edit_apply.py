"""An ``Edit`` (``tracer.vocab.edits``) made on LangChain objects: a model request, the
model's reply, a tool call, a tool's result, a list of messages, the middleware list.

The debugger makes its edits here (in the agent's process), the fork makes its own
here (``tracer.whatif``), and the playground its messages. A message edit changes the
request only, as a ``wrap_model_call`` layer would: the state is not rewritten here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.types import Command

from tracer.errors import BadEdit, DebugRaised
from tracer.vocab.edits import Edit
from tracer.vocab.records import tool_name

if TYPE_CHECKING:
    from langchain.agents.middleware import ModelRequest, ToolCallRequest
    from langchain_core.language_models import BaseChatModel

    # (LangChain's type parameter: the user's own context type, never read here)
    _Request: TypeAlias = ModelRequest[Any]

__all__ = ["apply_request", "apply_stack", "apply_tool_call", "apply_tool_result",
           "chat_model", "edit_messages", "reply_message"]

ToolResult: TypeAlias = "ToolMessage | Command[Any]"


def chat_model(model: object) -> BaseChatModel:
    """The chat model a ``model`` edit names: ``offline`` (an echo model: no network),
    an ``init_chat_model`` name, or a chat model as is."""
    if not isinstance(model, str):
        return model  # type: ignore[return-value]  # (checked by Edit: it has .invoke)
    if model == "offline":
        from collections.abc import Iterator

        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

        class _Echo(GenericFakeChatModel):
            def bind_tools(self, tools: Any, **kw: Any) -> Any:
                return self

        def echo() -> Iterator[AIMessage]:
            while True:
                yield AIMessage("(offline: no model was asked)")

        return _Echo(messages=echo())
    from langchain.chat_models import init_chat_model

    return init_chat_model(model)


def _new_id(prefix: str) -> str:
    return f"looptrace-{prefix}-{uuid.uuid4().hex[:12]}"


def edit_messages(messages: Sequence[BaseMessage], edit: Edit) -> list[BaseMessage]:
    """``messages`` with a ``message``, ``drop`` or ``insert`` edit made."""
    msgs = list(messages)
    p = int(edit.position or 0)
    if not 0 <= p <= len(msgs) - (0 if edit.kind == "insert" else 1):
        msg = f"position {p} is outside the request's messages (0..{len(msgs) - 1})"
        raise BadEdit(msg)
    if edit.kind == "message":
        msgs[p] = msgs[p].model_copy(update={"content": edit.text})
    elif edit.kind == "drop":
        del msgs[p]
    elif edit.kind == "insert":
        text = str(edit.text)
        new: BaseMessage
        if edit.role == "tool":
            new = ToolMessage(text, tool_call_id=str(edit.tool_call_id), id=_new_id("insert"))
        else:
            cls = {"human": HumanMessage, "ai": AIMessage, "system": SystemMessage}[edit.role]
            new = cls(text, id=_new_id("insert"))
        msgs.insert(p, new)
    return msgs


def reply_message(edit: Edit, like: BaseMessage | None = None) -> AIMessage:
    """The AIMessage a ``reply`` edit gives (the id of ``like`` kept)."""
    calls = [{"name": c["name"], "args": c["args"], "id": c["id"], "type": "tool_call"}
             for c in edit.tool_calls or ()]
    mid = getattr(like, "id", None) or _new_id("debug")
    return AIMessage(content=edit.text or "", tool_calls=calls, id=mid)


def apply_request(request: _Request, edit: Edit) -> tuple[_Request, AIMessage | None]:
    """(the model request with ``edit`` made, the AIMessage to answer with instead of
    asking the model, or None)."""
    k = edit.kind
    if k == "reply":
        return request, reply_message(edit)
    if k == "system":
        return request.override(system_message=SystemMessage(str(edit.text))), None
    if k == "tools":
        keep = set(edit.names or ())
        return request.override(tools=[t for t in request.tools if tool_name(t) in keep]), None
    if k == "settings":
        return request.override(model_settings={**request.model_settings,
                                                **(edit.settings or {})}), None
    if k == "model":
        return request.override(model=chat_model(edit.model)), None
    if k in ("message", "drop", "insert"):
        msgs: list[Any] = edit_messages(request.messages, edit)  # (AnyMessage: a union)
        return request.override(messages=msgs), None
    msg = f"a {k} edit is not made on a model request"
    raise BadEdit(msg)


def apply_tool_call(request: ToolCallRequest,
                    edit: Edit) -> tuple[ToolCallRequest, ToolMessage | None]:
    """(the tool call request with ``edit`` made, the ToolMessage to return instead of
    running the tool, or None); a ``raise`` edit raises ``DebugRaised``."""
    call = request.tool_call
    if edit.kind == "tool_args":
        return request.override(tool_call={**call, "args": dict(edit.args or {})}), None
    if edit.kind == "raise":
        raise DebugRaised(edit.text or "raised in the debugger")
    if edit.kind == "tool_result":
        return request, ToolMessage(content=str(edit.text), tool_call_id=str(call.get("id")),
                                    name=call.get("name"))
    msg = f"a {edit.kind} edit is not made on a tool call"
    raise BadEdit(msg)


def tool_message_of(result: object, tool_call_id: str | None) -> ToolMessage | None:
    """The ToolMessage a tool call returned: the result itself, or the one in its
    ``Command``'s update (a Deep Agents ``task`` returns a Command)."""
    if isinstance(result, ToolMessage):
        return result
    if isinstance(result, Command):
        update = result.update
        msgs = update.get("messages") if isinstance(update, dict) else None
        found = [m for m in msgs or () if isinstance(m, ToolMessage)]
        mine = [m for m in found if m.tool_call_id == tool_call_id] or found
        return mine[-1] if mine else None
    return None


def apply_tool_result(result: ToolResult, edit: Edit,
                      tool_call_id: str | None = None) -> ToolResult:
    """The tool's result with the edit's text (the ToolMessage's id and tool_call_id
    kept; in a ``Command``, its ToolMessage replaced and the rest of its update kept)."""
    old = tool_message_of(result, tool_call_id)
    if old is None:
        msg = f"the tool returned {type(result).__name__}, with no ToolMessage to change"
        raise BadEdit(msg)
    new = old.model_copy(update={"content": edit.text, "status": "success"})
    if result is old:
        return new
    assert isinstance(result, Command)  # (tool_message_of found it in its update)
    update = dict(result.update)  # type: ignore[arg-type]  # (a dict: found in it above)
    update["messages"] = [new if m is old else m for m in update["messages"]]
    return Command(graph=result.graph, update=update, resume=result.resume, goto=result.goto)


def apply_stack(stack: Sequence[object], edit: Edit) -> list[object]:
    """The agent's middleware list with a ``drop_middleware`` or ``move_middleware``
    edit made (any other edit: the list as it is)."""
    if not edit.everywhere:
        return list(stack)
    names = [str(getattr(m, "name", type(m).__name__)) for m in stack]
    if edit.middleware not in names:
        msg = (f"the agent has no middleware {edit.middleware!r} (its list: "
               f"{', '.join(names) or 'empty'})")
        raise BadEdit(msg)
    out = list(stack)
    mw = out.pop(names.index(str(edit.middleware)))
    if edit.kind == "move_middleware":
        if not 0 <= int(edit.index or 0) <= len(out):
            msg = f"move_middleware: index {edit.index} is outside 0..{len(out)}"
            raise BadEdit(msg)
        out.insert(int(edit.index or 0), mw)
    return out
