"""The workshop exercise (docs/guide/workshop.md): pause before the second model call,
delete the ToolMessage, continue, and see the provider's 400 from the emulator, for each
provider's real LangChain adapter."""

from __future__ import annotations

import pytest
from debug_kit import Background, wait_paused
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from tracer import TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.demo.providers import chat_model, scenario_tools
from tracer.read.loader import TraceDB
from tracer.wire.proxy import WireServer
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_deleting_the_tool_message_before_the_second_call_gets_the_providers_400(
        tmp_path, provider):
    db = tmp_path / "workshop.db"
    with WireServer(mode="emulate", script="weather") as srv:
        trace = TraceMiddleware(db=db, debug=Debugger(["model:2"]))
        agent = create_agent(chat_model(provider, srv.url), tools=scenario_tools("weather"),
                             middleware=[trace], system_prompt=WEATHER_SYSTEM)
        bg = Background(lambda: agent.invoke({"messages": [HumanMessage(WEATHER_PROMPT)]}))
        p = wait_paused(db, alive=bg.alive, timeout=60)[0]
        msgs = p["pending"]["messages"]
        tools = [m["position"] for m in msgs if m["type"] == "tool"]
        assert tools, msgs
        # (one is enough: the call it answered is left dangling)
        channel.answer(db, p["run"], "continue", {"kind": "drop", "position": tools[-1]})
        with pytest.raises(Exception) as err:  # noqa: PT011 - the SDK's own error class
            bg.result()
        trace.flush()
    said = str(err.value)
    assert "400" in said or "Error code: 400" in said, said
    with TraceDB(db) as tdb:
        run = tdb.runs()[0]
    assert run.status == "error"
