"""Scripted chat models: real ``BaseChatModel`` subclasses that need no LLM or API key.

``ScriptedChatModel`` drives ``create_agent`` (and Deep Agents, and a hand-rolled loop)
as a real model does: ``bind_tools`` binds the agent's tools and returns the model, and
each reply is an ``AIMessage`` that may ask for tool calls. Its script is either the
replies in order (a list: the Nth reply answers the Nth model call of a conversation,
counted from the AI messages it is sent) or a function of the messages it is sent, so
one model is stateless and safe to share with subagents. LangChain's
``GenericFakeChatModel`` cannot drive ``create_agent``: its ``bind_tools`` raises.

Example:
    ```python
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage

    from tracer.testing import ScriptedChatModel, tool_call

    model = ScriptedChatModel(script=[
        AIMessage("", tool_calls=[tool_call("get_weather", {"city": "Oslo"}, "call_1")]),
        AIMessage("It is sunny in Oslo."),
    ])
    agent = create_agent(model, tools=[get_weather])
    ```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import model_validator

Script = Callable[[Sequence[BaseMessage]], AIMessage]


class ScriptedChatModel(BaseChatModel):
    """A chat model whose reply is ``script(messages)``, or, for a list of replies, the
    one whose turn it is (``turn_script``); usage is counted in words, unless a reply
    gives its own ``usage_metadata``.

    Args:
        script: the replies in order (``AIMessage``s, or functions of the messages that
            return one), or one function of the messages it is sent.
        model_name: the name the replies carry (``response_metadata.model_name``).
    """

    script: Any
    model_name: str = "scripted-model"

    @model_validator(mode="before")
    @classmethod
    def _replies_in_order(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("script"), (list, tuple)):
            data = {**data, "script": turn_script(data["script"])}
        return data

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


def tool_call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A tool call for an ``AIMessage``'s ``tool_calls``: the tool's name, its
    arguments and the call's id."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


call = tool_call  # (the short name the demo agents and the tests use)


__all__ = ["Script", "ScriptedChatModel", "call", "last_tool_results", "stamp", "tool_call",
           "turn_script"]
