"""The debugger at graph nodes (``node:NAME``, and ``step`` / ``error`` / ``text:`` on a
plain graph), with no code change in the graph: a plain ``StateGraph`` with a custom
state and reducers, a subgraph, ``create_agent``'s own nodes; sync, and async under
blockbuster. What is pending (``state``), state edits through the reducers, bad edits."""

from __future__ import annotations

import asyncio
import json
import operator
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from blockbuster import blockbuster_ctx
from debug_kit import Background, wait_paused
from langchain_core.messages import AIMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from tracer_kit import get_weather, make_agent

from tracer import TraceCallbackHandler, TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.debug.nodes import watch
from tracer.demo.models import ScriptedChatModel, turn_script
from tracer.errors import InvalidOption
from tracer.record import node_hook


class Counter(TypedDict):
    messages: Annotated[list, add_messages]
    items: Annotated[list, operator.add]  # a custom reducer
    count: int  # no reducer: the last write
    note: str


def _bump(s: Counter) -> dict[str, Any]:
    return {"count": s["count"] + 1, "items": ["bumped"]}


def _report(s: Counter) -> dict[str, Any]:
    said = f"count={s['count']} items={s['items']} said={[m.content for m in s['messages']]}"
    return {"note": said, "messages": [AIMessage("reported", id="ai-report")]}


async def _abump(s: Counter) -> dict[str, Any]:
    await asyncio.sleep(0)
    return _bump(s)


async def _areport(s: Counter) -> dict[str, Any]:
    await asyncio.sleep(0)
    return _report(s)


def counter_graph(*, is_async: bool = False) -> Any:
    g = StateGraph(Counter)
    g.add_node("bump", _abump if is_async else _bump)
    g.add_node("report", _areport if is_async else _report)
    g.add_edge(START, "bump")
    g.add_edge("bump", "report")
    g.add_edge("report", END)
    return g.compile()


START_STATE = {"messages": [("user", "hi")], "items": [], "count": 0, "note": ""}


@pytest.fixture
def armed(tmp_path: Path) -> Iterator[Any]:
    """``arm(specs)``: a debugger watching every node, recording into ``db`` through a
    callback handler (as ``looptrace debug`` does); unwatched at the end."""
    made: list[Any] = []

    def arm(specs: Any) -> tuple[Path, TraceCallbackHandler]:
        db = tmp_path / "nodes.db"
        dbg = Debugger(specs)
        dbg.bind(db)
        made.append(watch(dbg))
        made.append(dbg)
        return db, TraceCallbackHandler(db=db)

    yield arm
    for w in made[::2]:
        node_hook.unregister(w)


def _events(db: Path) -> list[tuple[str, str, dict[str, Any]]]:
    with sqlite3.connect(db) as c:
        return [(h, ph, json.loads(p) if p else {}) for h, ph, p in c.execute(
            "SELECT hook, phase, payload FROM events ORDER BY seq")]


def _run(graph: Any, handler: Any, *, is_async: bool = False) -> Background:
    cfg = {"callbacks": [handler]}
    if is_async:
        async def go() -> Any:
            with blockbuster_ctx():
                return await graph.ainvoke(START_STATE, config=cfg)
        return Background(go, is_async=True)
    return Background(lambda: graph.invoke(START_STATE, config=cfg))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_node_breakpoint_on_a_plain_graph_shows_the_input_and_edits_it_through_the_reducers(
        armed: Any, mode: str) -> None:
    db, handler = armed(["node:report"])
    bg = _run(counter_graph(is_async=mode == "async"), handler, is_async=mode == "async")
    p = wait_paused(db, alive=bg.alive)[0]
    pend = p["pending"]
    assert (p["hook"], p["at"], p["reason"]) == ("node", "before", "node:report")
    assert pend["kind"] == "node" and pend["node"] == "report"
    assert pend["keys"] == ["messages", "items", "count", "note"]
    # the input the node will receive: every key, bump's update applied
    assert pend["state"]["count"] == 1 and pend["state"]["items"] == ["bumped"]
    assert [m["text"] for m in pend["state"]["messages"]] == ["hi"]
    channel.answer(db, p["run"], "continue", {"kind": "state", "text": json.dumps(
        {"messages": [{"role": "user", "content": "also this"}], "items": ["edited"],
         "count": 7})})
    out = bg.result()
    handler.close()
    # the node received the edit through each key's reducer: add_messages appended,
    # operator.add appended, count (no reducer) set
    assert out["note"] == "count=7 items=['bumped', 'edited'] said=['hi', 'also this']"
    # and the edit stayed in the graph's state, before the node's own writes
    assert [m.content for m in out["messages"]] == ["hi", "also this", "reported"]
    assert out["items"] == ["bumped", "edited"] and out["count"] == 7
    ev = _events(db)
    kinds = [(h, ph) for h, ph, _ in ev]
    # the pause and the edit are steps of the graph's record, before the node's step
    assert kinds.index(("node", "pause")) < kinds.index(("node", "debug")) < [
        i for i, (h, ph, pl) in enumerate(ev) if pl.get("node") == "report" and ph == "fire"][0]
    debug = next(pl for h, ph, pl in ev if ph == "debug")
    assert debug["outcome"] == "edited" and debug["change"] == "state changed: messages, items, count"
    assert debug["before"]["state"]["count"] == 1 and debug["after"]["state"]["count"] == 7


