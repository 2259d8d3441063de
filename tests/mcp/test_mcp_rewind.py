"""Rewind over MCP (issue 45, item 6): the ``rewind`` tool at a pause, through the
official MCP SDK's client; the agent built by ``create_agent`` as ``looptrace debug``'s
wrapper sees it, in this process, where the fork runs."""

from __future__ import annotations

import json
import sqlite3

from debug_kit import Background
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from test_mcp_debug import _until
from test_mcp_server import run_with
from tracer_kit import get_weather

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.record.autohook import capturing


def test_rewind_over_mcp_forks_the_paused_run(tmp_path):
    db = tmp_path / "t.db"
    ran: list[str] = []

    def ask(msgs):
        ran.append("model")
        return AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")])

    def quote(msgs):
        ran.append("model")
        return AIMessage("The tool said: " + [m for m in msgs if isinstance(m, ToolMessage)][-1]
                         .content)

    trace = TraceMiddleware(db=db, debug=["model:2"])
    agent = capturing(create_agent)(ScriptedChatModel(script=turn_script([ask, quote])),
                                    tools=[get_weather], middleware=[trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))

    async def body(client) -> None:
        got = await _until(client, "list_paused", lambda g: g["paused"])
        p = got["paused"][0]
        said = await client.error("rewind", run=p["run"], step=99)
        assert "step 99 is out of range" in said
        said = await client.error("rewind", run=p["run"], step=6, edit_kind="reply",
                                  text="x")
        assert "a rewind makes the edits a fork makes" in said
        out = await client.call("rewind", run=p["run"], step=6, edit_kind="tool_result",
                                text="Hail, 2 C")
        assert (out["command"], out["step"]) == ("rewind", 6)
        assert out["edits"] == [{"kind": "tool_result", "text": "Hail, 2 C"}]
        both = await _until(client, "list_paused", lambda g: len(g["paused"]) == 2)
        fork = next(q for q in both["paused"] if q["run"] != p["run"])
        assert fork["breakpoint"] == "model:2"
        again = next(q for q in both["paused"] if q["run"] == p["run"])
        assert again["breakpoint"].startswith(f"rewound to step 6 as run {fork['run'][:12]}")
        pend = await client.call("get_pending", run=fork["run"])
        assert [m["text"] for m in pend["pending"]["messages"]][-1] == "Hail, 2 C"
        await client.call("resume", run=fork["run"], command="run")
        await client.call("resume", run=p["run"], command="run")

    run_with("stdio", db, body)
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content == "The tool said: Sunny in Oslo, 21 C"
    assert ran == ["model", "model", "model"]  # (the fork's model call 1: from the record)
    with sqlite3.connect(db) as c:
        meta = [json.loads(m) for (m,) in c.execute(
            "SELECT metadata FROM runs WHERE metadata IS NOT NULL")]
    assert [m["forked_from"]["step"] for m in meta] == [6]
