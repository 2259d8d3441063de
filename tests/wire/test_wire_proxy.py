"""The recording proxy: forwarding to a local upstream, redaction, broken upstreams, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tracer.demo.providers import chat_model, run_scenario
from tracer.read.loader import TraceDB
from tracer.vocab.redact import Redactor
from tracer.wire import WireRecorder, WireServer
from tracer.wire.capture import Exchange, redact_headers
from tracer.wire.render import model_call_events


@pytest.fixture(scope="module")
def upstream() -> Iterator[WireServer]:
    """The emulator on its own port, recording nothing: the 'real provider'."""
    with WireServer(mode="emulate", script="auto") as srv:
        yield srv


@pytest.mark.parametrize(("provider", "stream"), [
    ("openai", False), ("openai", True), ("anthropic", False), ("anthropic", True),
    ("ollama", False)])
def test_proxy_forwards_and_records_both_directions(upstream: WireServer, tmp_path: Path,
                                                    provider: str, stream: bool) -> None:
    db = str(tmp_path / "proxy.db")
    seen = len(upstream.exchanges)
    with WireServer(mode="forward", provider=provider, upstream=upstream.url, db=db) as proxy:
        run_id = run_scenario(db, provider, "weather", proxy.url, stream=stream)
    sent = upstream.exchanges[seen:]
    with TraceDB(db) as tdb:
        run = tdb.run(run_id)
        rows = tdb.wire(run_id)
    assert run.summary.status == "completed"
    assert len(rows) == len(sent) == 2
    assert [r["seq"] for r in rows] == [e.seq for e in model_call_events(run)]
    path = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages",
            "ollama": "/api/chat"}[provider]
    for row, up in zip(rows, sent):
        assert row["url"] == upstream.url + path  # where it really went
        assert row["provider"] == provider and row["status"] == 200 and row["error"] is None
        # Request: exactly the bytes the upstream received.
        assert row["request_body"] == up.request_body
        # Response: the raw chunks the upstream sent, and the same reassembled body.
        if up.chunks is not None:
            assert json.loads(row["chunks"]) == up.chunks
        assert json.loads(row["response_body"]) == json.loads(up.response_body or "")
    final = [m for m in run.messages if m.type == "ai"][-1]
    assert "Oslo" in str(final.content) and "Bergen" in str(final.content)


SECRETS = {"openai": "sk-proj-TOPSECRETopenai0123456789", "x-api-key": "xk-TOPSECRET-x-api-key",
           "api-key": "azure-TOPSECRET-api-key", "anthropic": "sk-ant-api03-TOPSECRETanthropic"}


def test_credential_headers_are_redacted_but_forwarded(upstream: WireServer,
                                                       tmp_path: Path) -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_openai import ChatOpenAI

    db = tmp_path / "secret.db"
    seen = len(upstream.exchanges)
    # Redaction of values switched off: the header names alone must still mask them.
    rec = WireRecorder(db, redactor=Redactor(enabled=False))
    with WireServer(mode="forward", provider="openai", upstream=upstream.url,
                    recorder=rec) as proxy:
        oa = ChatOpenAI(model="gpt-4o-mini", base_url=proxy.url + "/v1",
                        api_key=SECRETS["openai"], max_retries=0,
                        default_headers={"x-api-key": SECRETS["x-api-key"],
                                         "api-key": SECRETS["api-key"]})
        an = ChatAnthropic(model="claude-haiku-4-5", base_url=proxy.url,
                           api_key=SECRETS["anthropic"], max_retries=0)
        run_scenario(str(db), "openai", "weather", proxy.url, model=oa)
        run_scenario(str(db), "anthropic", "weather", proxy.url, model=an)
    rec.writer.flush()
    # The upstream got the real credentials ...
    sent = "\n".join(json.dumps(e.request_headers) for e in upstream.exchanges[seen:])
    for secret in SECRETS.values():
        assert secret in sent
    # ... the trace database has none of them, anywhere.
    with TraceDB(db) as tdb:
        rows = [r for s in tdb.runs() for r in tdb.wire(s.id)]
    assert len(rows) == 4
    for row in rows:
        headers = {k.lower(): v for k, v in json.loads(row["request_headers"]).items()}
        assert any(k in headers for k in ("authorization", "x-api-key"))
        for name in ("authorization", "x-api-key", "api-key"):
            if name in headers:
                assert headers[name] == "[REDACTED]"
    rec.writer.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("secret.db*"))
    for secret in SECRETS.values():
        assert secret.encode() not in raw


def test_redact_headers_is_case_insensitive() -> None:
    got = redact_headers({"AUTHORIZATION": "Bearer abc", "X-Api-Key": "k", "Api-Key": "k2",
                          "Content-Type": "application/json"})
    assert got == {"AUTHORIZATION": "[REDACTED]", "X-Api-Key": "[REDACTED]",
                   "Api-Key": "[REDACTED]", "Content-Type": "application/json"}
    row = Exchange("openai", "POST", "https://h/v1/x?key=abc&x=1", {"api-key": "s"}, "{}").row()
    assert row["url"] == "https://h/v1/x?key=%5BREDACTED%5D&x=1" or "abc" not in row["url"]


class _Broken(BaseHTTPRequestHandler):
    """An upstream that answers 200 with a body no client can parse."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("/api/chat"):
            body, ctype = b'{"model": "m", "message": {"role": "assis\n', "application/x-ndjson"
        elif self.path.endswith("/v1/messages"):
            body, ctype = b'event: message_start\ndata: {"type": "message_start", "mess', (
                "text/event-stream")
        else:
            body, ctype = b'{"id": "chatcmpl-1", "choices": [ truncated', "application/json"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def broken_upstream() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama"])
