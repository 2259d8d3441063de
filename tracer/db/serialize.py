"""Turn hook payloads and messages into JSON text, whatever they hold.

Never raises: a value JSON cannot carry falls back to its ``repr``, and a text
over the size limit is cut with a marker that says how much was cut.

LangChain's message classes are looked up in ``sys.modules``, not imported: in a
process that has not imported them no object is one of them, and the processes that
write or read without LangChain (the wire proxy, ``looptrace runs``, ``looptrace debug``'s
own) start seconds sooner.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

MAX_PAYLOAD_CHARS = 256_000
MAX_MESSAGE_CHARS = 1_000_000
MAX_SEARCH_TEXT = 4_000

_LC_MESSAGES = "langchain_core.messages"
_classes: tuple[type[AIMessage], type[BaseMessage], type[ToolMessage]] | None = None


def _message_classes() -> tuple[type[AIMessage], type[BaseMessage], type[ToolMessage]] | None:
    """LangChain's ``AIMessage``, ``BaseMessage`` and ``ToolMessage``, or None while the
    process has not imported them (then nothing it holds is a message of theirs)."""
    global _classes  # (found once)
    if _classes is None and _LC_MESSAGES in sys.modules:
        from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

        _classes = (AIMessage, BaseMessage, ToolMessage)
    return _classes


def json_default(obj: Any) -> Any:
    hook = getattr(obj, "__looptrace_json__", None)
    if hook is not None:
        return hook()
    lc = _classes or _message_classes()
    if lc is not None and isinstance(obj, lc[1]):
        return message_dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        with contextlib.suppress(Exception):  # (any failure falls back to repr)
            return dump(mode="json")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    return {"__repr__": short_repr(obj)}


def short_repr(obj: Any) -> str:
    try:
        text = repr(obj)
    except Exception as exc:  # noqa: BLE001
        text = f"<unrepresentable {type(obj).__name__}: {exc!r}>"
    return truncate_text(text, 2_000)


def truncate_text(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[looptrace: truncated {len(text) - limit} of {len(text)} chars]"


_ENCODER = json.JSONEncoder(default=json_default, ensure_ascii=False, separators=(",", ":"))


def dumps(obj: Any, limit: int = MAX_PAYLOAD_CHARS) -> str:
    """JSON text of ``obj``; falls back to ``repr`` for anything JSON cannot hold."""
    try:
        text = _ENCODER.encode(obj)
    except Exception:  # noqa: BLE001 - circular references, broken __repr__ ...
        text = json.dumps({"__repr__": short_repr(obj)}, ensure_ascii=False)
    if len(text) > limit:
        text = json.dumps(
            {"looptrace_truncated": {"original_chars": len(text), "kept_chars": limit},
             "head": text[:limit]},
            ensure_ascii=False,
        )
    return text


def message_dict(message: BaseMessage) -> dict[str, Any]:
    """``messages_to_dict`` form: ``{"type": ..., "data": {...}}``; lossless when possible."""
    try:
        data = json.loads(message.model_dump_json())
    except Exception:  # noqa: BLE001 - e.g. an artifact JSON cannot carry
        raw = message.model_dump()
        data = json.loads(json.dumps(raw, default=json_default, ensure_ascii=False))
        data["looptrace_fallback"] = "repr"
    return {"type": message.type, "data": data}


def message_json(message: BaseMessage) -> str:
    """JSON text of one message, cut to ``MAX_MESSAGE_CHARS`` with a marker."""
    try:  # the common case: pydantic writes the JSON once, nothing is parsed again
        body = message.model_dump_json()
    except Exception:  # noqa: BLE001 - not JSON-serialisable: the slow path below
        body = None
    if body is not None and len(body) <= MAX_MESSAGE_CHARS - 40:
        return f'{{"type":{json.dumps(message.type)},"data":{body}}}'
    d = message_dict(message)
    text = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    data = d["data"]
    content = data.get("content")
    original = len(text)
    if isinstance(content, str):
        keep = max(0, MAX_MESSAGE_CHARS - (len(text) - len(content)) - 200)
        data["content"] = content[:keep]
    else:
        data["content"] = truncate_text(json.dumps(content, ensure_ascii=False),
                                        MAX_MESSAGE_CHARS // 2)
    data["looptrace_truncated"] = {"original_chars": original, "limit": MAX_MESSAGE_CHARS}
    text = json.dumps(d, ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_MESSAGE_CHARS:  # huge tool_calls or metadata: keep a safe skeleton
        data = {k: data.get(k) for k in ("id", "type", "name", "tool_call_id", "status")}
        data["content"] = truncate_text(str(content), MAX_MESSAGE_CHARS // 2)
        data["looptrace_truncated"] = {"original_chars": original, "limit": MAX_MESSAGE_CHARS}
        text = json.dumps({"type": d["type"], "data": data}, ensure_ascii=False)
    return text


# isinstance first in these two: a missing attribute of a pydantic model raises inside
# and costs microseconds, and they run for every message.
def tool_call_id_of(m: Any) -> str | None:
    """The call a tool result answers (None for any other message)."""
    lc = _classes or _message_classes()
    if lc is not None:
        if isinstance(m, lc[2]):
            return m.tool_call_id
        if isinstance(m, lc[1]):
            return None
    return getattr(m, "tool_call_id", None)


def message_key(m: Any) -> str:
    """The key of a message on both sides: a tool result by the call it answers,
    any other message by its id, else (no id: a hand-rolled loop's own objects)
    by the object. The writer stores it with the row (``messages.key``)."""
    tcid = tool_call_id_of(m)
    if tcid:
        return "t:" + tcid
    mid = getattr(m, "id", None)
    if mid:
        return str(mid)
    return f"o:{id(m)}"


def tool_calls_of(m: Any) -> list[Any]:
    """The tool calls an AI message asks for (empty for any other message)."""
    lc = _classes or _message_classes()
    if lc is not None:
        if isinstance(m, lc[0]):
            return m.tool_calls
        if isinstance(m, lc[1]):
            return []
    return getattr(m, "tool_calls", None) or []


def search_text(message: BaseMessage) -> str:
    """Plain text of a message, for search: the ``messages.text`` column that
    ``looptrace runs --search`` looks in. (``tracer.read.diff.message_text`` is the
    readable form of a recorded message that a diff compares.)"""
    try:
        text = str(message.text)
    except Exception:  # noqa: BLE001
        text = str(message.content)
    calls = tool_calls_of(message)
    if calls:
        text = f"{text} " + " ".join(f"{c.get('name')}({c.get('args')})" for c in calls)
    return text[:MAX_SEARCH_TEXT]
