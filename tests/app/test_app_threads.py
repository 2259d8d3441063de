"""Conversations in the app (AppTest, issue 37): the Conversations page shows a three-turn
thread and a HITL thread (real agents with scripted models and a checkpointer, a real
SQLite file) as turns in order, each with what it asked and answered, the interrupt and
the decisions that resumed it, and the totals; the approvals sample's recorded
decisions; the Runs page's "Group by thread" toggle lists the conversations and links
to one; a run of a thread links to its conversation. Trace text only as text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from app_kit import app_test
from streamlit.testing.v1 import AppTest
from tracer_kit import record_hitl_thread, record_three_turn_thread, record_weather_run

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], str, str]:
    db = tmp_path_factory.mktemp("threads") / "t.db"
    ids = record_three_turn_thread(db)
    hitl = record_hitl_thread(db)
    lone = record_weather_run(db, "no-thread")
    return db, ids, hitl, lone


@pytest.fixture
def db(recorded, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[str], str, str]:
    monkeypatch.setenv("LOOPTRACE_DB", str(recorded[0]))
    return recorded


def problems(at: AppTest) -> list[str]:
    return [str(e.value) for e in at.exception] + [str(e.value) for e in at.error]


def turn_heads(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("**Turn ")]


def test_a_three_turn_thread_is_shown_as_three_turns_in_order(db) -> None:
    _path, ids, _hitl, _lone = db
    at = app_test("threads", thread="trip").run()
    assert not problems(at), problems(at)
    assert [t.value for t in at.title] == ["Conversations"]
    assert at.selectbox(key="thread").value == "trip"
    heads = turn_heads(at)
    assert [re.match(r"\*\*Turn (\d)\*\* · completed", h).group(1) for h in heads] == [
        "1", "2", "3"]
    # what each turn asked and answered, in order, as text
    assert [t.value for t in at.text] == [
        "turn 3 asks again what turn 1 asked: 'Weather in Oslo?'",
        "Weather in Oslo?", "Sunny in Oslo.",
        "Sunglasses?", "Yes, take sunglasses.",
        "Weather in Oslo?", "Still sunny in Oslo."]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Turns"] == "3" and (metrics["Interrupts"], metrics["Resumes"]) == ("0", "0")
    assert metrics["Tokens"] not in ("0", "not reported")
    links = [p for p in at.get("page_link") if p.proto.label.startswith("Replay ")]
    # (issue 47, in the way 1: three identical "Replay 6b16d8d7" buttons)
    assert [p.proto.label for p in links] == [
        f"Replay turn {n} · {i[:12]}" for n, i in enumerate(ids, 1)]
    added = [c.value for c in at.caption if c.value.startswith("Added to the conversation")]
    assert added == ["Added to the conversation: 1 human, 2 ai, 1 tool",
                     "Added to the conversation: 1 human, 1 ai",
                     "Added to the conversation: 1 human, 2 ai, 1 tool"]


def test_a_hitl_thread_shows_its_interrupt_and_the_decision(db) -> None:
    at = app_test("threads", thread="truth-hitl").run()
    assert not problems(at), problems(at)
    assert len(turn_heads(at)) == 1
    assert [c.value for c in at.code] == [
        'send_email({"body": "Draft.", "subject": "Q3", "to": "team@corp.test"})',
        'ran edited: send_email({"body": "Edited by a human.", "subject": "Q3",'
        ' "to": "boss@corp.test"})']
    captions = [c.value for c in at.caption]
    assert "Interrupted: asked a person to decide" in captions
    assert any(c.startswith("Resumed with (read from the tool calls that ran") for c in captions)
    texts = [t.value for t in at.text]
    assert texts[0] == "Email the Q3 draft to the team."
    assert texts[1].endswith("sent to boss@corp.test: Q3 / Edited by a human.")
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Turns"], metrics["Interrupts"], metrics["Resumes"]) == ("1", "1", "1")


def test_the_approvals_sample_shows_the_recorded_decisions(sample_db: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    at = app_test("threads").run()  # (no ?thread: the one active last, the only one)
    assert not problems(at), problems(at)
    assert at.selectbox(key="thread").value == "demo-hitl-thread"
    assert [c.value for c in at.code] == [
        'send_email({"body": "Attached.", "subject": "Weekly report", "to": "team@example.com"})'
        '\ndelete_file({"path": "/reports/draft.txt"})',
        "approve\nreject: Keep the draft for now."]
    assert "Resumed with" in [c.value for c in at.caption]


def test_an_unknown_thread_is_one_error_and_the_newest_thread_is_shown(db) -> None:
    at = app_test("threads", thread="nope**").run()
    assert not at.exception
    (err,) = at.error  # (the id from the URL escaped: no markdown comes out of it)
    assert err.value.startswith(r"no thread 'nope\*\*' in ")
    assert at.selectbox(key="thread").value == "truth-hitl"


def test_the_runs_page_groups_by_thread(db) -> None:
    _path, ids, _hitl, _lone = db
    at = app_test("runs").run()
    assert not problems(at), problems(at)
    at = at.toggle(key="group_threads").set_value(True).run()
    assert not problems(at), problems(at)
    (frame,) = at.dataframe
    df = frame.value
    assert list(df["thread"]) == ["truth-hitl", "trip"]
    assert list(df["turns"]) == [1, 3]
    assert list(df["interrupts"]) == [1, 0] and list(df["resumes"]) == [1, 0]
    assert at.selectbox(key="thread_pick").value == "truth-hitl"
    at = at.selectbox(key="thread_pick").set_value("trip").run()
    (link,) = [p for p in at.get("page_link") if p.proto.label == "Open conversation"]
    assert link.proto.page.endswith("threads") or "threads" in link.proto.page
    # a filter narrows the conversations to those of the runs it selects
    at = at.text_input(key="search").set_value("Sunglasses").run()
    assert list(at.dataframe[0].value["thread"]) == ["trip"]


def test_a_run_of_a_thread_links_to_its_conversation(db) -> None:
    _path, ids, _hitl, lone = db
    at = app_test("runs").run()
    at = at.selectbox(key="open_pick").set_value(ids[-1]).run()
    assert not problems(at), problems(at)
    assert [p.proto.label for p in at.get("page_link")].count("Conversation") == 1
    at = at.selectbox(key="open_pick").set_value(lone).run()
    assert "Conversation" not in [p.proto.label for p in at.get("page_link")]
