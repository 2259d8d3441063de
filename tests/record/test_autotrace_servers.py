"""Servers traced with no code change: ``langgraph dev`` under ``looptrace run`` (its
blockbuster on: the hook's handler makes no blocking call on the event loop), and a
FastAPI app under uvicorn with ``LOOPTRACE_DB`` set and the package's hook loaded.
Each server is started on 127.0.0.1 on a free port; a run made through its API is
recorded, and ``check`` and the replay accept it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tracer.checks.run import check_run
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

AGENT = '''
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from tracer.demo.models import ScriptedChatModel, call


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"Sunny in {city}"


def script(messages):
    if any(m.type == "tool" for m in messages):
        return AIMessage("It is sunny in Oslo.")
    return AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "call_1")])


agent = create_agent(ScriptedChatModel(script=script), tools=[get_weather])
'''

APP = '''
import tracer.record.autotrace  # the hook: traces into $LOOPTRACE_DB when it is set
from fastapi import FastAPI

from agent import agent

app = FastAPI()


@app.post("/ask")
async def ask(question: dict) -> dict:
    out = await agent.ainvoke({"messages": [("user", question["text"])]})
    return {"answer": out["messages"][-1].content}
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def post(url: str, body: dict[str, Any], timeout: float = 120) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


@contextmanager
def server(cmd: list[str], cwd: Path, health: str, env: dict[str, str]) -> Iterator[None]:
    log = (cwd / "server.log").open("w")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, (cwd / "server.log").read_text()
            try:
                with urllib.request.urlopen(health, timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, (cwd / "server.log").read_text()
                time.sleep(0.5)
        yield
    finally:
        # (a SIGINT that does not come from a terminal: `looptrace run` passes it on)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("the server did not stop on SIGINT") from None
        finally:
            log.close()


def base_env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LOOPTRACE_") or k == "LOOPTRACE_CACHE_DIR"}
    e["PYTHONPATH"] = str(ROOT)
    return e


def the_run(db: Path) -> Any:
    with TraceDB(db) as tdb:
        (s,) = tdb.runs()
        run = tdb.run(s.id)
    assert build_replay(run).steps
    assert [f.rule for f in check_run(run) if f.severity == "error"] == []
    return run


def wait_for_end(db: Path, timeout: float = 30) -> None:
    """(the writer commits on its own timer: a run ended in the server is in the file
    shortly after the answer)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            with TraceDB(db) as tdb:
                if [r for r in tdb.runs() if r.status != "running"]:
                    return
        time.sleep(0.3)


def test_langgraph_dev_under_looptrace_run(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "langgraph.json").write_text(json.dumps(
        {"dependencies": ["."], "graphs": {"agent": "./agent.py:agent"}}), encoding="utf-8")
    db, port = tmp_path / "t.db", free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [sys.executable, "-m", "tracer", "run", "--db", str(db), "--",
           str(BIN / "langgraph"), "dev", "--host", "127.0.0.1", "--port", str(port),
           "--no-browser", "--no-reload"]
    with server(cmd, tmp_path, url + "/ok", base_env()):
        out = post(url + "/runs/wait", {"assistant_id": "agent", "input": {
            "messages": [{"role": "user", "content": "Weather in Oslo?"}]}})
        # (blockbuster is on under langgraph dev: a blocking call fails the run)
        assert out["messages"][-1]["content"] == "It is sunny in Oslo.", out
        wait_for_end(db)
    log = (tmp_path / "server.log").read_text()
    assert "Background run succeeded" in log and "BlockingError" not in log
    run = the_run(db)
    assert (run.summary.name, run.summary.status, run.summary.model_calls,
            run.summary.tool_calls) == ("agent", "completed", 2, 1)
    assert [(m.type, m.tool_call_id) for m in run.messages] == [
        ("human", None), ("ai", None), ("tool", "call_1"), ("ai", None)]


def test_a_fastapi_app_with_looptrace_db_set(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    db, port = tmp_path / "t.db", free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**base_env(), "LOOPTRACE_DB": str(db),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    cmd = [sys.executable, "-m", "uvicorn", "app:app", "--host", "127.0.0.1",
           "--port", str(port)]
    with server(cmd, tmp_path, url + "/docs", env):
        assert post(url + "/ask", {"text": "Weather in Oslo?"}) == {
            "answer": "It is sunny in Oslo."}
        wait_for_end(db)
    run = the_run(db)
    assert (run.summary.status, run.summary.model_calls, run.summary.tool_calls) == (
        "completed", 2, 1)
    assert run.metadata["looptrace"]["recorded_by"] == "LOOPTRACE_DB"
