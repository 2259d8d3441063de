"""Every sample run, exported as OTLP spans to a live ``collect`` receiver, comes back exact.

The source is the sample database (``build_sample_db``), the sink a second SQLite
file written by a ``CollectServer`` listening on a free port of 127.0.0.1; the
spans travel over real HTTP through the SDK's own OTLP exporter. "Exact" is
checked two ways: ``diff_tree`` (and ``looptrace diff``) say identical, and the
JSONL export lines of both sides are equal, row for row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracer.cli import main
from tracer.interop.exchange import build_sample_db, export_lines, read_trace, sample_files
from tracer.otel.collect import CollectServer
from tracer.otel.export import export_otlp
from tracer.otel.rows import A_FORMAT, A_ROWS, ROW_EVENT
from tracer.otel.runspans import run_spans
from tracer.otel.spans import Span
from tracer.read.diff import diff_tree
from tracer.read.loader import TraceDB

SAMPLES = sample_files()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_db(tmp_path_factory.mktemp("otel-src") / "samples.db")


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CollectServer]:
    with CollectServer(tmp_path_factory.mktemp("otel-dst") / "collected.db", port=0,
                       quiet=0.1) as srv:
        yield srv


def _lines(db_path: str | Path, run_id: str) -> list[str]:
    with TraceDB(db_path) as db:
        return list(export_lines(db, run_id))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_every_sample_round_trips_through_collect(path: Path, source: Path,
                                                  collector: CollectServer) -> None:
    root = read_trace(path)[0]["root"]
    with TraceDB(source) as db:
        expected_spans = len(run_spans(db, root))
    sent = export_otlp(source, root, collector.url)
    assert sent == expected_spans
    # a looptrace trace is imported as soon as its last row is in: no waiting
    dest = collector.buffer.db
    assert _lines(dest, root) == _lines(source, root)
    with TraceDB(source) as a, TraceDB(dest) as b:
        d = diff_tree(a, root, b, root)
        assert d.identical, d
        assert len(b.run(root).children) == len(a.run(root).children)
    assert main(["diff", root, root, "--db", str(source), "--db-b", dest]) == 0


def test_cli_export_otlp_then_reexport_replaces(source: Path, collector: CollectServer,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    root = read_trace(SAMPLES[0])[0]["root"]
    dest = collector.buffer.db
    for _ in range(2):  # the same trace twice: the run is replaced, nothing doubles
        assert main(["export", root[:10], "--db", str(source), "--otlp", collector.url]) == 0
    assert "spans to " + collector.url + "/v1/traces" in capsys.readouterr().out
    assert _lines(dest, root) == _lines(source, root)
    with TraceDB(dest) as db:
        assert sum(r.id == root for r in db.runs()) == 1


def test_the_genai_view(source: Path) -> None:
    """What a tracing backend shows: invoke_agent > chat / execute_tool, a subagent
    under the tool call that started it, messages in the current message schema."""
    root = read_trace(next(p for p in SAMPLES if p.stem == "deep-agent"))[0]["root"]
    with TraceDB(source) as db:
        spans = run_spans(db, root)
        run = db.run(root)
    ops = [s.attributes["gen_ai.operation.name"] for s in spans]
    assert ops.count("invoke_agent") == 2
    assert ops.count("chat") == run.summary.model_calls + 2  # (and the subagent's two)
    top = spans[0]
    assert top.parent_id is None and top.name == "invoke_agent deep-research"
    assert top.attributes[A_FORMAT] == "looptrace-trace/1"
    assert top.start == run.summary.started_at and top.end == run.summary.ended_at
    task = next(s for s in spans if s.name == "execute_tool task")
    sub = next(s for s in spans if s.name == "invoke_agent researcher")
    assert sub.parent_id == task.span_id
    assert task.attributes["gen_ai.tool.call.id"] == "call_task_1"
    assert json.loads(task.attributes["gen_ai.tool.call.arguments"])["subagent_type"] == (
        "researcher")
    chat = next(s for s in spans if s.attributes["gen_ai.operation.name"] == "chat")
    assert chat.kind == "client" and chat.parent_id == top.span_id
    assert chat.attributes["gen_ai.provider.name"] == "scripted"
    assert chat.attributes["gen_ai.request.model"] == "scripted-deep"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 28
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    question = "What is the capital of Norway, and how many people live there?"
    assert json.loads(chat.attributes["gen_ai.input.messages"]) == [{
        "role": "user", "parts": [{"type": "text", "content": question}]}]
    out = json.loads(chat.attributes["gen_ai.output.messages"])
    assert out[0]["role"] == "assistant" and out[0]["finish_reason"] == "tool_calls"
    assert {"type": "tool_call", "id": "call_task_1", "name": "task"}.items() <= (
        out[0]["parts"][-1].items())
    assert json.loads(chat.attributes["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "You coordinate research. Delegate with task."}]
    second = [s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"
              and s.parent_id == top.span_id][1]
    msgs = json.loads(second.attributes["gen_ai.input.messages"])
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool"]
    assert msgs[2]["parts"][0]["type"] == "tool_call_response"
    assert msgs[2]["parts"][0]["id"] == "call_task_1"
    # node hooks as span events named after the hook, with their middleware
    hooks = [(e.name, e.attributes.get("looptrace.middleware")) for e in top.events
             if e.name != ROW_EVENT]
    assert ("before_agent", "PatchToolCallsMiddleware") in hooks
    assert ("after_agent", "_ParentNotifierMiddleware") in hooks
    # the same run exported twice gives the same ids
    with TraceDB(source) as db:
        assert [s.span_id for s in run_spans(db, root)] == [s.span_id for s in spans]


def test_what_backends_show_first(source: Path) -> None:
    """input.value / output.value on every span, flat tool definitions, the error text,
    the service name, the rows in one event per span (issue 27)."""
    def spans_of(stem: str, service: str | None = None) -> list[Span]:
        root = read_trace(next(p for p in SAMPLES if p.stem == stem))[0]["root"]
        with TraceDB(source) as db:
            return run_spans(db, root, service)

    spans = spans_of("shopping", "shop-team")
    top = spans[0]
    assert top.resource == {"service.name": "shop-team", "openinference.project.name": "shop-team"}
    a = top.attributes
    assert a["input.value"] == ("What do a laptop and a mouse cost with code SAVE10? "
                                "And a unicorn?")
    assert a["input.mime_type"] == "text/plain"
    assert a["output.value"].startswith("The laptop ($1,299) and mouse ($25) come to $1,324")
    assert "gen_ai.usage.input_tokens" not in a  # the chat spans carry them (no double count)
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert chats[0].attributes["output.value"] == "Let me look up both prices."
    assert chats[0].attributes["input.mime_type"] == "application/json"
    assert json.loads(chats[0].attributes["input.value"])[0]["role"] == "user"
    calls = json.loads(chats[1].attributes["output.value"])  # no text: the tool calls
    assert calls == [{"name": "get_price", "arguments": {"product": "unicorn"},
                      "id": "call_price_unicorn"}]
    assert chats[1].attributes["output.mime_type"] == "application/json"
    assert json.loads(chats[0].attributes["gen_ai.tool.definitions"])[0] == {
        "type": "function", "name": "get_price",
        "description": "Look up the price of a product in the catalogue (USD).",
        "parameters": {"properties": {"product": {"type": "string"}}, "required": ["product"],
                       "type": "object"}}
    unicorn = next(s for s in spans if s.attributes.get("gen_ai.tool.call.id")
                   == "call_price_unicorn")
    assert json.loads(unicorn.attributes["input.value"]) == {"product": "unicorn"}
    assert unicorn.status == "error"
    assert unicorn.status_message == "unknown product 'unicorn': not in the catalogue"
    assert unicorn.attributes["output.value"] == unicorn.status_message
    for s in spans:
        assert [e.name for e in s.events].count(ROW_EVENT) == 1, s.name
        assert s.attributes.get("input.value"), s.name
    assert top.attributes[A_ROWS] == len(spans)  # one row event per span
    hitl = spans_of("human-in-the-loop")
    assert {s.attributes.get("gen_ai.conversation.id") for s in hitl} == {"demo-hitl-thread"}
    assert hitl[0].resource["service.name"] == "looptrace"
