"""What the debugger may change before a paused run goes on, and how.

An edit is a JSON object named like ``fork_run``'s (``tracer.whatif``): ``kind`` plus
its arguments. Which kinds apply depends on what is pending:

- before a model call (``model_request``): ``message`` (position, text), ``drop``
  (position), ``insert`` (position, text, role), ``system`` (text), ``tools`` (names:
  the tools to keep offering), ``settings`` (an object of model settings), ``model``
  (an ``init_chat_model`` name, or ``offline``: an echo model, no network), ``reply``
  (text and/or tool_calls: answer the call yourself, the model is not asked);
- after the model (``model_reply``): ``reply`` (the AIMessage's text and tool calls);
- before a tool (``tool_call``): ``tool_args`` (args), ``tool_result`` (text: the tool
  does not run), ``raise`` (text: the tool call raises instead);
- after a tool (``tool_result``): ``tool_result`` (text);
- at an error (``error``): ``tool_result`` (a tool's: this result instead of the
  exception) or ``reply`` (the model's: this answer instead), ``state`` (a graph
  node's: this update instead);
- at a graph node (``node``, before or after it ran): ``state`` (values: an object of
  state keys, or text: that object as JSON), merged into what the node receives or
  into its update through the graph's reducers (``tracer.debug.nodes``).

``validate`` runs in the driver's process, against the pending JSON, and raises
``InvalidOption`` with one line; the ``apply_*`` functions run in the agent's process on
LangChain objects. A message edit changes this model call's request only, as a
``wrap_model_call`` layer would: the conversation in the state is not rewritten.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tracer.errors import DebugRaised, InvalidOption
from tracer.vocab.records import tool_name

__all__ = ["ALLOWED", "DebugRaised", "apply_reply", "apply_request", "apply_tool_call",
           "apply_tool_result", "describe", "validate"]

ALLOWED: dict[str, tuple[str, ...]] = {
    "model_request": ("message", "drop", "insert", "system", "tools", "settings", "model",
                      "reply"),
    "model_reply": ("reply",),
    "tool_call": ("tool_args", "tool_result", "raise"),
    "tool_result": ("tool_result",),
    "error": ("tool_result", "reply", "state"),
    "state": (),
    "node": ("state",),
}


def _bad(msg: str) -> InvalidOption:
    return InvalidOption(msg)


def _text(edit: dict[str, Any], name: str = "text", *, required: bool = True) -> str | None:
    value = edit.get(name)
    if value is None:
        if required:
            raise _bad(f"the {edit.get('kind')} edit needs {name}")
        return None
    if not isinstance(value, str):
        raise _bad(f"the {edit.get('kind')} edit's {name} must be text, not "
                   f"{type(value).__name__}")
    return value


def _position(edit: dict[str, Any], n: int, *, end: bool = False) -> int:
    p = edit.get("position")
    if isinstance(p, bool) or not isinstance(p, int):
        raise _bad(f"the {edit['kind']} edit needs a whole-number position")
    top = n if end else n - 1
    if not 0 <= p <= top:
        raise _bad(f"position {p} is outside the request's messages (0..{top})")
    return p


def _tool_calls(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _bad("tool_calls must be a list of {name, args} objects")
    out = []
    for tc in value:
        if not isinstance(tc, dict) or not isinstance(tc.get("name"), str) or not tc["name"]:
            raise _bad("each tool call needs a name")
        args = tc.get("args", {})
        if not isinstance(args, dict):
            raise _bad(f"tool call {tc['name']}: args must be an object")
        out.append({"name": tc["name"], "args": args,
                    "id": str(tc.get("id") or f"call_debug_{uuid.uuid4().hex[:12]}")})
    return out


def validate(edit: Any, pending: dict[str, Any]) -> dict[str, Any]:
    """``edit`` checked against what is ``pending``, normalised; ``InvalidOption`` (one
    line) for anything that is not a valid edit of it."""
    if isinstance(edit, str):
        try:
            edit = json.loads(edit)
        except json.JSONDecodeError as exc:
            raise _bad(f"the edit is not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(edit, dict) or not isinstance(edit.get("kind"), str):
        raise _bad("an edit is an object with a kind, e.g. {\"kind\": \"tool_result\", "
                   "\"text\": \"...\"}")
    kind = edit["kind"]
    what = str(pending.get("kind") or "state")
    allowed = ALLOWED.get(what, ())
    if kind not in allowed:
        can = ", ".join(allowed) or "no edit (continue, step, lap, run or abort)"
        raise _bad(f"a {kind!r} edit does not apply to a pending {what.replace('_', ' ')}"
                   f" (here: {can})")
    out: dict[str, Any] = {"kind": kind}
    n = len(pending.get("messages") or ())
    if kind == "message":
        out["position"] = _position(edit, n)
        out["text"] = _text(edit)
    elif kind == "drop":
        out["position"] = _position(edit, n)
    elif kind == "insert":
        out["position"] = _position(edit, n, end=True)
        out["text"] = _text(edit)
        role = edit.get("role", "human")
        if role not in ("human", "ai", "system"):
            raise _bad(f"insert: role must be human, ai or system, not {role!r}")
        out["role"] = role
    elif kind in ("system", "tool_result"):
        out["text"] = _text(edit)
    elif kind == "raise":
        out["text"] = _text(edit, required=False) or "raised in the debugger"
    elif kind == "tools":
        names = edit.get("names")
        offered = list(pending.get("tools") or ())
        if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
            raise _bad("the tools edit needs names: a list of tool names to keep")
        unknown = [x for x in names if x not in offered]
        if unknown:
            raise _bad(f"the request offers no tool {unknown[0]!r} (it offers: "
                       f"{', '.join(offered) or 'none'})")
        out["names"] = names
    elif kind == "settings":
        settings = edit.get("settings")
        if not isinstance(settings, dict):
            raise _bad("the settings edit needs settings: an object")
        out["settings"] = settings
    elif kind == "model":
        model = _text(edit, "model")
        if not model or not model.strip():
            raise _bad("the model edit needs a model: an init_chat_model name or offline")
        out["model"] = model.strip()
    elif kind == "reply":
        text = _text(edit, required=False) or ""
        calls = _tool_calls(edit.get("tool_calls"))
        if not text and not calls and "text" not in edit:
            raise _bad("the reply edit needs text or tool_calls")
        out["text"], out["tool_calls"] = text, calls
    elif kind == "state":
        out["values"] = _state_values(edit, pending)
    elif kind == "tool_args":
        args = edit.get("args")
        if not isinstance(args, dict):
            raise _bad("the tool_args edit needs args: an object")
        out["args"] = args
    if what == "error":
        where = pending.get("where")
        want = {"tool": "tool_result", "node": "state"}.get(str(where), "reply")
        if kind != want:
            raise _bad(f"at a {where} error the edit is {want}")
    return out


def _state_values(edit: dict[str, Any], pending: dict[str, Any]) -> dict[str, Any]:
    """A state edit's values: ``values`` (or ``state``) as an object, or ``text`` holding
    one as JSON; every key one the state has (``pending["keys"]``, when it says)."""
    values = edit.get("values", edit.get("state"))
    if values is None and isinstance(edit.get("text"), dict):  # (already parsed)
        values = edit["text"]
    if values is None and isinstance(edit.get("text"), str):
        try:
            values = json.loads(edit["text"])
        except json.JSONDecodeError as exc:
            raise _bad(f"the state edit is not valid JSON ({exc.msg} at column "
                       f"{exc.colno})") from None
    if not isinstance(values, dict) or not values:
        raise _bad("the state edit is a JSON object of state keys and their new values, "
                   "e.g. {\"count\": 3}")
    keys = pending.get("keys")
    if keys:
        unknown = [k for k in values if k not in keys]
        if unknown:
            raise _bad(f"the state has no key {unknown[0]!r} (its keys: "
                       f"{', '.join(str(k) for k in keys)})")
    return values


def describe(edit: dict[str, Any]) -> str:
    """The edit in a few words (the caption says "changed in the debugger: ...")."""
    k = edit.get("kind")
    return {
        "message": f"message {edit.get('position')} of the request replaced",
        "drop": f"message {edit.get('position')} dropped from the request",
        "insert": f"a {edit.get('role', 'human')} message inserted at {edit.get('position')}",
        "system": "system prompt changed",
        "tools": "tools offered: " + (", ".join(edit.get("names") or []) or "none"),
        "settings": "model settings changed",
        "model": f"model swapped for {edit.get('model')}",
        "reply": "the model's answer given in the debugger",
        "tool_args": "tool arguments changed",
        "tool_result": "tool result given in the debugger",
        "raise": "the tool call made to raise",
        "state": "state changed: " + ", ".join(str(k) for k in edit.get("values") or {}),
    }.get(str(k), str(k))


# -- applied in the agent's process -------------------------------------------------
def _ai(edit: dict[str, Any], like: Any = None) -> Any:
    from langchain_core.messages import AIMessage

    calls = [{"name": c["name"], "args": c["args"], "id": c["id"], "type": "tool_call"}
             for c in edit.get("tool_calls") or []]
    mid = getattr(like, "id", None) or f"looptrace-debug-{uuid.uuid4().hex[:12]}"
    return AIMessage(content=edit.get("text") or "", tool_calls=calls, id=mid)


def _model(name: str) -> Any:
    if name == "offline":
        from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        from langchain_core.messages import AIMessage

        class _Echo(GenericFakeChatModel):
            def bind_tools(self, tools: Any, **kw: Any) -> Any:
                return self

        def echo() -> Any:
            while True:
                yield AIMessage("(offline: no model was asked)")

        return _Echo(messages=echo())
    from langchain.chat_models import init_chat_model

    return init_chat_model(name)


def apply_request(request: Any, edit: dict[str, Any]) -> tuple[Any, Any]:
    """(the model request with ``edit`` made, the AIMessage to answer with instead of
    asking the model, or None)."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    k = edit["kind"]
    if k == "reply":
        return request, _ai(edit)
    if k == "system":
        return request.override(system_message=SystemMessage(edit["text"])), None
    if k == "tools":
        keep = set(edit["names"])
        tools = [t for t in request.tools if tool_name(t) in keep]
        return request.override(tools=tools), None
    if k == "settings":
        return request.override(model_settings={**request.model_settings,
                                                **edit["settings"]}), None
    if k == "model":
        return request.override(model=_model(edit["model"])), None
    msgs = list(request.messages)
    p = int(edit["position"])
    if k == "message":
        msgs[p] = msgs[p].model_copy(update={"content": edit["text"]})
    elif k == "drop":
        del msgs[p]
    elif k == "insert":
        cls = {"human": HumanMessage, "ai": AIMessage, "system": SystemMessage}[edit["role"]]
        msgs.insert(p, cls(edit["text"], id=f"looptrace-insert-{uuid.uuid4().hex[:12]}"))
    return request.override(messages=msgs), None


def apply_reply(message: Any, edit: dict[str, Any]) -> Any:
    """The AIMessage the model answered, replaced by the edit's (its id kept)."""
    return _ai(edit, like=message)


def apply_tool_call(request: Any, edit: dict[str, Any]) -> tuple[Any, Any]:
    """(the tool call request with ``edit`` made, the ToolMessage to return instead of
    running the tool, or None); a ``raise`` edit raises ``DebugRaised``."""
    from langchain_core.messages import ToolMessage

    k = edit["kind"]
    call = request.tool_call
    if k == "tool_args":
        return request.override(tool_call={**call, "args": edit["args"]}), None
    if k == "raise":
        raise DebugRaised(edit.get("text") or "raised in the debugger")
    return request, ToolMessage(content=edit["text"], tool_call_id=call.get("id"),
                                name=call.get("name"))


def apply_tool_result(message: Any, edit: dict[str, Any]) -> Any:
    """The ToolMessage with the edit's text (its id and tool_call_id kept)."""
    return message.model_copy(update={"content": edit["text"], "status": "success"})