def test_after_a_node_its_update_is_shown_and_an_edit_takes_the_place_of_what_it_wrote(
        armed: Any) -> None:
    db, handler = armed(["node:bump:after"])
    bg = _run(counter_graph(), handler)
    p = wait_paused(db, alive=bg.alive)[0]
    assert p["at"] == "after"
    assert p["pending"]["state"] == {"count": 1, "items": ["bumped"]}  # the update returned
    channel.answer(db, p["run"], "continue", {"kind": "state",
                                              "values": {"items": ["x", "y"], "count": 40}})
    out = bg.result()
    # items' reducer applied the edited update to the state ([] + ["x", "y"])
    assert out["note"] == "count=40 items=['x', 'y'] said=['hi']"


def test_a_node_of_a_subgraph_pauses_with_the_subgraph_s_state(armed: Any) -> None:
    class Inner(TypedDict):
        count: int
        trail: Annotated[list, operator.add]

    def inner_step(s: Inner) -> dict[str, Any]:
        return {"trail": [f"inner saw {s['count']}"]}

    sub = StateGraph(Inner)
    sub.add_node("inner_step", inner_step)
    sub.add_edge(START, "inner_step")
    sub.add_edge("inner_step", END)
    outer = StateGraph(Inner)
    outer.add_node("sub", sub.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    db, handler = armed(["node:inner_step"])
    bg = Background(lambda: outer.compile().invoke({"count": 2, "trail": []},
                                                   config={"callbacks": [handler]}))
    p = wait_paused(db, alive=bg.alive)[0]
    assert p["pending"]["node"] == "inner_step"
    assert p["pending"]["state"] == {"count": 2, "trail": []}
    channel.answer(db, p["run"], "continue", {"kind": "state", "values": {"count": 5}})
    assert bg.result()["trail"] == ["inner saw 5"]


def test_step_pauses_before_every_node_of_a_plain_graph(armed: Any) -> None:
    db, handler = armed(["step"])
    bg = _run(counter_graph(), handler)
    seen = []
    for _ in range(2):
        p = wait_paused(db, alive=bg.alive)[0]
        seen.append((p["pending"]["node"], p["at"]))
        channel.answer(db, p["run"], "step")
    bg.result()
    assert seen == [("bump", "before"), ("report", "before")]


def test_text_pauses_before_the_node_whose_input_holds_the_words(armed: Any) -> None:
    db, handler = armed(["text:BUMPED"])
    bg = _run(counter_graph(), handler)
    p = wait_paused(db, alive=bg.alive)[0]
    assert p["pending"]["node"] == "report"  # (bump's input has no "bumped" yet)
    channel.answer(db, p["run"], "run")
    bg.result()


def _boom(s: Counter) -> dict[str, Any]:
    msg = "the ledger is locked"
    raise RuntimeError(msg)


def test_error_pauses_at_a_failing_node_and_a_state_edit_is_its_update_instead(
        armed: Any) -> None:
    g = StateGraph(Counter)
    g.add_node("boom", _boom)
    g.add_node("report", _report)
    g.add_edge(START, "boom")
    g.add_edge("boom", "report")
    db, handler = armed(["error"])
    bg = _run(g.compile(), handler)
    p = wait_paused(db, alive=bg.alive)[0]
    assert (p["at"], p["pending"]["where"], p["pending"]["node"]) == ("error", "node", "boom")
    assert p["pending"]["error"] == "RuntimeError: the ledger is locked"
    with pytest.raises(InvalidOption, match="at a node error the edit is state"):
        channel.answer(db, p["run"], "continue", {"kind": "reply", "text": "x"})
    channel.answer(db, p["run"], "continue", {"kind": "state", "values": {"count": 3}})
    assert bg.result()["note"].startswith("count=3 ")


@pytest.mark.parametrize(("edit", "said"), [
    ({"kind": "state", "text": "[1, 2]"}, "a JSON object of state keys"),
    ({"kind": "state", "text": "{not json"}, "not valid JSON"),
    ({"kind": "state", "values": {"colour": "red"}}, "the state has no key 'colour'"),
])
def test_a_bad_state_edit_is_one_line_writes_nothing_and_the_run_stays_paused(
        armed: Any, edit: dict[str, Any], said: str) -> None:
    db, handler = armed(["node:report"])
    bg = _run(counter_graph(), handler)
    p = wait_paused(db, alive=bg.alive)[0]
    with pytest.raises(InvalidOption, match=said) as err:
        channel.answer(db, p["run"], "continue", edit)
    assert "\n" not in str(err.value)
    again = wait_paused(db, alive=bg.alive)[0]  # the same pause, still waiting
    assert (again["step"], again["reason"], again["pending"]) == (
        p["step"], p["reason"], p["pending"])
    channel.answer(db, p["run"], "continue")
    assert bg.result()["count"] == 1
    handler.close()
    assert [pl["outcome"] for _h, ph, pl in _events(db) if ph == "debug"] == ["continued"]


def test_a_value_the_reducer_refuses_is_rejected_and_the_run_pauses_again(armed: Any) -> None:
    db, handler = armed(["node:report"])
    bg = _run(counter_graph(), handler)
    p = wait_paused(db, alive=bg.alive)[0]
    # operator.add of a list and a number: the reducer refuses it, at the pause
    channel.answer(db, p["run"], "continue", {"kind": "state", "values": {"items": 3}})
    again = wait_paused(db, alive=bg.alive)[0]
    assert again["reason"].startswith("the edit could not be made")
    channel.answer(db, p["run"], "continue")
    assert bg.result()["items"] == ["bumped"]
    handler.close()
    assert [pl.get("outcome") for _h, ph, pl in _events(db) if ph == "debug"] == [
        "rejected", "continued"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_create_agent_s_own_model_node_pauses_under_trace_middleware_debug(
        tmp_path: Path, mode: str) -> None:
    db = tmp_path / "agent.db"
    trace = TraceMiddleware(db=db, debug=Debugger(["node:model"]))
    agent = make_agent(ScriptedChatModel(script=turn_script([AIMessage("Sunny.")])), [get_weather], [trace])
    q = {"messages": [("user", "Weather in Oslo?")]}
    if mode == "async":
        async def go() -> Any:
            with blockbuster_ctx():
                return await agent.ainvoke(q)
        bg = Background(go, is_async=True)
    else:
        bg = Background(lambda: agent.invoke(q))
    p = wait_paused(db, alive=bg.alive)[0]
    assert (p["hook"], p["pending"]["node"]) == ("node", "model")
    assert [m["text"] for m in p["pending"]["state"]["messages"]] == ["Weather in Oslo?"]
    channel.answer(db, p["run"], "continue")
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content == "Sunny."


def test_a_hook_pause_of_create_agent_holds_the_whole_state(tmp_path: Path) -> None:
    db = tmp_path / "hook.db"
    trace = TraceMiddleware(db=db, debug=Debugger(["hook:before_model"]))
    agent = make_agent(ScriptedChatModel(script=turn_script([AIMessage("Sunny.")])), [get_weather], [trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))
    p = wait_paused(db, alive=bg.alive)[0]
    state = p["pending"]["state"]
    assert [m["text"] for m in state["messages"]] == ["Weather in Oslo?"]
    channel.answer(db, p["run"], "continue")
    bg.result()


PLAIN = textwrap.dedent("""
    import operator
    from typing import Annotated, TypedDict
    from langgraph.graph import END, START, StateGraph

    class S(TypedDict):
        items: Annotated[list, operator.add]
        count: int

    def bump(s):
        return {"count": s["count"] + 1, "items": ["bumped"]}

    def report(s):
        print("REPORT:", s["count"], s["items"], flush=True)
        return {}

    g = StateGraph(S)
    g.add_node("bump", bump)
    g.add_node("report", report)
    g.add_edge(START, "bump")
    g.add_edge("bump", "report")
    g.add_edge("report", END)
    g.compile().invoke({"items": [], "count": 0})
""")


def _debug_cli(tmp_path: Path, args: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "plain.py"
    script.write_text(PLAIN)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LOOPTRACE_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "tracer", "debug", "--db", str(tmp_path / "t.db"), *args,
         "--", sys.executable, str(script)],
        input=stdin, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def test_looptrace_debug_pauses_a_plain_graph_with_no_code_change_and_takes_a_state_edit(
        tmp_path: Path) -> None:
    r = _debug_cli(tmp_path, ["--break", "node:report if lap == 0"],
                   'state {"count": 5, "colour": 1}\nstate {"count": 5, "items": ["typed"]}\n')
    assert r.returncode == 0, r.stderr
    assert "node before (breakpoint node:report if lap == 0)" in r.stdout
    assert "the node will receive:" in r.stdout and "  count: 1" in r.stdout
    # a key the state does not have: one line, and the prompt stays
    assert "the state has no key 'colour' (its keys: items, count)" in r.stdout
    assert "REPORT: 5 ['bumped', 'typed']" in r.stdout
    with sqlite3.connect(tmp_path / "t.db") as c:
        phases = [(h, p) for h, p in c.execute("SELECT hook, phase FROM events ORDER BY seq")]
    assert ("node", "pause") in phases and ("node", "debug") in phases


def test_looptrace_debug_says_a_node_breakpoint_no_graph_can_hit(tmp_path: Path) -> None:
    r = _debug_cli(tmp_path, ["--break", "node:reprot"], "")
    assert r.returncode == 0, r.stderr
    assert ("breakpoint node:reprot: no graph run so far has a node 'reprot' (graph "
            "'LangGraph' has: bump, report)") in r.stderr
