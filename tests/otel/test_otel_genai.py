"""Spans of other instrumentations into runs (``tracer.otel.genai``).

Real instrumentors on real clients against the emulator (no network):
``opentelemetry-instrumentation-openai-v2`` on the seed's hand-rolled loop, in
each of its content modes, gives the very run ``wire.traffic`` builds from the
same loop's HTTP traffic; ``openinference-instrumentation-langchain`` on a
``create_agent`` run (and on a Deep Agents run with a subagent) gives the
messages, tool calls, ids and laps looptrace's own tracer recorded. Spans
built by hand cover the rest: the GenAI agent/tool/subagent shape, malformed
attributes, spans of no use, a trace without its root span.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tracer.checks.run import check_run
from tracer.otel.genai import (
    SpanImporter,
    attach_logs,
    convert,
    from_sdk,
    log_event,
    runs_from_spans,
)
from tracer.otel.spans import Span, SpanEvent
from tracer.read.diff import diff_runs
from tracer.read.loader import Run, TraceDB, content_text
from tracer.read.steps import build_replay
from tracer.vocab.records import TOOL_HOOKS
from tracer.wire import WireServer
from tracer.wire.loops import get_weather, openai_loop
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM

WEATHER = [get_weather("Oslo"), get_weather("Bergen")]


# -- helpers ---------------------------------------------------------------------------


def _runs(db: Path) -> list[Run]:
    with TraceDB(db) as t:
        return [t.run(s.id) for s in sorted(t.runs(), key=lambda s: s.started_at or 0)]


def _one(db: Path) -> Run:
    runs = _runs(db)
    assert len(runs) == 1, [r.summary.name for r in runs]
    return runs[0]


def _convo(run: Run) -> list[tuple[Any, ...]]:
    """What both sides of a comparison know of a conversation."""
    return [(m.type, content_text(m.content).strip(),
             [(c["name"], c["args"], c["id"]) for c in m.tool_calls],
             getattr(m, "tool_call_id", None)) for m in run.messages]


def _steps(run: Run) -> list[tuple[str, str, str | None]]:
    return [(s.event.hook, s.event.phase, s.event.tool_call_id)
            for s in build_replay(run).steps]


@contextmanager
def _openai_v2(monkeypatch: pytest.MonkeyPatch, content: str | None,
               latest: bool) -> Iterator[tuple[Any, Any]]:
    """``OpenAIInstrumentor`` on an SDK tracer and logger provider with in-memory
    exporters, in one of its content modes; uninstrumented afterwards."""
    from opentelemetry.instrumentation import _semconv
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs import export as log_export
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if latest:
        monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    else:
        monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    if content is None:
        monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    else:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", content)
    # the stability opt-in is read once a process: read it again (and again after the test)
    stability = _semconv._OpenTelemetrySemanticConventionStability
    monkeypatch.setattr(stability, "_initialized", False)
    monkeypatch.setattr(stability, "_OTEL_SEMCONV_STABILITY_SIGNAL_MAPPING", {})
    stability._initialize()
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    logs = log_export.InMemoryLogRecordExporter()
    lp = LoggerProvider()
    lp.add_log_record_processor(log_export.SimpleLogRecordProcessor(logs))
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=tp, logger_provider=lp)
    try:
        yield spans, logs
    finally:
        inst.uninstrument()
        tp.shutdown()
        lp.shutdown()


@contextmanager
def _openinference() -> Iterator[Any]:
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    inst = LangChainInstrumentor()
    inst.instrument(tracer_provider=tp)
    try:
        yield spans
    finally:
        inst.uninstrument()
        tp.shutdown()


# -- (a) openai-v2 on the hand-rolled loop == the run its traffic gives ----------------

# (capture setting, latest conventions?, where the content travels)
MODES = {
    "events": ("true", False, "log records (gen_ai.user.message ... gen_ai.choice)"),
    "span": ("span_only", True, "gen_ai.input.messages / output.messages attributes"),
    "details": ("event_only", True, "a gen_ai.client.inference.operation.details log record"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("mode", list(MODES))
def test_openai_v2_loop_is_the_run_its_traffic_gives(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, stream: bool) -> None:
    content, latest, _ = MODES[mode]
    wire_db, otel_db = tmp_path / "wire.db", tmp_path / "otel.db"
    with _openai_v2(monkeypatch, content, latest) as (spans, logs), WireServer(
            mode="emulate", script="weather", db=wire_db) as srv:
        answer = openai_loop(srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM, stream=stream)
    assert answer.startswith("Here is the weather: Oslo: Light snow")
    sdk_spans = spans.get_finished_spans()
    records = logs.get_finished_logs()
    assert [s.name for s in sdk_spans] == ["chat gpt-4o-mini"] * 2
    if mode == "span":
        assert not records and "gen_ai.input.messages" in sdk_spans[0].attributes
    else:  # the content is in log records tied to the chat span, not in span events
        assert records and not any(s.events for s in sdk_spans)
        assert all(r.log_record.span_id for r in records)
        assert "gen_ai.input.messages" not in sdk_spans[0].attributes

    ids, skipped = runs_from_spans(from_sdk(sdk_spans, records), str(otel_db))
    assert skipped == 0
    run = _one(otel_db)
    assert ids == [run.id]
    # one loop: two model calls, each its own trace, joined by conversation
    assert len(run.metadata["trace_ids"]) == 2
    assert run.summary.source == "otel" and run.observed == "otel"
    assert run.summary.status == "completed" and run.summary.laps == 2
    assert run.summary.name.startswith("openai: What's the weather")
    assert [m.type for m in run.messages] == ["human", "ai", "tool", "tool", "ai"]
    calls = run.messages[1].tool_calls
    assert [(c["name"], c["args"]) for c in calls] == [
        ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Bergen"})]
    assert all(c["id"].startswith("call_") for c in calls)
    assert [m.tool_call_id for m in run.messages[2:4]] == [c["id"] for c in calls]
    assert [m.text for m in run.messages[2:4]] == WEATHER
    assert build_replay(run).system_prompt() == WEATHER_SYSTEM
    assert run.metadata["provider"] == "openai"
    assert run.metadata["instrumentation"]

    # the same loop's traffic, read by the proxy: the same run
    wire = _one(wire_db)
    assert _convo(run) == _convo(wire)
    assert _steps(run) == _steps(wire)
    d = diff_runs(wire, run)
    assert d.identical and d.first_divergence is None, d.to_dict()
    exits = [s.event.payload for s in build_replay(run).steps
             if s.event.hook == "model" and s.event.phase == "exit"]
    assert exits[0]["tool_calls"] == 2 and exits[0]["usage"]["total_tokens"] > 0
    assert not [f for f in check_run(run) if f.severity == "error"]


def _by_trace(spans: list[Span]) -> list[list[Span]]:
    """Spans trace by trace, in the order the traces ended (as a receiver imports them)."""
    out: dict[str, list[Span]] = {}
    for sp in spans:
        out.setdefault(sp.trace_id, []).append(sp)
    return sorted(out.values(), key=lambda g: max(sp.end or sp.start for sp in g))


def test_a_receiver_joins_the_loop_trace_by_trace(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """``looptrace collect`` imports each trace when it is whole: the loop's two calls
    (two traces) still make one run, running until the model answers in text."""
    with _openai_v2(monkeypatch, "span_only", True) as (spans, _), WireServer(
            mode="emulate", script="weather") as srv:
        openai_loop(srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM)
    first, second = _by_trace(from_sdk(spans.get_finished_spans()))
    db = tmp_path / "t.db"
    importer = SpanImporter(db)
    ids = importer.add(first).run_ids
    run = _one(db)
    assert run.summary.status == "running" and run.summary.laps == 1
    assert importer.add(second).run_ids == ids
    assert importer.add(second).run_ids == []  # the same trace again: nothing new
    importer.close()
    run = _one(db)
    assert run.summary.status == "completed" and run.summary.laps == 2
    assert [m.type for m in run.messages] == ["human", "ai", "tool", "tool", "ai"]
    assert len(run.metadata["trace_ids"]) == 2


def test_openinference_with_openai_v2_is_one_run(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Both instrumentations on: OpenInference's LangChain spans are not the current
    context, so each openai-v2 chat span is a trace of its own. Its call is the agent
    run's call, whether the traces come together or one by one (chat traces first)."""
    from tracer.demo.providers import run_scenario

    with _openai_v2(monkeypatch, "span_only", True) as (v2, _), _openinference() as oi, \
            WireServer(mode="emulate", script="weather") as srv:
        run_scenario(str(tmp_path / "own.db"), "openai", "weather", srv.url)
    spans = from_sdk([*v2.get_finished_spans(), *oi.get_finished_spans()])
    assert len(_by_trace(spans)) == 3
    together = convert(spans, str(tmp_path / "together.db"))
    assert together.skipped == 2 and len(together.run_ids) == 1
    importer = SpanImporter(tmp_path / "apart.db")
    for trace in _by_trace(spans):
        importer.add(trace)
    importer.close()
    for name in ("together.db", "apart.db"):
        run = _one(tmp_path / name)
        assert run.summary.name == "openai-weather" and run.summary.laps == 2


