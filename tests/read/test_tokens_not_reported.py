"""Tokens no model call reported are "not reported", never 0 (issue 39, item 6).

A run whose provider reported no usage is stored with NULL tokens (schema 6; a schema 5
file's 0 is migrated), and every reader says so the same way: ``looptrace runs`` (and
``--json``: null), ``show`` (and ``--json``), MCP (``total_tokens`` null), the app's
Runs table and run header, the HTML replay; the OTLP export leaves the usage attributes
out. A run whose model reported usage keeps its numbers; a run that asked no model
used 0 tokens.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from tracer_kit import get_weather, make_agent, no_tracer_warnings, rows, two_lap_model  # noqa: F401

from tracer import TraceCallbackHandler, TraceMiddleware
from tracer.cli import main
from tracer.db.schema import connect
from tracer.demo.models import ScriptedChatModel, stamp
from tracer.interop.exchange import export_run, import_trace
from tracer.read.loader import TraceDB

FIXTURE5 = Path(__file__).parents[1] / "fixtures" / "schema5.db"


class NoUsageModel(ScriptedChatModel):
    """The scripted model, as a provider that reports no usage (an OpenAI stream
    without ``stream_options``): its replies carry no ``usage_metadata``."""

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        reply = stamp(self.script(messages), messages, self.model_name)
        reply.usage_metadata = None
        return ChatResult(generations=[ChatGeneration(message=reply)])


def no_usage_model() -> NoUsageModel:
    return NoUsageModel(script=two_lap_model().script)


def _record(db: Path, model: Any, name: str) -> str:
    trace = TraceMiddleware(db=db, run_name=name)
    make_agent(model, [get_weather], [trace]).invoke(
        {"messages": [{"role": "user", "content": "Weather in Oslo?"}]})
    trace.close()
    (rid,) = rows(db, "SELECT id FROM runs WHERE name = ?", [name])[0]
    return str(rid)


def _tokens(db: Path, rid: str) -> tuple[Any, ...]:
    return rows(db, "SELECT input_tokens, output_tokens, total_tokens FROM runs WHERE id = ?",
                [rid])[0]


def test_a_fresh_run_whose_model_reports_no_usage_stores_null(store_db: str) -> None:
    silent = _record(store_db, no_usage_model(), "silent")
    counted = _record(store_db, two_lap_model(), "counted")
    assert _tokens(store_db, silent) == (None, None, None)
    # the scripted model counts words: 11 + 6 for lap 1, 20 + 5 for lap 2 (its own rule,
    # read from the two replies' usage in the record)
    usage = [json.loads(p)["usage"] for (p,) in rows(
        store_db, "SELECT payload FROM events WHERE run_id = ? AND hook = 'wrap_model_call'"
        " AND phase = 'exit' ORDER BY seq", [counted])]
    assert len(usage) == 2
    assert _tokens(store_db, counted) == (
        usage[0]["input_tokens"] + usage[1]["input_tokens"],
        usage[0]["output_tokens"] + usage[1]["output_tokens"],
        usage[0]["total_tokens"] + usage[1]["total_tokens"])
    assert _tokens(store_db, counted)[2] > 0
    with TraceDB(store_db) as db:
        by_name = {r.name: r for r in db.runs()}
    assert by_name["silent"].total_tokens is None
    assert by_name["silent"].tokens_text == "not reported"
    assert by_name["counted"].tokens_text == str(_tokens(store_db, counted)[2])


def test_a_hand_rolled_loop_without_usage_stores_null(store_db: str) -> None:
    """The callback handler's path (a loop of the caller's own): the same rule."""
    model = no_usage_model()
    handler = TraceCallbackHandler(db=store_db)
    model.invoke("Weather in Oslo?", config={"callbacks": [handler]})
    handler.close()
    assert rows(store_db, "SELECT input_tokens, output_tokens, total_tokens FROM runs") == [
        (None, None, None)]


def test_a_run_that_asked_no_model_used_zero_tokens(store_db: str) -> None:
    """Stored NULL by a hand-written file (no model call): read as 0, not "not reported"."""
    from tracer.interop.exchange import import_rows

    db = store_db
    import_rows([("runs", {"id": "r-no-model", "status": "completed", "started_at": 1.0}),
                 ("events", {"run_id": "r-no-model", "seq": 0, "ts": 1.0, "hook": "run",
                             "phase": "start", "lap": 0})], db)
    with TraceDB(db) as t:
        (r,) = t.runs()
    assert (r.total_tokens, r.tokens_text, r.tokens_phrase) == (0, "0", "0 tokens")


@pytest.fixture
def migrated(tmp_path: Path) -> Path:
    """The schema 5 fixture (a SQLite file: its tests are SQLite only), migrated:
    ``weather`` (31/11/42 tokens) and ``no-usage``
    (its model reported no usage: schema 5 stored 0/0/0)."""
    path = tmp_path / "v5.db"
    shutil.copyfile(FIXTURE5, path)
    connect(path).close()
    return path


def _ids(db: Path) -> dict[str, str]:
    return {str(n): str(i) for n, i in rows(db, "SELECT name, id FROM runs")}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_the_schema_5_no_usage_run_reads_not_reported_everywhere(
        migrated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = _ids(migrated)
    db = str(migrated)
    # the record
    assert _tokens(migrated, ids["no-usage"]) == (None, None, None)
    assert _tokens(migrated, ids["weather"]) == (31, 11, 42)
    # looptrace runs, and --json
    head, *lines = _cli(capsys, "runs", "--db", db).splitlines()
    at = head.index("tokens")  # (the column, read where the header puts it)
    table = {ln.split()[0]: ln[at:].split("  ")[0].strip() for ln in lines}
    assert table[ids["no-usage"][:12]] == "not reported"
    assert table[ids["weather"][:12]] == "42"
    listed = {r["name"]: r for r in json.loads(_cli(capsys, "runs", "--db", db, "--json"))}
    assert [listed["no-usage"][k] for k in ("input_tokens", "output_tokens", "total_tokens")
            ] == [None, None, None]
    assert listed["weather"]["total_tokens"] == 42
    # looptrace show, and --json
    shown = _cli(capsys, "show", ids["no-usage"], "--db", db)
    assert "tokens not reported" in shown and "0 tokens" not in shown
    assert "42 tokens" in _cli(capsys, "show", ids["weather"], "--db", db)
    assert json.loads(_cli(capsys, "show", ids["no-usage"], "--db", db, "--json")
                      )["run"]["total_tokens"] is None
    # MCP: list_runs and run_summary say null (not 0, not left out)
    from tracer.mcp.server import Tools

    tools = Tools(migrated)
    runs = {r["name"]: r for r in tools.list_runs()["runs"]}
    assert runs["no-usage"]["total_tokens"] is None and runs["weather"]["total_tokens"] == 42
    summary = tools.run_summary(ids["no-usage"])["run"]
    assert "total_tokens" in summary and summary["total_tokens"] is None
    assert tools.run_summary(ids["weather"])["run"]["total_tokens"] == 42
    # the app's Runs table (its frame: NA, shown "not reported" by the browser's table)
    # and the run header / the HTML replay's header (the replayer's JSON)
    from tracer.read.steps import build_replay
    from tracer.replayer import replay_json

    with TraceDB(migrated) as t:
        for name, phrase in (("no-usage", "tokens not reported"), ("weather", "42 tokens")):
            run = t.run(ids[name])
            assert run.summary.tokens_phrase == phrase
            assert replay_json(build_replay(run))["run"]["tokens"] == phrase
    from app.screens.runs.runs_grid import SHOWN
    from app.screens.runs.runs_table import runs_frame

    with TraceDB(migrated) as t:
        frame = runs_frame(t.runs())
    got = dict(zip(frame["name"], frame["tokens"], strict=True))
    assert got["no-usage"] is pd_na() and got["weather"] == 42
    assert "not reported" in next(c.help for c in SHOWN if c.key == "tokens")
    js = (Path(__file__).parents[2] / "app" / "screens" / "runs" / "runs_grid.js").read_text()
    assert 'kind === "tokens" ? "not reported"' in js
    # the HTML export's header says it (the template puts R.run.tokens in #run-meta)
    from tracer.interop.html_export import export_html

    page = export_html(migrated, ids["no-usage"], tmp_path / "r.html").read_text()
    assert '"tokens": "tokens not reported"' in page or '"tokens":"tokens not reported"' in page
    assert "R.run.tokens" in page
    # OTLP: no usage attribute on the model calls' spans (no 0 made up)
    from tracer.otel.runspans import run_spans

    with TraceDB(migrated) as t:
        silent = [s for s in run_spans(t, ids["no-usage"]) if s.name.startswith("chat")]
        counted = [s for s in run_spans(t, ids["weather"]) if s.name.startswith("chat")]
    assert len(silent) == len(counted) == 2
    assert not any(k.startswith("gen_ai.usage") for s in silent for k in s.attributes)
    assert [s.attributes["gen_ai.usage.input_tokens"] for s in counted] == [13, 18]


def pd_na() -> Any:
    import pandas as pd

    return pd.NA


def test_read_only_a_schema_5_file_reads_not_reported_too(tmp_path: Path) -> None:
    """Opened read-only, the file is read as it is (not migrated): the 0 of a run that
    asked a model is read as the migration would make it. (SQLite only: a file of
    schema 5.)"""
    path = tmp_path / "v5.db"
    shutil.copyfile(FIXTURE5, path)
    with TraceDB(path) as t:
        by_name = {r.name: r for r in t.runs()}
    assert by_name["no-usage"].total_tokens is None
    assert by_name["no-usage"].tokens_text == "not reported"
    assert by_name["weather"].total_tokens == 42
    assert sqlite3.connect(path).execute(
        "SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("5",)


def test_an_older_export_imports_with_not_reported_tokens(migrated: Path, tmp_path: Path, store_db: str) -> None:
    """A trace file written at schema 5 said 0: imported, the run reads not reported."""
    out = export_run(migrated, _ids(migrated)["no-usage"], tmp_path / "x.jsonl")
    lines = out.read_text().splitlines()
    head = json.loads(lines[0])
    assert head["schema_version"] == 9
    old = [json.dumps({**head, "schema_version": 5})]
    for ln in lines[1:]:
        rec = json.loads(ln)
        if rec["table"] == "runs":
            rec["row"].update(input_tokens=0, output_tokens=0, total_tokens=0)
        old.append(json.dumps(rec))
    (tmp_path / "old.jsonl").write_text("\n".join(old) + "\n")
    db = store_db
    import_trace(tmp_path / "old.jsonl", db)
    assert rows(db, "SELECT total_tokens FROM runs") == [(None,)]
