"""The crafted corpus (tests/check_corpus/*.json), checked finding by finding.

Each case is imported as a real trace file into a fresh database; the findings
must be exactly the expected (rule, provider, severity) triples: the clean
cases produce none.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from check_corpus.builder import build, build_run, cases, load_case

from tracer.checks.base import PROVIDERS
from tracer.checks.run import RULES, check_run

CASES = cases()


def _triples(findings):  # type: ignore[no-untyped-def]
    return Counter((f.rule, f.provider, f.severity) for f in findings)


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path, tmp_path: Path) -> None:
    case = load_case(path)
    run, wire = build(case, tmp_path)
    findings = check_run(run, providers=case.get("providers", PROVIDERS), wire=wire)
    expected = Counter(tuple(x) for x in case["expect"])
    assert _triples(findings) == expected, [f.message for f in findings]
    for f in findings:
        assert f.run_id == run.id
        assert f.message.strip()
        assert f.seq is None or any(e.seq == f.seq for e in run.events)
        # Every message named by a finding exists in the run (or was sent inline).
        for key in f.message_keys:
            assert key in run.message_by_key or key.startswith("summary"), key


def test_corpus_covers_every_rule() -> None:
    expected = {next(iter(x)) for p in CASES for x in load_case(p)["expect"]}
    assert expected == set(RULES)
    assert sum(1 for p in CASES if not load_case(p)["expect"]) >= 5


def test_dangling_points_at_the_rejected_call(tmp_path: Path) -> None:
    run = build_run(load_case(Path(CASES[0]).parent / "dangling-tool-call.json"), tmp_path)
    (f,) = [f for f in check_run(run, providers=["openai"]) if f.rule == "dangling-tool-call"]
    second_call = [e for e in run.events if e.hook == "wrap_model_call" and e.phase == "enter"][1]
    assert f.seq == second_call.seq
    assert f.message_keys == ("a3",)
    assert "c2" in f.message and "c1" not in f.message.split("Here")[1]


def test_provider_filter(tmp_path: Path) -> None:
    run = build_run(load_case(Path(CASES[0]).parent / "result-after-human.json"), tmp_path)
    only = check_run(run, providers=["anthropic"])
    assert [(f.rule, f.provider) for f in only] == [("tool-result-not-first", "anthropic")]
    assert set(only[0].message_keys) == {"a3", "h4", "t:c1"}
    with pytest.raises(ValueError, match="unknown provider"):
        check_run(run, providers=["gemini"])


def test_findings_are_reported_once(tmp_path: Path) -> None:
    """A broken history persists across later calls; it is reported at the first."""
    case = load_case(Path(CASES[0]).parent / "orphan-tool-result.json")
    case["steps"] += [{"human": "More?"}, {"model": {}}, {"ai": {"text": "No."}}]
    run = build_run(case, tmp_path)
    openai = [f for f in check_run(run, providers=["openai"])]
    assert [f.rule for f in openai] == ["orphan-tool-result"]


def test_wire_findings_say_where_they_come_from(tmp_path: Path) -> None:
    run, wire = build(load_case(Path(CASES[0]).parent / "wire-openai-dangling.json"), tmp_path)
    assert check_run(run, providers=["openai"]) == []  # the recorded messages are fine
    (f,) = check_run(run, providers=["openai"], wire=wire)
    assert f.message.startswith("In the captured openai request: ")
    assert f.seq == wire[0]["seq"]
    assert f.message_keys == ("a3",)


def test_one_ollama_warning_per_run_says_how_many_turns(tmp_path: Path) -> None:
    run = build_run(load_case(Path(CASES[0]).parent / "ollama-two-parallel-turns.json"),
                    tmp_path)
    (f,) = check_run(run)
    assert "2 turns of this run have several calls" in f.message


def test_thresholds_are_configurable(tmp_path: Path) -> None:
    from tracer.checks.run import Thresholds

    run = build_run(load_case(Path(CASES[0]).parent / "repeated-tool-call.json"), tmp_path)
    assert [f.rule for f in check_run(run)] == ["repeated-tool-call"]
    assert check_run(run, thresholds=Thresholds(repeat_calls=4)) == []
    # Only trivially different spellings: exact matching still groups them.
    assert [f.rule for f in check_run(run, thresholds=Thresholds(near_args_ratio=1.0))] == [
        "repeated-tool-call"]
    with pytest.raises(ValueError, match="repeat_calls"):
        Thresholds(repeat_calls=1)