def test_a_trace_given_again_replaces_its_runs(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    importer = SpanImporter(db)
    spans = _planner_trace()
    first = importer.add([sp for sp in spans if sp.span_id != _sid(9)])  # a late span
    again = importer.add(spans)
    importer.close()
    assert len(first.run_ids) == len(again.run_ids) == 2
    assert not set(first.run_ids) & set(again.run_ids)
    runs = _runs(db)
    assert sorted(r.id for r in runs) == sorted(again.run_ids)
    assert {r.summary.name: r.summary.laps for r in runs} == {"planner": 2, "researcher": 2}


def test_openai_v2_events_without_their_log_records_have_no_content(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Content captured as log records, but only the spans exported: the calls are
    known to have happened, their messages are not, and nothing is made up."""
    with _openai_v2(monkeypatch, "true", False) as (spans, _), WireServer(
            mode="emulate", script="weather") as srv:
        openai_loop(srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM)
    result = convert(from_sdk(spans.get_finished_spans()), str(tmp_path / "t.db"))
    assert result.skipped == 2 and result.unreadable == 0
    [warning] = result.warnings
    assert warning.startswith("2 model calls carried no messages (not captured)")
    runs = _runs(tmp_path / "t.db")
    assert len(runs) == 2  # one per trace: nothing to join them by
    for run in runs:
        assert run.summary.laps == 0 and run.messages == []
        assert "not captured" in run.metadata["content"]
        assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in run.metadata["content"]
        [call] = run.metadata["uncaptured_calls"]
        assert call["model"] == "gpt-4o-mini" and call["input_tokens"] > 0


def test_openai_v2_without_content_capture(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    with _openai_v2(monkeypatch, None, False) as (spans, logs), WireServer(
            mode="emulate", script="weather") as srv:
        openai_loop(srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM)
    # the events still come, without content (tool call ids and names only)
    records = logs.get_finished_logs()
    assert {r.log_record.event_name for r in records} >= {"gen_ai.user.message", "gen_ai.choice"}
    ids, skipped = runs_from_spans(from_sdk(spans.get_finished_spans(), records),
                                   str(tmp_path / "t.db"))
    assert skipped == 2 and len(ids) == 2
    for run in _runs(tmp_path / "t.db"):
        assert run.messages == [] and "not captured" in run.metadata["content"]


# -- (b) OpenInference on create_agent == what looptrace's tracer recorded -------------


def _compare_with_tracer(own: Run, imported: Run, no_span: frozenset[str] = frozenset()) -> None:
    """``no_span``: calls that ran no tool (an unknown tool's name), so had no span."""
    assert _convo(imported) == _convo(own)
    assert imported.summary.laps == own.summary.laps
    assert imported.summary.status == own.summary.status == "completed"
    assert imported.observed == "otel" and own.observed is None
    # each tool call ran as its own span: enter and exit at its own times
    tool_steps = [s.event for s in build_replay(imported).steps if s.event.hook == "tool"]
    calls = [c["id"] for m in own.messages for c in m.tool_calls]
    ran = [s.event.tool_call_id for s in build_replay(own).steps
           if s.event.hook in TOOL_HOOKS and s.event.phase == "enter"]
    assert sorted(e.tool_call_id for e in tool_steps if e.phase == "enter") == sorted(
        set(ran) - no_span)
    assert all(e.duration_ms is not None and e.duration_ms >= 0
               for e in tool_steps if e.phase == "exit" and e.tool_call_id not in no_span)
    assert all(e.tool_call_id in calls for e in tool_steps)
    assert not [f for f in check_run(imported) if f.severity == "error"]


@pytest.mark.parametrize("scenario", ["weather", "shopping"])
def test_openinference_create_agent_matches_the_tracer(tmp_path: Path, scenario: str) -> None:
    from tracer.demo.providers import run_scenario

    own_db, otel_db = tmp_path / "own.db", tmp_path / "otel.db"
    with _openinference() as spans, WireServer(mode="emulate", script=scenario) as srv:
        own_id = run_scenario(str(own_db), "openai", scenario, srv.url)
    sdk = from_sdk(spans.get_finished_spans())
    assert {s.attributes.get("openinference.span.kind") for s in sdk} >= {"CHAIN", "LLM", "TOOL"}
    result = convert(sdk, str(otel_db))
    assert result.skipped == 0 and result.unreadable == 0
    imported = _one(otel_db)
    with TraceDB(own_db) as t:
        own = t.run(own_id)
    unknown = frozenset(c["id"] for m in own.messages for c in m.tool_calls
                        if c["name"] == "check_stock")
    _compare_with_tracer(own, imported, unknown)
    assert imported.summary.name == f"openai-{scenario}" == own.summary.name
    assert imported.metadata["conventions"] == ["openinference"]
    assert build_replay(imported).system_prompt() == build_replay(own).system_prompt()
    # no hook is invented: model and tool events only
    assert {h for h, _, _ in _steps(imported)} == {"run", "model", "tool"}
    if scenario == "weather":
        assert [m.text for m in imported.messages[2:4]] == WEATHER
        assert [m.name for m in imported.messages[2:4]] == ["get_weather"] * 2
        return
    # shopping: a tool that failed (its span says so), and a call of a tool that does not
    # exist (no tool span: its error result is known only as sent back)
    results = {m.tool_call_id: m for m in imported.messages if m.type == "tool"}
    unicorn = next(m for m in results.values() if "unicorn" in m.text)
    assert unicorn.status == "error" == own.message_by_key[unicorn.key].status
    stock = next(m for m in results.values() if "check_stock" in m.text)
    exits = {s.event.tool_call_id: s.event for s in build_replay(imported).steps
             if s.event.hook == "tool" and s.event.phase == "exit"}
    assert exits[stock.tool_call_id].payload.get("observed")
    assert not exits[unicorn.tool_call_id].payload.get("observed")


def test_openinference_subagent_is_a_child_run(tmp_path: Path) -> None:
    """Deep Agents' ``task`` tool runs a subagent: its OpenInference chain sits under
    the TOOL span, and becomes a child run tied to the tool call."""
    from tracer.demo.scenarios import deep_agent

    own_db, otel_db = tmp_path / "own.db", tmp_path / "otel.db"
    with _openinference() as spans:
        deep_agent(str(own_db))
    ids, skipped = runs_from_spans(from_sdk(spans.get_finished_spans()), str(otel_db))
    assert skipped == 0 and len(ids) == 2
    runs = {r.summary.name: r for r in _runs(otel_db)}
    own = {r.summary.name: r for r in _runs(own_db)}
    assert set(runs) == set(own) == {"deep-research", "researcher"}
    parent, child = runs["deep-research"], runs["researcher"]
    assert parent.summary.parent_id is None
    assert child.summary.parent_id == parent.id
    assert child.summary.parent_tool_call_id == "call_task_1"
    assert own["researcher"].summary.parent_tool_call_id == "call_task_1"
    for name, run in runs.items():
        _compare_with_tracer(own[name], run)


def test_openinference_trace_without_its_root_span(tmp_path: Path) -> None:
    from tracer.demo.providers import run_scenario

    with _openinference() as spans, WireServer(mode="emulate", script="weather") as srv:
        run_scenario(str(tmp_path / "own.db"), "openai", "weather", srv.url)
    sdk = from_sdk(spans.get_finished_spans())
    root = next(s for s in sdk if s.parent_id is None)
    rest = [s for s in sdk if s is not root]
    ids, skipped = runs_from_spans(rest, str(tmp_path / "otel.db"))
    assert skipped == 0 and len(ids) == 1
    run = _one(tmp_path / "otel.db")
    assert run.summary.name == "openai-weather"  # from the spans' own metadata
    assert root.span_id in run.metadata["incomplete"]
    assert [m.type for m in run.messages] == ["human", "ai", "tool", "tool", "ai"]
    assert run.summary.laps == 2


def test_looptraces_own_genai_view_reads_back(tmp_path: Path) -> None:
    """looptrace's exporter writes a run as GenAI-convention spans (``runspans``);
    without the rows that ride along, what any GenAI consumer sees of it (agent,
    chat and tool spans, a subagent under its tool span) reads back as the run."""
    from tracer.demo.scenarios import deep_agent
    from tracer.otel.runspans import run_spans

    own_db, otel_db = tmp_path / "own.db", tmp_path / "otel.db"
    deep_agent(str(own_db))
    with TraceDB(own_db) as t:
        root = next(r for r in t.runs() if r.parent_id is None)
        spans = run_spans(t, root.id)
    for sp in spans:  # only the GenAI view: no looptrace attribute, no stored row
        sp.attributes = {k: v for k, v in sp.attributes.items()
                         if not k.startswith("looptrace.")}
        sp.events = [e for e in sp.events if not e.name.startswith("looptrace.")]
    ids, skipped = runs_from_spans(spans, str(otel_db))
    assert skipped == 0 and len(ids) == 2
    runs = {r.summary.name: r for r in _runs(otel_db)}
    own = {r.summary.name: r for r in _runs(own_db)}
    assert set(runs) == set(own) == {"deep-research", "researcher"}
    assert runs["researcher"].summary.parent_id == runs["deep-research"].id
    assert runs["researcher"].summary.parent_tool_call_id == "call_task_1"
    for name, run in runs.items():
        _compare_with_tracer(own[name], run)
        assert [m.name for m in run.messages if m.type == "tool"] == [
            m.name for m in own[name].messages if m.type == "tool"]


# -- spans built by hand -----------------------------------------------------------------

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def _sid(n: int) -> str:
    return f"{n:016x}"


def _span(n: int, name: str, parent: int | None, start: float, end: float,
          attrs: dict[str, Any] | None = None, *, trace: str = TRACE,
          events: list[SpanEvent] | None = None, status: str = "unset",
          parent_id: str | None = None) -> Span:
    return Span(trace, _sid(n), parent_id or (_sid(parent) if parent is not None else None),
                name, 1000.0 + start, 1000.0 + end, attrs or {}, events or [], status,
                scope="hand.made")


def _msgs(*msgs: dict[str, Any]) -> str:
    return json.dumps(list(msgs))


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _assistant(text: str = "", *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts += [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
    return {"role": "assistant", "parts": parts}


def _result(cid: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": cid,
                                       "response": text}]}


def _chat(n: int, parent: int | None, start: float, end: float, inputs: list[dict[str, Any]],
          output: dict[str, Any], **kw: Any) -> Span:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
             "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 10,
             "gen_ai.usage.output_tokens": 5, "gen_ai.input.messages": _msgs(*inputs),
             "gen_ai.output.messages": _msgs(output), **kw.pop("attrs", {})}
    return _span(n, "chat gpt-4o", parent, start, end, attrs, **kw)


def _tool(n: int, parent: int, start: float, end: float, name: str, cid: str, args: Any,
          result: str, **kw: Any) -> Span:
    return _span(n, f"execute_tool {name}", parent, start, end, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": cid, "gen_ai.tool.call.arguments": json.dumps(args),
        "gen_ai.tool.call.result": result}, **kw)


def _agent(n: int, name: str, parent: int | None, start: float, end: float, **attrs: Any) -> Span:
    return _span(n, f"invoke_agent {name}", parent, start, end, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attrs})


