"""``looptrace run``: unmodified scripts traced with no code change (``tracer.record.autotrace``
through LangChain's configure hook), each a run that ``check`` and the replay accept;
the script's output and exit status untouched; an agent's own ``TraceMiddleware`` and
the hook never record one run twice; ``--wire`` records an SDK loop's traffic.

Each script runs in a child process, as a user's would (the hook is process-wide)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tracer_kit import rows

from tracer.checks.run import check_run
from tracer.cli.run import upstream_of
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

ROOT = Path(__file__).resolve().parents[2]

AGENT = """
import sys
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer.demo.models import ScriptedChatModel, call, turn_script


@tool
def get_weather(city: str) -> str:
    \"\"\"Get the weather for a city.\"\"\"
    if city == "Nowhere":
        raise RuntimeError("no such city")
    return f"Sunny in {city}"


city = sys.argv[1]
model = ScriptedChatModel(script=turn_script([
    AIMessage("", tool_calls=[call("get_weather", {"city": city}, "call_1")]),
    AIMessage(f"It is sunny in {city}."),
]))
agent = create_agent(model, tools=[get_weather])ATTACH
out = agent.invoke({"messages": [("user", f"What's the weather in {city}?")]})
print(out["messages"][-1].content)
print("to stderr", file=sys.stderr)
sys.exit(int(sys.argv[2]))
"""

DEEP = """
from deepagents import create_deep_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer.demo.models import ScriptedChatModel, call


@tool
def lookup_fact(topic: str) -> str:
    \"\"\"Look a fact up in the encyclopedia.\"\"\"
    return "Oslo, about 720,000 people"


def script(messages):
    researcher = any("RESEARCHER" in str(m.content) for m in messages if m.type == "system")
    if any(m.type == "ai" for m in messages):
        return AIMessage(str(messages[-1].content))
    if researcher:
        return AIMessage("", tool_calls=[call("lookup_fact", {"topic": "Norway"}, "call_2")])
    return AIMessage("", tool_calls=[call("task", {"description": "The capital of Norway?",
                                                    "subagent_type": "researcher"}, "call_1")])


researcher = {"name": "researcher", "description": "Looks facts up.",
              "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact]}
agent = create_deep_agent(model=ScriptedChatModel(script=script), tools=[lookup_fact],
                          subagents=[researcher])
out = agent.invoke({"messages": [("user", "What is the capital of Norway?")]})
print(out["messages"][-1].content)
"""

# the seed's loop, as people write it: no @chain, no callbacks, no tracer
HAND_ROLLED = """
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from tracer.demo.models import ScriptedChatModel, call, turn_script


@tool
def get_weather(city: str) -> str:
    \"\"\"Get the weather for a city.\"\"\"
    return f"Sunny in {city}"


tools = {"get_weather": get_weather}
llm = ScriptedChatModel(script=turn_script([
    AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "call_1")]),
    AIMessage("It is sunny in Oslo."),
]))
messages = [HumanMessage("What's the weather in Oslo?")]
for _ in range(5):
    ai = llm.bind_tools(list(tools.values())).invoke(messages)
    messages.append(ai)
    if not ai.tool_calls:
        break
    for tc in ai.tool_calls:
        messages.append(ToolMessage(tools[tc["name"]].invoke(tc["args"]), tool_call_id=tc["id"]))
print(messages[-1].content)
"""

# the seed's loop on the openai SDK; the client takes its endpoint from OPENAI_BASE_URL
SDK = """
import json
from openai import OpenAI

client = OpenAI(api_key="sk-looptrace-test", max_retries=0)
tools = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
messages = [{"role": "system", "content": "You are a weather assistant."},
            {"role": "user", "content": "What's the weather in Oslo and in Bergen right now?"}]
for _ in range(5):
    msg = client.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                         tools=tools).choices[0].message
    messages.append(msg.model_dump(exclude_none=True))
    if not msg.tool_calls:
        break
    for c in msg.tool_calls:
        city = json.loads(c.function.arguments)["city"]
        messages.append({"role": "tool", "tool_call_id": c.id, "content": f"Sunny in {city}"})
