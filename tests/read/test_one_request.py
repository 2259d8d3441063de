"""One decoded model call (issue 43, item 1 and 2): every reader gives the same request
and the same tokens.

A hand-rolled loop traced with ``TraceCallbackHandler`` whose ``SystemMessage`` holds
content blocks (Anthropic's prompt caching marks them) and changes after the first
call, and whose tools change too; its third call repeats the second's, so the record
names them (``system_same``, ``tool_names``) without holding them. Every reader must
give each call the system prompt and tools it had: ``looptrace show --step N --json``,
MCP ``get_step``, the diff (against the same loop with plain-string prompts), the
cassette, the OTLP export, the wire render and the app's Wire pane and player. And each
lap's tokens are the same in the Timeline, ``token_jumps``, the captions and the cost.

The bugs: ``show --json`` and ``get_step`` gave ``request.system: null`` for content
blocks; ``diff`` of the two loops said "the model got a different system prompt" at
every call; the OTLP export had no system instructions for them, and no tool
definitions at a call that named its tools (usage without ``total_tokens``, which
LangChain's messages cannot carry, is ``tests/vocab/test_usage.py``'s).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import chain
from langchain_core.tools import tool
from tracer_kit import no_tracer_warnings, rows  # noqa: F401

from tracer import TraceCallbackHandler
from tracer.checks.base import Thresholds
from tracer.checks.loops import token_jumps
from tracer.cli import main
from tracer.demo.models import ScriptedChatModel, call
from tracer.mcp.server import Tools
from tracer.otel.runspans import run_spans
from tracer.read.captions import captions
from tracer.read.cost import Prices, run_costs
from tracer.read.diff import diff_runs
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.whatif.cassette import Cassette
from tracer.wire.view import call_view

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"


@tool
def get_time(city: str) -> str:
    """The time in a city."""
    return f"Noon in {city}"


def _blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


# per call: the system prompt, the tools offered, the usage the reply reports
SYSTEMS = ["You are A.", "You are B now.", "You are B now."]
TOOLS = [["get_weather", "get_time"], ["get_weather"], ["get_weather"]]
USAGE: list[dict[str, int]] = [
    {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110},
    {"input_tokens": 120, "output_tokens": 5, "total_tokens": 125},
    {"input_tokens": 1500, "output_tokens": 20, "total_tokens": 1520},
]
LAP_TOTALS = [110, 125, 1520]


class ToolSchemaModel(ScriptedChatModel):
    """As a real adapter: ``bind_tools`` puts the tool schemas in the call's kwargs."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        from langchain_core.utils.function_calling import convert_to_openai_tool

        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def _script(messages: list[BaseMessage]) -> AIMessage:
    n = sum(1 for m in messages if isinstance(m, AIMessage))
    if n < 2:
        city = ("Oslo", "Bergen")[n]
        reply = AIMessage("", tool_calls=[call("get_weather", {"city": city}, f"c{n}")])
    else:
        reply = AIMessage("Sunny in both.")
    reply.usage_metadata = USAGE[n]  # type: ignore[assignment]
    return reply


def _record(db: Path, name: str, *, blocks: bool) -> str:
    llm = ToolSchemaModel(script=_script, model_name="scripted-loop")
    toolsets = [[get_weather, get_time], [get_weather], [get_weather]]
    handler = TraceCallbackHandler(db=db)

    @chain
    def loop(question: str) -> list[BaseMessage]:
        convo: list[BaseMessage] = [HumanMessage(question)]
        for i in range(3):
            system = SystemMessage(_blocks(SYSTEMS[i]) if blocks else SYSTEMS[i])
            ai = llm.bind_tools(toolsets[i]).invoke([system, *convo])
            convo.append(ai)
            for tc in ai.tool_calls:
                convo.append(ToolMessage(get_weather.invoke(tc["args"]), tool_call_id=tc["id"]))
        return convo

    loop.invoke("Weather in Oslo and Bergen?", config={"callbacks": [handler],
                                                          "run_name": name})
    handler.close()
    (rid,) = rows(db, "SELECT id FROM runs WHERE name = ?", [name])[0]
    return str(rid)


@pytest.fixture
def loops(store_db: str) -> tuple[str, str, str]:
    return store_db, _record(store_db, "blocks", blocks=True), _record(store_db, "plain",
                                                                       blocks=False)


def _call_steps(db: Path, rid: str) -> list[int]:
    """The steps (from 1) of the run's model calls, read from the events table."""
    seqs = [r[0] for r in rows(db, "SELECT seq FROM events WHERE run_id = ? ORDER BY seq",
                               [rid])]
    enters = [r[0] for r in rows(db, "SELECT seq FROM events WHERE run_id = ? AND hook ="
                                 " 'model' AND phase = 'enter' ORDER BY seq", [rid])]
    return [seqs.index(s) + 1 for s in enters]


def _names(schemas: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in schemas]


def test_the_record_names_what_it_does_not_repeat(loops: tuple[Path, str, str]) -> None:
    db, rid, _ = loops
    enters = [json.loads(p) for (p,) in rows(
        db, "SELECT payload FROM events WHERE run_id = ? AND hook = 'model' AND phase ="
        " 'enter' ORDER BY seq", [rid])]
    assert [e.get("system") for e in enters] == [_blocks(SYSTEMS[0]), _blocks(SYSTEMS[1]), None]
    assert enters[2].get("system_same") is True
    assert [_names(e["tools"]) if "tools" in e else None for e in enters] == [
        TOOLS[0], TOOLS[1], None]
    assert enters[2]["tool_names"] == ["get_weather"]


