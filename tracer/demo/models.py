"""The demo agents' models: the scripted chat model (``tracer.testing.models``, public
as ``tracer.testing.ScriptedChatModel``) and an offline stand-in for a live model."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from tracer.testing.models import (
    Script,
    ScriptedChatModel,
    call,
    last_tool_results,
    stamp,
    tool_call,
    turn_script,
)

__all__ = ["Script", "ScriptedChatModel", "call", "echo_model", "last_tool_results", "stamp",
           "tool_call", "turn_script"]


def echo_model() -> ScriptedChatModel:
    """An offline stand-in for a live model (``looptrace rerun --offline``): it answers
    in plain text, quoting the last message it was sent, and asks for no tool."""

    def echo(messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else None
        said = " ".join(str(last.content).split())[:200] if last is not None else ""
        return AIMessage(f"[offline] The last message was: {said}")

    return ScriptedChatModel(model_name="offline-echo", script=echo)
