"""The debugger's channel on both engines (``store_db``: a SQLite file, then a PostgreSQL
store): a paused agent woken by its answer, a breakpoint armed from outside reaching a
running agent. On PostgreSQL both ride on LISTEN/NOTIFY (``tracer.debug.wake``); the
tests set the fallbacks (asking again every ``PG_WAIT_S``, reading the breakpoints every
``PG_REREAD_S``) to an hour, so only a NOTIFY can make them pass in time."""

from __future__ import annotations

import pytest
from debug_kit import Background, wait_paused
from tracer_kit import get_weather, make_agent, rows, two_lap_model

from tracer import TraceMiddleware
from tracer.db.schema import connect
from tracer.debug import Debugger, channel, session
from tracer.debug.wake import Waker, notify

HOUR = 3600.0
QUESTION = {"messages": [("user", "Weather in Oslo?")]}


@pytest.fixture(autouse=True)
def _no_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "PG_WAIT_S", HOUR)
    monkeypatch.setattr(session, "PG_REREAD_S", HOUR)


def test_an_answer_wakes_the_paused_agent_on_each_engine(store_db: str) -> None:
    """Paused before get_weather, answered: the agent goes on and ends (on PostgreSQL
    without the answer's NOTIFY it would sleep an hour: ``result`` fails after 60 s)."""
    trace = TraceMiddleware(db=store_db, debug=Debugger(["tool:get_weather"]))
    agent = make_agent(two_lap_model(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    (p,) = wait_paused(store_db, alive=bg.alive)
    assert (p["hook"], p["breakpoint"]) == ("wrap_tool_call", "tool:get_weather")
    channel.answer(store_db, p["run"], "continue")
    out = bg.result(timeout=60)
    assert out["messages"][-1].content == "It is sunny in Oslo."
    trace.flush()
    assert rows(store_db, "SELECT outcome FROM debug_pauses") == [("continued",)]
    trace.close()


def test_a_breakpoint_armed_while_running_reaches_the_agent_on_each_engine(
        store_db: str) -> None:
    """Paused at the first model call by its own breakpoint; another process arms
    ``tool:get_weather`` in the store; answered, the agent pauses again at the tool (on
    PostgreSQL the arming's NOTIFY makes it read the breakpoints again; without it,
    not for an hour, and the run ended without the second pause)."""
    trace = TraceMiddleware(db=store_db, debug=Debugger(["model:1"]))
    agent = make_agent(two_lap_model(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    (first,) = wait_paused(store_db, alive=bg.alive)
    assert first["breakpoint"] == "model:1"
    channel.arm(store_db, "tool:get_weather")
    channel.answer(store_db, first["run"], "continue")
    (second,) = wait_paused(store_db, alive=bg.alive)
    assert (second["hook"], second["breakpoint"]) == ("wrap_tool_call", "tool:get_weather")
    assert channel.clear(store_db) == 1
    channel.answer(store_db, second["run"], "continue")
    bg.result(timeout=60)
    trace.flush()
    assert rows(store_db, "SELECT reason, outcome FROM debug_pauses ORDER BY id") == [
        ("model:1", "continued"), ("tool:get_weather", "continued")]
    trace.close()


def test_notifications_of_another_store_in_the_database_are_not_ours(
        pg_url: str | None) -> None:
    """Two stores in one PostgreSQL database (two schemas): arming in one does not
    tell the other's listener its breakpoints changed (without the store's name in the
    payload every agent of the database would read its breakpoints again)."""
    if pg_url is None:
        pytest.skip("no PostgreSQL here")
    from pg_kit import fresh_store

    store_db, other = fresh_store(pg_url), fresh_store(pg_url)
    channel.clear(store_db)
    channel.clear(other)  # (creates its tables)
    waker = Waker(store_db)
    try:
        assert waker.breaks_changed()  # (nothing read yet)
        assert waker.listening.wait(30)
        waker.breaks_changed()  # (the read after it began to listen)
        waker.expect(7)
        channel.arm(other, "model")
        conn = connect(store_db)
        with conn:
            notify(conn, "answered:7")
        conn.close()
        # notifications arrive in commit order: once ours is heard, the other store's
        # arming was heard before it
        assert waker.wait(7, 30)
        assert not waker.breaks_changed()
        channel.arm(store_db, "model")
        heard = False
        for _ in range(600):  # (up to 30 s)
            heard = waker.breaks_changed()
            if heard:
                break
            waker.wait(7, 0.05)
        assert heard
    finally:
        waker.close()
