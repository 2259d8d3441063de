"""Every sample run, exported to a REAL Arize Phoenix and a real MLflow tracking server,
read back through each one's own client: what their users see.

The servers run from their own venvs (``backend_kit``: skipped without them, failed in
CI). Each gets every sample run over OTLP/HTTP (``export_otlp``, the SDK's exporter),
then a script run by the backend's python reads the spans back (Phoenix's
``Client().spans`` / ``sessions``, MLflow's ``MlflowClient.search_traces``). The
expected values come from the source database through the loader (messages, run
summaries), or are written out by hand; never from the export's own spans.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from backend_kit import (
    ARTIFACTS,
    mlflow_server,
    mlflow_span,
    phoenix_server,
    phoenix_span,
    read_back,
)

from tracer.interop.exchange import build_sample_db
from tracer.otel.export import export_otlp
from tracer.otel.imports import import_spans
from tracer.otel.spans import Span
from tracer.read.diff import diff_tree
from tracer.read.loader import Run, TraceDB, content_text

pytestmark = [pytest.mark.backends, pytest.mark.timeout(1200)]  # two servers' first start

SERVICE = "looptrace-samples"
TIMEOUT = 120.0  # a first request to a freshly started server is slow on a busy machine


# -- what the source database says -------------------------------------------------------

class Expected:
    """One sample run tree, as the loader reads it."""

    def __init__(self, db: TraceDB, root: str) -> None:
        self.root = db.run(root)
        self.runs: list[Run] = []
        todo = [root]
        while todo:
            run = db.run(todo.pop(0))
            self.runs.append(run)
            todo += [c.id for c in run.children]
        s = self.root.summary
        self.agent_names = sorted(f"invoke_agent {r.summary.agent_name or r.summary.name}"
                                  for r in self.runs)
        self.model_calls = sum(r.summary.model_calls for r in self.runs)
        self.tokens = (sum(r.summary.input_tokens or 0 for r in self.runs),
                       sum(r.summary.output_tokens or 0 for r in self.runs))
        latest = {}  # each position's last version (a middleware may have rewritten it)
        for m in sorted([*self.root.messages, *self.root.revisions], key=lambda m: m.seq):
            latest[m.position] = m
        humans = [latest[p] for p in sorted(latest) if latest[p].type == "human"]
        self.question = content_text(humans[0].content) if humans else None
        ais = [latest[p] for p in sorted(latest) if latest[p].type == "ai"]
        self.answer = (content_text(ais[-1].content) or None) if ais and s.status != "error" \
            else None
        self.error = s.error if s.status == "error" else None
        self.thread = s.thread_id
        # each tool call that got a result: its arguments and its result
        args = {c["id"]: c.get("args") for r in self.runs for m in r.messages
                for c in m.tool_calls}
        # the tool calls that ran (a loop seen through the proxy shows no tool running;
        # a call the human rejected never ran)
        ran = {e.tool_call_id for r in self.runs for e in r.events if e.tool_call_id}
        self.tool_calls = len(ran)
        self.tool_io = {m.tool_call_id: (args.get(m.tool_call_id), content_text(m.content))
                        for r in self.runs for m in r.messages
                        if m.type == "tool" and m.tool_call_id in args and m.tool_call_id in ran}
        self.tool_errors = {m.tool_call_id: content_text(m.content) for r in self.runs
                            for m in r.messages if m.type == "tool" and m.status == "error"
                            and m.tool_call_id in ran}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_db(tmp_path_factory.mktemp("backends-src") / "samples.db")


@pytest.fixture(scope="module")
def expected(source: Path) -> dict[str, Expected]:
    with TraceDB(source) as db:
        return {r.id: Expected(db, r.id) for r in db.runs() if r.parent_id is None}


def _send_all(source: Path, url: str, **kw: Any) -> dict[str, int]:
    with TraceDB(source) as db:
        roots = [r.id for r in db.runs() if r.parent_id is None]
    return {root: export_otlp(source, root, url, timeout=TIMEOUT, **kw) for root in roots}


def _kind_names(spans: list[dict[str, Any]], kind_key: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for s in spans:
        out[str(s[kind_key])].add(s["name"].split(" ", 1)[0])
    return out


def _tree_ok(spans: list[dict[str, Any]], parent_of: dict[str, str | None],
             names: dict[str, str]) -> None:
    """One root (invoke_agent), every parent present, a subagent's invoke_agent under an
    execute_tool span, chat and tool spans under an invoke_agent."""
    roots = [sid for sid, p in parent_of.items() if not p]
    assert len(roots) == 1 and names[roots[0]].startswith("invoke_agent ")
    for sid, parent in parent_of.items():
        if parent is None:
            continue
        assert parent in parent_of, f"{names[sid]}: parent {parent} not stored"
        if names[sid].startswith("invoke_agent "):
            assert names[parent].startswith("execute_tool "), names[sid]
        else:
            assert names[parent].startswith("invoke_agent "), names[sid]


def _round_trip(spans: list[Span], source: Path, root: str, tmp: Path) -> None:
    """What the backend stored still imports as the very same run."""
    back = tmp / f"back-{root}.db"
    result = import_spans(spans, back)
    assert root in result.run_ids, result.warnings
    with TraceDB(source) as a, TraceDB(back) as b:
        d = diff_tree(a, root, b, root)
        assert d.identical, d


# -- Arize Phoenix -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def phoenix(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[dict[str, int], Any]]:
    tmp = tmp_path_factory.mktemp("phoenix")
    with phoenix_server(tmp) as url:
        sent = _send_all(source, url, service=SERVICE)
        got = read_back("phoenix", url, SERVICE, sent=sent, tmp=tmp)
        (ARTIFACTS / "phoenix-readback.json").write_text(json.dumps([sent, got]))
        yield sent, got


def test_phoenix_shows_every_sample(phoenix: tuple[dict[str, int], Any],
                                    expected: dict[str, Expected], source: Path,
                                    tmp_path: Path) -> None:
    sent, got = phoenix
    assert SERVICE in got["projects"]  # --service names the project
    by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in got["spans"]:
        by_trace[s["context"]["trace_id"]].append(s)
    assert set(by_trace) == set(sent) == set(expected)
    for root, exp in expected.items():
        spans = by_trace[root]
        assert len(spans) == sent[root], exp.root.summary.name
        names = {s["context"]["span_id"]: s["name"] for s in spans}
        _tree_ok(spans, {s["context"]["span_id"]: s["parent_id"] for s in spans}, names)
        kinds = _kind_names(spans, "span_kind")
        assert kinds == {k: v for k, v in {"AGENT": {"invoke_agent"}, "LLM": {"chat"},
                                          "TOOL": {"execute_tool"}}.items() if k in kinds}
        assert sorted(n for n in names.values() if n.startswith("invoke_agent ")) == (
            exp.agent_names)
        assert sum(s["span_kind"] == "LLM" for s in spans) == exp.model_calls
        assert sum(s["span_kind"] == "TOOL" for s in spans) == exp.tool_calls
        top = next(s for s in spans if s["parent_id"] is None)
        a = top["attributes"]
        # the trace list's Input / Output columns
        assert a.get("input.value") == exp.question
        assert a.get("output.value") == exp.answer
        for s in spans:  # every span has an input; every LLM span a real output
            assert s["attributes"].get("input.value"), s["name"]
            out = s["attributes"].get("output.value")
            if s["span_kind"] == "LLM" and s["status_code"] != "ERROR":
                assert out and not out.startswith('{"model"'), (s["name"], out)
        # messages: the LLM spans' conversation, the question first
        llms = sorted((s for s in spans if s["span_kind"] == "LLM"
                       and s["parent_id"] == top["context"]["span_id"]),
                      key=lambda s: s["start_time"])
        if llms and exp.question:
            first = llms[0]["attributes"]
            contents = [first.get(f"llm.input_messages.{i}.message.content") for i in range(4)]
            roles = [first.get(f"llm.input_messages.{i}.message.role") for i in range(4)]
            assert exp.question in contents
            assert roles[contents.index(exp.question)] == "user"
        # token totals: Phoenix adds up the LLM spans (and would add an agent's too)
        counted = [s["attributes"] for s in spans if "llm.token_count.prompt" in s["attributes"]]
        assert all(s["span_kind"] == "LLM" for s in spans
                   if "llm.token_count.prompt" in s["attributes"])
        assert (sum(c["llm.token_count.prompt"] for c in counted),
                sum(c.get("llm.token_count.completion", 0) for c in counted)) == exp.tokens
        # tools: arguments in, result out, the error text as the status message
        tools = {s["attributes"].get("tool.id") or s["attributes"].get("gen_ai.tool.call.id"): s
                 for s in spans if s["span_kind"] == "TOOL"}
        for call_id, (args, result) in exp.tool_io.items():
            t = tools[call_id]["attributes"]
            assert json.loads(t["input.value"]) == args
            assert t["output.value"] == result
        for call_id, text in exp.tool_errors.items():
            assert tools[call_id]["status_code"] == "ERROR"
            assert tools[call_id]["status_message"] == text[:1000]
        if exp.error:
            assert top["status_code"] == "ERROR" and top["status_message"] == exp.error
        # the rows that make the round trip exact: at most one event per span
        for s in spans:
            assert sum(e["name"] == "looptrace.row" for e in s["events"]) == 1, s["name"]
        _round_trip([phoenix_span(s) for s in spans], source, root, tmp_path)
    # sessions: the runs with a thread id, nothing else
    sessions = {s["session_id"]: set(s["trace_ids"]) for s in got["sessions"]}
    threads: dict[str, set[str]] = defaultdict(set)
    for root, exp in expected.items():
        if exp.thread:
            threads[exp.thread].add(root)
    assert sessions == threads and "demo-hitl-thread" in sessions


def test_phoenix_keeps_each_calls_cost(phoenix: tuple[dict[str, int], Any]) -> None:
    """Issue 37: Phoenix keeps the OpenInference cost attributes looptrace sent on each LLM
    span (its own cost column it prices from its model table). By hand: claude-haiku-4-5,
    $1 in and $5 out per million tokens: all five calls of anthropic-shopping took 368 in
    and 92 out; no price for a scripted model, no cost attribute."""
    _, got = phoenix
    names = {s["attributes"].get("looptrace.run.id"): s["name"] for s in got["spans"]
             if s["parent_id"] is None}
    by_run: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in got["spans"]:
        if s["name"].startswith("chat "):
            by_run[names.get(s["attributes"].get("looptrace.run.id"), "")].append(s)
    shop = by_run["invoke_agent anthropic-shopping"]
    assert len(shop) == 5
    assert sum(s["attributes"]["llm.cost.total"] for s in shop) == pytest.approx(
        (368 + 92 * 5) / 1e6)
    assert sum(s["attributes"]["llm.cost.prompt"] for s in shop) == pytest.approx(368 / 1e6)
    assert not any("llm.cost.total" in s["attributes"] for s in by_run["invoke_agent weather"])


def test_phoenix_tool_definitions(phoenix: tuple[dict[str, int], Any]) -> None:
    """Phoenix turns flat GenAI tool definitions into ``llm.tools`` (OpenAI's nested form
    it drops): the weather agent offers get_weather, the deep agent its file tools, task
    and its own."""
    _, got = phoenix
    offered: dict[str, set[str]] = defaultdict(set)
    for s in got["spans"]:
        a = s["attributes"]
        i = 0
        while f"llm.tools.{i}.tool.json_schema" in a:
            schema = json.loads(a[f"llm.tools.{i}.tool.json_schema"])
            fn = schema.get("function", schema)
            assert fn.get("parameters"), fn
            offered[a.get("looptrace.run.id", "")].add(fn["name"])
            i += 1
    names = {s["attributes"].get("looptrace.run.id"): s["name"] for s in got["spans"]
             if s["parent_id"] is None}
    by_name = {names[r]: tools for r, tools in offered.items() if r in names}
    assert by_name["invoke_agent weather"] == {"get_weather"}
    assert {"task", "ls", "read_file", "lookup_fact"} <= by_name["invoke_agent deep-research"]
    assert by_name["invoke_agent shopping"] == {"get_price", "apply_discount"}


# -- MLflow --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def mlflow(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[dict[str, int], Any]]:
    tmp = tmp_path_factory.mktemp("mlflow")
    with mlflow_server(tmp) as url:
        sent = _send_all(source, url, headers={"x-mlflow-experiment-id": "0"})
        got = read_back("mlflow", url, "0", sent=sent, tmp=tmp)
        (ARTIFACTS / "mlflow-readback.json").write_text(json.dumps([sent, got]))
        yield sent, got


_MLFLOW_TYPES = {"invoke_agent": "AGENT", "chat": "CHAT_MODEL", "execute_tool": "TOOL"}


def test_mlflow_shows_every_sample(mlflow: tuple[dict[str, int], Any],
                                   expected: dict[str, Expected], source: Path,
                                   tmp_path: Path) -> None:
    sent, got = mlflow
    traces = {t["trace_id"].removeprefix("tr-"): t for t in got["traces"]}
    assert set(traces) == set(sent) == set(expected)
    for root, exp in expected.items():
        t = traces[root]
        spans = t["spans"]
        assert len(spans) == sent[root], exp.root.summary.name
        names = {s["span_id"]: s["name"] for s in spans}
        _tree_ok(spans, {s["span_id"]: s["parent_id"] for s in spans}, names)
        for s in spans:
            assert s["span_type"] == _MLFLOW_TYPES[s["name"].split(" ", 1)[0]], s["name"]
        assert sum(s["span_type"] == "CHAT_MODEL" for s in spans) == exp.model_calls
        assert sum(s["span_type"] == "TOOL" for s in spans) == exp.tool_calls
        # the trace list's Request / Response, and the trace's state
        assert t["request_preview"] == json.dumps(exp.question)
        if exp.answer:
            assert json.loads(t["response_preview"]) == exp.answer[:len(
                json.loads(t["response_preview"]))]
        assert t["state"] == ("ERROR" if exp.error else "OK")
        top = next(s for s in spans if not s["parent_id"])
        assert top["inputs"] == exp.question and top["outputs"] == exp.answer
        if exp.error:
            assert top["status_code"] == "ERROR" and top["status_message"] == exp.error
        # chat spans: the conversation in, the reply out
        for s in spans:
            if s["span_type"] != "CHAT_MODEL":
                continue
            assert isinstance(s["inputs"], list) and s["inputs"][0]["role"] in ("user", "system")
            if s["status_code"] != "ERROR":
                assert s["outputs"], s["name"]
        # token totals over the whole tree (a subagent's calls included)
        usage = t["token_usage"] or {}  # (none when no call reported any)
        assert (usage.get("input_tokens", 0), usage.get("output_tokens", 0)) == exp.tokens
        # tools
        tools = {s["attributes"].get("gen_ai.tool.call.id"): s for s in spans
                 if s["span_type"] == "TOOL"}
        for call_id, (args, result) in exp.tool_io.items():
            assert tools[call_id]["inputs"] == args
            out = tools[call_id]["outputs"]  # (MLflow parses a result that is JSON)
            assert out == (result or None) or (isinstance(out, dict | list)
                                               and out == json.loads(result)), call_id
        for call_id, text in exp.tool_errors.items():
            assert tools[call_id]["status_code"] == "ERROR"
            assert tools[call_id]["status_message"] == text[:1000]
        # sessions: MLflow's session is the conversation id
        assert t["metadata"].get("mlflow.trace.session") == exp.thread
        for s in spans:
            assert sum(e["name"] == "looptrace.row" for e in s["events"]) == 1, s["name"]
        _round_trip([mlflow_span(t["trace_id"], s) for s in spans], source, root, tmp_path)


def test_mlflow_shows_each_calls_cost(mlflow: tuple[dict[str, int], Any]) -> None:
    """Issue 37: MLflow keeps the cost looptrace sent (``mlflow.llm.cost``) on each chat
    span, and adds the trace's up. By hand: claude-haiku-4-5 is $1 in and $5 out per
    million tokens; anthropic-shopping's first call took 49 in and 30 out, all five 368
    in and 92 out."""
    _, got = mlflow
    t = next(t for t in got["traces"] if t["spans"][0]["name"] == "invoke_agent anthropic-shopping")
    chats = sorted((s for s in t["spans"] if s["span_type"] == "CHAT_MODEL"),
                   key=lambda s: int(s["start_ns"]))
    cost = chats[0]["attributes"]["mlflow.llm.cost"]
    cost = json.loads(cost) if isinstance(cost, str) else cost
    assert cost == pytest.approx({"input_cost": 49 / 1e6, "output_cost": 150 / 1e6,
                                  "total_cost": 199 / 1e6})
    total = t["metadata"].get("mlflow.trace.cost")
    total = json.loads(total) if isinstance(total, str) else total
    assert total["total_cost"] == pytest.approx((368 + 92 * 5) / 1e6)


def test_mlflow_tool_definitions(mlflow: tuple[dict[str, int], Any]) -> None:
    _, got = mlflow
    t = next(t for t in got["traces"] if t["spans"][0]["name"] == "invoke_agent weather")
    chats = [s for s in t["spans"] if s["span_type"] == "CHAT_MODEL"]
    tools = chats[0]["attributes"]["mlflow.chat.tools"]
    tools = json.loads(tools) if isinstance(tools, str) else tools
    assert [x.get("name") or x.get("function", {}).get("name") for x in tools] == [
        "get_weather"]