print(messages[-1]["content"])
"""


def agent_code(attach: str = "", code: str = AGENT) -> str:
    return code.replace("ATTACH", attach)


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LOOPTRACE_") or k == "LOOPTRACE_CACHE_DIR"}
    e["PYTHONPATH"] = str(ROOT)  # (the scripts import tracer.demo's scripted models)
    return e


def run_script(tmp: Path, code: str, *args: str, trace: Path | None = None,
               wire: bool = False, extra_env: dict[str, str] | None = None,
               ) -> subprocess.CompletedProcess[str]:
    script = tmp / "script.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    cmd = [sys.executable, str(script), *args]
    if trace is not None:
        cmd = [sys.executable, "-m", "tracer", "run", "--db", str(trace),
               *(["--wire"] if wire else []), "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, timeout=240,
                          env={**env(), **(extra_env or {})}, check=False)


def mask(text: str) -> str:
    """A traceback without what changes from one run to the next: LangGraph's task ids,
    and the line of ``Future.result`` (done at once, or after a wait: a race)."""
    text = re.sub(r"(concurrent/futures/_base\.py\", line )\d+", r"\1N", text)
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", text)


def accepted(db: Path) -> list[Any]:
    """Every run of ``db``: its replay builds and ``check`` finds no error in it."""
    out = []
    with TraceDB(db) as tdb:
        for s in tdb.runs():
            run = tdb.run(s.id)
            assert build_replay(run).steps, s.id
            errors = [f.rule for f in check_run(run, wire=tdb.wire(s.id))
                      if f.severity == "error"]
            assert errors == [], (s.name, errors)
            out.append(run)
    return out


def test_create_agent_output_and_exit_code_unchanged_and_one_run(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    traced = run_script(tmp_path, agent_code(), "Oslo", "3", trace=db)
    # what the script prints and exits with untraced (AGENT: the last message, a line
    # to stderr, the exit status it was given), written out
    assert (traced.returncode, traced.stdout, traced.stderr) == (
        3, "It is sunny in Oslo.\n", "to stderr\n")
    (run,) = accepted(db)
    assert (run.summary.name, run.summary.status, run.summary.laps, run.summary.model_calls,
            run.summary.tool_calls) == ("LangGraph", "completed", 2, 2, 1)
    assert [m.type for m in run.messages] == ["human", "ai", "tool", "ai"]
    # what callbacks cannot see is said, not invented
    lt = run.metadata["looptrace"]
    assert lt["recorded_by"] == "looptrace run"
    assert "wrap_model_call and wrap_tool_call layers" in lt["not_seen"]
    hooks = [(e.hook, e.phase) for e in run.events]
    assert ("wrap_model_call", "enter") not in hooks and ("model", "enter") in hooks


def test_a_failing_script_keeps_its_failure_and_what_was_recorded(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    plain = run_script(tmp_path, agent_code(), "Nowhere", "0")
    traced = run_script(tmp_path, agent_code(), "Nowhere", "0", trace=db)
    assert traced.returncode == plain.returncode == 1
    assert traced.stdout == plain.stdout == ""
    # the same traceback, LangGraph's task ids aside
    assert mask(traced.stderr) == mask(plain.stderr)
    assert "RuntimeError: no such city" in traced.stderr.splitlines()
    (status, error), = rows(db, "SELECT status, error FROM runs")
    assert (status, error) == ("error", "RuntimeError: no such city")
    assert rows(db, "SELECT hook, phase FROM events WHERE hook = 'tool' ORDER BY seq") == [
        ("tool", "enter"), ("tool", "error")]


@pytest.mark.parametrize("attach", [False, True])
def test_an_agents_own_trace_middleware_and_the_hook_record_one_run(
        tmp_path: Path, attach: bool) -> None:
    db = tmp_path / "t.db"
    code = AGENT.replace("from tracer.demo.models", "from tracer import TraceMiddleware\n"
                                                     "from tracer.demo.models")
    code = code.replace("tools=[get_weather])",
                        f"tools=[get_weather], middleware=[trace := TraceMiddleware(db={str(db)!r})])")
    done = run_script(tmp_path, agent_code("\nagent = trace.attach(agent)" if attach else "",
                                           code), "Oslo", "0", trace=db)
    assert done.returncode == 0, done.stderr
    (run,) = accepted(db)
    mw = "TraceMiddleware"
    assert [(e.hook, e.phase, e.middleware) for e in run.events] == [
        ("run", "start", None),
        ("before_agent", "fire", mw), ("before_model", "fire", mw),
        ("wrap_model_call", "enter", mw), ("wrap_model_call", "exit", mw),
        ("after_model", "fire", mw),
        ("wrap_tool_call", "enter", mw), ("wrap_tool_call", "exit", mw),
        ("before_model", "fire", mw),
        ("wrap_model_call", "enter", mw), ("wrap_model_call", "exit", mw),
        ("after_model", "fire", mw), ("after_agent", "fire", mw),
        ("run", "end", None)]
    # attached: the hook stood aside (the run has the agent's own handler); not attached:
    # the middleware took over the run the hook's handler started, and it says so
    if attach:
        assert run.metadata is None
    else:
        assert run.metadata["looptrace"]["through"].startswith("TraceMiddleware in the agent")


def test_a_middleware_writing_elsewhere_keeps_its_own_file(tmp_path: Path) -> None:
    db, own = tmp_path / "t.db", tmp_path / "own.db"
    code = AGENT.replace("from tracer.demo.models", "from tracer import TraceMiddleware\n"
                                                     "from tracer.demo.models")
    code = code.replace("tools=[get_weather])",
                        f"tools=[get_weather], middleware=[TraceMiddleware(db={str(own)!r})])")
    done = run_script(tmp_path, agent_code("", code), "Oslo", "0", trace=db)
    assert done.returncode == 0, done.stderr
    assert rows(own, "SELECT source, status FROM runs") == [("middleware", "completed")]
    assert rows(db, "SELECT source, status FROM runs") == [("callbacks", "completed")]


def test_a_deep_agent_and_its_subagent(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    done = run_script(tmp_path, DEEP, trace=db)
    assert (done.returncode, done.stdout) == (0, "Oslo, about 720,000 people\n"), done.stderr
    runs = {r.summary.name: r for r in accepted(db)}
    assert len(runs) == 2, sorted(runs)
    (child,) = [r for r in runs.values() if r.summary.parent_id]
    (parent,) = [r for r in runs.values() if not r.summary.parent_id]
    assert child.summary.name == "researcher"
    assert (child.summary.parent_id, child.summary.parent_tool_call_id) == (parent.id, "call_1")
    assert [m.type for m in child.messages][-1] == "ai"


@pytest.fixture(scope="module")
def hand_rolled(tmp_path_factory: pytest.TempPathFactory,
                ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The hand-rolled loop run once under ``looptrace run``: its file, and the process."""
    tmp = tmp_path_factory.mktemp("hand_rolled")
    db = tmp / "t.db"
    return db, run_script(tmp, HAND_ROLLED, trace=db)