def _planner_trace() -> list[Span]:
    """A planner agent whose ``research`` tool runs a researcher agent."""
    ask = _user("Plan a day in Oslo.")
    call_r = _assistant("Let me ask.", ("c1", "research", {"q": "Oslo"}))
    r_ask = _user("Oslo")
    r_call = _assistant("", ("r1", "lookup", {"topic": "Oslo"}))
    return [
        _agent(1, "planner", None, 0, 7, **{"gen_ai.conversation.id": "conv-1"}),
        _chat(2, 1, 1, 2, [ask], call_r,
              attrs={"gen_ai.system_instructions": json.dumps(
                  [{"type": "text", "content": "You plan trips."}])}),
        _span(3, "POST /v1/chat/completions", 2, 1.1, 1.9, {"http.request.method": "POST"}),
        _tool(4, 1, 2, 5, "research", "c1", {"q": "Oslo"}, "Oslo is cold."),
        _agent(5, "researcher", 4, 2.1, 4.9),
        _chat(6, 5, 2.2, 2.5, [r_ask], r_call),
        _tool(7, 5, 2.6, 2.7, "lookup", "r1", {"topic": "Oslo"}, "cold"),
        _chat(8, 5, 3, 4, [r_ask, r_call, _result("r1", "cold")], _assistant("Oslo is cold.")),
        _chat(9, 1, 5.1, 6, [ask, call_r, _result("c1", "Oslo is cold.")],
              _assistant("Pack a coat.")),
        _span(10, "SELECT trips", 1, 6.1, 6.2, {"db.system": "sqlite"}),
    ]


