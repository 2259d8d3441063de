"""Comparing messages: LangGraph's (the truth) and looptrace's, by what they say (type,
id, content, tool calls), not by object identity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage


def message_key(m: BaseMessage) -> tuple[Any, ...]:
    """(type, id, content, [(name, args, id) of tool_calls], tool_call_id)."""
    tool_calls = [(tc.get("name"), tc.get("args"), tc.get("id"))
                  for tc in (getattr(m, "tool_calls", None) or [])]
    return (m.type, m.id, m.content, tool_calls, getattr(m, "tool_call_id", None))


def same_messages(a: Sequence[BaseMessage], b: Sequence[BaseMessage]) -> bool:
    return [message_key(m) for m in a] == [message_key(m) for m in b]


def text_of(messages: Sequence[BaseMessage]) -> str:
    """All message contents (and tool-call args) as one string, for ``in`` checks."""
    parts: list[str] = []
    for m in messages:
        parts.append(str(m.content))
        for tc in getattr(m, "tool_calls", None) or []:
            parts.append(str(tc.get("args")))
    return "\n".join(parts)


__all__ = ["message_key", "same_messages", "text_of"]