def test_a_hand_rolled_loop_is_one_run(
        hand_rolled: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    db, done = hand_rolled
    assert (done.returncode, done.stdout) == (0, "It is sunny in Oslo.\n"), done.stderr
    (run,) = accepted(db)
    assert (run.summary.status, run.summary.model_calls, run.summary.tool_calls) == (
        "completed", 2, 1)
    assert [(m.type, m.tool_call_id) for m in run.messages] == [
        ("human", None), ("ai", None), ("tool", "call_1"), ("ai", None)]


def test_the_sdk_loop_with_wire_through_the_emulator(tmp_path: Path) -> None:
    from tracer.wire.proxy import WireServer

    db = tmp_path / "t.db"
    with WireServer(mode="emulate", script="weather") as emu:
        extra = {"OPENAI_BASE_URL": emu.url + "/v1"}
        plain = run_script(tmp_path, SDK, extra_env=extra)
        calls = len(emu.exchanges)
        traced = run_script(tmp_path, SDK, trace=db, wire=True, extra_env=extra)
        # the proxy forwarded to the endpoint the user had configured: the emulator
        assert len(emu.exchanges) == 2 * calls
    assert traced.returncode == plain.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout != ""
    (run,) = accepted(db)
    assert run.observed == "wire"
    assert run.summary.model_calls == calls >= 2
    wire = rows(db, "SELECT provider, url, status FROM wire ORDER BY id")
    assert {w[:1] + w[2:] for w in wire} == {("openai", 200)}
    assert all(w[1] == emu.url + "/v1/chat/completions" for w in wire)


def test_upstream_of_the_variables_the_sdks_read() -> None:
    assert upstream_of("openai", "https://api.example.com/v1/") == "https://api.example.com"
    assert upstream_of("openai", "http://h:1/custom/v1") == "http://h:1/custom"
    assert upstream_of("anthropic", "https://a.example.com") == "https://a.example.com"
    assert upstream_of("ollama", "127.0.0.1:11434") == "http://127.0.0.1:11434"
    assert upstream_of("openai", None) is None and upstream_of("ollama", "") is None


def test_run_without_a_command_or_with_a_foreign_file_says_so(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    import sqlite3

    sqlite3.connect(foreign).execute("CREATE TABLE x (y)").connection.commit()
    for args, words in ((["--db", str(tmp_path / "t.db")], "no command given"),
                        (["--db", str(foreign), "--", sys.executable, "-c", "print(1)"],
                         "not a looptrace one")):
        done = subprocess.run([sys.executable, "-m", "tracer", "run", *args],
                              capture_output=True, text=True, timeout=60, env=env(),
                              check=False)
        assert done.returncode == 1
        assert done.stdout == ""
        assert done.stderr.startswith("looptrace run: ") and words in done.stderr, done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_the_metadata_json_is_plain(
        hand_rolled: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """(the run's metadata is a JSON object any reader takes)"""
    db, _ = hand_rolled
    (meta,), = rows(db, "SELECT metadata FROM runs")
    assert set(json.loads(meta)["looptrace"]) == {"recorded_by", "through", "not_seen"}


def test_a_child_process_of_the_command_is_traced_too(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    (tmp_path / "agent.py").write_text(textwrap.dedent(agent_code()), encoding="utf-8")
    parent = """
    import subprocess, sys
    done = subprocess.run([sys.executable, "agent.py", "Bergen", "0"])
    print("child said", done.returncode)
    """
    done = run_script(tmp_path, parent, trace=db)
    assert (done.returncode, done.stdout) == (0, "It is sunny in Bergen.\nchild said 0\n")
    (run,) = accepted(db)
    assert run.messages[0].text == "What's the weather in Bergen?"


def test_a_foreign_looptrace_db_leaves_the_program_untraced_and_says_so_once(
        tmp_path: Path) -> None:
    import sqlite3

    from tracer.cli.run import BOOT_DIR

    foreign = tmp_path / "other.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE x (y)")
    conn.commit()
    conn.close()
    done = run_script(tmp_path, HAND_ROLLED, extra_env={
        "LOOPTRACE_DB": str(foreign), "PYTHONPATH": os.pathsep.join([str(BOOT_DIR), str(ROOT)])})
    assert (done.returncode, done.stdout) == (0, "It is sunny in Oslo.\n")
    assert done.stderr == (f"looptrace: not tracing (LOOPTRACE_DB={foreign}): {foreign} is a "
                           "SQLite database but not a looptrace one (no meta table)\n")


CHAT_OPENAI = """
from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def get_weather(city: str) -> str:
    \"\"\"Get the current weather for a city.\"\"\"
    return f"Sunny in {city}"


model = ChatOpenAI(model="gpt-4o-mini", api_key="sk-looptrace-test", max_retries=0)
agent = create_agent(model, tools=[get_weather], system_prompt="You are a weather assistant.")
out = agent.invoke({"messages": [("user", "What's the weather in Oslo and in Bergen right now?")]})
print(out["messages"][-1].content)
"""


def test_a_langchain_model_call_gets_its_wire_exchange_with_wire(tmp_path: Path) -> None:
    from tracer.wire.proxy import WireServer

    db = tmp_path / "t.db"
    with WireServer(mode="emulate", script="weather") as emu:
        done = run_script(tmp_path, CHAT_OPENAI, trace=db, wire=True,
                          extra_env={"OPENAI_BASE_URL": emu.url + "/v1"})
        calls = len(emu.exchanges)
    assert done.returncode == 0, done.stderr
    (run,) = accepted(db)  # one run: the traffic belongs to it, no run of its own
    assert run.observed is None and run.summary.model_calls == calls >= 2
    linked = rows(db, "SELECT run_id, seq FROM wire ORDER BY id")
    enters = [e.seq for e in run.events if e.hook == "model" and e.phase == "enter"]
    assert linked == [(run.id, s) for s in enters]
