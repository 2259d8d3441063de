"""Exceptions propagate unchanged and are recorded; the tracer's own failures are contained."""

from __future__ import annotations

import asyncio
import warnings

import pytest
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.errors import GraphInterrupt
from langgraph.types import Interrupt
from tracer_kit import get_weather, make_agent, rows, run_ids, whole_state

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script


class Boom(Exception):
    pass


BOOM = Boom("the warehouse is on fire")
PAUSE = GraphInterrupt((Interrupt(value={"question": "ok?"}, id="i1"),))


@tool
def explode(item: str) -> str:
    """Always fails."""
    raise BOOM


@tool
def pause(item: str) -> str:
    """Raises GraphInterrupt directly (as interrupt() does without a checkpointer)."""
    raise PAUSE


def one_call_model(name: str, args=None) -> ScriptedChatModel:
    return ScriptedChatModel(script=turn_script([
        AIMessage(content="", id="ai-1", tool_calls=[call(name, args or {"item": "x"}, "c1")]),
        AIMessage(content="done", id="ai-2"),
    ]))


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("attach", [False, True])
def test_tool_exception_propagates_unchanged_and_is_recorded(db_path, mode, attach):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(one_call_model("explode"), [explode], [trace])
    if attach:
        agent = trace.attach(agent)
    if not attach:
        catcher = Catcher()
        agent = make_agent(one_call_model("explode"), [explode], [catcher, trace])
    with pytest.raises(Boom) as info:
        if mode == "invoke":
            agent.invoke({"messages": [("user", "go")]})
        else:
            asyncio.run(agent.ainvoke({"messages": [("user", "go")]}))
    assert info.value is BOOM
    if not attach:
        assert catcher.seen[0] is BOOM
    trace.flush()
    (run_id,) = run_ids(db_path)
    status, error = rows(db_path, "SELECT status, error FROM runs WHERE id = ?", [run_id])[0]
    assert status == "error"
    assert "Boom: the warehouse is on fire" in error
    errs = rows(db_path, "SELECT hook, tool_call_id, payload FROM events WHERE run_id = ?"
                         " AND phase = 'error' AND middleware = 'TraceMiddleware'", [run_id])
    assert [(e[0], e[1]) for e in errs] == [("wrap_tool_call", "c1")]
    assert "the warehouse is on fire" in errs[0][2]


class Catcher(AgentMiddleware):  # type: ignore[type-arg]
    """An outer middleware that sees what comes out of the tracer's wrap_tool_call."""

    name = "Catcher"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[BaseException] = []

    def wrap_tool_call(self, request, handler):  # type: ignore[no-untyped-def]
        try:
            return handler(request)
        except BaseException as exc:
            self.seen.append(exc)
            raise

    async def awrap_tool_call(self, request, handler):  # type: ignore[no-untyped-def]
        try:
            return await handler(request)
        except BaseException as exc:
            self.seen.append(exc)
            raise


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
def test_graph_interrupt_propagates_unchanged(db_path, mode):
    catcher = Catcher()
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(one_call_model("pause"), [pause], [catcher, trace])
    if mode == "invoke":
        result = agent.invoke({"messages": [("user", "go")]})
    else:
        result = asyncio.run(agent.ainvoke({"messages": [("user", "go")]}))
    assert catcher.seen == [PAUSE] and catcher.seen[0] is PAUSE
    assert result["__interrupt__"][0].value == {"question": "ok?"}
    trace.flush()
    (run_id,) = run_ids(db_path)
    evs = rows(db_path, "SELECT hook, phase, tool_call_id FROM events WHERE run_id = ?"
                        " AND phase IN ('interrupt', 'error')", [run_id])
    assert evs == [("wrap_tool_call", "interrupt", "c1")]
    assert rows(db_path, "SELECT status FROM runs")[0][0] != "error"


class ModelDown(Exception):
    pass


DOWN = ModelDown("503 from the provider")


class FailingModel(ScriptedChatModel):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        raise DOWN


@pytest.mark.parametrize("attach", [False, True])
def test_model_exception_propagates_unchanged_and_is_recorded(db_path, attach):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(FailingModel(script=None), [explode], [trace])
    if attach:
        agent = trace.attach(agent)
    with pytest.raises(ModelDown) as info:
        agent.invoke({"messages": [("user", "go")]})
    assert info.value is DOWN
    trace.flush()
    status, error = rows(db_path, "SELECT status, error FROM runs")[0]
    assert status == "error" and "503 from the provider" in error
    errs = rows(db_path, "SELECT hook FROM events WHERE phase = 'error' AND"
                         " middleware = 'TraceMiddleware'")
    assert errs == [("wrap_model_call",)]


def test_unknown_tool_is_an_error_tool_message(db_path):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(one_call_model("no_such_tool"), [explode], [trace])
    result = agent.invoke({"messages": [("user", "go")]})
    trace.flush()
    (run_id,) = run_ids(db_path)
    tm = result["messages"][2]
    assert isinstance(tm, ToolMessage) and tm.status == "error"
    enter, exit_ = rows(db_path, "SELECT payload FROM events WHERE run_id = ? AND"
                                 " hook = 'wrap_tool_call' ORDER BY seq", [run_id])
    assert '"known_tool":false' in enter[0]
    assert '"status":"error"' in exit_[0]
    assert rows(db_path, "SELECT status FROM runs")[0][0] == "completed"


