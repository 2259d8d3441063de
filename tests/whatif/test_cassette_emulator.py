"""Cassettes recorded through the provider emulator with the real provider adapters,
then replayed offline (issue 25's acceptance).

``looptrace proxy --emulate`` runs as its own process; a pytester session (in this
process) records a ``create_agent`` test on the real ``ChatOpenAI`` and a Deep Agents
test (a declared subagent) on the real ``ChatAnthropic``, both pointed at it, with
``--looptrace-record``: every model call goes over HTTP to the emulator and the
cassettes are written. The emulator is then stopped and the same tests run again:
their adapters still point at its (now closed) port, so a model call that was not
served from the cassette fails the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pytester_kit import run_inline

pytest_plugins = ["pytester"]

# The emulator's script: the weather scenario (tracer.wire.scenarios) for the
# create_agent test; for the deep agent, the main agent hands the question to the
# researcher subagent (the `task` tool), which looks the fact up and answers with it.
SCRIPT = '''
from tracer.wire.providers import Reply, ToolCall
from tracer.wire.scenarios import auto


def script(req):
    first = next((m.text for m in req.messages if m.role == "user"), "")
    if "capital of Norway" not in first:
        return auto(req)
    system = " ".join(m.text for m in req.messages if m.role == "system")
    if any(m.role == "assistant" for m in req.messages):
        return Reply(text=req.messages[-1].text)
    if "RESEARCHER" in system:
        return Reply(tool_calls=(ToolCall("toolu_02", "lookup_fact", {"topic": "Norway"}),))
    return Reply(tool_calls=(ToolCall("toolu_01", "task", {
        "description": "The capital of Norway?", "subagent_type": "researcher"}),))
'''

SUITE = '''
import os

from deepagents import create_deep_agent
from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tracer.demo.scenarios import get_weather
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM

URL = os.environ["EMULATOR_URL"]  # the emulator when recording; a closed port after


@tool
def lookup_fact(topic: str) -> str:
    """Look a fact up in the encyclopedia."""
    return "Oslo, about 720,000 people"


def _served(looptrace, served, calls):
    if looptrace._state.record:
        assert served.served == 0 and served.misses == calls
    else:
        assert served.served == calls and served.misses == 0


def test_create_agent_on_chatopenai(looptrace):
    model = ChatOpenAI(model="gpt-4o-mini", base_url=URL + "/v1", api_key="sk-fake",
                       max_retries=0)
    agent = create_agent(model, tools=[get_weather], system_prompt=WEATHER_SYSTEM)
    with looptrace.cassette("cassettes/openai-weather.jsonl") as served:
        out = agent.invoke({"messages": [{"role": "user", "content": WEATHER_PROMPT}]})
    assert out["messages"][-1].content.startswith("Here is the weather: Oslo: ")
    _served(looptrace, served, 2)
    looptrace.assert_tools([{"get_weather"}])
    looptrace.assert_clean()


def test_deep_agent_on_chatanthropic(looptrace):
    model = ChatAnthropic(model="claude-haiku-4-5", base_url=URL, api_key="sk-fake",
                          max_retries=0)
    researcher = {"name": "researcher", "description": "Looks facts up.",
                  "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact]}
    agent = create_deep_agent(model=model, tools=[lookup_fact], subagents=[researcher])
    with looptrace.cassette("cassettes/deep-anthropic.jsonl") as served:
        out = agent.invoke({"messages": [("user", "What is the capital of Norway?")]})
    assert out["messages"][-1].content == "Oslo, about 720,000 people"
    _served(looptrace, served, 4)  # two of the main agent, two of the researcher
    looptrace.assert_tools(["task"])
    looptrace.assert_clean()
'''


def _emulator(cwd: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "proxy", "--provider", "openai", "--emulate",
         "emuscript:script", "--db", str(cwd / "emulator.db")], cwd=cwd,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert "emulating openai (emuscript:script)" in first, first + proc.stdout.read()
    base = proc.stdout.readline().split("base_url =")[1].split()[0]
    return proc, base.removesuffix("/v1")


def _runs_in(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["format"] == "looptrace-trace"
    return [json.loads(ln)["row"] for ln in lines[1:] if json.loads(ln)["table"] == "runs"]


@pytest.mark.timeout(900)  # (two inner pytest sessions and the emulator)
def test_cassettes_recorded_through_the_emulator_rerun_offline(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(emuscript=SCRIPT, test_emu=SUITE)
    proc, url = _emulator(pytester.path)
    try:
        monkeypatch.setenv("EMULATOR_URL", url)
        rec = run_inline(pytester, "--looptrace=rec.db", "--looptrace-record")
        rec.assert_outcomes(passed=2)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    # every model call went over HTTP through the adapters to the emulator
    posts = [ln for ln in out.splitlines() if ln.startswith("POST ")]
    assert sum("/v1/chat/completions 200" in ln for ln in posts) == 2
    assert sum("/v1/messages 200" in ln for ln in posts) == 4
    assert len(posts) == 6
    openai = _runs_in(pytester.path / "cassettes" / "openai-weather.jsonl")
    deep = _runs_in(pytester.path / "cassettes" / "deep-anthropic.jsonl")
    assert len(openai) == 1 and len(deep) == 2  # the deep agent and its researcher
    assert [r["parent_id"] is None for r in deep] == [True, False]
    # offline: the emulator is gone, the adapters still point at its port
    again = run_inline(pytester)
    again.assert_outcomes(passed=2)
