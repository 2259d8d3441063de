"""Under a real ``langgraph dev`` server, a failed run is ``error`` in the record, as it is
in the server.

The test starts ``langgraph dev`` (``langgraph-cli[inmem]``: the in-memory runtime,
blockbuster on, as LangGraph Studio uses it) on 127.0.0.1 on a free port, with a graph
file from a temporary directory: a ``create_agent`` with ``TraceMiddleware`` alone (no
``attach``) and another middleware whose ``after_model`` raises for one city. It drives
it with ``langgraph_sdk``: one thread, a turn that succeeds, then a turn that fails.
The server's account of each run (``runs.list``) and the record's must agree. And a
run still going when the server is stopped (Ctrl-C) is not left ``running``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

STARTUP_S = 120.0

GRAPH = '''
import asyncio
import os

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call


@tool
async def get_weather(city: str) -> str:
    """Weather for a city."""
    if city == "Slowtown":
        await asyncio.sleep(120)
    return f"Sunny in {city}"


class CityGuard(AgentMiddleware):
    """Another middleware: its after_model refuses calls about Atlantis."""

    async def aafter_model(self, state, runtime):
        for c in getattr(state["messages"][-1], "tool_calls", None) or []:
            if c["args"].get("city") == "Atlantis":
                raise LookupError("no weather station in Atlantis")


def script(messages):
    if messages[-1].type == "tool":
        return AIMessage("Here it is: " + str(messages[-1].content))
    text = str(messages[-1].content)
    city = next((c for c in ("Atlantis", "Slowtown") if c in text), "Oslo")
    return AIMessage("", tool_calls=[call("get_weather", {"city": city}, f"c{len(messages)}")])


trace = TraceMiddleware(db=os.environ["LOOPTRACE_DB"])
agent = create_agent(ScriptedChatModel(script=script), tools=[get_weather],
                     middleware=[trace, CityGuard()])
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/ok", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path, Any]]:
    """``langgraph dev`` serving the graph above; (its URL, the trace database, a
    function that stops it)."""
    (tmp_path / "graph.py").write_text(textwrap.dedent(GRAPH))
    (tmp_path / "langgraph.json").write_text(
        '{"dependencies": ["."], "graphs": {"agent": "./graph.py:agent"}}')
    db = tmp_path / "trace.db"
    port = _free_port()
    env = {**os.environ, "LOOPTRACE_DB": str(db), "LANGGRAPH_CLI_NO_ANALYTICS": "1",
           "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false"}
    log = (tmp_path / "server.log").open("wb")
    exe = Path(sys.executable).with_name("langgraph")
    proc = subprocess.Popen(
        [str(exe), "dev", "--host", "127.0.0.1", "--port", str(port), "--no-browser",
         "--no-reload", "--config", "langgraph.json",
         # (this langgraph-api runs one job at a time unless told: "Starting 1 background
         # workers"; a run paused in the debugger would hold up the next one)
         "--n-jobs-per-worker", "4"],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_S
        while not _healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (tmp_path / "server.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"langgraph dev did not start (exit {proc.poll()}):\n{tail}")
            time.sleep(0.5)
        yield url, db, lambda: _stop(proc)
    finally:
        _stop(proc)
        log.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT to the server's process group (Ctrl-C: its clean shutdown, exit handlers
    included), then SIGKILL if it has not gone in 20 s."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _recorded(db: Path, n: int, timeout: float = 30.0) -> list[tuple[Any, ...]]:
    """The record's (status, error) of the thread's runs, once ``n`` of them ended."""
    deadline = time.monotonic() + timeout
    got: list[tuple[Any, ...]] = []
    while time.monotonic() < deadline:
        if db.exists():
            conn = sqlite3.connect(db)
            try:
                got = conn.execute("SELECT status, error FROM runs WHERE parent_id IS NULL"
                                   " ORDER BY started_at").fetchall()
            except sqlite3.OperationalError:
                got = []
            finally:
                conn.close()
            if len(got) == n and all(s != "running" for s, _ in got):
                return got
        time.sleep(0.25)
    return got


def test_a_failed_run_is_error_in_the_record_as_in_the_server(server):
    from langgraph_sdk import get_sync_client

    url, db, _ = server
    client = get_sync_client(url=url)
    thread = client.threads.create()
    tid = thread["thread_id"]
    ok = client.runs.create(tid, "agent", input={
        "messages": [{"role": "user", "content": "Weather in Oslo?"}]})
    client.runs.join(tid, ok["run_id"])
    bad = client.runs.create(tid, "agent", input={
        "messages": [{"role": "user", "content": "Weather in Atlantis?"}]})
    with contextlib.suppress(Exception):  # (join may raise the run's error)
        client.runs.join(tid, bad["run_id"])
    statuses = {r["run_id"]: r["status"] for r in client.runs.list(tid)}
    assert (statuses[ok["run_id"]], statuses[bad["run_id"]]) == ("success", "error")

    want = [("completed", None), ("error", "LookupError: no weather station in Atlantis")]
    assert _recorded(db, 2) == want
    conn = sqlite3.connect(db)
    try:
        last = conn.execute(
            "SELECT e.hook, e.phase, e.payload FROM events e JOIN runs r ON r.id = e.run_id"
            " WHERE r.status = 'error' ORDER BY e.seq DESC LIMIT 2").fetchall()
        thread_ids = {t for (t,) in conn.execute("SELECT thread_id FROM runs")}
    finally:
        conn.close()
    assert [(h, p) for h, p, _ in last] == [("run", "error"), ("after_model", "error")]
    assert "no weather station in Atlantis" in last[1][2]
    assert thread_ids == {tid}


def test_a_run_going_when_the_server_stops_is_not_left_running(server):
    """The server is stopped (Ctrl-C) while a run waits on a slow tool: the record
    does not say ``running`` afterwards."""
    from langgraph_sdk import get_sync_client

    url, db, stop = server
    client = get_sync_client(url=url)
    tid = client.threads.create()["thread_id"]
    slow = client.runs.create(tid, "agent", input={
        "messages": [{"role": "user", "content": "Weather in Slowtown?"}]})
    deadline = time.monotonic() + 30
    while not _tool_entered(db) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert _tool_entered(db), "the slow tool was never entered"
    assert client.runs.get(tid, slow["run_id"])["status"] == "running"
    stop()
    ((status, error),) = _recorded(db, 1, timeout=5)
    assert status == "error" and error, (status, error)


def _tool_entered(db: Path) -> bool:
    if not db.exists():
        return False
    conn = sqlite3.connect(db)
    try:
        return bool(conn.execute("SELECT 1 FROM events WHERE hook = 'wrap_tool_call'"
                                 " AND phase = 'enter'").fetchone())
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


@pytest.fixture
def debug_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's process armed by the environment (``LOOPTRACE_DEBUG``): a model call
    whose request mentions Paris pauses."""
    monkeypatch.setenv("LOOPTRACE_DEBUG", "text:paris")
    monkeypatch.setenv("LOOPTRACE_DEBUG_TIMEOUT", "100")