def test_genai_agent_tools_and_subagent(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    result = convert(_planner_trace(), str(db))
    assert result.skipped == 2 and result.unreadable == 0  # the HTTP and the DB span
    runs = {r.summary.name: r for r in _runs(db)}
    assert set(runs) == {"planner", "researcher"}
    assert result.run_ids == [runs["planner"].id, runs["researcher"].id]
    planner, researcher = runs["planner"], runs["researcher"]
    assert planner.summary.agent_name == "planner" and planner.summary.thread_id == "conv-1"
    assert _convo(planner) == [
        ("human", "Plan a day in Oslo.", [], None),
        ("ai", "Let me ask.", [("research", {"q": "Oslo"}, "c1")], None),
        ("tool", "Oslo is cold.", [], "c1"),
        ("ai", "Pack a coat.", [], None)]
    assert planner.summary.laps == 2
    assert build_replay(planner).system_prompt() == "You plan trips."
    assert _steps(planner) == [
        ("run", "start", None), ("model", "enter", None), ("model", "exit", None),
        ("tool", "enter", "c1"), ("tool", "exit", "c1"),
        ("model", "enter", None), ("model", "exit", None), ("run", "end", None)]
    tool = [s.event for s in build_replay(planner).steps if s.event.hook == "tool"]
    assert tool[0].ts == 1002.0 and tool[1].ts == 1005.0 and tool[1].duration_ms == 3000.0
    assert tool[0].payload["args"] == {"q": "Oslo"}
    assert planner.summary.started_at == 1000.0 and planner.summary.ended_at == 1007.0
    # the subagent: a child run of the tool call that ran it
    assert researcher.summary.parent_id == planner.id
    assert researcher.summary.parent_tool_call_id == "c1"
    assert [m.type for m in researcher.messages] == ["human", "ai", "tool", "ai"]
    assert researcher.messages[2].tool_call_id == "r1" and researcher.messages[2].name == "lookup"
    assert researcher.summary.laps == 2
    for run in runs.values():
        assert not [f for f in check_run(run) if f.severity == "error"]


def test_agent_span_error_and_failed_model_call(tmp_path: Path) -> None:
    spans = [
        _agent(1, "flaky", None, 0, 3),
        _chat(2, 1, 1, 2, [_user("hi")], _assistant("never seen"), status="error"),
    ]
    spans[0].status, spans[0].status_message = "error", "RateLimitError: slow down"
    spans[1].events.append(SpanEvent("exception", 1001.9, {
        "exception.type": "RateLimitError", "exception.message": "slow down"}))
    runs_from_spans(spans, str(tmp_path / "t.db"))
    run = _one(tmp_path / "t.db")
    assert run.summary.status == "error" and run.summary.error == "RateLimitError: slow down"
    steps = build_replay(run).steps
    assert [(s.event.hook, s.event.phase) for s in steps][1:3] == [
        ("model", "enter"), ("model", "error")]
    assert steps[2].event.payload["error"] == "RateLimitError: slow down"


def test_malformed_pieces_are_left_out_and_counted(tmp_path: Path) -> None:
    spans = [
        _agent(1, "messy", None, 0, 5),
        _span(2, "chat gpt-4o", 1, 1, 2, {  # input not JSON: the call is left out
            "gen_ai.operation.name": "chat", "gen_ai.input.messages": "[{not json",
            "gen_ai.output.messages": _msgs(_assistant("lost"))}),
        _chat(3, 1, 3, 4, [
            _user("hello"),
            {"role": "wizard", "parts": [{"type": "text", "content": "?"}]},  # no such role
            {"role": "user", "parts": ["not a part", {"type": "text", "content": "again"}]},
            "not a message",
        ], _assistant("hi", ("c1", "x", "{broken")), attrs={
            "gen_ai.tool.definitions": "{nope",
            "gen_ai.system_instructions": "[oops"}),
    ]
    db = tmp_path / "t.db"
    result = convert(spans, str(db))
    assert result.skipped == 1  # the chat span whose input could not be read
    assert result.unreadable == 6
    assert runs_from_spans(spans, str(tmp_path / "again.db"))[1] == 7
    run = _one(db)
    assert run.summary.laps == 1
    assert _convo(run) == [
        ("human", "hello", [], None), ("human", "again", [], None),
        ("ai", "hi", [("x", {"__raw__": "{broken"}, "c1")], None)]
    problems = run.metadata["unreadable"]
    assert len(problems) == 6
    assert any("gen_ai.input.messages is not JSON" in p for p in problems)
    assert any("no known role ('wizard')" in p for p in problems)
    assert any("gen_ai.tool.definitions is not JSON" in p for p in problems)
    assert "input messages unreadable: 1 of 2 model calls" in run.metadata["content"]
    assert "OTEL_INSTRUMENTATION" not in run.metadata["content"]


def test_hostile_shapes_never_raise(tmp_path: Path) -> None:
    chat = {"gen_ai.operation.name": "chat"}
    nameless = {"role": "assistant", "parts": [{"type": "tool_call", "name": 5}]}
    spans = [
        _span(1, "chat", None, 0, 1, {**chat, "gen_ai.input.messages": 42,
                                      "gen_ai.output.messages": [None, nameless]}),
        _span(2, "chat", None, 1, 2, {**chat, "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": {"type": "text"}}, {"role": None}, [], {"role": "user",
              "parts": [{"type": 7}, {"type": "text", "content": {"x": "y"}}]}]),
            "gen_ai.output.messages": '{"role": "assistant", "content": {"a": 1}}'}),
        _span(3, "ChatModel", None, 2, 3, {
            "openinference.span.kind": "LLM", "llm.input_messages.0.message.role": 7,
            "llm.input_messages.x.message.content": "?", "llm.input_messages.1": "flat",
            "llm.input_messages.2.message.role": "user",
            "llm.input_messages.2.message.contents.0.message_content.text": None,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": None,
            "llm.tools.0.tool.json_schema": 3, "llm.token_count.prompt": "many"}),
        _span(4, "tool", 3, 2.5, 2.6, {
            "openinference.span.kind": "TOOL", "output.mime_type": "application/json",
            "output.value": '{"type": "tool", "data": {"content": {"a": 1}, "tool_call_id": 9}}',
            "input.mime_type": "application/json", "input.value": "[1,"}),
        _span(5, "chat", 5, 3, 4, {**chat}, events=[
            SpanEvent("gen_ai.user.message", 1003.1, {"body": 123}),
            SpanEvent("gen_ai.user.message", 1003.1, {"gen_ai.event.content": "not json"}),
            SpanEvent("gen_ai.choice", 1003.9, {"message": "[broken", "index": "0"})]),
        _span(6, "execute_tool", None, 5, 6, {"gen_ai.operation.name": "execute_tool",
                                              "gen_ai.tool.call.result": {"deep": [1, None]},
                                              "gen_ai.tool.call.arguments": b"\x00"}),
        _span(7, "invoke_agent", None, 7, 8, {"gen_ai.operation.name": "invoke_agent",
                                              "gen_ai.agent.name": ["not", "a", "name"],
                                              "metadata": "{"}),
    ]
    result = convert(spans, str(tmp_path / "t.db"))
    assert result.unreadable > 5
    assert _runs(tmp_path / "t.db")  # what could be read was written


