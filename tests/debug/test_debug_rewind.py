"""Rewind (issue 45, item 6): at a pause, go back to step K of the run and go on from
there with an edit, as a fork of it: the steps before K served from the record with
no model or tool call, the edit made at K, the same breakpoints hit after it, the fork
linked as forks are, the paused run left paused. Real agents in this process (built
through ``looptrace debug``'s wrapper of ``create_agent``, as a script's are), scripted
models whose calls are counted, real SQLite files; the test drives the pauses through
the channel as the terminal, the app and MCP do."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from debug_kit import Background, wait_paused
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from tracer_kit import make_agent

from tracer import TraceCallbackHandler, TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.debug.nodes import watch
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.errors import LooptraceError, UsageError
from tracer.read.fork_links import forks_of
from tracer.read.loader import TraceDB
from tracer.record import node_hook
from tracer.record.autohook import capturing
from tracer.whatif.rewind import check

QUESTION = {"messages": [("user", "Weather?")]}
# the steps of the record (as the replay shows them, from 1): 3-4 model call 1, 6-7 the
# Oslo tool call, 9-10 model call 2, 12-13 the Paris tool call, 15-16 model call 3
K = 9  # model call 2
PAUSED_AT = 16  # the breakpoint model:3


class Counted:
    """The agent's model and tool, each call counted."""

    def __init__(self) -> None:
        self.model = 0
        self.tool = 0

    def turn(self, reply: Any) -> Callable[[Sequence[BaseMessage]], AIMessage]:
        def answer(messages: Sequence[BaseMessage]) -> AIMessage:
            self.model += 1
            return reply(messages) if callable(reply) else reply

        return answer

    def chat_model(self) -> ScriptedChatModel:
        def last(messages: Sequence[BaseMessage]) -> AIMessage:
            system = [m.content for m in messages if isinstance(m, SystemMessage)]
            said = "; ".join(str(m.content) for m in messages if isinstance(m, ToolMessage))
            return AIMessage(f"[{' '.join(str(s) for s in system)}] {said}")

        return ScriptedChatModel(script=turn_script([
            self.turn(AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")])),
            self.turn(AIMessage("", tool_calls=[call("get_weather", {"city": "Paris"}, "c2")])),
            self.turn(last)]))

    def tools(self, is_async: bool) -> list[Any]:
        if is_async:
            @tool
            async def get_weather(city: str) -> str:
                """Weather for a city (async only)."""
                await asyncio.sleep(0)
                self.tool += 1
                return f"Sunny in {city}"
        else:
            @tool
            def get_weather(city: str) -> str:
                """Weather for a city."""
                self.tool += 1
                return f"Sunny in {city}"
        return [get_weather]


def _agent(db: Path, counted: Counted, breaks: Any, *, is_async: bool = False,
           captured: bool = True) -> tuple[Background, TraceMiddleware]:
    """The agent as a script under ``looptrace debug`` builds it (``captured``: through
    its wrapper of ``create_agent``), run in a thread."""
    trace = TraceMiddleware(db=db, debug=breaks)
    make = capturing(create_agent) if captured else create_agent
    agent = make(counted.chat_model(), tools=counted.tools(is_async), middleware=[trace],
                 system_prompt="Be brief.")
    if is_async:
        async def go() -> Any:
            with blockbuster_ctx():
                return await agent.ainvoke(QUESTION)
        return Background(go, is_async=True), trace
    return Background(lambda: agent.invoke(QUESTION)), trace


def _meta(db: Path, run: str) -> dict[str, Any]:
    with sqlite3.connect(db) as c:
        return dict(json.loads(c.execute("SELECT metadata FROM runs WHERE id = ?",
                                         [run]).fetchone()[0]))


def _pauses_of(db: Path, run: str) -> list[tuple[str | None, str | None]]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT command, outcome FROM debug_pauses WHERE run_id = ?"
                         " ORDER BY id", [run]).fetchall()


