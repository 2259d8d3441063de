"""Every bundled sample trace checked: the runaway loops are flagged, the clean
runs carry no error-level finding."""

from __future__ import annotations

from typing import Any

import pytest

from tracer.checks.run import check_db, check_run
from tracer.read.loader import TraceDB


@pytest.fixture(scope="module")
def findings(sample_store: str) -> dict[str, list]:  # type: ignore[type-arg]
    with TraceDB(sample_store) as db:
        names = {r.id: r.name for r in db.runs()}
        return {names[rid]: fs for rid, fs in check_db(db).items()}


def _rules(fs: list) -> set[str]:  # type: ignore[type-arg]
    return {f.rule for f in fs}


def test_every_sample_is_checked(findings: dict[str, list]) -> None:  # type: ignore[type-arg]
    assert {"weather", "shopping", "stuck-search", "weather_loop"} <= set(findings)


def test_hand_rolled_loop_hitting_max_iterations_is_an_error(findings) -> None:  # type: ignore[no-untyped-def]
    (f,) = [f for f in findings["weather_loop"] if f.rule == "loop-bound-hit"]
    assert f.severity == "error" and f.provider is None
    assert "get_weather" in f.message
    assert f.message_keys  # the last AI message and its results


def test_repeated_tool_demo_is_flagged(findings) -> None:  # type: ignore[no-untyped-def]
    fs = findings["stuck-search"]
    assert {"repeated-tool-call", "loop-bound-hit"} <= _rules(fs)
    (rep,) = [f for f in fs if f.rule == "repeated-tool-call"]
    assert "search_docs" in rep.message and len(rep.message_keys) == 5
    (bound,) = [f for f in fs if f.rule == "loop-bound-hit"]
    assert "ModelCallLimitMiddleware" in bound.message


def test_weather_is_clean(findings) -> None:  # type: ignore[no-untyped-def]
    assert findings["weather"] == []


def test_clean_runs_have_no_error(findings) -> None:  # type: ignore[no-untyped-def]
    """Shopping's unknown tool and its single tool error are part of a healthy run:
    create_agent answers both with error results and the model recovers, so the
    history stays valid for every provider. The unknown tool is a warning, the one
    error is below the repeat threshold; parallel calls warn for Ollama only."""
    for name, fs in findings.items():
        # (the runs that record a mistake on purpose: a bound hit, and the footguns)
        if name in ("weather_loop", "stuck-search") or name.startswith(
                ("footgun-", "anthropic: What's the weather")):
            continue
        assert [f for f in fs if f.severity == "error"] == [], name
    assert {(f.rule, f.provider) for f in findings["shopping"]} == {("unknown-tool", None)}


def test_the_ollama_id_warning_is_for_ollama_runs_only(findings) -> None:  # type: ignore[no-untyped-def]
    """Parallel calls on Ollama: the server sends ids (since 0.12.10), its Python client
    drops them. Said on the run that used Ollama, not on the same turn elsewhere."""
    def warned(name: str) -> list[Any]:
        return [f for f in findings[name] if f.rule == "ollama-unlinked-calls"]

    assert not warned("shopping") and not warned("openai-shopping")
    assert not warned("anthropic-shopping")
    [w] = warned("ollama-shopping")
    assert "0.12.10" in w.message and "Python client" in w.message
    assert "Ollama sends no tool call ids" not in w.message


def test_openai_only_shopping_is_a_single_warning(sample_store: str) -> None:
    with TraceDB(sample_store) as db:
        run = db.run(next(r.id for r in db.runs() if r.name == "shopping"))
    fs = check_run(run, providers=["openai"])
    assert [(f.rule, f.severity) for f in fs] == [("unknown-tool", "warning")]
    assert "check_stock" in fs[0].message
