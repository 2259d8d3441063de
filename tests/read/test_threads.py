"""Conversations: the runs of one thread_id as turns (issue 37, ``tracer.read.threads``).

Real agents with scripted models and a checkpointer record a three-turn thread and a
human-in-the-loop thread (``truth.scenarios``' ``hitl_edit``, one run interrupted then resumed)
into a real SQLite file; the bundled ``approvals`` sample holds a resume with its
decisions recorded. The expected turns are written out by hand.
"""

from __future__ import annotations

import pytest
from pg_kit import store_on
from tracer_kit import record_hitl_thread, record_three_turn_thread

from tracer.errors import ThreadNotFound
from tracer.read.loader import TraceDB
from tracer.read.run_list import RunFilter
from tracer.read.threads import count_threads, list_threads, load_thread


@pytest.fixture(scope="module")
def thread_db(engine, tmp_path_factory, pg_url):
    db = store_on(engine, tmp_path_factory.mktemp("threads"), pg_url, "threads.db")
    ids = record_three_turn_thread(db)
    hitl = record_hitl_thread(db)
    return db, ids, hitl


def test_a_three_turn_thread_reads_as_three_turns_with_what_each_added(thread_db):
    db, ids, _ = thread_db
    with TraceDB(db) as tdb:
        t = load_thread(tdb, "trip")
    assert [turn.run.id for turn in t.turns] == ids and len(ids) == 3
    assert [turn.number for turn in t.turns] == [1, 2, 3]
    assert [turn.asked for turn in t.turns] == [
        ("Weather in Oslo?",), ("Sunglasses?",), ("Weather in Oslo?",)]
    assert [turn.answer for turn in t.turns] == [
        "Sunny in Oslo.", "Yes, take sunglasses.", "Still sunny in Oslo."]
    # each turn added only its own messages (the checkpoint's history is not added again)
    assert [[m.type for m in turn.added] for turn in t.turns] == [
        ["human", "ai", "tool", "ai"], ["human", "ai"], ["human", "ai", "tool", "ai"]]
    assert [m.key for m in t.turns[1].added] == ["t-h2", "t-a3"]
    assert t.interrupts == 0 and t.resumes == 0
    assert all(turn.tokens and turn.tokens > 0 for turn in t.turns)
    assert t.tokens == sum(turn.tokens or 0 for turn in t.turns)
    assert t.cost.calls == 5  # five model calls over the three turns
    # the question asked again in turn 3: a finding of the thread, not of a run
    assert [(r.turn, r.first, r.text) for r in t.repeats] == [(3, 1, "Weather in Oslo?")]


def test_a_hitl_thread_shows_its_interrupt_and_the_decision_read_from_what_ran(thread_db):
    db, _, hitl = thread_db
    with TraceDB(db) as tdb:
        t = load_thread(tdb, "truth-hitl")
    (turn,) = t.turns  # one run: interrupted, then resumed
    assert turn.run.id == hitl and turn.run.status == "completed"
    assert turn.asked == ("Email the Q3 draft to the team.",)
    assert [i.asks for i in turn.interrupts] == [
        ('send_email({"body": "Draft.", "subject": "Q3", "to": "team@corp.test"})',)]
    (resume,) = turn.resumes
    # the tracer saw no resume value here: the decision is read from the call that ran
    assert resume.inferred and resume.decisions == (
        'ran edited: send_email({"body": "Edited by a human.", "subject": "Q3",'
        ' "to": "boss@corp.test"})',)
    assert turn.answer is not None and turn.answer.endswith(
        "sent to boss@corp.test: Q3 / Edited by a human.")
    assert (t.interrupts, t.resumes) == (1, 1)


