"""The OpenAI Responses API (``POST /v1/responses``) against the emulator and the proxy.

The real ``openai`` SDK drives a hand-rolled weather tool loop three ways (JSON,
``stream=True``, the ``responses.stream`` helper): what the SDK parsed, what the
``wire`` table holds, and that the recorded requests read back into the right
neutral conversation. Then ``previous_response_id``, forwarding, malformed
streams, and LangChain's ``ChatOpenAI(use_responses_api=True)``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI
from openai.types.responses import Response

from tracer.wire import WireServer
from tracer.wire.providers import (
    FORMATS,
    MalformedStream,
    Msg,
    Reply,
    ToolCall,
    format_for_path,
    formats_of,
)
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM

FMT = FORMATS["openai-responses"]
MODEL = "gpt-4.1-mini"
TOOLS = [{"type": "function", "name": "get_weather", "description": "Current weather.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}]
WEATHER = {"Oslo": "4°C, rain", "Bergen": "7°C, wind"}
ANSWER = "Here is the weather: Oslo: 4°C, rain Bergen: 7°C, wind"
MODES = ("json", "stream", "helper")


def _create(client: OpenAI, mode: str, **kw: Any) -> tuple[Response, list[str]]:
    """One model call; the response as the SDK parsed it, and the event types seen."""
    if mode == "json":
        return client.responses.create(**kw), []
    if mode == "stream":
        events = list(client.responses.create(**kw, stream=True))
        assert events[-1].type == "response.completed"
        return events[-1].response, [e.type for e in events]
    with client.responses.stream(**kw) as stream:
        types = [e.type for e in stream]
        return stream.get_final_response(), types


def weather_loop(client: OpenAI, mode: str) -> tuple[list[Response], list[list[str]]]:
    """The model asks for get_weather; the loop appends the calls and their outputs
    to ``input`` and calls again, until the model answers in text."""
    items: list[Any] = [{"role": "user", "content": WEATHER_PROMPT}]
    responses, events = [], []
    for _ in range(4):
        r, types = _create(client, mode, model=MODEL, instructions=WEATHER_SYSTEM,
                           input=items, tools=TOOLS)
        responses.append(r)
        events.append(types)
        calls = [o for o in r.output if o.type == "function_call"]
        if not calls:
            break
        items += [{"type": "function_call", "id": c.id, "call_id": c.call_id, "name": c.name,
                   "arguments": c.arguments} for c in calls]
        items += [{"type": "function_call_output", "call_id": c.call_id,
                   "output": WEATHER[json.loads(c.arguments)["city"]]} for c in calls]
    return responses, events


def _rows(db: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM wire ORDER BY id")]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def loops(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The weather loop in each mode, recorded into one database."""
    db = tmp_path_factory.mktemp("responses") / "t.db"
    out: dict[str, Any] = {}
    with WireServer(mode="emulate", script="weather", db=db) as srv:
        client = OpenAI(base_url=srv.url + "/v1", api_key="sk-fake", max_retries=0)
        for mode in MODES:
            responses, events = weather_loop(client, mode)
            out[mode] = {"responses": responses, "events": events}
    rows = _rows(db)
    for i, mode in enumerate(MODES):
        out[mode]["rows"] = rows[2 * i:2 * i + 2]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_parses_the_tool_loop(loops: dict[str, Any], mode: str) -> None:
    (first, second), events = loops[mode]["responses"], loops[mode]["events"]
    assert [o.type for o in first.output] == ["function_call", "function_call"]
    assert [json.loads(o.arguments) for o in first.output] == [{"city": "Oslo"},
                                                               {"city": "Bergen"}]
    assert {o.name for o in first.output} == {"get_weather"}
    assert all(o.call_id.startswith("call_") and o.id.startswith("fc_") for o in first.output)
    assert first.status == "completed" and first.id.startswith("resp_")
    assert first.output_text == ""
    assert [o.type for o in second.output] == ["message"]
    assert second.output_text == ANSWER
    for r in (first, second):
        assert r.usage is not None and r.usage.input_tokens > 0 and r.usage.output_tokens > 0
        assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
        assert r.model == MODEL
        Response.model_validate(r.model_dump())  # every required field is there
    if mode != "json":
        assert events[0] == ["response.created", "response.in_progress",
                             *["response.output_item.added",
                               "response.function_call_arguments.delta",
                               "response.function_call_arguments.delta",
                               "response.function_call_arguments.done",
                               "response.output_item.done"] * 2,
                             "response.completed"]
        assert events[1][2:5] == ["response.output_item.added", "response.content_part.added",
                                  "response.output_text.delta"]


