"""Each pause answered as its own, and no pause left open for ever (issue 44, items 1,
7, 17, 18, 19, 21, 24): real agents in this process, real SQLite files, the test as the
debugger through the channel, as the app and MCP are."""

from __future__ import annotations

import asyncio
import json
import math
import os
import sqlite3
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from debug_kit import Background, wait_paused
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from tracer_kit import get_weather, make_agent

from tracer import TraceMiddleware
from tracer.cli.debug import template
from tracer.db.prune import prune
from tracer.debug import Debugger, channel, session
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.errors import LooptraceError, NotPaused, UsageError

QUESTION = {"messages": [("user", "Prices?")]}


@tool
async def fetch_price(item: str) -> str:
    """Price of an item."""
    return f"{item}: 10 EUR"


def _by_call(messages: Any) -> AIMessage:
    tools = sorted((m.tool_call_id, m.content) for m in messages if isinstance(m, ToolMessage))
    return AIMessage("; ".join(f"{k}={v}" for k, v in tools))


def parallel_model(n: int = 3) -> ScriptedChatModel:
    """Lap 1 asks for ``n`` prices at once (calls p1..pn), lap 2 says what each call got."""
    calls = [call("fetch_price", {"item": f"item{i}"}, f"p{i}") for i in range(1, n + 1)]
    return ScriptedChatModel(script=turn_script([AIMessage("", tool_calls=calls), _by_call]))


def _async_agent(db: Path, debug: Any, n: int = 3) -> tuple[Background, TraceMiddleware]:
    trace = TraceMiddleware(db=db, debug=debug)
    agent = make_agent(parallel_model(n), [fetch_price], [trace])
    return Background(lambda: agent.ainvoke(QUESTION), is_async=True), trace


# -- item 1: parallel pauses, each answered by its id ------------------------------------------
def test_parallel_pauses_are_each_answered_by_their_own_id(tmp_path):
    # (before: answers went to the run's latest pause, so the first answer reached call p3)
    db = tmp_path / "t.db"
    bg, trace = _async_agent(db, ["tool:fetch_price"])
    got = wait_paused(db, n=3, alive=bg.alive)
    by_call = {p["tool_call_id"]: p for p in got}
    assert sorted(by_call) == ["p1", "p2", "p3"]
    assert len({p["pause"] for p in got}) == 3
    run = got[0]["run"]
    with pytest.raises(UsageError, match=r"3 pauses at once; name one .*pause \d+ "
                                         r"\(wrap_tool_call before fetch_price p1\)"):
        channel.answer(db, run, "continue")
    with pytest.raises(UsageError, match="3 pauses at once"):
        channel.pending(db, run)
    assert channel.pending(db, run, by_call["p2"]["pause"])["pending"]["tool_call"]["id"] == "p2"
    # answered in the order p1, p3, p2, each with its own result (JSON text among them)
    channel.answer(db, run, "continue", {"kind": "tool_result", "text": "one"},
                   pause=by_call["p1"]["pause"])
    channel.answer(db, run, "continue", {"kind": "tool_result", "text": '{"price": 3}'},
                   pause=by_call["p3"]["pause"])
    channel.answer(db, run, "continue", {"kind": "tool_args", "args": {"item": "two"}},
                   pause=by_call["p2"]["pause"])
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content == 'p1=one; p2=two: 10 EUR; p3={"price": 3}'
    with pytest.raises(NotPaused, match=f"pause {by_call['p1']['pause']} was answered already"):
        channel.answer(db, run, "continue", pause=by_call["p1"]["pause"])


def test_forty_parallel_calls_all_pause_at_once(tmp_path):
    # (before: the pauses waited in asyncio's default pool, cores + 4 threads: the other
    # calls did not pause until one was answered, and the loop's other debugger work
    # queued behind them)
    db = tmp_path / "t.db"
    bg, trace = _async_agent(db, ["tool:fetch_price"], n=40)
    got = wait_paused(db, n=40, alive=bg.alive, timeout=120)
    assert sorted(p["tool_call_id"] for p in got) == sorted(f"p{i}" for i in range(1, 41))
    for p in got:
        channel.answer(db, p["run"], "continue", pause=p["pause"])
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content.count("EUR") == 40


