"""``looptrace runs --thread`` and ``looptrace threads [THREAD]`` (issue 37): a thread's
runs, the threads of a file with their totals, one thread's turns as text and JSON; an
unknown thread is one line, exit 1. A real three-turn thread and a HITL thread recorded
by real agents with scripted models."""

from __future__ import annotations

import json

import pytest
from cli_kit import cli
from pg_kit import store_on
from tracer_kit import record_hitl_thread, record_three_turn_thread, record_weather_run


@pytest.fixture(scope="module")
def db(engine: str, tmp_path_factory: pytest.TempPathFactory,
       pg_url: str | None) -> tuple[str, list[str], str, str]:
    path = store_on(engine, tmp_path_factory.mktemp("threads"), pg_url)
    ids = record_three_turn_thread(path)
    hitl = record_hitl_thread(path)
    lone = record_weather_run(path, "no-thread")
    return path, ids, hitl, lone


def test_runs_thread_lists_only_that_threads_runs(db, capsys) -> None:
    path, ids, hitl, lone = db
    code, out, err = cli(capsys, "runs", "--db", str(path), "--thread", "trip", "--json")
    assert (code, err) == (0, "")
    got = json.loads(out)
    assert [r["id"] for r in got] == ids[::-1]  # newest first
    assert {r["thread_id"] for r in got} == {"trip"}
    code, out, _ = cli(capsys, "runs", "--db", str(path), "--thread", "truth-hitl", "--json")
    assert [r["id"] for r in json.loads(out)] == [hitl]
    code, out, _ = cli(capsys, "runs", "--db", str(path), "--thread", "nope")
    assert (code, out) == (0, "no runs\n")
    # without --thread every run is listed, the one without a thread too
    code, out, _ = cli(capsys, "runs", "--db", str(path), "--json")
    assert {r["id"] for r in json.loads(out)} == {*ids, hitl, lone}


def test_threads_lists_each_thread_with_its_totals(db, capsys) -> None:
    path, *_ = db
    code, out, err = cli(capsys, "threads", "--db", str(path), "--json")
    assert (code, err) == (0, "")
    got = {t["thread_id"]: t for t in json.loads(out)}
    assert set(got) == {"trip", "truth-hitl"}  # the run without a thread is no thread
    assert (got["trip"]["turns"], got["trip"]["interrupts"], got["trip"]["resumes"]) == (3, 0, 0)
    assert got["trip"]["statuses"] == {"completed": 3}
    assert (got["truth-hitl"]["turns"], got["truth-hitl"]["interrupts"],
            got["truth-hitl"]["resumes"]) == (1, 1, 1)
    code, out, _ = cli(capsys, "threads", "--db", str(path))
    lines = out.splitlines()
    assert lines[0].split() == ["thread", "turns", "first", "last", "statuses", "tokens",
                                "cost", "interrupts", "resumes"]
    assert [ln.split()[0] for ln in lines[1:]] == ["truth-hitl", "trip"]


def test_threads_thread_shows_the_turns_in_order(db, capsys) -> None:
    path, ids, *_ = db
    code, out, err = cli(capsys, "threads", "trip", "--db", str(path))
    assert (code, err) == (0, "")
    said = [ln.strip() for ln in out.splitlines()
            if ln.strip().startswith(("asked:", "answered:"))]
    assert said == [
        "asked:       Weather in Oslo?", "answered:    Sunny in Oslo.",
        "asked:       Sunglasses?", "answered:    Yes, take sunglasses.",
        "asked:       Weather in Oslo?", "answered:    Still sunny in Oslo."]
    heads = [ln.split()[:4] for ln in out.splitlines() if ln.startswith("turn ")]
    assert heads == [["turn", str(i), "run", rid[:12]] for i, rid in enumerate(ids, 1)]
    assert "turn 3 asks again what turn 1 asked: 'Weather in Oslo?'" in out
    code, out, _ = cli(capsys, "threads", "truth-hitl", "--db", str(path), "--json")
    (turn,) = json.loads(out)["turns"]
    assert turn["interrupts"][0]["asks"] == [
        'send_email({"body": "Draft.", "subject": "Q3", "to": "team@corp.test"})']
    assert turn["resumes"][0]["inferred"] is True


def test_an_unknown_thread_is_one_line(db, capsys) -> None:
    path, *_ = db
    code, out, err = cli(capsys, "threads", "nope", "--db", str(path))
    assert (code, out) == (1, "")
    assert err.startswith("looptrace threads: no thread 'nope' in ") and err.count("\n") == 1


def test_a_thread_of_one_turn_says_it_in_the_singular(db, capsys) -> None:
    """Issue 39, item 10: "1 turn(s) ..., 1 interrupt(s), 1 resume(s)"."""
    path, *_ = db
    code, out, _ = cli(capsys, "threads", "truth-hitl", "--db", str(path))
    assert code == 0
    head = out.splitlines()[0]
    assert head.startswith("thread truth-hitl: 1 turn, tokens ")
    assert head.endswith(", 1 interrupt, 1 resume")
    code, out, _ = cli(capsys, "threads", "trip", "--db", str(path))
    assert code == 0
    assert out.splitlines()[0].endswith(", 0 interrupts, 0 resumes")
    assert ": 3 turns, tokens " in out.splitlines()[0]