@pytest.mark.parametrize("mode", MODES)
def test_the_wire_table_holds_each_exchange(loops: dict[str, Any], mode: str) -> None:
    rows = loops[mode]["rows"]
    assert [(r["provider"], r["method"], r["url"], r["status"], r["error"]) for r in rows] == [
        ("openai-responses", "POST", "emulator:/v1/responses", 200, None)] * 2
    for row, parsed in zip(rows, loops[mode]["responses"]):
        body = json.loads(row["request_body"])
        assert body["model"] == MODEL and body["instructions"] == WEATHER_SYSTEM
        assert bool(body.get("stream")) is (mode != "json")
        response = json.loads(row["response_body"])
        assert response["id"] == parsed.id
        assert response["output"] == [o.model_dump(exclude_none=True) for o in parsed.output]
        if mode == "json":
            assert row["chunks"] is None
        else:
            chunks = json.loads(row["chunks"])
            assert all(c.startswith("event: response.") and c.endswith("\n\n") for c in chunks)
            assert [json.loads(c.split("data: ", 1)[1])["sequence_number"]
                    for c in chunks] == list(range(len(chunks)))
            # The recorded chunks reassemble into exactly the JSON answer.
            assert FMT.reassemble(chunks) == response
            assert FMT.reassemble(FMT.split_stream("".join(chunks))) == response
    # Same conversation, same answer: streamed or not, the bodies are the same.
    json_bodies = [json.loads(r["response_body"]) for r in loops["json"]["rows"]]
    assert [json.loads(r["response_body"]) for r in rows] == json_bodies


def test_recorded_requests_read_back_into_the_conversation(loops: dict[str, Any]) -> None:
    first, second = (FMT.read_request(json.loads(r["request_body"]))
                     for r in loops["json"]["rows"])
    system, user = Msg("system", WEATHER_SYSTEM), Msg("user", WEATHER_PROMPT)
    assert first.messages == [system, user]
    assert first.provider == "openai-responses" and first.tools == ["get_weather"]
    calls = loops["json"]["responses"][0].output
    assert second.messages == [
        system, user,
        Msg("assistant", "", tuple(ToolCall(c.call_id, "get_weather",
                                            json.loads(c.arguments)) for c in calls)),
        Msg("tool", "4°C, rain", tool_call_id=calls[0].call_id),
        Msg("tool", "7°C, wind", tool_call_id=calls[1].call_id)]
    assert second.previous_response_id is None and second.include_usage


