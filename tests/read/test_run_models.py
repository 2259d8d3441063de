"""The run's model is the one that answered, and its models a list (issue 39, item 7).

In the ``trace.around`` fallback example (``docs/guide/tracing.md``) the primary model
raises and ``backup`` answers both calls: each call's ``exit`` records the model that
answered, the run's ``model`` is ``backup`` (not ``primary``, the first asked), and
``show``, ``runs --json`` and MCP give the run's models as a list. A run recorded before
the exit events said it reads its models from the replies' ``response_metadata``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelFallbackMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer_kit import rows

from tracer import TraceMiddleware
from tracer.cli import main
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.mcp.server import Tools
from tracer.read.captions import captions
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay


@tool
def track_order(order_id: str) -> str:
    """Track a shipped order."""
    return f"{order_id}: in transit"


def _rate_limited(messages: Any) -> AIMessage:
    raise RuntimeError("429 Too Many Requests")


def _fallback_run(db: Path, backup_script: Any) -> None:
    trace = TraceMiddleware(db=db)
    agent = create_agent(
        ScriptedChatModel(model_name="primary", script=_rate_limited), [track_order],
        middleware=trace.around(ModelFallbackMiddleware(
            ScriptedChatModel(model_name="backup", script=backup_script))))
    try:
        agent.invoke({"messages": [("user", "Where is order A-2?")]})
    finally:
        trace.close()


def _answers() -> Any:
    return turn_script([
        AIMessage("", tool_calls=[call("track_order", {"order_id": "A-2"}, "call_1")]),
        AIMessage("Order A-2 is in transit."),
    ])


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_the_model_that_answered_is_the_runs_model(store_db: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _fallback_run(store_db, _answers())
    ((rid, model),) = rows(store_db, "SELECT id, model FROM runs")
    assert model == "backup"
    # each call: asked primary (enter), answered by backup (exit)
    calls = rows(store_db, "SELECT phase, payload FROM events WHERE hook = 'wrap_model_call'"
                          " AND phase IN ('enter', 'exit') ORDER BY seq")
    assert [(ph, json.loads(p).get("model")) for ph, p in calls] == [
        ("enter", "primary"), ("exit", "backup"), ("enter", "primary"), ("exit", "backup")]
    with TraceDB(store_db) as db:
        assert db.models([rid]) == {rid: ["backup"]}
        said = captions(build_replay(db.run(rid)))
    assert sum("The reply came from backup, not primary" in c for c in said) == 2
    shown = _cli(capsys, "show", rid, "--db", str(store_db))
    assert "  model backup (scripted)" in shown and "primary" not in shown
    assert json.loads(_cli(capsys, "show", rid, "--db", str(store_db), "--json")
                      )["run"]["models"] == ["backup"]
    (listed,) = json.loads(_cli(capsys, "runs", "--db", str(store_db), "--json"))
    assert (listed["model"], listed["models"]) == ("backup", ["backup"])
    tools = Tools(store_db)
    (compact,) = tools.list_runs()["runs"]
    assert (compact["model"], compact["models"]) == ("backup", ["backup"])
    assert tools.run_summary(rid)["run"]["models"] == ["backup"]


def test_a_run_no_model_answered_says_the_model_asked(store_db: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    def down(messages: Any) -> AIMessage:
        raise RuntimeError("backup is down")

    with pytest.raises(RuntimeError):
        _fallback_run(store_db, down)
    ((rid, model),) = rows(store_db, "SELECT id, model FROM runs")
    assert model == "primary"
    with TraceDB(store_db) as db:
        assert db.models([rid]) == {rid: []}
    assert "  model primary (asked; none answered) (scripted)" in _cli(
        capsys, "show", rid, "--db", str(store_db))


def test_a_run_recorded_before_reads_its_models_from_the_replies(store_db: str) -> None:
    """Exit events written before they named the model: the replies' response_metadata
    name it."""
    _fallback_run(store_db, _answers())
    from tracer.db.schema import connect

    conn = connect(store_db)
    for run_id, seq, payload in rows(store_db, "SELECT run_id, seq, payload FROM events"
                                     " WHERE phase = 'exit' AND payload IS NOT NULL"):
        body = json.loads(payload)
        body.pop("model", None)
        conn.execute("UPDATE events SET payload = ? WHERE run_id = ? AND seq = ?",
                     [json.dumps(body), run_id, seq])
    conn.commit()
    conn.close()
    assert not rows(store_db, "SELECT 1 FROM events WHERE phase = 'exit' AND payload LIKE '%backup%'")
    ((rid,),) = rows(store_db, "SELECT id FROM runs")
    with TraceDB(store_db) as db:
        assert db.models([rid]) == {rid: ["backup"]}


def test_two_models_in_the_order_they_first_answered(sample_store: str, capsys: Any) -> None:
    """support-desk (a bundled sample): its primary model was rate limited in lap 1 and
    the fallback answered; in lap 2 the primary answered."""
    with TraceDB(sample_store) as db:
        (s,) = [r for r in db.runs() if r.name == "support-desk"]
        assert db.models([s.id]) == {s.id: ["scripted-backup", "scripted-primary"]}
    assert "  models scripted-backup, scripted-primary (scripted)" in _cli(
        capsys, "show", s.id, "--db", str(sample_store))
