"""Rewind at the prompt of ``looptrace debug -- COMMAND`` (issue 45, item 6): a plain
``create_agent`` script, no tracer in its code, rebuilt from the ``create_agent`` call
looptrace saw; and a graph the script compiled itself, which cannot be."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from tracer.read.loader import TraceDB

AGENT = textwrap.dedent("""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from tracer.demo.models import ScriptedChatModel, call, turn_script

    calls = []

    @tool
    def get_weather(city: str) -> str:
        '''Weather for a city.'''
        calls.append("tool")
        return f"Sunny in {city}, 21 C"

    def ask(messages):
        calls.append("model")
        return AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")])

    def quote(messages):
        calls.append("model")
        tools = [m for m in messages if isinstance(m, ToolMessage)]
        return AIMessage("The tool said: " + tools[-1].content)

    agent = create_agent(ScriptedChatModel(script=turn_script([ask, quote])),
                         tools=[get_weather])
    out = agent.invoke({"messages": [("user", "Weather in Oslo?")]})
    print("FINAL:", out["messages"][-1].content)
    import atexit
    atexit.register(lambda: print("CALLS:", ",".join(calls)))
""")

GRAPH = textwrap.dedent("""
    from typing import TypedDict
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        count: int

    g = StateGraph(State)
    g.add_node("bump", lambda s: {"count": s["count"] + 1})
    g.add_edge(START, "bump")
    g.add_edge("bump", END)
    print("FINAL:", g.compile().invoke({"count": 1}))
""")


def _debug(tmp_path: Path, script: str, args: list[str],
           stdin: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "agent.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LOOPTRACE_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "tracer", "debug", "--db", str(tmp_path / "t.db"), *args,
         "--", sys.executable, str(path)],
        input=stdin, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
        check=False)


def test_rewind_at_the_prompt_forks_the_scripts_agent(tmp_path: Path) -> None:
    # paused at model call 2 (step 11); back to the tool call (step 6) with its result
    # given: the model call before it is served, the tool does not run, the fork pauses
    # at its own model call 2
    edit = json.dumps({"kind": "tool_result", "text": "Snowing, -5 C"})
    r = _debug(tmp_path, AGENT, ["--break", "model:2"],
               f"rewind 99\nrewind 6 {edit}\nc\nc\n")
    assert r.returncode == 0, r.stderr
    assert "looptrace debug: step 99 is out of range: run " in r.stdout
    assert "has steps 1 to 11\n" in r.stdout
    assert "rewinding to step 6: a fork of this run" in r.stdout
    assert "(breakpoint rewound to step 6 as run " in r.stdout
    assert "FINAL: The tool said: Sunny in Oslo, 21 C" in r.stdout
    # the script's own run: 2 model calls, 1 tool call; the fork: its model call 2 only
    assert "CALLS: model,tool,model,model" in r.stdout
    with sqlite3.connect(tmp_path / "t.db") as c:
        runs = c.execute("SELECT id, metadata FROM runs WHERE parent_id IS NULL"
                         " ORDER BY started_at").fetchall()
        assert len(runs) == 2
        original, (fork, meta) = runs[0][0], runs[1]
    with TraceDB(tmp_path / "t.db") as tdb:
        said = [m.text for m in tdb.run(fork).messages]
    assert json.loads(meta)["forked_from"] == {
        "run": original, "step": 6, "rewind": True,
        "edit": {"kind": "tool_result", "text": "Snowing, -5 C"}}
    assert said[-2:] == ["Snowing, -5 C", "The tool said: Snowing, -5 C"]


def test_a_graph_the_script_compiled_cannot_be_rewound_and_stays_paused(
        tmp_path: Path) -> None:
    r = _debug(tmp_path, GRAPH, ["--break", "node:bump"], "rewind 1\nc\n")
    assert r.returncode == 0, r.stderr
    assert ("looptrace debug: cannot rewind: this agent was not built by create_agent under "
            "looptrace debug") in r.stdout
    assert "FINAL: {'count': 2}" in r.stdout
    with sqlite3.connect(tmp_path / "t.db") as c:
        assert c.execute("SELECT command, outcome FROM debug_pauses").fetchall() == [
            ("continue", "continued")]