# -- the tracer's own failures -------------------------------------------------------------


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")

    __str__ = __repr__


@tool(response_format="content_and_artifact")
def odd_artifact(item: str):
    """Returns an artifact that JSON cannot carry."""
    return f"{item} ok", object()


@tool(response_format="content_and_artifact")
def broken_artifact(item: str):
    """Returns an artifact whose repr raises."""
    return f"{item} ok", BadRepr()


BIG = "x" * 10_000_000


@tool
def huge(item: str) -> str:
    """Returns 10 MB of text."""
    return BIG


def _untraced(model, tools):
    return make_agent(model, tools, []).invoke({"messages": [("user", "go")]})


def _traced(db, model, tools, **kw):
    trace = TraceMiddleware(db=db, **kw)
    agent = trace.attach(make_agent(model, tools, [trace]))
    result = agent.invoke({"messages": [("user", "go")]})
    trace.flush()
    return result


def _same(a, b):
    """The same final state: every state key, every field of every message."""
    assert whole_state(a) == whole_state(b)


@pytest.mark.parametrize("tool_", [odd_artifact, broken_artifact])
def test_unserialisable_tool_result_falls_back_to_repr(db_path, tool_):
    model = one_call_model(tool_.name)
    expected = _untraced(model, [tool_])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _traced(db_path, model, [tool_])
    _same(result, expected)
    (run_id,) = run_ids(db_path)
    data = rows(db_path, "SELECT data FROM messages WHERE run_id = ? AND type = 'tool'",
                [run_id])[0][0]
    assert '"content":"x ok"' in data
    assert "looptrace_fallback" in data or "__repr__" in data
    assert len(rows(db_path, "SELECT 1 FROM messages WHERE run_id = ?", [run_id])) == 4
    assert rows(db_path, "SELECT status FROM runs")[0][0] == "completed"
    ours = [w for w in caught if "looptrace" in str(w.message)]
    assert len(ours) == 1 and ours[0].category is RuntimeWarning, ours


def test_ten_megabyte_message_is_truncated_with_a_marker(db_path):
    model = one_call_model("huge")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _traced(db_path, model, [huge])
    ours = [w for w in caught if "looptrace" in str(w.message)]
    assert len(ours) == 1 and ours[0].category is RuntimeWarning, ours
    assert result["messages"][2].content == BIG  # the agent got all of it
    (run_id,) = run_ids(db_path)
    data, text = rows(db_path, "SELECT data, text FROM messages WHERE run_id = ? AND"
                               " type = 'tool'", [run_id])[0]
    assert len(data) < 1_100_000
    assert '"looptrace_truncated"' in data
    import json

    body = json.loads(data)["data"]
    marker = body["looptrace_truncated"]
    assert marker["original_chars"] > 10_000_000
    assert marker["original_chars"] - len(body["content"]) >= 9_000_000
    assert len(text) <= 4_000
    from tracer.read.loader import TraceDB

    with TraceDB(db_path) as tdb:
        msg = tdb.run(run_id).messages[2]
    assert msg.to_langchain().tool_call_id == "c1"


