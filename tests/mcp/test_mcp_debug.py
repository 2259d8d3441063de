"""A coding agent debugs a live agent through the official MCP SDK's client:
list_paused, get_pending, then resume with an edit; breakpoints set and cleared."""

from __future__ import annotations

import asyncio
import operator
import time
from pathlib import Path
from typing import Annotated, TypedDict

from debug_kit import Background
from test_mcp_server import run_with
from tracer_kit import get_price, get_weather, make_agent

from langgraph.graph import END, START, StateGraph

from tracer import TraceCallbackHandler, TraceMiddleware
from tracer.debug import Debugger
from tracer.debug.nodes import watch
from tracer.record import node_hook
from tracer.demo.models import ScriptedChatModel, call, turn_script


def _agent(db: Path, debug: object) -> Background:
    from langchain_core.messages import AIMessage, ToolMessage

    def quote(msgs):
        return AIMessage("The tool said: " + [m for m in msgs if isinstance(m, ToolMessage)][-1]
                         .content)

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]), quote]))
    trace = TraceMiddleware(db=db, debug=debug)
    agent = make_agent(model, [get_weather, get_price], [trace])
    return Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))


async def _until(client, tool: str, test, timeout: float = 30.0):  # noqa: ANN001, ANN202
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = await client.call(tool)
        if test(got):
            return got
        await asyncio.sleep(0.05)
    raise AssertionError(f"{tool}: nothing after {timeout} s")


def test_list_paused_get_pending_and_resume_with_an_edit(store_db):
    """On each engine (``looptrace mcp --db`` a file, then a PostgreSQL URL)."""
    db = store_db
    bg = _agent(db, ["tool:get_weather"])

    async def body(client) -> None:  # noqa: ANN001
        got = await _until(client, "list_paused", lambda g: g["paused"])
        p = got["paused"][0]
        assert (p["hook"], p["at"], p["pending_kind"]) == ("wrap_tool_call", "before",
                                                           "tool_call")
        pend = await client.call("get_pending", run=p["run"][:8])
        assert pend["pending"]["tool_call"]["args"] == {"city": "Oslo"}
        said = await client.error("resume", run=p["run"], edit_kind="tool_args", args=None)
        assert "needs args" in said
        said = await client.error("resume", run=p["run"], edit_kind="drop", position=0)
        assert "does not apply to a pending tool call" in said
        out = await client.call("resume", run=p["run"], edit_kind="tool_result",
                                text="Hail, 2 C")
        assert out["edit"] == {"kind": "tool_result", "text": "Hail, 2 C"}
        said = await client.error("resume", run=p["run"])
        assert "is not paused" in said

    run_with("stdio", db, body)
    out = bg.result()
    assert out["messages"][-1].content == "The tool said: Hail, 2 C"


def test_a_breakpoint_set_over_mcp_pauses_a_listening_agent(store_db):
    """On each engine: on PostgreSQL the breakpoint reaches the agent by NOTIFY."""
    db = store_db
    TraceMiddleware(db=db).recorder.writer.flush()  # (the file exists for the server)

    async def body(client) -> None:  # noqa: ANN001
        said = await client.error("set_breakpoint", spec="hook:nowhere")
        assert "no hook 'nowhere'" in said
        armed = await client.call("set_breakpoint", spec="model:2")
        assert armed["spec"] == "model:2"
        bg = _agent(db, True)
        got = await _until(client, "list_paused", lambda g: g["paused"])
        p = got["paused"][0]
        assert (p["hook"], p["reason"]) == ("wrap_model_call", "model:2")
        assert (await client.call("clear_breakpoints"))["cleared"] == 1
        await client.call("resume", run=p["run"], edit_kind="reply", text="Done by MCP.")
        await asyncio.to_thread(bg.result)
        assert (await client.call("list_paused"))["paused"] == []

    run_with("stdio", db, body)


def test_the_playground_over_mcp(sample_db):
    async def body(client) -> None:  # noqa: ANN001
        first = await client.call("playground", run="openai-weather", step=1)
        out = await client.call("playground", run="openai-weather", step=first["step"] + 1,
                                edit_kind="system", text="Be brief.")
        assert out["model_call"] == 2 and out["request"]["system"] == "Be brief."
        assert out["recorded_answer"]["text"].startswith("Here is the weather")
        assert set(out["wire"]) == {"openai", "anthropic", "ollama"}
        said = await client.error("playground", run="openai-weather", step=1,
                                  edit_kind="drop", position=9)
        assert "outside the request's messages" in said

    run_with("stdio", sample_db, body)


