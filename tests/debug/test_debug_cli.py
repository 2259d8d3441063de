"""``looptrace debug -- COMMAND``: a plain create_agent program (no tracer in its code)
paused at a breakpoint, driven from the prompt on stdin as a person would type."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracer_kit import rows

AGENT = textwrap.dedent("""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from tracer.demo.models import ScriptedChatModel, call, turn_script

    @tool
    def get_weather(city: str) -> str:
        '''Weather for a city.'''
        return f"Sunny in {city}, 21 C"

    def quote(messages):
        tools = [m for m in messages if isinstance(m, ToolMessage)]
        return AIMessage("The tool said: " + tools[-1].content)

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]), quote]))
    agent = create_agent(model, tools=[get_weather])
    out = agent.invoke({"messages": [("user", "Weather in Oslo?")]})
    print("FINAL:", out["messages"][-1].content)
""")


def _debug(tmp_path: Path, args: list[str], stdin: str,
           db: str | None = None) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    env = {**os.environ, "EDITOR": "true", "PYTHONUNBUFFERED": "1"}
    env.pop("LOOPTRACE_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "tracer", "debug", "--db", db or str(tmp_path / "t.db"), *args,
         "--", sys.executable, str(script)],
        input=stdin, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def test_a_tool_result_typed_at_the_prompt_reaches_the_model(tmp_path, store_db):
    """On each engine (``--db`` a file, then a PostgreSQL URL)."""
    r = _debug(tmp_path, ["--break", "tool:get_weather"], "p\nresult Snowing, -5 C\n", store_db)
    assert r.returncode == 0, r.stderr
    assert "paused" in r.stdout and "wrap_tool_call before (breakpoint tool:get_weather)" in r.stdout
    assert 'tool call get_weather {"city": "Oslo"} (id c1)' in r.stdout
    assert '"kind": "tool_call"' in r.stdout  # p printed the pending call as JSON
    assert "FINAL: The tool said: Snowing, -5 C" in r.stdout
    phases = [p for (p,) in rows(store_db, "SELECT phase FROM events ORDER BY seq")]
    outcome = rows(store_db, "SELECT outcome FROM debug_pauses")
    ((n_runs,),) = rows(store_db, "SELECT COUNT(*) FROM runs")
    assert "pause" in phases and "debug" in phases and outcome == [("edited",)]
    assert n_runs == 1  # one run: the callbacks' and the added middleware's


def test_step_then_abort_at_the_prompt(tmp_path):
    r = _debug(tmp_path, ["--break", "model:1"], "s\nbogus\nabort\n")
    assert "unknown command 'bogus'" in r.stdout
    assert r.returncode != 0
    assert "aborted in the debugger" in r.stderr
    with sqlite3.connect(tmp_path / "t.db") as c:
        status = c.execute("SELECT status, error FROM runs").fetchall()
    assert status[0][0] == "error" and "aborted in the debugger" in status[0][1]


def test_the_end_of_input_lets_the_run_finish(tmp_path):
    r = _debug(tmp_path, ["--break", "step"], "")
    assert r.returncode == 0, r.stderr
    assert "FINAL: The tool said: Sunny in Oslo, 21 C" in r.stdout


@pytest.mark.parametrize(("spec", "said"), [
    ("hook:nowhere", "no hook 'nowhere'"), ("finding:nope", "no rule 'nope'"),
    ("tool:", "needs a value")])
def test_a_bad_breakpoint_is_one_line_and_runs_nothing(tmp_path, spec, said):
    r = _debug(tmp_path, ["--break", spec], "")
    assert r.returncode == 2 or r.returncode == 1
    assert said in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "FINAL" not in r.stdout