def _wait_other(db: Path, run: str, alive: Callable[[], bool]) -> dict[str, Any]:
    """The first open pause of a run other than ``run`` (the fork's)."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        got = [p for p in channel.list_paused(db, with_pending=True) if p["run"] != run]
        if got:
            return got[0]
        time.sleep(0.02)
    msg = "the fork did not pause"
    raise AssertionError(msg)


def _wait_original(db: Path, run: str) -> dict[str, Any]:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        got = [p for p in channel.list_paused(db, with_pending=True) if p["run"] == run]
        if got:
            return got[0]
        time.sleep(0.02)
    msg = "the paused run did not pause again"
    raise AssertionError(msg)


def _wait_ended(db: Path, run: str) -> str:
    end = time.monotonic() + 60
    while time.monotonic() < end:
        with sqlite3.connect(db) as c:
            row = c.execute("SELECT status FROM runs WHERE id = ?", [run]).fetchone()
        if row is not None and row[0] != "running":
            return str(row[0])
        time.sleep(0.05)
    msg = f"run {run} did not end"
    raise AssertionError(msg)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_rewind_serves_the_steps_before_k_and_pauses_after_it(tmp_path: Path,
                                                                 mode: str) -> None:
    # (before: a pause could only go on; going back meant a new run from the start,
    # every model and tool call made again)
    db = tmp_path / "t.db"
    counted = Counted()
    bg, trace = _agent(db, counted, ["model:3"], is_async=mode == "async")
    p = wait_paused(db, alive=bg.alive)[0]
    run = p["run"]
    assert (p["step"], p["hook"], p["at"]) == (PAUSED_AT, "wrap_model_call", "before")
    assert p["pending"]["rewind"] == {"can": True, "why": None,
                                      "agent": "the create_agent call of the script"}
    assert (counted.model, counted.tool) == (2, 2)

    channel.arm(db, "model:1")  # (its step is before K: the fork must not pause there)
    got = channel.rewind(db, run, K, [{"kind": "system", "text": "Be verbose."}],
                         pause=p["pause"])
    assert got["step"] == K and got["edits"] == [{"kind": "system", "text": "Be verbose."}]
    fork = _wait_other(db, run, bg.alive)
    # the fork paused at its own model:3, after K; before K nothing ran: the call at K
    # (the edit made it leave the record) and the Paris tool call after it ran live
    assert (fork["step"], fork["hook"], fork["reason"]) == (PAUSED_AT, "wrap_model_call",
                                                            "model:3")
    assert (counted.model, counted.tool) == (3, 3)
    sent = fork["pending"]
    assert sent["system"] == "Be verbose."  # (the edit holds from K on)
    assert [m["text"] for m in sent["messages"] if m["type"] == "tool"] == [
        "Sunny in Oslo", "Sunny in Paris"]
    # the paused run stays paused where it was, its reason naming the fork
    again = _wait_original(db, run)
    assert again["pause"] != p["pause"]
    assert (again["hook"], again["at"]) == ("wrap_model_call", "before")
    assert again["reason"] == (f"rewound to step {K} as run {fork['run'][:12]}; this run "
                               "stays paused here")
    assert _pauses_of(db, run)[0] == ("rewind", "rewound")

    channel.answer(db, fork["run"], "continue", pause=fork["pause"])
    assert _wait_ended(db, fork["run"]) == "completed"
    assert (counted.model, counted.tool) == (4, 3)
    channel.answer(db, run, "continue", pause=again["pause"])
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content == "[Be brief.] Sunny in Oslo; Sunny in Paris"
    assert (counted.model, counted.tool) == (5, 3)

    # the record: the fork linked as forks are, and what it holds, written by hand
    with TraceDB(db) as tdb:
        linked = forks_of(tdb, run)
        fork_run = tdb.run(fork["run"])
    meta = _meta(db, fork["run"])
    assert [f.run_id for f in linked] == [fork["run"]]
    assert linked[0].step == K and linked[0].edit == {"kind": "system", "text": "Be verbose."}
    assert meta["forked_from"] == {"run": run, "step": K, "rewind": True,
                                   "edit": {"kind": "system", "text": "Be verbose."}}
    assert [(m.type, m.text) for m in fork_run.messages if m.type != "system"] == [
        ("human", "Weather?"), ("ai", " get_weather({'city': 'Oslo'})"),
        ("tool", "Sunny in Oslo"), ("ai", " get_weather({'city': 'Paris'})"),
        ("tool", "Sunny in Paris"), ("ai", "[Be verbose.] Sunny in Oslo; Sunny in Paris")]
    with sqlite3.connect(db) as c:
        fork_pauses = c.execute("SELECT reason, outcome FROM debug_pauses WHERE run_id = ?",
                                [fork["run"]]).fetchall()
    assert fork_pauses == [("model:3", "continued")]  # (none before K)


def test_several_edits_at_k_and_none(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    counted = Counted()
    bg, trace = _agent(db, counted, ["model:3"])
    p = wait_paused(db, alive=bg.alive)[0]
    run = p["run"]
    edits = [{"kind": "system", "text": "Be verbose."},
             {"kind": "insert", "position": 1, "text": "In Celsius.", "role": "human"}]
    channel.rewind(db, run, K, edits, pause=p["pause"])
    fork = _wait_other(db, run, bg.alive)
    sent = fork["pending"]
    assert sent["system"] == "Be verbose."
    assert [m["text"] for m in sent["messages"]][:2] == ["Weather?", "In Celsius."]
    channel.answer(db, fork["run"], "run", pause=fork["pause"])
    _wait_ended(db, fork["run"])
    # a rewind with no edit: served to the step paused at, then live (the record ends there)
    again = _wait_original(db, run)
    before = (counted.model, counted.tool)
    channel.rewind(db, run, 3, pause=again["pause"])
    plain = [q for q in [_wait_other(db, run, bg.alive)] if q["run"] != fork["run"]]
    while not plain:
        plain = [q for q in channel.list_paused(db, with_pending=True)
                 if q["run"] not in (run, fork["run"])]
        time.sleep(0.02)
    assert (counted.model, counted.tool) == before  # (every call before the pause: served)
    assert plain[0]["pending"]["system"] == "Be brief."
    channel.answer(db, plain[0]["run"], "run", pause=plain[0]["pause"])
    _wait_ended(db, plain[0]["run"])
    channel.answer(db, run, "run", pause=_wait_original(db, run)["pause"])
    bg.result()
    trace.flush()
    meta, plain_meta = _meta(db, fork["run"]), _meta(db, plain[0]["run"])
    assert meta["forked_from"]["edits"] == [
        {"kind": "system", "text": "Be verbose."},
        {"kind": "insert", "position": 1, "text": "In Celsius.", "role": "human"}]
    assert plain_meta["forked_from"] == {"run": run, "step": 3, "edit": None, "rewind": True}


def test_what_cannot_be_rewound_is_one_line_and_the_run_stays_paused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    counted = Counted()
    bg, trace = _agent(db, counted, ["model:3"])
    p = wait_paused(db, alive=bg.alive)[0]
    run, pause = p["run"], p["pause"]
    for step, edits, said in (
            (17, None, (f"rewind: step 17 is out of range: this run is paused at step "
                        f"{PAUSED_AT}, it rewinds to a step from 1 to {PAUSED_AT}")),
            (0, None, "rewind: step 0 is out of range"),
            (K, {"kind": "reply", "text": "x"}, "a rewind makes the edits a fork makes"),
            (K, [{"kind": "system", "text": "a"}, {"kind": "tool_result", "text": "b"}],
             "several edits at a rewind are made at one model call"),
            (K, {"kind": "system"}, "the system edit needs text")):
        with pytest.raises(LooptraceError) as exc:
            channel.rewind(db, run, step, edits, pause=pause)
        assert str(exc.value).startswith(said) and "\n" not in str(exc.value)
    # checked against the record (the terminal, MCP and the app ask first)
    with pytest.raises(LooptraceError, match="there is no message 7"):
        check(str(db), run, K, [{"kind": "message", "position": 7, "text": "x"}])
    assert [q["pause"] for q in channel.list_paused(db)] == [pause]  # nothing written
    assert _pauses_of(db, run) == [(None, None)]
    channel.answer(db, run, "run", pause=pause)
    bg.result()
    trace.close()


def test_an_agent_not_built_by_create_agent_under_looptrace_debug_cannot_be(
        tmp_path: Path) -> None:
    # (an agent whose create_agent call looptrace never saw: nothing to build it from)
    db = tmp_path / "t.db"
    bg, trace = _agent(db, Counted(), ["model:3"], captured=False)
    p = wait_paused(db, alive=bg.alive)[0]
    why = ("this agent was not built by create_agent under looptrace debug (a graph the "
           "script compiled itself, or an agent armed outside looptrace debug): name its "
           "factory with looptrace debug --agent MODULE:FACTORY to rewind it")
    assert p["pending"]["rewind"] == {"can": False, "agent": None, "why": why}
    with pytest.raises(UsageError) as exc:
        channel.rewind(db, p["run"], 3, pause=p["pause"])
    assert str(exc.value) == f"cannot rewind: {why}"
    assert [q["pause"] for q in channel.list_paused(db)] == [p["pause"]]
    channel.answer(db, p["run"], "run", pause=p["pause"])
    bg.result()
    trace.close()


def test_a_plain_state_graph_cannot_be_rewound(tmp_path: Path) -> None:
    from typing import TypedDict

    class State(TypedDict):
        count: int

    g = StateGraph(State)
    g.add_node("bump", lambda s: {"count": s["count"] + 1})
    g.add_edge(START, "bump")
    g.add_edge("bump", END)
    graph = g.compile()
    db = tmp_path / "nodes.db"
    dbg = Debugger(["node:bump"])
    dbg.bind(db)
    w = watch(dbg)
    try:
        handler = TraceCallbackHandler(db=db)
        bg = Background(lambda: graph.invoke({"count": 1}, config={"callbacks": [handler]}))
        p = wait_paused(db, alive=bg.alive)[0]
        assert p["pending"]["rewind"]["can"] is False
        with pytest.raises(UsageError, match="^cannot rewind: this agent was not built by "
                                             "create_agent under looptrace debug"):
            channel.rewind(db, p["run"], 1, pause=p["pause"])
        channel.answer(db, p["run"], "continue", pause=p["pause"])
        assert bg.result() == {"count": 2}
    finally:
        node_hook.unregister(w)


def test_a_factory_named_with_agent_builds_it(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # (looptrace debug --agent MODULE:FACTORY: the agent built by the factory, not the
    # create_agent call seen)
    import sys
    import types

    db = tmp_path / "t.db"
    counted = Counted()
    trace = TraceMiddleware(db=db, debug=["model:3"])
    model, tools = counted.chat_model(), counted.tools(False)
    built: list[int] = []

    def make_agent_(middleware: Any = (trace,)) -> Any:
        built.append(1)
        return make_agent(model, tools, list(middleware), system_prompt="Be brief.")

    mod = types.ModuleType("rewind_factory_mod")
    mod.make = make_agent_  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rewind_factory_mod", mod)
    monkeypatch.setenv("LOOPTRACE_REWIND_AGENT", "rewind_factory_mod:make")
    agent = make_agent_()
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    assert p["pending"]["rewind"]["agent"] == "rewind_factory_mod:make"
    channel.rewind(db, p["run"], K, {"kind": "system", "text": "Be verbose."},
                   pause=p["pause"])
    fork = _wait_other(db, p["run"], bg.alive)
    assert built == [1, 1] and (counted.model, counted.tool) == (3, 3)
    channel.answer(db, fork["run"], "run", pause=fork["pause"])
    _wait_ended(db, fork["run"])
    channel.answer(db, p["run"], "run", pause=_wait_original(db, p["run"])["pause"])
    bg.result()
    trace.flush()
    with TraceDB(db) as tdb:
        fork_run = tdb.run(fork["run"])
    assert fork_run.messages[-1].text == "[Be verbose.] Sunny in Oslo; Sunny in Paris"