def test_an_edit_for_a_cancelled_call_is_refused(tmp_path):
    # (before: the pause of a cancelled call stayed open, and an edit was "accepted" and
    # recorded for it)
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db, debug=["tool:fetch_price"])
    agent = make_agent(parallel_model(1), [fetch_price], [trace])
    box: dict[str, Any] = {}

    async def go() -> Any:
        box["loop"] = asyncio.get_running_loop()
        box["task"] = asyncio.current_task()
        return await agent.ainvoke(QUESTION)

    bg = Background(go, is_async=True)
    p = wait_paused(db, alive=bg.alive)[0]
    box["loop"].call_soon_threadsafe(box["task"].cancel)
    with pytest.raises(asyncio.CancelledError):
        bg.result()
    for _ in range(500):  # (the worker thread closes the pause at its next poll)
        with sqlite3.connect(db) as c:
            outcome = c.execute("SELECT outcome FROM debug_pauses WHERE id = ?",
                                [p["pause"]]).fetchone()[0]
        if outcome is not None:
            break
        time.sleep(0.02)
    assert outcome == "cancelled"
    assert channel.list_paused(db) == []
    with pytest.raises(NotPaused, match="its call was cancelled"):
        channel.answer(db, p["run"], "continue", {"kind": "tool_result", "text": "late"},
                       pause=p["pause"])
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT edit, outcome FROM debug_pauses").fetchall() == [
            (None, "cancelled")]


# -- item 7: a breakpoint armed or cleared from outside applies to the next hook firing ---------
def _arming_tool(db: Path, what: str) -> Any:
    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        if what == "arm":
            channel.arm(db, "model", source="mcp")
        else:
            channel.clear(db)
        return f"Sunny in {city}"

    return get_weather


def _two_laps() -> ScriptedChatModel:
    return ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage("Sunny.")]))


def test_a_breakpoint_armed_from_outside_hits_at_the_very_next_model_call(tmp_path):
    # (before: the armed breakpoints were read every half second: the model call right
    # after the tool went by)
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db, debug=True)
    agent = make_agent(_two_laps(), [_arming_tool(db, "arm")], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    assert (p["hook"], p["at"], p["breakpoint"]) == ("wrap_model_call", "before", "model")
    channel.clear(db)
    channel.answer(db, p["run"], "continue")
    assert bg.result()["messages"][-1].content == "Sunny."


def test_a_breakpoint_cleared_from_outside_no_longer_hits_the_next_model_call(tmp_path):
    db = tmp_path / "t.db"
    TraceMiddleware(db=db).flush()
    channel.arm(db, "model:2", source="mcp")
    trace = TraceMiddleware(db=db, debug=True)
    agent = make_agent(_two_laps(), [_arming_tool(db, "clear")], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    deadline = time.monotonic() + 60
    while bg.alive() and time.monotonic() < deadline:
        assert channel.list_paused(db) == [], "paused at a breakpoint cleared before"
        time.sleep(0.01)
    assert bg.result()["messages"][-1].content == "Sunny."
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM debug_pauses").fetchone() == (0,)


# -- item 17: long text, whole, and an unchanged edit changes nothing --------------------------
LONG = "x" * 50_000 + "END"


@tool
def long_tool(city: str) -> str:
    """A long answer."""
    return LONG


def test_a_long_result_is_edited_whole_and_an_unchanged_edit_changes_nothing(tmp_path):
    # (before: pending text was cut at 20,000 characters plus "... (N more characters)",
    # the editor started from it, and saving it unchanged sent the cut text on)
    db = tmp_path / "t.db"
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("long_tool", {"city": "Oslo"}, "c1")]),
        lambda msgs: AIMessage(f"got {len([m for m in msgs if isinstance(m, ToolMessage)][-1].content)}")]))
    trace = TraceMiddleware(db=db, debug=["hook:wrap_tool_call:after"])
    agent = make_agent(model, [long_tool], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    start = template("tool_result", p["pending"])
    assert start == {"kind": "tool_result", "text": LONG}
    got = channel.answer(db, p["run"], "continue", start, pause=p["pause"])
    assert got["edit"] is None  # (saved with no change: no edit)
    assert bg.result()["messages"][-1].content == "got 50003"
    trace.flush()
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT outcome, edit FROM debug_pauses").fetchall() == [
            ("continued", None)]
        debug = [json.loads(x) for (x,) in c.execute(
            "SELECT payload FROM events WHERE phase = 'debug'")]
    assert debug[0]["outcome"] == "continued" and "edit" not in debug[0]


# -- item 18: prune never deletes a paused run ---------------------------------------------------
@tool
def broken(city: str) -> str:
    """Raises."""
    raise KeyError("XYZ")