def test_show_and_mcp_give_each_call_its_system_prompt_and_tools(
        loops: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    db, rid, _ = loops
    steps = _call_steps(db, rid)
    tools = Tools(db)
    for i, step in enumerate(steps):
        capsys.readouterr()
        assert main(["show", rid, "--step", str(step), "--json", "--db", str(db)]) == 0
        shown = json.loads(capsys.readouterr().out)["request"]
        assert shown["system"] == SYSTEMS[i], f"show, call {i + 1}"
        assert shown["system_blocks"] == _blocks(SYSTEMS[i])
        assert _names(shown["tools"]) == TOOLS[i], f"show, call {i + 1}"
        mcp = tools.get_step(rid, step)["request"]
        assert mcp == shown


def test_diff_against_plain_string_prompts_finds_no_set_up_difference(
        loops: tuple[Path, str, str]) -> None:
    db, rid, plain = loops
    with TraceDB(db) as tdb:
        d = diff_runs(tdb.run(rid), tdb.run(plain))
    assert [(x.kind, x.description) for x in d.differences] == []
    assert d.identical


def test_the_cassette_matches_each_call_by_its_system_prompt_and_tools(
        loops: tuple[Path, str, str]) -> None:
    db, rid, plain = loops
    with TraceDB(db) as tdb:
        calls = Cassette.load(tdb, rid).model_calls[rid]
        plain_calls = Cassette.load(tdb, plain).model_calls[plain]
    assert [c.request.system for c in calls] == SYSTEMS
    assert [c.request.tools for c in calls] == [tuple(sorted(t)) for t in TOOLS]
    assert [c.tokens for c in calls] == LAP_TOTALS
    for c, p in zip(calls, plain_calls, strict=True):  # (the live request of the other)
        assert c.request.matches(p.request)


def test_the_otlp_export_gives_each_chat_its_system_prompt_and_tools(
        loops: tuple[Path, str, str]) -> None:
    db, rid, _ = loops
    with TraceDB(db) as tdb:
        chats = [s for s in run_spans(tdb, rid)
                 if s.attributes.get("gen_ai.operation.name") == "chat"]
    chats.sort(key=lambda s: s.attributes["looptrace.seq"])
    assert [json.loads(s.attributes["gen_ai.system_instructions"]) for s in chats] == [
        [{"type": "text", "content": t}] for t in SYSTEMS]
    assert [[d["name"] for d in json.loads(s.attributes["gen_ai.tool.definitions"])]
            for s in chats] == TOOLS
    assert [(s.attributes["gen_ai.usage.input_tokens"], s.attributes[
        "gen_ai.usage.output_tokens"]) for s in chats] == [(100, 10), (120, 5), (1500, 20)]


def test_the_wire_render_and_the_app_give_each_call_its_system_prompt_and_tools(
        loops: tuple[Path, str, str]) -> None:
    from app.panes.wire_pane import call_view as app_call_view

    db, rid, _ = loops
    with TraceDB(db) as tdb:
        run = tdb.run(rid)
    rp = build_replay(run)
    enters = [e for e in run.events if e.hook == "model" and e.phase == "enter"]
    for i, enter in enumerate(enters):
        view = call_view(rp, enter, [])
        body = view.bodies["openai"].request
        assert body is not None
        assert body["messages"][0] == {"role": "system", "content": SYSTEMS[i]}
        assert [t["function"]["name"] for t in body["tools"]] == TOOLS[i]
        anthropic = view.bodies["anthropic"].request
        assert anthropic is not None and anthropic["system"] == SYSTEMS[i]
        app = app_call_view(str(db), rp, enter.seq).call  # (the app's Wire pane)
        assert app.system == SYSTEMS[i]
        assert [t["function"]["name"] for t in app.tools] == TOOLS[i]
    assert rp.system_prompt() == SYSTEMS[0]  # (the player, the Compare and Fork panes)


def test_each_lap_has_the_same_tokens_in_every_reader(loops: tuple[Path, str, str],
                                                       tmp_path: Path) -> None:
    from app.screens.timeline.timeline import tokens_per_lap

    db, rid, _ = loops
    with TraceDB(db) as tdb:
        run = tdb.run(rid)
        f = tmp_path / "prices.toml"
        f.write_text('[models."scripted-loop"]\ninput_per_mtok = 1\noutput_per_mtok = 1\n')
        cost = run_costs(tdb, [rid], Prices.load(f))[rid]
    rp = build_replay(run)
    assert tokens_per_lap(rp) == [{"lap": lap, "input": u["input_tokens"],
                                   "output": u["output_tokens"]}
                                  for lap, u in enumerate(USAGE, 1)]
    (jump,) = token_jumps(run, Thresholds())
    assert jump.message.startswith("Lap 3 used 1520 tokens, 12.2x lap 2 (125)")
    said = [c for s, c in zip(rp.steps, captions(rp), strict=True)
            if s.event.hook == "model" and s.event.phase == "exit"]
    assert [re.findall(r"(\d+) tokens", c) for c in said] == [[str(t)] for t in LAP_TOTALS]
    assert [c.lap for c in cost.calls] == [1, 2, 3]
    # at $1 a million tokens in and out, each call costs its tokens
    assert [c.usd for c in cost.calls] == [Decimal(t) / 1_000_000 for t in LAP_TOTALS]