def test_read_request_items() -> None:
    body = {"model": "m", "instructions": "Be brief.", "tools": [
        {"type": "function", "name": "f", "parameters": {}}, {"type": "web_search"}],
        "input": [
            {"role": "developer", "content": "Use metric units."},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Hi "},
                         {"type": "input_image", "image_url": "data:,"},
                         {"type": "input_text", "text": "there"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
            {"type": "message", "role": "assistant", "id": "msg_1",
             "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
            {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "not json"},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {"type": "function_call_output", "call_id": "c2",
             "output": [{"type": "input_text", "text": "two"}]},
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {"type": "function_call", "call_id": "c3", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c3", "output": "three"}]}
    req = FMT.read_request(body)
    assert req.messages == [
        Msg("system", "Be brief."), Msg("system", "Use metric units."), Msg("user", "Hi there"),
        Msg("assistant", "Checking.", (ToolCall("c1", "f", {"a": 1}),
                                       ToolCall("c2", "f", {"__raw__": "not json"}))),
        Msg("tool", "one", tool_call_id="c1"), Msg("tool", "two", tool_call_id="c2"),
        # A call after the results is the next turn (no preceding text: empty).
        Msg("assistant", "", (ToolCall("c3", "f", {}),)), Msg("tool", "three", tool_call_id="c3")]
    assert req.tools == ["f", "web_search"] and not req.stream
    assert FMT.read_request({"input": "hello", "stream": True}).messages == [Msg("user", "hello")]
    # Each call followed by its own output (fc, out, fc, out) reads as one turn per
    # call: the wire does not say which calls one response made.
    split = FMT.read_request({"input": [
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "1"},
        {"type": "function_call", "call_id": "b", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "b", "output": "2"}]})
    assert [m.role for m in split.messages] == ["assistant", "tool", "assistant", "tool"]


def test_paths_tell_the_two_openai_endpoints_apart() -> None:
    assert format_for_path("/v1/responses") is FMT
    assert format_for_path("/v1/responses/?x=1") is FMT
    assert format_for_path("emulator:/v1/responses") is FMT
    assert format_for_path("/v1/chat/completions") is FORMATS["openai"]
    assert format_for_path("/v1/responses/resp_1") is None  # retrieve: not a model call
    assert format_for_path("/v1/responses/resp_1/input_items") is None
    assert [f.path for f in formats_of("openai")] == ["/v1/chat/completions", "/v1/responses"]
    from tracer.wire.proxy import providers_served

    assert "openai-responses /v1/responses" in providers_served()


def test_previous_response_id_continues_a_stored_conversation(tmp_path: Path) -> None:
    """The client sends only the new items; the emulator keeps the history, as the
    API does, so the script still sees the whole conversation."""
    db = tmp_path / "t.db"
    with WireServer(mode="emulate", script="weather", db=db) as srv:
        client = OpenAI(base_url=srv.url + "/v1", api_key="sk-fake", max_retries=0)
        first = client.responses.create(model=MODEL, input=WEATHER_PROMPT, tools=TOOLS)
        outputs = [{"type": "function_call_output", "call_id": c.call_id,
                    "output": WEATHER[json.loads(c.arguments)["city"]]}
                   for c in first.output if c.type == "function_call"]
        second, _ = _create(client, "stream", model=MODEL, tools=TOOLS, input=outputs,
                            previous_response_id=first.id)
        with pytest.raises(Exception, match="not found") as unknown:
            client.responses.create(model=MODEL, input="hi", previous_response_id="resp_nope")
    assert second.output_text == ANSWER
    assert type(unknown.value).__name__ == "BadRequestError"
    rows = _rows(db)
    assert [r["status"] for r in rows] == [200, 200, 400]
    assert "unknown previous_response_id" in rows[2]["error"]
    req = FMT.read_request(json.loads(rows[1]["request_body"]))
    # What the wire carried: only the results; the history is on the server.
    assert req.previous_response_id == first.id
    assert [(m.role, m.tool_call_id) for m in req.messages] == [
        ("tool", c.call_id) for c in first.output]


@pytest.fixture(scope="module")
def upstream() -> Iterator[WireServer]:
    """The emulator on its own port, recording nothing: the 'real provider'."""
    with WireServer(mode="emulate", script="weather") as srv:
        yield srv


@pytest.mark.parametrize("mode", ["json", "stream"])
def test_the_proxy_forwards_and_records(upstream: WireServer, tmp_path: Path,
                                        mode: str) -> None:
    db = tmp_path / "proxy.db"
    seen = len(upstream.exchanges)
    # A proxy for provider openai serves both OpenAI endpoints.
    with WireServer(mode="forward", provider="openai", upstream=upstream.url, db=db) as proxy:
        client = OpenAI(base_url=proxy.url + "/v1", api_key="sk-fake", max_retries=0)
        responses, _ = weather_loop(client, mode)
    assert responses[-1].output_text == ANSWER
    rows, sent = _rows(db), upstream.exchanges[seen:]
    assert len(rows) == len(sent) == 2
    for row, up in zip(rows, sent):
        assert row["url"] == upstream.url + "/v1/responses"
        assert (row["provider"], row["status"], row["error"]) == ("openai-responses", 200, None)
        assert row["request_body"] == up.request_body
        assert json.loads(row["response_body"]) == json.loads(up.response_body or "")
        assert (json.loads(row["chunks"]) if row["chunks"] else None) == up.chunks


class _Broken(BaseHTTPRequestHandler):
    """An upstream whose streams go wrong: cut off mid-event, or an error event."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if body["model"] == "cut":
            data = b'event: response.created\ndata: {"type": "response.created", "resp'
        else:
            data = (b'event: error\ndata: {"type": "error", "sequence_number": 0, '
                    b'"code": "server_error", "message": "The server had an error."}\n\n')
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


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


def test_a_malformed_upstream_stream_is_recorded_with_its_error(broken_upstream: str,
                                                                tmp_path: Path) -> None:
    db = tmp_path / "broken.db"
    with WireServer(mode="forward", provider="openai", upstream=broken_upstream,
                    db=db) as proxy:
        client = OpenAI(base_url=proxy.url + "/v1", api_key="sk-fake", max_retries=0)
        # The raw SDK stream drops the cut-off event and hands the error event over.
        seen = {m: [e.type for e in client.responses.create(model=m, input="hi", stream=True)]
                for m in ("cut", "error")}
    assert seen == {"cut": [], "error": ["error"]}
    cut, error = _rows(db)
    assert cut["status"] == 200 and cut["error"].startswith("malformed stream: ")
    assert "is not JSON" in cut["error"] and cut["response_body"].endswith('"resp')
    assert error["error"] == ("malformed stream: Responses stream error event: "
                              "server_error: The server had an error.")


def test_reassemble_rejects_what_is_not_a_response_stream() -> None:
    reply = Reply(text="Hello there, world", tool_calls=(ToolCall("call_1", "f", {"x": 1}),),
                  input_tokens=3, output_tokens=4, model="m", id="abc")
    chunks = FMT.stream_chunks(reply, FMT.read_request({"input": "hi", "stream": True}))
    assert FMT.reassemble(chunks) == FMT.response(reply)
    # Cut before response.completed: rebuilt from the item events, still in progress.
    cut = FMT.reassemble(chunks[:-2])
    assert cut["status"] == "in_progress" and cut["usage"] is None
    assert cut["output"][0]["content"][0]["text"] == "Hello there, world"
    assert cut["output"][1] == {**FMT.response(reply)["output"][1], "status": "in_progress"}
    failed = ('event: response.failed\ndata: {"type": "response.failed", "response": '
              '{"id": "resp_1", "status": "failed", "error": {"code": "server_error", '
              '"message": "boom"}}}\n\n')
    cases = {
        "no response.created": [],
        "is not JSON": ["event: response.created\ndata: {nope\n\n"],
        "is not an object": ["data: [1, 2]\n\n"],
        "the response failed: server_error: boom": [chunks[0], failed],
        "unexpected Responses stream event 'message_start'": [
            'event: message_start\ndata: {"type": "message_start"}\n\n'],
        "does not fit its item": [chunks[0], chunks[2], (
            'data: {"type": "response.output_text.delta", "output_index": 0, '
            '"content_index": 5, "delta": "x"}\n\n')],
    }
    for message, bad in cases.items():
        with pytest.raises(MalformedStream, match=message):
            FMT.reassemble(bad)


@pytest.mark.parametrize("streaming", [False, True])
def test_langchain_chat_openai_on_the_responses_api(tmp_path: Path, streaming: bool) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    db = tmp_path / "lc.db"
    with WireServer(mode="emulate", script="weather", db=db) as srv:
        llm = ChatOpenAI(model=MODEL, use_responses_api=True, base_url=srv.url + "/v1",
                         api_key="sk-fake", max_retries=0, streaming=streaming)
        llm_tools = llm.bind_tools(TOOLS)
        msgs: list[Any] = [HumanMessage(WEATHER_PROMPT)]
        ai = llm_tools.invoke(msgs)
        assert [(c["name"], c["args"]) for c in ai.tool_calls] == [
            ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Bergen"})]
        assert ai.usage_metadata and ai.usage_metadata["total_tokens"] > 0
        msgs += [ai, *(ToolMessage(WEATHER[c["args"]["city"]], tool_call_id=c["id"])
                       for c in ai.tool_calls)]
        final = llm_tools.invoke(msgs)
    assert final.text == ANSWER
    rows = _rows(db)
    assert [(r["url"], r["error"]) for r in rows] == [("emulator:/v1/responses", None)] * 2
    assert (rows[0]["chunks"] is not None) is streaming
    second = FMT.read_request(json.loads(rows[1]["request_body"]))
    assert [m.role for m in second.messages] == ["user", "assistant", "tool", "tool"]
    assert [c.id for c in second.messages[1].tool_calls] == [
        m.tool_call_id for m in second.messages[2:]] == [c["id"] for c in ai.tool_calls]
