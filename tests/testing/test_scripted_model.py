"""``tracer.testing.ScriptedChatModel``: the public chat model for tests with no LLM.

Issue 47, in the way 2: LangChain's ``GenericFakeChatModel`` cannot drive
``create_agent`` (its ``bind_tools`` raises), and looptrace's scripted model was a
private name of the demo agents. It is exported from ``tracer.testing`` with
``tool_call`` and ``turn_script``: its script is the replies in order, or a function
of the messages.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"Sunny in {city}"


def test_generic_fake_chat_model_cannot_drive_create_agent() -> None:
    """(Why the helper is public: the model LangChain offers fails here.)"""
    with pytest.raises(NotImplementedError):
        create_agent(GenericFakeChatModel(messages=iter([])), tools=[get_weather]).invoke(
            {"messages": [("user", "hi")]})


def test_replies_in_order_drive_create_agent() -> None:
    from tracer.testing import ScriptedChatModel, tool_call

    model = ScriptedChatModel(script=[
        AIMessage("", tool_calls=[tool_call("get_weather", {"city": "Oslo"}, "call_1")]),
        AIMessage("It is sunny in Oslo."),
    ])
    out = create_agent(model, tools=[get_weather]).invoke(
        {"messages": [("user", "Weather in Oslo?")]})
    msgs = out["messages"]
    assert [m.type for m in msgs] == ["human", "ai", "tool", "ai"]
    assert msgs[1].tool_calls[0]["name"] == "get_weather"
    assert isinstance(msgs[2], ToolMessage) and msgs[2].content == "Sunny in Oslo"
    assert msgs[3].content == "It is sunny in Oslo."
    assert msgs[3].response_metadata["model_name"] == "scripted-model"
    # (a second invocation plays the script from its start: the turn is counted from
    # the conversation it is sent, not kept in the model)
    again = create_agent(model, tools=[get_weather]).invoke(
        {"messages": [("user", "And now?")]})
    assert again["messages"][-1].content == "It is sunny in Oslo."


def test_a_function_of_the_messages_answers_from_what_it_is_sent() -> None:
    from tracer.testing import ScriptedChatModel, tool_call

    def script(messages: Sequence[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(f"The tool said: {last.content}")
        city = str(last.content).split()[-1].rstrip("?")
        return AIMessage("", tool_calls=[tool_call("get_weather", {"city": city}, "c1")])

    model = ScriptedChatModel(script=script, model_name="mine")
    out = create_agent(model, tools=[get_weather]).invoke(
        {"messages": [("user", "Weather in Bergen?")]})
    assert out["messages"][-1].content == "The tool said: Sunny in Bergen"
    assert model.bind_tools([get_weather]) is model


def test_importing_tracer_testing_imports_no_langchain() -> None:
    code = ("import sys, tracer.testing; "
            "print(sorted(m for m in sys.modules if m.startswith('langchain')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