def test_a_paused_run_holds_up_no_other_run_on_the_server(debug_env, server):
    from langgraph_sdk import get_sync_client

    from tracer.debug import channel

    url, db, _ = server
    client = get_sync_client(url=url)
    paris, oslo = (client.threads.create()["thread_id"] for _ in range(2))
    held = client.runs.create(paris, "agent", input={
        "messages": [{"role": "user", "content": "Weather in Paris?"}]})
    deadline = time.monotonic() + 60
    paused: list[dict[str, Any]] = []
    while not paused and time.monotonic() < deadline:
        paused = channel.list_paused(db) if db.exists() else []
        time.sleep(0.1)
    assert paused and paused[0]["thread"] == paris and paused[0]["reason"] == "text:paris"
    # another run on the same server goes on, start to end, while that one waits
    free = client.runs.create(oslo, "agent", input={
        "messages": [{"role": "user", "content": "Weather in Oslo?"}]})
    client.runs.join(oslo, free["run_id"])
    assert {r["run_id"]: r["status"] for r in client.runs.list(oslo)}[free["run_id"]] == "success"
    assert client.runs.get(paris, held["run_id"])["status"] in ("running", "pending")
    channel.answer(db, paused[0]["run"], "run")
    client.runs.join(paris, held["run_id"])
    assert client.runs.get(paris, held["run_id"])["status"] == "success"