def test_parallel_pauses_answered_over_mcp_by_their_ids_with_json_text(tmp_path):
    # (before: resume was addressed per run, so answers reached the wrong calls; and a
    # text that is JSON was parsed into an object and refused: "Input should be a valid
    # string")
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool

    @tool
    async def fetch_price(item: str) -> str:
        """Price of an item."""
        return f"{item}: 10 EUR"

    def by_call(msgs):  # noqa: ANN001, ANN202
        got = sorted((m.tool_call_id, m.content) for m in msgs if isinstance(m, ToolMessage))
        return AIMessage("; ".join(f"{k}={v}" for k, v in got))

    calls = [call("fetch_price", {"item": f"item{i}"}, f"p{i}") for i in (1, 2, 3)]
    model = ScriptedChatModel(script=turn_script([AIMessage("", tool_calls=calls), by_call]))
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db, debug=["tool:fetch_price"])
    agent = make_agent(model, [fetch_price], [trace])
    bg = Background(lambda: agent.ainvoke({"messages": [("user", "Prices?")]}), is_async=True)

    async def body(client) -> None:  # noqa: ANN001
        got = await _until(client, "list_paused", lambda g: len(g["paused"]) == 3)
        ids = {p["tool_call_id"]: p["pause"] for p in got["paused"]}
        run = got["paused"][0]["run"]
        for p in got["paused"]:
            assert (p["hook"], p["at"], p["breakpoint"]) == ("wrap_tool_call", "before",
                                                             "tool:fetch_price")
            assert isinstance(p["step"], int)
        said = await client.error("resume", run=run, edit_kind="tool_result", text="x")
        assert "3 pauses at once" in said and f"pause {ids['p2']}" in said
        pend = await client.call("get_pending", run=run, pause=ids["p3"])
        assert pend["pending"]["tool_call"]["id"] == "p3"
        out = await client.call("resume", run=run, pause=ids["p3"], edit_kind="tool_result",
                                text='{"price": 3, "currency": "EUR"}')
        assert out["edit"]["text"] == '{"price": 3, "currency": "EUR"}'
        await client.call("resume", run=run, pause=ids["p1"], edit_kind="tool_result",
                          text="[1, 2]")
        await client.call("resume", run=run, pause=ids["p2"])
        said = await client.error("resume", run=run, pause=ids["p2"])
        assert f"pause {ids['p2']} was answered already" in said

    run_with("stdio", db, body)
    out = bg.result()
    assert out["messages"][-1].content == (
        'p1=[1, 2]; p2=item2: 10 EUR; p3={"price": 3, "currency": "EUR"}')


class _Items(TypedDict):
    items: Annotated[list, operator.add]
    count: int


def test_a_plain_graph_s_node_pause_over_mcp_state_and_a_state_edit(tmp_path):
    """``get_pending``'s ``state`` and ``resume(edit_kind="state", text=JSON)`` at a node
    of a plain StateGraph (no middleware), as a coding agent drives it."""
    g = StateGraph(_Items)
    g.add_node("bump", lambda s: {"count": s["count"] + 1, "items": ["bumped"]})
    g.add_node("report", lambda s: {"items": [f"saw {s['count']}"]})
    g.add_edge(START, "bump")
    g.add_edge("bump", "report")
    g.add_edge("report", END)
    db = tmp_path / "g.db"
    dbg = Debugger(["node:report"])
    dbg.bind(db)
    w = watch(dbg)
    handler = TraceCallbackHandler(db=db)
    bg = Background(lambda: g.compile().invoke({"items": [], "count": 0},
                                               config={"callbacks": [handler]}))

    async def body(client) -> None:  # noqa: ANN001
        got = await _until(client, "list_paused", lambda g: g["paused"])
        p = got["paused"][0]
        assert (p["hook"], p["at"], p["pending_kind"]) == ("node", "before", "node")
        pend = await client.call("get_pending", run=p["run"])
        assert pend["state"] == {"items": ["bumped"], "count": 1}
        said = await client.error("resume", run=p["run"], edit_kind="state",
                                  text='{"colour": "red"}')
        assert "the state has no key 'colour' (its keys: items, count)" in said
        out = await client.call("resume", run=p["run"], edit_kind="state",
                                text='{"count": 41, "items": ["typed"]}')
        assert out["edit"] == {"kind": "state", "values": {"count": 41, "items": ["typed"]}}

    try:
        run_with("stdio", db, body)
        out = bg.result()
    finally:
        node_hook.unregister(w)
    # through the reducers: items appended (before the node's own write), count set
    assert out == {"items": ["bumped", "typed", "saw 41"], "count": 41}


def test_step_into_a_subagent_and_out_over_mcp(tmp_path):
    from subagent_kit import Deep

    d = Deep(tmp_path)

    async def body(client) -> None:  # noqa: ANN001
        got = await _until(client, "list_paused", lambda g: g["paused"])
        top = got["paused"][0]
        said = await client.error("resume", run=top["run"], command="out")
        assert "nothing to step out of" in said  # (the top run: one line, still paused)
        await client.call("resume", run=top["run"], command="step")
        got = await _until(client, "list_paused",
                           lambda g: g["paused"] and g["paused"][0]["run"] != top["run"])
        into = got["paused"][0]
        assert (into["run_name"], into["parent_run"]) == ("researcher", top["run"])
        pend = await client.call("get_pending", run=into["run"])
        assert pend["pending"]["into"] == {"subagent": "researcher", "parent_run": top["run"],
                                           "tool": "task", "tool_call": "c_no"}
        assert pend["pending"]["out"]["tool_call"] == "c_no"
        await client.call("resume", run=into["run"], command="out")
        got = await _until(client, "list_paused",
                           lambda g: g["paused"] and g["paused"][0]["run"] == top["run"])
        back = got["paused"][0]
        assert (back["hook"], back["at"], back["reason"]) == (
            "wrap_tool_call", "after", "step out of researcher")
        await client.call("resume", run=top["run"], command="continue")

    run_with("stdio", tmp_path / "deep.db", body)
    out = d.finish()
    assert out["messages"][-1].content == "Researcher says: Found: Norway: the capital is Oslo."
