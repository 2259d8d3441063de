"""No paused process outlives its debugger, and the prompt answers the pause it shows
(issue 44, items 1, 4, 13, 14, 16, 20, 21): a real ``looptrace debug`` child process
driving a real agent process, signals sent to it, a real SQLite file."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from debug_kit import wait_paused
from langchain_core.messages import AIMessage
from tracer_kit import get_weather, make_agent

from tracer import TraceMiddleware
from tracer.db.processes import process_gone
from tracer.debug import Debugger, channel
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.errors import NotPaused

pytestmark = pytest.mark.slow  # (a looptrace debug process and an agent process per test)

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
    middleware = []
    if __import__("sys").argv[1:] == ["own"]:  # (its own debugger, no looptrace debug)
        from tracer import TraceMiddleware
        middleware = [TraceMiddleware(db="t.db", debug=["tool:get_weather"])]
    agent = create_agent(model, tools=[get_weather], middleware=middleware)
    out = agent.invoke({"messages": [("user", "Weather in Oslo?")]})
    print("FINAL:", out["messages"][-1].content, flush=True)
""")

PARALLEL = textwrap.dedent("""
    import asyncio
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from tracer.demo.models import ScriptedChatModel, call, turn_script

    @tool
    async def fetch_price(item: str) -> str:
        '''Price of an item.'''
        return item + ": 10 EUR"

    def by_call(messages):
        got = sorted((m.tool_call_id, m.content) for m in messages if isinstance(m, ToolMessage))
        return AIMessage("; ".join(f"{k}={v}" for k, v in got))

    calls = [call("fetch_price", {"item": f"item{i}"}, f"p{i}") for i in (1, 2, 3)]
    model = ScriptedChatModel(script=turn_script([AIMessage("", tool_calls=calls), by_call]))
    agent = create_agent(model, tools=[fetch_price])
    out = asyncio.run(agent.ainvoke({"messages": [("user", "Prices?")]}))
    print("FINAL:", out["messages"][-1].content, flush=True)
""")


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "EDITOR": "true", "PYTHONUNBUFFERED": "1", **extra}
    env.pop("LOOPTRACE_DEBUG", None)
    env.pop("LOOPTRACE_DEBUG_OWNER", None)
    return env


class Debug:
    """``looptrace debug`` in its own session (its process group killed at the end)."""

    def __init__(self, tmp: Path, args: list[str], cmd: list[str] | None = None,
                 script: str = AGENT, **env: str) -> None:
        (tmp / "agent.py").write_text(script)
        self.db = tmp / "t.db"
        tail = ["--", *cmd] if cmd is not None else []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tracer", "debug", "--db", str(self.db), *args, *tail],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=_env(**env), cwd=tmp, start_new_session=True)

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def wait(self, timeout: float = 120) -> tuple[int, str, str]:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            out, err = self.proc.communicate()
            msg = f"looptrace debug did not end:\n{out}\n{err}"
            raise AssertionError(msg) from None
        return self.proc.returncode, out, err

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)


@pytest.fixture
def debugs():
    made: list[Debug] = []
    yield made
    for d in made:
        d.kill()
        with contextlib.suppress(Exception):
            d.proc.communicate(timeout=10)


def _until_gone(pid: int, since: float, timeout: float = 60) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if process_gone(pid, since):
            return True
        time.sleep(0.05)
    return False


# -- item 4: stopped by a signal, the debugger lets its paused agent go --------------------------
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_the_debugger_leaves_no_paused_agent(tmp_path, debugs, sig):
    # (before: SIGTERM left the agent alive and paused for ever)
    d = Debug(tmp_path, ["--break", "tool:get_weather"], [sys.executable, "agent.py"])
    debugs.append(d)
    p = wait_paused(d.db, timeout=90)[0]
    d.proc.send_signal(sig)
    code, _out, _err = d.wait()
    assert code == 128 + sig
    assert _until_gone(int(p["pid"]), p["paused_at"]), "the agent outlived its debugger"
    assert channel.list_paused(d.db) == []
    assert channel.paused_status(d.db) == {}
    with sqlite3.connect(d.db) as c:
        assert c.execute("SELECT command FROM debug_pauses").fetchall() == [("run",)]


# -- item 16: a wrapper's agent is shown -------------------------------------------------------
def test_the_pauses_of_a_wrapper_commands_process_tree_are_shown(tmp_path, debugs):
    # (before: only pauses of CMD's own pid were shown: both processes waited for ever)
    d = Debug(tmp_path, ["--break", "tool:get_weather"],
              ["sh", "-c", f"{sys.executable} agent.py; echo wrapped-done"])
    debugs.append(d)
    d.send("result Snowing, -5 C\n")
    code, out, err = d.wait()
    assert code == 0, err
    assert "wrap_tool_call before (breakpoint tool:get_weather)" in out
    assert "FINAL: The tool said: Snowing, -5 C" in out and "wrapped-done" in out


