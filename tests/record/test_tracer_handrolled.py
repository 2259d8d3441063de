"""A hand-rolled loop (a for-loop around ``llm.bind_tools``) traced with the callback handler."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import chain
from langchain_core.tools import tool
from tracer_kit import assert_gapless, no_tracer_warnings, rows  # noqa: F401

from tracer import TraceCallbackHandler
from tracer.demo.models import ScriptedChatModel, call
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")

MAX_ITERATIONS = 3


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"Sunny in {city}"


class ToolSchemaModel(ScriptedChatModel):
    """Like a real adapter: bind_tools puts the provider tool schemas in the call kwargs."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def script(messages: list[BaseMessage]) -> AIMessage:
    n = sum(1 for m in messages if isinstance(m, AIMessage))
    if n == 0:
        return AIMessage("Checking two cities.", tool_calls=[
            call("get_weather", {"city": "Oslo"}, "h1"),
            call("get_weather", {"city": "Atlantis"}, "h2")])
    return AIMessage("Oslo is sunny; Atlantis does not exist.")


def test_hand_rolled_loop(db_path):
    llm = ToolSchemaModel(script=script, model_name="scripted-loop")
    tools = {"get_weather": get_weather}
    handler = TraceCallbackHandler(db=db_path)

    @chain
    def weather_loop(question: str) -> list[BaseMessage]:
        bound = llm.bind_tools(list(tools.values()))
        messages: list[BaseMessage] = [SystemMessage("You check the weather."),
                                       HumanMessage(question)]
        for _ in range(MAX_ITERATIONS):
            ai = bound.invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                break
            for tc in ai.tool_calls:
                try:
                    messages.append(tools[tc["name"]].invoke(tc))
                except ValueError as exc:
                    from langchain_core.messages import ToolMessage

                    messages.append(ToolMessage(str(exc), tool_call_id=tc["id"],
                                                status="error"))
        return messages

    final = weather_loop.invoke("Oslo or Atlantis?", config={"callbacks": [handler]})
    handler.close()
    (run_id,) = [r[0] for r in rows(db_path, "SELECT id FROM runs")]
    assert_gapless(db_path, run_id)
    with TraceDB(db_path) as tdb:
        run = tdb.run(run_id)
    assert run.summary.status == "completed"
    assert run.summary.model == "scripted-loop"
    evs = [(e.hook, e.phase, e.tool_call_id) for e in run.events]
    assert evs == [
        ("run", "start", None),
        ("model", "enter", None), ("model", "exit", None),
        ("tool", "enter", "h1"), ("tool", "exit", "h1"),
        ("tool", "enter", "h2"), ("tool", "error", "h2"),
        ("model", "enter", None), ("model", "exit", None),
        ("run", "end", None),
    ]
    assert [e.lap for e in run.events if e.hook == "model"] == [1, 1, 2, 2]
    enter1 = run.events[1].payload
    # The exact request: the system prompt, the messages sent and the tool schemas.
    assert enter1["system"] == "You check the weather."
    assert enter1["messages"] == 1
    assert enter1["tools"][0]["function"]["name"] == "get_weather"
    assert enter1["tools"][0]["function"]["parameters"]["required"] == ["city"]
    enter2 = run.events[7].payload
    assert enter2["messages"] == 4 and enter2.get("system_same")
    err = run.events[6].payload
    assert "no such city" in err["error"]
    # Messages once each, at the right positions, ToolMessages paired by id.
    convo = [m for m in final if not isinstance(m, SystemMessage)]
    assert [(m.type, m.tool_call_id) for m in run.messages] == [
        (m.type, getattr(m, "tool_call_id", None)) for m in convo]
    assert [m.position for m in run.messages] == list(range(len(convo)))
    assert run.messages[1].tool_calls[1]["id"] == "h2"
    # The manual error ToolMessage that the loop appended is there too (seen at model call 2).
    assert run.messages[3].status == "error"
    replay = build_replay(run)
    assert [m.type for m in replay.messages_at(2)] == ["human", "ai"]
    assert replay.pending_calls(3) == {"h1", "h2"}
    assert replay.pending_calls(4) == {"h2"}


BARE_LOOP = '''
import sys
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from tracer import TraceCallbackHandler
from tracer.testing import ScriptedChatModel, tool_call

@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"

llm = ScriptedChatModel(script=[
    AIMessage("", tool_calls=[tool_call("get_weather", {"city": "Oslo"}, "c1")]),
    AIMessage("Sunny in Oslo.")])
handler = TraceCallbackHandler(db=sys.argv[1])
cfg = {"callbacks": [handler]}
messages = [HumanMessage("Weather in Oslo?")]
while True:
    ai = llm.bind_tools([get_weather]).invoke(messages, config=cfg)
    messages.append(ai)
    if not ai.tool_calls:
        break
    for tc in ai.tool_calls:
        messages.append(get_weather.invoke(tc, config=cfg))
'''


def test_a_bare_handlers_loop_that_exits_normally_is_completed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 47, untrue 9: a hand-rolled loop traced with a bare ``TraceCallbackHandler``
    (no ``@chain`` parent, no ``close()``) was recorded as ``error``, "the process exited
    while it was still running", when its process exited normally with every call
    answered."""
    import subprocess
    import sys

    db = tmp_path / "bare.db"
    script = tmp_path / "bare_loop.py"
    script.write_text(BARE_LOOP)
    subprocess.run([sys.executable, str(script), str(db)], check=True, timeout=120)
    with TraceDB(db) as tdb:
        (run,) = tdb.runs()
    assert (run.name, run.status, run.error) == ("loop", "completed", None)
    assert (run.model_calls, run.tool_calls) == (2, 1)