def test_the_approvals_sample_shows_the_recorded_decisions(sample_store):
    with TraceDB(sample_store) as tdb:
        t = load_thread(tdb, "demo-hitl-thread")
    (turn,) = t.turns
    assert turn.run.name == "approvals"
    assert turn.interrupts[0].asks == (
        'send_email({"body": "Attached.", "subject": "Weekly report", "to": "team@example.com"})',
        'delete_file({"path": "/reports/draft.txt"})')
    (resume,) = turn.resumes
    assert not resume.inferred
    assert resume.decisions == ("approve", "reject: Keep the draft for now.")


def test_list_threads_has_each_thread_with_its_totals(thread_db):
    db, ids, _ = thread_db
    with TraceDB(db) as tdb:
        rows = {t.thread_id: t for t in list_threads(tdb)}
        assert count_threads(tdb) == 2
        trip = load_thread(tdb, "trip")
    assert set(rows) == {"trip", "truth-hitl"}
    assert rows["trip"].turns == 3 and rows["trip"].statuses == {"completed": 3}
    assert (rows["trip"].interrupts, rows["trip"].resumes) == (0, 0)
    assert rows["trip"].tokens == trip.tokens
    assert rows["truth-hitl"].turns == 1
    assert (rows["truth-hitl"].interrupts, rows["truth-hitl"].resumes) == (1, 1)
    # the HITL thread was recorded last: it is listed first
    with TraceDB(db) as tdb:
        assert [t.thread_id for t in list_threads(tdb)] == ["truth-hitl", "trip"]
        assert [t.thread_id for t in list_threads(tdb, limit=1, offset=1)] == ["trip"]


def test_run_filter_thread_selects_the_runs_of_one_thread(thread_db):
    db, ids, hitl = thread_db
    with TraceDB(db) as tdb:
        assert sorted(r.id for r in tdb.runs(RunFilter(thread="trip"))) == sorted(ids)
        assert [r.id for r in tdb.runs(RunFilter(thread="truth-hitl"))] == [hitl]
        assert tdb.runs(RunFilter(thread="nope")) == []
        assert tdb.count_runs(RunFilter(thread="trip")) == 3


def test_an_unknown_thread_is_one_clear_error(thread_db):
    db, _, _ = thread_db
    with TraceDB(db) as tdb, pytest.raises(ThreadNotFound, match="no thread 'nope'"):
        load_thread(tdb, "nope")


def test_a_thread_resumed_under_a_new_tracer_is_still_one_turn(store_db):
    """An interrupt recorded by one TraceMiddleware, the resume by another (a new agent on
    the same checkpointer, as after a restart): the resume joins the interrupted run, so
    the thread is one turn; approved, the call ran as asked."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command
    from tracer_kit import get_weather

    from tracer import TraceMiddleware
    from tracer.demo.models import ScriptedChatModel, call, turn_script

    db = store_db
    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "two"}}

    def agent(turns, trace):
        return create_agent(ScriptedChatModel(script=turn_script(turns)), tools=[get_weather],
                            middleware=[HumanInTheLoopMiddleware(
                                interrupt_on={"get_weather": True}), trace],
                            checkpointer=saver)

    first = TraceMiddleware(db=db)
    agent([AIMessage("", id="h-a1", tool_calls=[call("get_weather", {"city": "Oslo"}, "h-c1")])],
          first).invoke({"messages": [HumanMessage("Weather in Oslo?", id="h-h1")]}, config)
    first.flush()
    second = TraceMiddleware(db=db)
    agent([AIMessage("Sunny in Oslo.", id="h-a2")], second).invoke(
        Command(resume={"decisions": [{"type": "approve"}]}), config)
    second.flush()
    with TraceDB(db) as tdb:
        t = load_thread(tdb, "two")
    (turn,) = t.turns
    assert turn.run.status == "completed"
    assert turn.asked == ("Weather in Oslo?",) and turn.answer == "Sunny in Oslo."
    assert [i.asks for i in turn.interrupts] == [('get_weather({"city": "Oslo"})',)]
    assert [(r.decisions, r.inferred) for r in turn.resumes] == [
        (('ran as asked: get_weather({"city": "Oslo"})',), True)]
