"""The workshop exercise (docs/guide/workshop.md): pause before the second model call,
delete the ToolMessage, continue, and see the provider's 400 from the emulator, for each
provider's real LangChain adapter."""

from __future__ import annotations

import pytest
from debug_kit import Background, wait_paused
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from tracer import TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.demo.providers import chat_model, scenario_tools
from tracer.read.loader import TraceDB
from tracer.wire.proxy import WireServer
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_deleting_the_tool_message_before_the_second_call_gets_the_providers_400(
        tmp_path, provider):
    db = tmp_path / "workshop.db"
    with WireServer(mode="emulate", script="weather") as srv:
        trace = TraceMiddleware(db=db, debug=Debugger(["model:2"]))
        agent = create_agent(chat_model(provider, srv.url), tools=scenario_tools("weather"),
                             middleware=[trace], system_prompt=WEATHER_SYSTEM)
        bg = Background(lambda: agent.invoke({"messages": [HumanMessage(WEATHER_PROMPT)]}))
        p = wait_paused(db, alive=bg.alive, timeout=60)[0]
        msgs = p["pending"]["messages"]
        tools = [m["position"] for m in msgs if m["type"] == "tool"]
        assert tools, msgs
        # (one is enough: the call it answered is left dangling)
        channel.answer(db, p["run"], "continue", {"kind": "drop", "position": tools[-1]})
        with pytest.raises(Exception) as err:  # noqa: PT011 - the SDK's own error class
            bg.result()
        trace.flush()
    said = str(err.value)
    assert "400" in said or "Error code: 400" in said, said
    with TraceDB(db) as tdb:
        run = tdb.runs()[0]
    assert run.status == "error"


def test_the_workshop_step_7_commands_as_written(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 47, untrue 3: step 7 said this file "runs exactly this", yet nothing ran
    ``looptrace proxy``, ``looptrace debug`` or the prompt, and ``weather_agent.py`` was
    nowhere. The step's commands, as the guide writes them (the proxy on a free port, given
    to the agent through ``$OPENAI_BASE_URL``, as the guide allows), with the shipped
    ``examples/weather_agent.py`` and what is typed at the prompt."""
    import os
    import re
    import shutil
    import socket
    import sqlite3
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "guide" / "workshop.md").read_text()
    step = " ".join(guide.split("7. **Break it yourself**")[1].split("\n\n")[0].split())
    proxy_cmd, debug_cmd = re.findall(r"`uv run (looptrace (?:proxy|debug) [^`]+)`", step)[:2]
    typed = ["p", re.search(r"then (edit \{[^}]+\})", step).group(1)]
    assert proxy_cmd == "looptrace proxy --provider openai --emulate weather --port 8080"
    assert debug_cmd == "looptrace debug --break model:2 -- python examples/weather_agent.py"
    (tmp_path / "examples").mkdir()
    shutil.copy(root / "examples" / "weather_agent.py", tmp_path / "examples")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "EDITOR": "true",
           "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    env.pop("LOOPTRACE_DEBUG", None)
    lt = [sys.executable, "-m", "tracer"]
    proxy = subprocess.Popen(
        [*lt, *proxy_cmd.split()[1:-1], str(port), "--db", str(tmp_path / "wire.db")],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # (the proxy listening: at most a minute on a loaded machine)
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        debug_args = debug_cmd.split()[1:]
        debug_args[debug_args.index("python")] = sys.executable
        r = subprocess.run([*lt, *debug_args], input="\n".join(typed) + "\n", cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
    assert r.returncode != 0
    assert "BadRequestError" in r.stderr and "400" in r.stderr, r.stderr[-2000:]
    assert '"type": "tool"' in r.stdout or "tool" in r.stdout  # p printed the request
    with sqlite3.connect(tmp_path / "looptrace.db") as c:
        status = c.execute("SELECT status FROM runs WHERE parent_id IS NULL").fetchall()
        outcome = c.execute("SELECT outcome FROM debug_pauses").fetchall()
    assert status == [("error",)] and outcome == [("edited",)]
    checked = subprocess.run([*lt, "check"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
    assert checked.returncode == 1 and "dangling-tool-call" in checked.stdout