def test_malformed_upstream_response_is_recorded_and_surfaced(
        broken_upstream: str, tmp_path: Path, provider: str) -> None:
    from langchain.agents import create_agent

    from tracer import TraceMiddleware

    db = str(tmp_path / "broken.db")
    with WireServer(mode="forward", provider=provider, upstream=broken_upstream, db=db) as proxy:
        tm = TraceMiddleware(db=db)
        agent = create_agent(chat_model(provider, proxy.url), tools=[], middleware=[tm])
        with pytest.raises(Exception) as raised:
            agent.invoke({"messages": [("user", "hello")]})
        tm.flush()
    # The adapter's own error reached the caller, not one of looptrace's.
    assert not type(raised.value).__module__.startswith("tracer")
    with TraceDB(db) as tdb:
        (summary,) = tdb.runs()
        run = tdb.run(summary.id)
        (row,) = tdb.wire(summary.id)
    assert row["status"] == 200
    assert row["error"] and ("malformed" in row["error"])
    assert any(x in row["response_body"] for x in ("truncated", "assis", '"mess'))
    errors = [e for e in run.events if e.phase == "error" and e.hook == "wrap_model_call"]
    assert len(errors) == 1
    assert row["seq"] == model_call_events(run)[0].seq  # linked to the failed call
    assert summary.status == "error"


def test_async_agent_through_the_emulator(tmp_path: Path) -> None:
    """ainvoke: the adapters' async clients and the async wrap hooks, same capture."""
    import asyncio

    from langchain.agents import create_agent

    from tracer import TraceMiddleware
    from tracer.demo.providers import scenario_tools
    from tracer.wire.scenarios import WEATHER_PROMPT

    db = str(tmp_path / "async.db")
    with WireServer(mode="emulate", db=db) as srv:
        tm = TraceMiddleware(db=db)
        agent = create_agent(chat_model("anthropic", srv.url), tools=scenario_tools("weather"),
                             middleware=[tm])
        # A fresh loop on its own thread: a session-wide Playwright browser keeps an
        # event loop running on the main thread, where asyncio.run() would refuse.
        box: dict[str, Any] = {}
        worker = threading.Thread(target=lambda: box.setdefault("out", asyncio.run(
            agent.ainvoke({"messages": [("user", WEATHER_PROMPT)]}))))
        worker.start()
        worker.join(120)
        out = box["out"]
        tm.flush()
    assert "Bergen" in str(out["messages"][-1].content)
    with TraceDB(db) as tdb:
        (s,) = tdb.runs()
        run = tdb.run(s.id)
        rows = tdb.wire(s.id)
    assert [r["seq"] for r in rows] == [e.seq for e in model_call_events(run)]
    assert len(rows) == 2


def test_unreachable_upstream_is_a_502_row(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    db = str(tmp_path / "down.db")
    with WireServer(mode="forward", provider="ollama", upstream="http://127.0.0.1:9",
                    db=db) as proxy:
        req = urllib.request.Request(proxy.url + "/api/chat", data=b'{"model": "m"}',
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 502
    assert proxy.exchanges[0].error and "unreachable" in proxy.exchanges[0].error


def test_cli_proxy_in_another_process_links_to_the_run(store_db: str) -> None:
    """`looptrace proxy` as its own process; the agent and its tracer in this one; on
    each engine (the proxy's exchanges and the tracer's run in one store)."""
    db = store_db
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "proxy", "--provider", "openai", "--emulate", "auto",
         "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=Path(__file__).resolve().parents[2])
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "emulating openai" in first, first
        base = proc.stdout.readline().split("base_url =")[1].split()[0]
        assert base.startswith("http://127.0.0.1:") and base.endswith("/v1")
        run_id = run_scenario(str(db), "openai", "weather", base.removesuffix("/v1"))
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert all("POST" in ln and " 200 " in ln for ln in lines), lines
        # The proxy links each exchange once this process has written the model
        # call (its writer commits in the background): wait for it, boundedly.
        deadline = time.monotonic() + 20
        while True:
            with TraceDB(db) as tdb:
                rows = tdb.wire(run_id)
                run = tdb.run(run_id)
            if len(rows) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(10)
    assert [r["seq"] for r in rows] == [e.seq for e in model_call_events(run)]
    assert all("sk-fake" not in r["request_headers"] for r in rows)


def test_cli_proxy_rejects_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    from tracer.cli import main

    assert main(["proxy", "--provider", "openai", "--emulate", "weather",
                 "--upstream", "http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exclude each other" in err
    assert main(["proxy", "--provider", "ollama", "--emulate", "nope"]) == 1
    assert "unknown emulator script" in capsys.readouterr().err