# -- items 13, 14: a mistake at the prompt is one line, and the prompt stays ---------------------
def test_mistakes_at_the_prompt_are_one_line_each_and_the_prompt_stays(tmp_path, debugs):
    # (before: `edit {bad json` and an editor that cannot start crashed the debugger with
    # a traceback and orphaned the paused agent)
    d = Debug(tmp_path, ["--break", "tool:get_weather"], [sys.executable, "agent.py"],
              EDITOR="/no/such/editor")
    debugs.append(d)
    d.send("edit {bad json\ne\nb lap:\u00b2\nresult Fine\n")
    code, out, err = d.wait()
    assert code == 0, err
    said = [ln for ln in out.splitlines() if "looptrace debug:" in ln and "paused" not in ln]
    assert any("JSONDecodeError" in ln or "not valid JSON" in ln for ln in said), out
    assert any("the editor '/no/such/editor' cannot start" in ln for ln in said), out
    assert "Traceback" not in out + err
    assert "FINAL: The tool said: Fine" in out


# -- item 4: the prompt stops waiting when its pause is answered elsewhere -----------------------
def test_the_prompt_stops_waiting_when_its_pause_is_answered_elsewhere(tmp_path, debugs):
    # (before: it kept waiting on stdin, 2+ minutes after the agent had ended)
    d = Debug(tmp_path, ["--break", "tool:get_weather"], [sys.executable, "agent.py"])
    debugs.append(d)
    p = wait_paused(d.db, timeout=90)[0]
    assert d.proc.stdout is not None
    shown = ""
    while "tool call get_weather" not in shown:  # (the prompt shows it, and waits)
        line = d.proc.stdout.readline()
        assert line, "looptrace debug ended"
        shown += line
    channel.answer(d.db, p["run"], "continue", {"kind": "tool_result", "text": "From MCP"},
                   pause=p["pause"])
    assert d.proc.wait(timeout=90) == 0  # (stdin still open: nothing typed)
    out = d.proc.stdout.read()
    assert f"pause {p['pause']} is over (answered elsewhere" in out
    assert "FINAL: The tool said: From MCP" in out


# -- item 1: parallel pauses at the prompt -------------------------------------------------------
def test_the_prompt_lists_parallel_pauses_and_pause_n_answers_another(tmp_path, debugs):
    # (before: the prompt showed call p1 three times, and the answers went to the run's
    # latest pause: the first to p3)
    d = Debug(tmp_path, ["--break", "tool:fetch_price"], [sys.executable, "agent.py"],
              script=PARALLEL)
    debugs.append(d)
    got = wait_paused(d.db, n=3, timeout=90)
    ids = {p["tool_call_id"]: p["pause"] for p in got}
    d.send(f"pause {ids['p3']}\nresult three\npause {ids['p1']}\nresult one\nresult two\n")
    code, out, err = d.wait()
    assert code == 0, err
    assert "FINAL: p1=one; p2=two; p3=three" in out
    assert "3 pauses at once (pause N answers another):" in out
    assert f"pause {ids['p3']}: run" in out and "<- this prompt answers it" in out


# -- item 21: a killed agent's pause ----------------------------------------------------------
def test_a_killed_agents_pause_is_not_listed_and_cannot_be_answered(tmp_path):
    # (before: a pause counted as live while any process had its pid: the killed agent,
    # a zombie not yet reaped, stayed "paused" and resume "succeeded")
    (tmp_path / "agent.py").write_text(AGENT)
    db = tmp_path / "t.db"
    proc = subprocess.Popen([sys.executable, "agent.py", "own"], cwd=tmp_path, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p = wait_paused(db, timeout=90)[0]
        assert p["pid"] == proc.pid
        proc.kill()
        end = time.monotonic() + 30
        while channel.list_paused(db) and time.monotonic() < end:
            time.sleep(0.05)
        assert channel.list_paused(db) == []  # (the zombie is not reaped yet)
        with pytest.raises(NotPaused):
            channel.answer(db, p["run"], "continue", pause=p["pause"])
    finally:
        proc.kill()
        proc.wait()


# -- item 20: breakpoints do not outlive the debugger that armed them ----------------------------
def _quiet_agent_pauses(db: Path) -> list[Any]:
    """Run an agent armed with debug=True (its pauses end after 2 s); its pauses."""
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage("Sunny.")]))
    trace = TraceMiddleware(db=db, debug=Debugger(timeout=2))
    make_agent(model, [get_weather], [trace]).invoke({"messages": [("user", "Weather?")]})
    trace.flush()
    with sqlite3.connect(db) as c:
        return c.execute("SELECT reason FROM debug_pauses").fetchall()


@pytest.mark.parametrize("how", ["ctrl-c", "kill -9"])
def test_breakpoints_armed_by_a_debugger_end_with_it(tmp_path, debugs, how):
    # (before: `looptrace debug --break SPEC` stored it for every run, for good: a later
    # agent armed with debug=True paused with nobody listening)
    d = Debug(tmp_path, ["--break", "tool:get_weather"])
    debugs.append(d)
    end = time.monotonic() + 90
    armed: list[Any] = []
    while not armed and time.monotonic() < end:
        with contextlib.suppress(sqlite3.Error), sqlite3.connect(d.db) as c:
            armed = c.execute("SELECT spec FROM debug_breaks").fetchall()
        time.sleep(0.05)
    assert armed == [("tool:get_weather",)]
    if how == "ctrl-c":
        d.proc.send_signal(signal.SIGINT)
        assert d.wait()[0] == 0
    else:
        d.kill()
        d.proc.wait()
    assert _quiet_agent_pauses(d.db) == []
