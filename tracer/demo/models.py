"""Scripted chat models: real ``BaseChatModel`` subclasses that need no LLM.

``ScriptedChatModel`` answers from a script: a function of the messages it is
sent, so it is stateless and safe to share with subagents. ``bind_tools``
records the tools and returns the model, as a real adapter would bind them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

Script = Callable[[Sequence[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose reply is ``script(messages)``; usage is counted in words."""

    script: Any
    model_name: str = "scripted-model"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "scripted"
        params["ls_model_name"] = self.model_name
        return params

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        reply = stamp(self.script(messages), messages, self.model_name)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def stamp(reply: AIMessage, messages: Sequence[BaseMessage], model_name: str) -> AIMessage:
    """What a provider adds to a reply: token usage (counted in words, unless the script
    gave its own) and the model name and stop reason."""
    if reply.usage_metadata is None:
        words_in = sum(len(str(m.content).split()) for m in messages) + 10
        words_out = max(1, len(str(reply.content).split())) + 5 * len(reply.tool_calls)
        reply.usage_metadata = {"input_tokens": words_in, "output_tokens": words_out,
                                "total_tokens": words_in + words_out}
    reply.response_metadata = {"model_name": model_name,
                               "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
    return reply


def turn_script(turns: Sequence[Callable[[Sequence[BaseMessage]], AIMessage] | AIMessage]) -> Script:
    """A script that plays ``turns`` in order, by how many AI messages came before.

    Stateless: the turn is counted from the conversation, so the same model can
    be invoked many times (and by subagents) and always replays the same way.
    """

    def script(messages: Sequence[BaseMessage]) -> AIMessage:
        n = sum(1 for m in messages if isinstance(m, AIMessage))
        turn = turns[min(n, len(turns) - 1)]
        msg = turn(messages) if callable(turn) else turn
        return msg.model_copy(deep=True)

    return script


def last_tool_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    out: list[ToolMessage] = []
    for m in reversed(messages):
        if isinstance(m, ToolMessage):
            out.append(m)
        else:
            break
    return list(reversed(out))


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def echo_model() -> ScriptedChatModel:
    """An offline stand-in for a live model (``looptrace replay --offline``): it answers
    in plain text, quoting the last message it was sent, and asks for no tool."""

    def echo(messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else None
        said = " ".join(str(last.content).split())[:200] if last is not None else ""
        return AIMessage(f"[offline] The last message was: {said}")

    return ScriptedChatModel(model_name="offline-echo", script=echo)