def test_prune_keeps_a_run_paused_at_an_error(tmp_path):
    # (before: paused at an error the run reads "error", and prune --keep 0 deleted it,
    # its pause row with it: the agent polled for ever)
    db = tmp_path / "t.db"
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("broken", {"city": "Oslo"}, "c1")]), AIMessage("ok")]))
    trace = TraceMiddleware(db=db, debug=["error"])
    agent = make_agent(model, [broken], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    assert p["at"] == "error"
    assert prune(db, keep=0, vacuum=False).runs == 0
    channel.answer(db, p["run"], "continue", {"kind": "tool_result", "text": "fixed"},
                   pause=p["pause"])
    assert bg.result()["messages"][-1].content == "ok"
    trace.flush()
    assert prune(db, keep=0, vacuum=False).runs == 1


# -- item 19: a busy file never kills the agent --------------------------------------------------
def test_a_write_lock_held_past_the_busy_timeout_does_not_kill_the_agent(tmp_path, monkeypatch):
    # (before: sqlite3.OperationalError "database is locked" from close_pause inside the
    # agent: the run crashed)
    monkeypatch.setattr(session, "BUSY_S", 0.2)
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db, debug=["tool:get_weather"])
    agent = make_agent(_two_laps(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    holder = sqlite3.connect(db, timeout=30, isolation_level=None, check_same_thread=False)
    # the answer, then at once the write lock, held well past BUSY_S: the agent reads the
    # answer and cannot close its pause until the lock goes
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE debug_pauses SET command = 'continue', commanded_at = ?"
                   " WHERE id = ?", [time.time(), p["pause"]])
    holder.execute("COMMIT")
    holder.execute("BEGIN IMMEDIATE")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        time.sleep(2.0)
        assert bg.alive()
        holder.execute("COMMIT")
        out = bg.result()
    holder.close()
    assert any("the database is busy" in str(w.message) for w in said)
    assert out["messages"][-1].content == "Sunny."
    trace.flush()
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT outcome FROM debug_pauses").fetchall() == [("continued",)]
        assert c.execute("SELECT status FROM runs").fetchall() == [("completed",)]


# -- item 21: a pause whose process is gone, or whose pid was reused ----------------------------
def test_a_pause_whose_pid_was_reused_is_not_listed_and_cannot_be_answered(tmp_path):
    # (before: any live process with the pid kept the pause "paused" for ever)
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db)
    agent = make_agent(_two_laps(), [get_weather], [trace])
    agent.invoke(QUESTION)
    trace.flush()
    with sqlite3.connect(db) as c:
        rid = c.execute("SELECT id FROM runs").fetchone()[0]
    conn = channel.connect(db)
    pid = channel.open_pause(conn, run_id=rid, seq=1, hook="wrap_tool_call", at="before",
                             reason="tool:get_weather", pending={"kind": "tool_call"})
    conn.close()
    assert [p["pause"] for p in channel.list_paused(db)] == [pid]  # (this process: alive)
    with sqlite3.connect(db) as c:  # the pause was opened long before this process started
        c.execute("UPDATE debug_pauses SET paused_at = ? WHERE id = ?",
                  [time.time() - 10 * 365 * 86400, pid])
    assert channel.list_paused(db) == []
    assert channel.paused_status(db) == {}
    with pytest.raises(NotPaused, match=f"pause {pid} is over: its process .* is gone"):
        channel.answer(db, rid, "continue", pause=pid)
    with pytest.raises(NotPaused, match="is not paused"):
        channel.answer(db, rid, "continue")


# -- item 24: a nan timeout; a paused agent whose file is deleted -------------------------------
@pytest.mark.parametrize("bad", [math.nan, float("-inf"), -1.0])
def test_a_timeout_that_is_not_a_number_of_seconds_is_refused(bad):
    with pytest.raises(LooptraceError, match="debug timeout must be a number of seconds"):
        Debugger(timeout=bad)


@pytest.mark.parametrize("raw", ["nan", "NaN", "-1", "-inf", "soon"])
def test_a_timeout_variable_that_is_not_a_number_of_seconds_is_refused(raw):
    with pytest.raises(LooptraceError, match="LOOPTRACE_DEBUG_TIMEOUT"):
        session.from_env({"LOOPTRACE_DEBUG": "1", "LOOPTRACE_DEBUG_TIMEOUT": raw})
    assert session.from_env({"LOOPTRACE_DEBUG": "1", "LOOPTRACE_DEBUG_TIMEOUT": "inf"}
                            ).timeout is None


def test_a_paused_agent_whose_database_is_deleted_goes_on(tmp_path):
    # (before: it polled the deleted file for ever)
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db, debug=["tool:get_weather"])
    agent = make_agent(_two_laps(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke(QUESTION))
    wait_paused(db, alive=bg.alive)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f"{db}{suffix}"):
            os.unlink(f"{db}{suffix}")
    with pytest.warns(RuntimeWarning, match="its database file is gone"):
        out = bg.result(timeout=60)
    assert out["messages"][-1].content == "Sunny."
