"""``attach`` with LangSmith tracing on records the same runs as with it off.

With LangSmith tracing on, LangChain wraps every middleware's ``wrap_model_call`` /
``wrap_tool_call`` in a LangSmith ``traceable`` span, which becomes the parent of the
model or tool call made inside it without being a callback run of its own. Before the
fix those calls landed in a phantom root run named ``loop`` (left ``running``), and a
Deep Agent's subagent was nested under it (issue 39, item 3).

LangSmith sends to a local sink (127.0.0.1): no internet, and the sink counts what it
received, so a test that ran with tracing silently off would fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import langsmith
import pytest
from langchain.agents.middleware import ModelRetryMiddleware, ToolRetryMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_core.tracers.langchain import wait_for_all_tracers
from langsmith import utils as ls_utils
from test_tracer_deepagents import build as build_deep
from tracer_kit import get_weather, make_agent, no_tracer_warnings, rows, two_lap_model  # noqa: F401

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script

pytestmark = [pytest.mark.usefixtures("no_tracer_warnings"), pytest.mark.timeout(120)]


class _Sink(http.server.BaseHTTPRequestHandler):
    """Accepts anything LangSmith sends, answers ``{}``, counts the requests."""

    received: ClassVar[list[str]] = []

    def _answer(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        if n:
            self.rfile.read(n)
        type(self).received.append(f"{self.command} {self.path}")
        body = b"{}"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def sink() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def langsmith_env(sink: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """LangSmith pointed at the sink (tracing itself still off)."""
    for var in ("LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2",
                "LANGCHAIN_TRACING"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANGSMITH_ENDPOINT", sink)
    monkeypatch.setenv("LANGSMITH_API_KEY", "x")
    ls_utils.get_env_var.cache_clear()  # (LangSmith caches what it read of the environment)
    _Sink.received.clear()
    yield monkeypatch
    wait_for_all_tracers()  # (everything sent before the sink may go)
    monkeypatch.undo()
    ls_utils.get_env_var.cache_clear()


def record(db: Path, build: Any, how: str, call: str) -> list[tuple[Any, ...]]:
    """Run the agent ``build(db)`` makes once, with LangSmith tracing ``how`` ("off",
    "context": ``tracing_context(enabled=True)``, "env": ``LANGSMITH_TRACING=true``);
    the record: each run (name, status, parent's name, the tool call it is nested
    under, agent name), its events and its messages."""
    trace, agent = build(db)
    inp = {"messages": [("user", "What is the capital of Norway? And the weather in Oslo?")]}

    def go() -> None:
        with contextlib.suppress(RuntimeError):  # (the broken tool's agent fails)
            if call == "invoke":
                agent.invoke(inp)
            else:
                asyncio.run(agent.ainvoke(inp))

    if how == "context":
        with langsmith.tracing_context(enabled=True):
            go()
    else:
        go()
    trace.flush()
    trace.close()
    out: list[tuple[Any, ...]] = []
    runs = rows(db, "SELECT r.id, r.name, r.status, p.name, r.parent_tool_call_id, r.agent_name"
                    " FROM runs r LEFT JOIN runs p ON p.id = r.parent_id"
                    " ORDER BY r.started_at")
    for rid, *run in runs:
        out.append(("run", *run))
        out += rows(db, "SELECT 'event', seq, hook, phase, middleware, tool_call_id"
                        " FROM events WHERE run_id = ? ORDER BY seq", [rid])
        out += rows(db, "SELECT 'message', position, seq, type, tool_call_id, text"
                        " FROM messages WHERE run_id = ? ORDER BY position, seq", [rid])
    return out


def build_plain(db: Path) -> tuple[TraceMiddleware, Any]:
    trace = TraceMiddleware(db=db)
    return trace, trace.attach(make_agent(two_lap_model(), [get_weather], [trace]))


def build_layered(db: Path) -> tuple[TraceMiddleware, Any]:
    """Two more wrap layers inside the tracer, each probed (``around``): spans nest."""
    trace = TraceMiddleware(db=db)
    stack = trace.around(ModelRetryMiddleware(), ToolRetryMiddleware())
    return trace, trace.attach(make_agent(two_lap_model(), [get_weather], stack))


@tool
def get_weather_broken(city: str) -> str:
    """Weather for a city."""
    msg = f"weather service down for {city}"
    raise RuntimeError(msg)


def build_lean_unattached(db: Path) -> tuple[TraceMiddleware, Any]:
    """No ``attach``: the middleware alone (lean: only its wrap hooks, inside LangSmith's
    spans), learning from the invocation watcher that the run failed."""
    trace = TraceMiddleware(db=db, lean=True)
    model = ScriptedChatModel(script=turn_script([AIMessage(
        content="", id="ai-1", tool_calls=[call("get_weather_broken", {"city": "Oslo"}, "c1")])]))
    return trace, make_agent(model, [get_weather_broken], [trace, ToolRetryMiddleware(
        max_retries=0, on_failure="error")])


AGENTS = {"create_agent": build_plain, "layered": build_layered, "deep_agent": build_deep,
          "lean_unattached": build_lean_unattached}


@pytest.mark.parametrize(("agent", "how", "call"), [
    ("create_agent", "context", "invoke"),
    ("create_agent", "context", "ainvoke"),
    ("create_agent", "env", "invoke"),
    ("layered", "context", "ainvoke"),
    ("lean_unattached", "context", "invoke"),
    ("deep_agent", "context", "invoke"),
    ("deep_agent", "env", "ainvoke"),
])
def test_langsmith_on_records_what_off_records(tmp_path, langsmith_env, agent, how, call):
    build = AGENTS[agent]
    off = record(tmp_path / "off.db", build, "off", call)
    assert not _Sink.received  # (off is off)
    if how == "env":
        langsmith_env.setenv("LANGSMITH_TRACING", "true")
        ls_utils.get_env_var.cache_clear()
    on = record(tmp_path / "on.db", build, how, call)
    wait_for_all_tracers()
    # LangSmith really traced the run (it sent to the sink)...
    assert any(r.startswith("POST") for r in _Sink.received), _Sink.received
    # ... and the record is the one made with it off: no phantom "loop" run, the same
    # events and messages, a subagent under the parent's task call.
    runs = [r for r in on if r[0] == "run"]
    assert "loop" not in [r[1] for r in runs], runs
    assert all(r[2] == ("error" if agent == "lean_unattached" else "completed")
               for r in runs), runs
    assert on == off
    if agent == "deep_agent":
        assert [r[1:5] for r in runs][1][2:] == ("coordinator", "c_task")
