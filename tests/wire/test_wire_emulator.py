"""The real LangChain adapters against the provider emulator, end to end.

Each provider, sync (``invoke``) and streaming (``stream_mode="messages"``),
runs the shopping scenario: two parallel tool calls, a tool that raises (an
error result), a tool the agent does not have, then an answer. The captured
exchanges are linked to the model calls, and checked field by field: the
documented differences explicitly, and every body against a snapshot in
``tests/wire_snapshots/`` (set ``UPDATE_WIRE_SNAPSHOTS=1`` to rewrite them).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracer.demo.providers import run_scenario
from tracer.read.loader import TraceDB
from tracer.wire import WireServer
from tracer.wire.render import model_call_events

SNAPSHOTS = Path(__file__).parents[1] / "wire_snapshots"
PROVIDERS = ("openai", "anthropic", "ollama")
MODES = ("invoke", "stream")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every provider x mode, recorded once into one database."""
    db = str(tmp_path_factory.mktemp("wire") / "wire.db")
    runs: dict[tuple[str, str], str] = {}
    with WireServer(mode="emulate", script="auto", db=db) as srv:
        for p in PROVIDERS:
            for mode in MODES:
                runs[(p, mode)] = run_scenario(db, p, "shopping", srv.url,
                                               stream=mode == "stream")
    with TraceDB(db) as tdb:
        yield {"db": db, "runs": runs,
               "data": {k: (tdb.run(rid), tdb.wire(rid)) for k, rid in runs.items()}}


def _bodies(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(w["request_body"]) for w in wire]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_model_call_is_captured_and_linked(recorded: dict[str, Any], provider: str,
                                                 mode: str) -> None:
    run, wire = recorded["data"][(provider, mode)]
    assert run.summary.status == "completed"
    calls = model_call_events(run)
    assert len(calls) == 5
    assert [w["seq"] for w in wire] == [c.seq for c in calls]
    assert {w["run_id"] for w in wire} == {run.id}
    assert {w["provider"] for w in wire} == {provider}
    assert [w["status"] for w in wire] == [200] * 5
    assert [w["error"] for w in wire] == [None] * 5
    streamed = mode == "stream" or provider == "ollama"  # ChatOllama always streams
    for w in wire:
        body = json.loads(w["request_body"])
        assert bool(body.get("stream")) is streamed
        chunks = json.loads(w["chunks"]) if w["chunks"] else None
        if streamed:
            assert chunks and len(chunks) >= 2  # raw chunks kept ...
            json.loads(w["response_body"])  # ... and the body reassembled
        else:
            assert chunks is None
    # The scripted answer went all the way through the adapter to the agent.
    final = [m for m in run.messages if m.type == "ai"][-1]
    assert "with SAVE10 you pay $1,191.60" in str(final.content)
    # Tool results: the unicorn raised, check_stock is not a tool the agent has.
    statuses = {m.tool_call_id: m.status for m in run.messages if m.type == "tool"}
    assert sorted(s or "success" for s in statuses.values()).count("error") == 2


def test_openai_wire_fields(recorded: dict[str, Any]) -> None:
    for mode in MODES:
        _run, wire = recorded["data"][("openai", mode)]
        second, third = _bodies(wire)[1:3]
        msgs = second["messages"]
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool"]
        assistant = msgs[2]
        assert assistant["content"] == "Let me look up both prices."
        calls = assistant["tool_calls"]
        assert [c["function"]["arguments"] for c in calls] == [
            '{"product": "laptop"}', '{"product": "mouse"}']  # a JSON *string*
        assert [m["tool_call_id"] for m in msgs[3:]] == [c["id"] for c in calls]
        assert all(c["id"].startswith("call_") for c in calls)
        # A turn that only calls a tool: content is null, not "".
        assert third["messages"][5]["role"] == "assistant"
        assert third["messages"][5]["content"] is None
        assert "unknown product 'unicorn'" in third["messages"][6]["content"]
        assert "is_error" not in json.dumps(third)
        assert second["stream"] is (mode == "stream")


def test_anthropic_wire_fields(recorded: dict[str, Any]) -> None:
    for mode in MODES:
        _run, wire = recorded["data"][("anthropic", mode)]
        second, third = _bodies(wire)[1:3]
        assert second["system"] == "You are a shopping assistant. Quote prices in USD."
        msgs = second["messages"]
        assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
        blocks = msgs[1]["content"]
        assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_use"]
        assert [b["input"] for b in blocks[1:]] == [{"product": "laptop"}, {"product": "mouse"}]
        results = msgs[2]["content"]
        assert [b["type"] for b in results] == ["tool_result", "tool_result"]
        assert [b["tool_use_id"] for b in results] == [b["id"] for b in blocks[1:]]
        assert [b["is_error"] for b in results] == [False, False]
        # The unicorn lookup failed: its result carries is_error.
        unicorn = third["messages"][4]["content"]
        assert [b["type"] for b in unicorn] == ["tool_result"]
        assert unicorn[0]["is_error"] is True
        assert ("stream" in second) is (mode == "stream")
        assert second["max_tokens"] > 0