def test_read_only_database_never_breaks_the_agent(tmp_path, monkeypatch):
    """The file can be read but not written: SQLite refuses every write with
    SQLITE_READONLY ("attempt to write a readonly database"), as it does for a file
    its user may not write. The tracer's connection to the file is opened read-only
    (``?mode=ro``: this works as root too, whom file permissions do not stop). The
    agent's result is unchanged, the tracer warns, the file is untouched."""
    import sqlite3

    from tracer.db.schema import connect

    db = tmp_path / "trace.db"
    connect(db).close()
    model = one_call_model("get_weather")
    expected = _untraced(model, [get_weather])
    real_connect = sqlite3.connect

    def read_only(database, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(database) == str(db):
            return real_connect(f"file:{database}?mode=ro", *args, **{**kwargs, "uri": True})
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", read_only)
    before = db.read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = TraceMiddleware(db=db)
        result = trace.attach(make_agent(model, [get_weather], [trace])).invoke(
            {"messages": [("user", "go")]})
        trace.close()
    _same(result, expected)
    ours = [str(w.message) for w in caught if "looptrace" in str(w.message)]
    assert ours and any("readonly database" in w for w in ours), ours
    assert len(ours) == len(set(ours)) <= 3, ours  # once per kind of failure
    assert db.read_bytes() == before
    monkeypatch.undo()
    assert rows(db, "SELECT COUNT(*) FROM runs") == [(0,)]


def test_unopenable_database_never_breaks_the_agent(tmp_path):
    """The WAL file cannot be created (a directory is in the way): warn, never raise."""
    from tracer.db.schema import connect

    db = tmp_path / "blocked.db"
    connect(db).close()
    (tmp_path / "blocked.db-wal").mkdir()
    model = one_call_model("get_weather")
    expected = _untraced(model, [get_weather])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = TraceMiddleware(db=db)
        agent = trace.attach(make_agent(model, [get_weather], [trace]))
        result = agent.invoke({"messages": [("user", "go")]})
        trace.close()
    _same(result, expected)
    ours = [str(w.message) for w in caught if "looptrace" in str(w.message)]
    assert ours and len(ours) == len(set(ours)) <= 3, ours


def test_locked_database_never_breaks_the_agent_and_catches_up(tmp_path):
    """Another connection holds the write lock during the whole run: the agent does not
    wait for it, and once the lock is gone everything is written.

    "Does not wait" is bounded: the writer waits up to 30 s for a lock (its busy
    timeout) and a flush up to 30 s, so an agent that waited for either would take
    30 s; the run itself takes milliseconds (seconds on a loaded machine)."""
    import sqlite3
    import time

    db = tmp_path / "locked.db"
    model = one_call_model("get_weather")
    expected = _untraced(model, [get_weather])
    trace = TraceMiddleware(db=db)
    agent = trace.attach(make_agent(model, [get_weather], [trace]))
    agent.invoke({"messages": [("user", "warm up")]})  # imports and first-run costs
    trace.flush()
    locker = sqlite3.connect(db)
    locker.execute("BEGIN IMMEDIATE")
    try:
        t0 = time.monotonic()
        result = agent.invoke({"messages": [("user", "go")]})
        took = time.monotonic() - t0
        # still locked: nothing of this run can have been committed yet
        assert rows(db, "SELECT COUNT(*) FROM runs") == [(1,)]
    finally:
        locker.rollback()
        locker.close()
    assert took < 10.0, f"the agent waited {took:.1f} s for the locked database"
    _same(result, expected)
    trace.flush()
    _, run_id = run_ids(db)
    assert rows(db, "SELECT status FROM runs") == [("completed",), ("completed",)]
    n = len(rows(db, "SELECT seq FROM events WHERE run_id = ?", [run_id]))
    assert rows(db, "SELECT MAX(seq) FROM events WHERE run_id = ?", [run_id])[0][0] == n - 1
    assert len(rows(db, "SELECT 1 FROM messages WHERE run_id = ?", [run_id])) == 4


def test_tracer_built_while_database_locked(tmp_path):
    """Constructing the middleware on a locked file does not raise; it warns and records
    once the file is free."""
    import sqlite3

    from tracer.db.schema import connect

    db = tmp_path / "locked.db"
    connect(db).close()
    locker = sqlite3.connect(db)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    locker.execute("BEGIN EXCLUSIVE")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trace = TraceMiddleware(db=db)
    finally:
        locker.rollback()
        locker.close()
    assert [w for w in caught if "looptrace" in str(w.message)]
    model = one_call_model("get_weather")
    result = trace.attach(make_agent(model, [get_weather], [trace])).invoke(
        {"messages": [("user", "go")]})
    _same(result, _untraced(model, [get_weather]))
    trace.flush()
    assert rows(db, "SELECT status FROM runs")[0][0] == "completed"


def test_disk_full_never_breaks_the_agent_and_recovers(db_path):
    """SQLITE_FULL (the file may not grow: max_page_count on the writer's connection) fails
    the writes; the agent goes on, one warning, and the records land once space is back."""
    from tracer_kit import get_price, parallel_model

    trace = TraceMiddleware(db=db_path)
    agent = make_agent(parallel_model(3, 2), [get_price], [trace])
    agent.invoke({"messages": [("user", "first")]})
    trace.flush()
    conn = trace.recorder.writer._conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    expected = make_agent(parallel_model(3, 2), [get_price], []).invoke(
        {"messages": [("user", "second " + "x" * 200_000)]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = agent.invoke({"messages": [("user", "second " + "x" * 200_000)]})
        trace.flush()
    _same(result, expected)
    ours = [str(w.message) for w in caught if "looptrace" in str(w.message)]
    assert len(ours) == 1 and "full" in ours[0], ours
    conn.execute("PRAGMA max_page_count = 1073741823")
    agent.invoke({"messages": [("user", "third")]})
    trace.flush()
    runs = rows(db_path, "SELECT id, status FROM runs")
    assert len(runs) == 3 and {s for _, s in runs} == {"completed"}
    for run_id, _ in runs:
        assert len(rows(db_path, "SELECT 1 FROM messages WHERE run_id = ?", [run_id])) == 11


def test_warnings_as_errors_do_not_kill_the_writer(db_path):
    """Under ``-W error`` the tracer's warning cannot be raised into the writer thread."""
    model = one_call_model("huge")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = _traced(db_path, model, [huge])  # truncation warns inside the writer
        assert result["messages"][2].content == BIG
        result = _traced(db_path, one_call_model("get_weather"), [get_weather])
    assert len(rows(db_path, "SELECT id FROM runs")) == 2
    assert {s for (s,) in rows(db_path, "SELECT status FROM runs")} == {"completed"}
