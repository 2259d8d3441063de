"""A model call's cost, exported over OTLP where the backends read it (issue 37):
Langfuse's ``langfuse.observation.cost_details`` and ``gen_ai.usage.cost``, MLflow's
``mlflow.llm.cost``, OpenInference's ``llm.cost.*``; on the chat spans only (backends
add a trace's spans up), and nothing where the price is not known.

By hand: claude-haiku-4-5 is $1 in and $5 out per million tokens; anthropic-shopping's
first call took 49 tokens in and 30 out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracer.otel.runspans import run_spans
from tracer.read.loader import TraceDB


@pytest.fixture(autouse=True)
def _no_prices_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPTRACE_PRICES", raising=False)


def _spans(db: Path, name: str) -> list:  # type: ignore[type-arg]
    with TraceDB(db) as tdb:
        rid = next(r.id for r in tdb.runs() if r.name == name)
        return run_spans(tdb, rid)


def test_chat_spans_carry_their_cost(sample_db: Path) -> None:
    spans = _spans(sample_db, "anthropic-shopping")
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 5
    a = chats[0].attributes
    i, o = 49 * 1 / 1e6, 30 * 5 / 1e6
    assert a["gen_ai.usage.cost"] == pytest.approx(i + o)
    assert json.loads(a["langfuse.observation.cost_details"]) == pytest.approx(
        {"input": i, "output": o, "total": i + o})
    assert json.loads(a["mlflow.llm.cost"]) == pytest.approx(
        {"input_cost": i, "output_cost": o, "total_cost": i + o})
    assert (a["llm.cost.prompt"], a["llm.cost.completion"], a["llm.cost.total"]) == \
        pytest.approx((i, o, i + o))
    assert sum(c.attributes["gen_ai.usage.cost"] for c in chats) == pytest.approx(
        (368 + 92 * 5) / 1e6)
    # not on the run's span: a backend would count it twice
    others = [s for s in spans if s not in chats]
    assert not any(k.startswith(("llm.cost", "gen_ai.usage.cost", "mlflow.llm.cost"))
                   for s in others for k in s.attributes)


def test_an_unknown_price_is_not_exported(sample_db: Path) -> None:
    spans = _spans(sample_db, "weather")  # a scripted model: no price
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert chats
    assert not any("cost" in k for s in chats for k in s.attributes)