def test_ollama_wire_fields(recorded: dict[str, Any]) -> None:
    for mode in MODES:
        _run, wire = recorded["data"][("ollama", mode)]
        second = _bodies(wire)[1]
        assert second["stream"] is True
        msgs = second["messages"]
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool"]
        calls = msgs[2]["tool_calls"]
        assert [c["function"]["arguments"] for c in calls] == [{"product": "laptop"},
                                                               {"product": "mouse"}]
        text = json.dumps(second)
        # The server sent an id per call (as Ollama does since 0.12.10) ...
        first_reply = wire[0]["response_body"]
        assert '"id": "call_' in first_reply
        # ... and the ollama client under ChatOllama dropped them: none goes back
        assert '"id"' not in text and "tool_call_id" not in text
        assert all(set(m) <= {"role", "content", "tool_calls", "tool_name"} for m in msgs)
        assert wire[1]["response_headers"] and "ndjson" in wire[1]["response_headers"]


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _normalise(obj: Any) -> Any:
    return json.loads(_UUID.sub("<uuid>", json.dumps(obj)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_bodies_match_snapshot(recorded: dict[str, Any], provider: str, mode: str) -> None:
    _run, wire = recorded["data"][(provider, mode)]
    got = _normalise([{"request": json.loads(w["request_body"]),
                       "response": json.loads(w["response_body"]),
                       "chunks": json.loads(w["chunks"]) if w["chunks"] else None}
                      for w in wire])
    path = SNAPSHOTS / f"{provider}-{mode}-shopping.json"
    if os.environ.get("UPDATE_WIRE_SNAPSHOTS") or not path.exists():
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if not os.environ.get("UPDATE_WIRE_SNAPSHOTS"):
            pytest.fail(f"snapshot {path.name} was missing and has been written: check it in")
    want = json.loads(path.read_text(encoding="utf-8"))
    for i, (g, w) in enumerate(zip(got, want)):
        for part in ("request", "response"):
            for key in sorted(set(g[part]) | set(w[part])):
                assert g[part].get(key) == w[part].get(key), (
                    f"model call {i}: {part}.{key} differs from {path.name}")
        assert g["chunks"] == w["chunks"], f"model call {i}: chunks differ from {path.name}"
    assert len(got) == len(want)


def test_emulator_answers_unknown_paths_and_bad_json(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    with WireServer(mode="emulate", db=tmp_path / "t.db") as srv:
        req = urllib.request.Request(srv.url + "/v1/chat/completions", data=b"{nope",
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as bad:
            urllib.request.urlopen(req, timeout=10)
        assert bad.value.code == 400
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(srv.url + "/v2/unknown", timeout=10)
        assert missing.value.code == 404
        with urllib.request.urlopen(srv.url + "/api/tags", timeout=10) as r:
            assert json.loads(r.read())["models"][0]["name"] == "llama3.1"
        ok = urllib.request.Request(
            srv.url + "/api/chat", headers={"Content-Type": "application/json"},
            data=json.dumps({"model": "m", "stream": False,
                             "messages": [{"role": "user", "content": "hello"}]}).encode())
        with urllib.request.urlopen(ok, timeout=10) as r:
            body = json.loads(r.read())
        assert body["message"]["content"] == "(emulated) You said: hello"
        assert body["done"] is True
    assert [e.status for e in srv.exchanges] == [400, 200]
    assert srv.exchanges[0].error and "bad request" in srv.exchanges[0].error


def _broken_script(req: object) -> object:
    msg = "the script has a bug"
    raise RuntimeError(msg)


def test_a_failing_script_is_a_500_and_a_recorded_error(tmp_path: Path) -> None:
    import urllib.error
    import urllib.request

    with WireServer(mode="emulate", script=_broken_script, db=tmp_path / "t.db") as srv:
        req = urllib.request.Request(srv.url + "/v1/messages", data=b'{"messages": []}',
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
    assert err.value.code == 500
    assert "the script has a bug" in json.loads(err.value.read())["error"]["message"]
    (ex,) = srv.exchanges
    assert ex.status == 500 and ex.error == "emulate failed: RuntimeError: the script has a bug"
