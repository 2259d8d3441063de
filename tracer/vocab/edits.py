"""One edit: what may change in a run, for every interface that changes one.

The fork (``rerun(..., at=, edit=)``, ``looptrace rerun --edit``), the debugger
(a paused run's answer, from the terminal, the app or MCP), the playground and MCP's
``fork_run`` / ``resume`` / ``playground`` all take an ``Edit``: its kinds
(``KINDS``), fields, validation, words and JSON are here, and only here. How an edit
is made on LangChain objects (a model request, a tool call, a reply, a tool result,
the middleware list) is the write side's: ``tracer.record.edit_apply``.

A new kind of edit is one entry of ``KINDS`` (its fields, where it applies, its
words), plus, when it changes a LangChain object, one branch in
``tracer.record.edit_apply``.

The JSON form (``Edit.to_json``, ``Edit.of``) is the one recorded: a fork's
``runs.metadata.forked_from.edit`` and a debugger answer's ``debug`` event. Records
written before this module keep their JSON: it is read by ``Edit.read`` (never an
error: an unknown or damaged edit is described by its kind).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from tracer.errors import BadEdit

__all__ = ["AT", "KINDS", "ROLES", "BadEdit", "Edit", "Kind", "describe_json", "edits_of",
           "what_json"]

# Where an edit applies: what the debugger has pending (``pending.kind``), and for a fork
# the call it is made at (a model call, a tool call) or the agent itself (``stack``).
MODEL_REQUEST: Final = "model_request"
MODEL_REPLY: Final = "model_reply"
TOOL_CALL: Final = "tool_call"
TOOL_RESULT: Final = "tool_result"
ERROR: Final = "error"
NODE: Final = "node"  # a graph node, before or after it ran (``tracer.debug.nodes``)
STACK: Final = "stack"
AT: Final = (MODEL_REQUEST, MODEL_REPLY, TOOL_CALL, TOOL_RESULT, ERROR, NODE, STACK)

ROLES: Final = ("human", "ai", "system", "tool")


@dataclass(frozen=True)
class Kind:
    """One kind of edit: the fields it needs, where it applies, and its words."""

    name: str
    needs: tuple[str, ...]  # the fields it must have
    at: tuple[str, ...]  # where it applies (``AT``)
    fork: str | None  # what a fork makes it at: "model", "tool", "stack"; None: no fork
    help: str  # what it changes (``looptrace rerun --help``, MCP's tool descriptions)
    short: str  # the edit in a few words (str.format over the edit's fields)
    long: str  # the edit in a sentence, with its text (the captions)
    messages: bool = False  # it changes the request's messages (a fork writes them in)


KINDS: Final[dict[str, Kind]] = {k.name: k for k in (
    Kind("message", ("position", "text"), (MODEL_REQUEST,), "model",
         "replace the content of the message at a position of the model's request",
         "message {position} of the request replaced",
         "the message at position {position} of the request replaced by {quoted}",
         messages=True),
    Kind("drop", ("position",), (MODEL_REQUEST,), "model",
         "drop the message at a position of the model's request",
         "message {position} dropped from the request",
         "the message at position {position} of the request dropped", messages=True),
    Kind("insert", ("position", "text"), (MODEL_REQUEST,), "model",
         "insert a message before a position of the model's request (role human, ai, "
         "system, or tool with tool_call_id)",
         "a {role} message inserted at {position}",
         "a {role} message {quoted} inserted at position {position} of the request",
         messages=True),
    Kind("system", ("text",), (MODEL_REQUEST,), "model",
         "change the system prompt (from the fork on)", "system prompt changed",
         "the system prompt replaced by {quoted}"),
    Kind("model", ("model",), (MODEL_REQUEST,), "model",
         "swap the model (from the fork on): an init_chat_model name, offline, or a chat "
         "model", "model swapped for {model_label}", "the model swapped for {model_label}"),
    Kind("tools", ("names",), (MODEL_REQUEST,), None,
         "keep offering only the named tools", "tools offered: {names_text}",
         "the tools offered cut to {names_text}"),
    Kind("settings", ("settings",), (MODEL_REQUEST,), None,
         "change model settings (an object: temperature, max_tokens ...)",
         "model settings changed", "the model settings changed to {settings}"),
    Kind("reply", (), (MODEL_REQUEST, MODEL_REPLY, ERROR), None,
         "answer the model call yourself (text and/or tool_calls), or replace its answer",
         "the model's answer given in the debugger",
         "the model's answer given by hand: {quoted}"),
    Kind("tool_result", ("text",), (TOOL_CALL, TOOL_RESULT, ERROR), "tool",
         "replace the result of the tool call at the fork",
         "tool result given in the debugger", "the tool call's result replaced by {quoted}"),
    Kind("tool_args", ("args",), (TOOL_CALL,), "tool",
         "change the arguments of the tool call at the fork (it runs live)",
         "tool arguments changed", "the tool call's arguments changed to {args}"),
    Kind("raise", (), (TOOL_CALL,), None, "make the tool call raise (text: the message)",
         "the tool call made to raise", "the tool call made to raise {quoted}"),
    Kind("state", ("values",), (NODE, ERROR), None,
         "at a graph node: merge these state keys into what it receives (before) or into "
         "its update (after), through the graph's reducers (values: an object, or text: "
         "that object as JSON); at a node's error: its update instead of the exception",
         "state changed: {keys_text}", "the state's {keys_text} set to {values_text}"),
    Kind("drop_middleware", ("middleware",), (STACK,), "stack",
         "remove a middleware from the agent's list", "middleware {middleware} removed",
         "the middleware {middleware} removed from the agent's list"),
    Kind("move_middleware", ("middleware", "index"), (STACK,), "stack",
         "move a middleware to another place in the agent's list",
         "middleware {middleware} moved to {index}",
         "the middleware {middleware} moved to place {index} of the agent's list"),
)}

_FIELDS = ("position", "text", "role", "tool_call_id", "args", "model", "middleware",
           "index", "names", "settings", "tool_calls", "values", "from_now_on")
# the edits a debugger answer may mark "from now on": made again at every later model
# call of the same run (a subagent's system prompt for each of its calls ...)
STICKY = frozenset({"system", "model", "tools", "settings"})


def _bad(msg: str) -> BadEdit:
    return BadEdit(msg)


def _model_label(model: object) -> str:
    if model is None:
        return "?"
    if isinstance(model, str):
        return model
    for attr in ("model_name", "model"):
        v = getattr(model, attr, None)
        if isinstance(v, str) and v:
            return v
    return type(model).__name__


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Edit:
    """One edit (``kind`` one of ``KINDS``), checked when it is made: ``BadEdit``
    (one line) for a missing or mistyped field."""

    kind: str
    position: int | None = None  # message, drop, insert: a position in the request
    text: str | None = None  # message, insert, system, tool_result, reply, raise
    role: str = "human"  # insert: human, ai, system or tool
    tool_call_id: str | None = None  # insert with role tool: the call it answers
    args: dict[str, Any] | None = None  # tool_args (JSON values)
    model: object = None  # model: an init_chat_model name, "offline", or a chat model
    middleware: str | None = None  # drop_middleware, move_middleware: its name
    index: int | None = None  # move_middleware: its new place in the list
    names: tuple[str, ...] | None = None  # tools: the tools to keep offering
    settings: dict[str, Any] | None = None  # settings (JSON values)
    tool_calls: tuple[dict[str, Any], ...] | None = None  # reply: [{name, args, id}]
    values: dict[str, Any] | None = None  # state: state keys -> their new values (JSON)
    from_now_on: bool = False  # (the debugger) made again at every later model call

    def __post_init__(self) -> None:
        kind = KINDS.get(self.kind) if isinstance(self.kind, str) else None
        if kind is None:
            msg = f"unknown edit {self.kind!r} (one of: {', '.join(KINDS)})"
            raise _bad(msg)
        if self.kind == "state":
            object.__setattr__(self, "values", _state_values(self.values, self.text))
            object.__setattr__(self, "text", None)
        for name in kind.needs:
            if getattr(self, name) is None:
                raise _bad(f"the {self.kind} edit needs {name}")
        for name in ("text", "middleware", "tool_call_id"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise _bad(f"the {self.kind} edit's {name} must be text, not "
                           f"{type(v).__name__}")
        for name in ("position", "index"):
            v = getattr(self, name)
            if v is not None and (not _whole(v) or v < 0):
                raise _bad(f"the {self.kind} edit needs a whole-number {name} from 0, "
                           f"not {v!r}")
        for name in ("args", "settings"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, dict):
                raise _bad(f"the {self.kind} edit needs {name}: an object")
        if self.names is not None and (isinstance(self.names, str) or not all(
                isinstance(x, str) for x in self.names)):
            raise _bad("the tools edit needs names: a list of tool names to keep")
        if self.names is not None and not isinstance(self.names, tuple):
            object.__setattr__(self, "names", tuple(self.names))
        if self.kind == "insert":
            if self.role not in ROLES:
                raise _bad(f"insert: role must be {', '.join(ROLES[:-1])} or {ROLES[-1]}, "
                           f"not {self.role!r}")
            if self.role == "tool" and not self.tool_call_id:
                raise _bad("insert: a tool message needs the tool_call_id it answers")
        if self.kind == "model":
            if isinstance(self.model, str):
                if not self.model.strip():
                    raise _bad("the model edit needs a model: an init_chat_model name or "
                               "offline")
                object.__setattr__(self, "model", self.model.strip())
            elif not callable(getattr(self.model, "invoke", None)):
                shown = repr(self.model)
                shown = shown if len(shown) <= 40 else shown[:37] + "..."
                raise _bad(f"the model edit needs a chat model: {type(self.model).__name__}"
                           f" {shown} is not a BaseChatModel")
        if self.kind == "reply":
            calls = _tool_calls(self.tool_calls)
            if not self.text and not calls and self.text is None:
                raise _bad("the reply edit needs text or tool_calls")
            object.__setattr__(self, "tool_calls", calls)
            object.__setattr__(self, "text", self.text or "")
        if not isinstance(self.from_now_on, bool):
            raise _bad(f"the {self.kind} edit's from_now_on must be true or false")
        if self.from_now_on and self.kind not in STICKY:
            raise _bad(f"a {self.kind} edit is made once (from now on: "
                       f"{', '.join(sorted(STICKY))})")
        if self.kind == "raise" and not self.text:
            object.__setattr__(self, "text", "raised in the debugger")

    # -- made from input ---------------------------------------------------------------
    @classmethod
    def of(cls, value: object) -> Edit:
        """An edit from its JSON form (an object, or its text): ``BadEdit`` for
        anything that is not one."""
        if isinstance(value, Edit):
            return value
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise _bad(f"the edit is not valid JSON ({exc.msg} at column {exc.colno})"
                           ) from None
        if not isinstance(value, Mapping) or not isinstance(value.get("kind"), str):
            raise _bad("an edit is an object with a kind, e.g. {\"kind\": \"tool_result\", "
                       "\"text\": \"...\"}")
        if value["kind"] == "state" and value.get("values") is None:
            # (a state edit's values may come as ``state``, or as ``text``: its JSON, or
            # already parsed, as MCP clients send JSON text)
            value = {**value, "values": value.get("state")}
            if isinstance(value.get("text"), Mapping):
                value["values"], value["text"] = value["text"], None
        if value["kind"] == "state":
            value = {k: v for k, v in value.items() if k != "state"}
        unknown = sorted(set(value) - {"kind", *_FIELDS})
        if unknown:
            raise _bad(f"the {value['kind']} edit has no field {unknown[0]!r}")
        kw: dict[str, Any] = {k: value[k] for k in _FIELDS if value.get(k) is not None}
        if kw.get("from_now_on") is False:
            del kw["from_now_on"]
        for name in ("names", "tool_calls"):
            if name in kw:
                if not isinstance(kw[name], list | tuple):
                    raise _bad(f"the {value['kind']} edit's {name} must be a list")
                kw[name] = tuple(kw[name])
        if "role" in kw and value["kind"] != "insert":
            del kw["role"]  # (the MCP tools send a role with every edit)
        return cls(str(value["kind"]), **kw)

    @classmethod
    def read(cls, value: object) -> Edit | None:
        """An edit as a record holds it (any looptrace version's), or None: never an
        error."""
        try:
            return cls.of(value)
        except BadEdit:
            return None

    # -- where it applies --------------------------------------------------------------
    @property
    def spec(self) -> Kind:
        return KINDS[self.kind]

    @property
    def on_model(self) -> bool:
        """A fork makes it at a model call."""
        return self.spec.fork == "model"

    @property
    def on_tool(self) -> bool:
        """A fork makes it at a tool call."""
        return self.spec.fork == "tool"

    @property
    def everywhere(self) -> bool:
        """A change to the agent itself: the run may leave the record anywhere."""
        return self.spec.fork == "stack"

    def check(self, pending: Mapping[str, Any]) -> Edit:
        """This edit, checked against what a paused run (or the playground's call) has
        pending: ``BadEdit`` (one line) when it does not apply there."""
        what = str(pending.get("kind") or "state")
        allowed = [k.name for k in KINDS.values() if what in k.at]
        if self.kind not in allowed:
            can = ", ".join(allowed) or "no edit (continue, step, lap, run or abort)"
            raise _bad(f"a {self.kind!r} edit does not apply to a pending "
                       f"{what.replace('_', ' ')} (here: {can})")
        n = len(pending.get("messages") or ())
        if self.position is not None and what == MODEL_REQUEST:
            top = n if self.kind == "insert" else n - 1
            if not 0 <= self.position <= top:
                raise _bad(f"position {self.position} is outside the request's messages "
                           f"(0..{top})")
        if self.kind == "tools":
            offered = [str(t) for t in pending.get("tools") or ()]
            unknown = [x for x in self.names or () if x not in offered]
            if unknown:
                raise _bad(f"the request offers no tool {unknown[0]!r} (it offers: "
                           f"{', '.join(offered) or 'none'})")
        if self.kind == "state":
            keys = [str(k) for k in pending.get("keys") or ()]
            unknown = [k for k in self.values or () if keys and k not in keys]
            if unknown:
                raise _bad(f"the state has no key {unknown[0]!r} (its keys: "
                           f"{', '.join(keys)})")
        if what == ERROR:
            where = str(pending.get("where"))
            want = {"tool": "tool_result", "node": "state"}.get(where, "reply")
            if self.kind != want:
                raise _bad(f"at a {where} error the edit is {want}")
        return self

    # -- in words and as JSON ----------------------------------------------------------
    def _words(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        text = " ".join(str(self.text or "").split())
        d["quoted"] = f"“{text[:60]}{'…' if len(text) > 60 else ''}”"
        d["model_label"] = _model_label(self.model)
        d["names_text"] = ", ".join(self.names or ()) or "none"
        d["keys_text"] = ", ".join(str(k) for k in self.values or {})
        shown = json.dumps(self.values, ensure_ascii=False, default=str)
        d["values_text"] = shown if len(shown) <= 120 else shown[:117] + "..."
        return d

    def describe(self) -> str:
        """The edit in a few words ("changed in the debugger: ...")."""
        return self.spec.short.format(**self._words()) + (
            " (from now on)" if self.from_now_on else "")

    def what(self) -> str:
        """The edit in a sentence, with its text: "the system prompt replaced by “...”"."""
        return self.spec.long.format(**self._words())

    def to_json(self) -> dict[str, Any]:
        """The JSON form, as recorded (a model object by its name)."""
        out: dict[str, Any] = {"kind": self.kind}
        for name in _FIELDS:
            v = getattr(self, name)
            if name == "role":
                if self.kind == "insert":
                    out["role"] = v
            elif name == "model":
                if v is not None:
                    out["model"] = _model_label(v)
            elif name == "from_now_on":
                if v:
                    out[name] = True
            elif v is not None:
                out[name] = list(v) if isinstance(v, tuple) else v
        return out


def _state_values(values: object, text: object) -> dict[str, Any]:
    """A state edit's values: an object of state keys, or ``text`` holding one as JSON."""
    if values is None and isinstance(text, Mapping):  # (already parsed)
        values = text
    if values is None and isinstance(text, str):
        try:
            values = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _bad(f"the state edit is not valid JSON ({exc.msg} at column "
                       f"{exc.colno})") from None
    if not isinstance(values, Mapping) or not values:
        raise _bad("the state edit is a JSON object of state keys and their new values, "
                   "e.g. {\"count\": 3}")
    return {str(k): v for k, v in values.items()}


def _tool_calls(value: object) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _bad("tool_calls must be a list of {name, args} objects")
    out = []
    for tc in value:
        if not isinstance(tc, Mapping) or not isinstance(tc.get("name"), str) or not tc["name"]:
            raise _bad("each tool call needs a name")
        args = tc.get("args", {})
        if not isinstance(args, dict):
            raise _bad(f"tool call {tc['name']}: args must be an object")
        out.append({"name": tc["name"], "args": args,
                    "id": str(tc.get("id") or f"call_debug_{uuid.uuid4().hex[:12]}")})
    return tuple(out)


def edits_of(value: object) -> tuple[Edit, ...]:
    """One edit, or a list of them made in order in one answer (a position then counts in
    the request as the edits before it left it), from JSON: ``BadEdit`` for anything
    that is not one."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _bad(f"the edits are not valid JSON ({exc.msg} at column {exc.colno})"
                       ) from None
    if isinstance(value, list | tuple):
        if not value:
            raise _bad("an empty list of edits (continue with no edit instead)")
        return tuple(Edit.of(v) for v in value)
    return (Edit.of(value),)


def describe_json(value: object) -> str:
    """A recorded edit (its JSON, or a list of them) in a few words; its kind when it is
    not a valid one."""
    if isinstance(value, list):
        return "; ".join(describe_json(v) for v in value) or "edit"
    e = Edit.read(value)
    if e is not None:
        return e.describe()
    kind = value.get("kind") if isinstance(value, Mapping) else None
    return str(kind or "edit").replace("_", " ")


def what_json(value: object) -> str:
    """A recorded edit (its JSON) in a sentence; its kind when it is not a valid one."""
    e = Edit.read(value)
    if e is not None:
        return e.what()
    kind = value.get("kind") if isinstance(value, Mapping) else None
    return str(kind or "edit").replace("_", " ")