def test_spans_of_no_use_are_skipped(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    spans = [_span(1, "GET /", None, 0, 1, {"http.request.method": "GET"}),
             _span(2, "SELECT 1", 1, 0.1, 0.2, {"db.system": "postgresql"}),
             _span(3, "embeddings", 1, 0.3, 0.4, {"gen_ai.operation.name": "embeddings"}),
             # an OpenInference chain with no model call and no tool: nothing to replay
             _span(4, "RunnableLambda", None, 2, 3, {"openinference.span.kind": "CHAIN"},
                   trace="0" * 31 + "1")]
    assert runs_from_spans(spans, str(db)) == ([], 4)
    assert _runs(db) == []
    assert runs_from_spans([], str(db)) == ([], 0)


def test_genai_trace_without_its_root_span(tmp_path: Path) -> None:
    """The invoke_agent span was lost: what arrived still makes the run (its calls
    joined by conversation, its tool span by its call id), marked incomplete."""
    lost = "00000000000000ff"
    spans = [s for s in _planner_trace() if s.span_id != _sid(1)]
    for s in spans:
        if s.parent_id == _sid(1):
            s.parent_id = lost
    db = tmp_path / "t.db"
    result = convert(spans, str(db))
    runs = {r.summary.name: r for r in _runs(db)}
    assert len(runs) == 2 and "researcher" in runs
    top = next(r for n, r in runs.items() if n != "researcher")
    assert top.summary.name == "openai: Plan a day in Oslo."
    assert lost in top.metadata["incomplete"]
    assert [m.type for m in top.messages] == ["human", "ai", "tool", "ai"]
    assert [(h, p) for h, p, _ in _steps(top)].count(("tool", "enter")) == 1
    # the subagent still hangs under the tool call that ran it
    assert runs["researcher"].summary.parent_id == top.id
    assert runs["researcher"].summary.parent_tool_call_id == "c1"
    assert result.skipped == 2


def test_loose_calls_are_joined_by_conversation(tmp_path: Path) -> None:
    """Chat spans with no agent span, one trace each (a hand-rolled loop): a call whose
    messages extend an earlier call and its reply continues that run (a follow-up
    question reopens it); another conversation is another run."""
    t1, t2, t3 = ("a" * 32, "b" * 32, "c" * 32)
    hi, hello = _user("hi"), _assistant("hello")
    spans = [
        _chat(1, None, 0, 1, [hi], hello, trace=t1),
        _chat(2, None, 2, 3, [_user("2+2?")], _assistant("4"), trace=t3),
        _chat(3, None, 4, 5, [hi, hello, _user("bye")], _assistant("bye!"), trace=t2),
    ]
    db = tmp_path / "t.db"
    ids, skipped = runs_from_spans(spans, str(db))
    assert skipped == 0 and len(ids) == 2
    runs = {r.summary.name: r for r in _runs(db)}
    chat = runs["openai: hi"]
    assert [m.text for m in chat.messages] == ["hi", "hello", "bye", "bye!"]
    assert chat.summary.laps == 2 and chat.metadata["trace_ids"] == [t1, t2]
    starts = [s for s in build_replay(chat).steps if (s.event.hook, s.event.phase) == (
        "run", "start")]
    assert len(starts) == 2 and starts[1].event.payload.get("continued")
    assert [m.text for m in runs["openai: 2+2?"].messages] == ["2+2?", "4"]


def test_model_calls_inside_a_tool_make_a_child_run(tmp_path: Path) -> None:
    spans = [
        _agent(1, "writer", None, 0, 9),
        _chat(2, 1, 1, 2, [_user("Summarise the doc.")],
              _assistant("", ("s1", "summarise", {"doc": "d"}))),
        _tool(3, 1, 3, 6, "summarise", "s1", {"doc": "d"}, "Short."),
        _chat(4, 3, 4, 5, [_user("Summarise: d")], _assistant("Short.")),
        _chat(5, 1, 7, 8, [_user("Summarise the doc."),
                           _assistant("", ("s1", "summarise", {"doc": "d"})),
                           _result("s1", "Short.")], _assistant("Done: Short.")),
    ]
    db = tmp_path / "t.db"
    runs_from_spans(spans, str(db))
    runs = {r.summary.name: r for r in _runs(db)}
    assert set(runs) == {"writer", "summarise"}
    assert runs["writer"].summary.laps == 2
    inner = runs["summarise"]
    assert inner.summary.parent_id == runs["writer"].id
    assert inner.summary.parent_tool_call_id == "s1"
    assert [m.text for m in inner.messages] == ["Summarise: d", "Short."]


def test_older_span_events_and_flat_attributes(tmp_path: Path) -> None:
    """The older per-message events as span events (fields in ``gen_ai.event.content``
    JSON or in attributes), and OpenLLMetry's flat ``gen_ai.prompt.N.*`` attributes."""
    call = {"id": "k1", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    ev = SpanEvent
    first = _span(1, "chat gpt-4o", None, 0, 1, {
        "gen_ai.operation.name": "chat", "gen_ai.system": "az.ai.inference"}, trace="d" * 32,
        events=[
            ev("gen_ai.system.message", 1000.1, {"gen_ai.event.content": json.dumps(
                {"content": "Be brief."})}),
            ev("gen_ai.user.message", 1000.1, {"content": "Weather in Oslo?"}),
            ev("gen_ai.choice", 1000.9, {"gen_ai.event.content": json.dumps(
                {"index": 0, "finish_reason": "tool_calls",
                 "message": {"role": "assistant", "tool_calls": [call]}})}),
            ev("gen_ai.choice", 1000.9, {"body": {"index": 1, "message": {"content": "x"}}}),
        ])
    second = _span(2, "chat gpt-4o", None, 2, 3, {
        "llm.request.type": "chat", "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Weather in Oslo?",
        "gen_ai.prompt.2.role": "assistant", "gen_ai.prompt.2.tool_calls.0.id": "k1",
        "gen_ai.prompt.2.tool_calls.0.name": "get_weather",
        "gen_ai.prompt.2.tool_calls.0.arguments": '{"city": "Oslo"}',
        "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.tool_call_id": "k1",
        "gen_ai.prompt.3.content": "Snow.",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Snowy.",
        "gen_ai.completion.0.finish_reason": "stop"}, trace="e" * 32)
    db = tmp_path / "t.db"
    ids, skipped = runs_from_spans([first, second], str(db))
    assert skipped == 0 and len(ids) == 1
    run = _one(db)
    assert _convo(run) == [
        ("human", "Weather in Oslo?", [], None),
        ("ai", "", [("get_weather", {"city": "Oslo"}, "k1")], None),
        ("tool", "Snow.", [], "k1"), ("ai", "Snowy.", [], None)]
    assert build_replay(run).system_prompt() == "Be brief."
    assert run.metadata["conventions"] == ["gen_ai (events)", "openllmetry"]


def test_tool_call_ids_missing_are_made_up_and_said(tmp_path: Path) -> None:
    spans = [_chat(1, None, 0, 1, [_user("go")], _assistant("", ("", "f", {}), ("", "g", {}))),
             _chat(2, None, 2, 3, [_user("go"), _assistant("", ("", "f", {}), ("", "g", {})),
                                   {"role": "tool", "parts": [
                                       {"type": "tool_call_response", "response": "F"},
                                       {"type": "tool_call_response", "response": "G"}]}],
                   _assistant("done"))]
    runs_from_spans(spans, str(tmp_path / "t.db"))
    run = _one(tmp_path / "t.db")
    ids = [c["id"] for c in run.messages[1].tool_calls]
    assert ids == ["otel-1-0", "otel-1-1"]
    assert [m.tool_call_id for m in run.messages[2:4]] == ids
    assert "made up" in run.metadata["ids"]


def test_parent_cycle_and_duplicates_do_not_break(tmp_path: Path) -> None:
    a = _chat(1, 2, 0, 1, [_user("x")], _assistant("y"))
    b = _span(2, "loop", 1, 0, 2, {"openinference.span.kind": "CHAIN"})
    ids, skipped = runs_from_spans([a, b, a], str(tmp_path / "t.db"))
    # the cycle is cut above the first span; the chain left below it holds no call
    assert len(ids) == 1 and skipped == 1
    assert [m.text for m in _one(tmp_path / "t.db").messages] == ["x", "y"]


def test_attach_logs(tmp_path: Path) -> None:
    span = _span(1, "chat gpt-4o", None, 0, 1, {"gen_ai.operation.name": "chat"})
    logs = [(TRACE, _sid(1), log_event("gen_ai.user.message", 1000.2, {}, {"content": "hi"})),
            (TRACE, _sid(1), log_event("gen_ai.choice", 1000.8, {"gen_ai.system": "openai"}, {
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hello"}})),
            (TRACE, None, log_event(None, 1000.5, {"event.name": "x"}, None)),
            (TRACE, _sid(9), log_event("gen_ai.user.message", 1000.5, {}, {"content": "?"}))]
    assert attach_logs([span], logs) == 2
    assert [e.name for e in span.events] == ["gen_ai.user.message", "gen_ai.choice"]
    runs_from_spans([span], str(tmp_path / "t.db"))
    assert [m.text for m in _one(tmp_path / "t.db").messages] == ["hi", "hello"]
