"""The whole state, beyond messages (issue 26): who changed each key, values stored
once per content, values that cannot be stored as they are, ``runtime.context``.

Real agents (``tests/truth/``, ``tests/tracer_kit.py``) with scripted models,
recorded into real SQLite files; ``tests/test_truth.py`` holds the record to
LangGraph's own ``values`` stream at every step.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NotRequired

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command
from tracer_kit import get_weather, two_lap_model, whole_state
from truth.run import run_truth

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.loader import Run, TraceDB
from tracer.read.state_at import StateLog


def _root(db: Path) -> Run:
    with TraceDB(db) as tdb:
        roots = [r for r in tdb.runs() if r.parent_id is None]
        assert len(roots) == 1
        return tdb.run(roots[0].id)


def _record(tmp_path: Path, name: str, *, attach: bool = True) -> Run:
    db = tmp_path / f"{name}.db"
    trace = TraceMiddleware(db=db)
    run_truth(name, [trace], position="first",
              callbacks=[trace.callback_handler()] if attach else None)
    trace.flush()
    return _root(db)


def _who(log: StateLog, key: str) -> list[tuple[str | None, str | None]]:
    return [(v.by, v.tool_call_id) for v in log.history(key)]


# -- who changed each key --------------------------------------------------------------

def test_a_commands_update_is_the_tool_calls(tmp_path):
    run = _record(tmp_path, "command_update")
    assert _who(run.state, "notes") == [("tools", "call-cmd-1")]
    assert run.state.final() == {"notes": ["the meeting is at 10"]}


def test_a_custom_key_is_the_hooks_that_changed_it(tmp_path):
    run = _record(tmp_path, "custom_jump")
    log = run.state
    assert _who(log, "attempts") == [("GiveUpAfterTwo.after_model", None)] * 2
    assert [log.value(v.hash) for v in log.history("attempts")] == [1, 2]
    # the jump it drove: set by the same hook, and gone once the graph ended
    jump = log.history("jump_to")
    assert [(v.by, log.value(v.hash)) for v in jump[:1]] == [("GiveUpAfterTwo.after_model",
                                                               "end")]
    assert jump[-1].hash is None and "jump_to" not in log.final()


def test_deep_agents_plan_and_files_each_change_named_by_its_call(tmp_path):
    run = _record(tmp_path, "deep_workspace")
    log = run.state
    assert _who(log, "todos") == [("tools", "call-ws-plan"), ("tools", "call-ws-done")]
    # (files: written by the state backend straight to the channel, no Command: the
    # change is the call's when the tools step ran that call alone)
    assert _who(log, "files")[1:] == [("tools", "call-ws-write"), ("tools", "call-ws-edit")]
    final = log.final()
    assert final["files"]["/notes.md"]["content"] == "Q3 revenue: 13\nQ3 cost: 7\n"
    assert [t["status"] for t in final["todos"]] == ["completed", "completed"]
    # each change is at a step of the run, and the state there has it
    for v in log.versions:
        if v.hash is not None and not v.key.startswith("@"):
            assert log.at(v.seq)[v.key] == log.value(v.hash)
            assert v in log.changed_at(v.seq)


def test_without_attach_the_state_is_seen_at_the_tracers_hooks(tmp_path):
    run = _record(tmp_path, "command_update", attach=False)
    # seen at the tracer's next hook; the tool call is still known (its wrap hook saw
    # the Command), the node that applied it is not
    assert _who(run.state, "notes") == [(None, "call-cmd-1")]


# -- stored once per content -------------------------------------------------------------

class FilesState(AgentState):  # type: ignore[type-arg]
    files: NotRequired[dict[str, str]]


def _files_agent(tmp_path: Path, writes: list[tuple[str, str]], reads: int) -> tuple[Any, Path]:
    """An agent whose tool writes files into the ``files`` key (a Command), then reads
    the last one back ``reads`` times."""
    store: dict[str, str] = {}

    @tool
    def write_file(path: str, n: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Write a file."""
        store[path] = writes[n][1]
        return Command(update={"files": dict(store), "messages": [
            ToolMessage(f"wrote {path}", tool_call_id=tool_call_id)]})

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return store[path][:20]

    turns = [AIMessage("", id=f"ai-w{i}", tool_calls=[call("write_file", {"path": p, "n": i},
                                                            f"call-w{i}")])
             for i, (p, _) in enumerate(writes)]
    turns += [AIMessage("", id=f"ai-r{i}", tool_calls=[call("read_file", {"path": writes[-1][0]},
                                                             f"call-r{i}")])
              for i in range(reads)]
    turns.append(AIMessage("done", id="ai-end"))

    class Files(AgentMiddleware):  # type: ignore[type-arg]
        state_schema = FilesState

    db = tmp_path / "files.db"
    trace = TraceMiddleware(db=db)
    agent = create_agent(ScriptedChatModel(script=turn_script(turns)),
                         tools=[write_file, read_file], middleware=[trace, Files()])
    return trace.attach(agent), db


def _values_bytes(db: Path) -> tuple[int, list[str]]:
    conn = sqlite3.connect(db)
    try:
        rows = [r[0] for r in conn.execute("SELECT data FROM state_values")]
    finally:
        conn.close()
    return sum(len(r) for r in rows), rows


def test_a_large_file_read_back_five_times_is_stored_once(tmp_path):
    big = "x" * 150_000
    agent, db = _files_agent(tmp_path, [("/big.txt", big)], reads=5)
    agent.invoke({"messages": [("user", "go")]})
    agent_trace_flush(db)
    size, rows = _values_bytes(db)
    assert sum(big in r for r in rows) == 1
    assert size < 160_000
    run = _root(db)
    assert run.state.final()["files"] == {"/big.txt": big}


def test_twenty_writes_store_each_distinct_content_once(tmp_path):
    writes = [(f"/f{i}.md", f"file {i} " + "y" * 5_000) for i in range(20)]
    agent, db = _files_agent(tmp_path, writes, reads=1)
    agent.invoke({"messages": [("user", "go")]})
    agent_trace_flush(db)
    size, rows = _values_bytes(db)
    for _, content in writes:
        assert sum(content in r for r in rows) == 1, "a file's content stored twice"
    assert size < 20 * 5_100 + 20 * 2_000  # the contents, and a small index per version
    log = _root(db).state
    assert len(log.history("files")) == 20
    # every version reads back whole: the files written so far
    for i, v in enumerate(log.history("files")):
        assert log.value(v.hash) == dict(writes[:i + 1])


def agent_trace_flush(db: Path) -> None:
    from tracer.db.writer import get_writer

    get_writer(db).flush()


# -- values that cannot be stored as they are -------------------------------------------

class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


class OddState(AgentState):  # type: ignore[type-arg]
    cyclic: NotRequired[Any]
    lock: NotRequired[Any]
    unprintable: NotRequired[Any]
    huge: NotRequired[str]
    secret: NotRequired[dict[str, str]]


class PutsOddThings(AgentMiddleware):  # type: ignore[type-arg]
    state_schema = OddState

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        cyclic: dict[str, Any] = {"name": "loop"}
        cyclic["self"] = cyclic
        return {"cyclic": cyclic, "lock": threading.Lock(), "unprintable": Unprintable(),
                "huge": "z" * 3_000_000,
                "secret": {"api_key": "plain-text-password", "note": "sk-" + "a" * 40}}


def test_values_json_cannot_carry_are_type_and_repr_and_the_run_goes_on(tmp_path):
    def run(middleware: list[Any]) -> Any:
        agent = create_agent(two_lap_model(), [get_weather], middleware=middleware)
        return agent.invoke({"messages": [("user", "Weather in Oslo?")]})

    db = tmp_path / "odd.db"
    trace = TraceMiddleware(db=db)
    with pytest.warns(RuntimeWarning):  # noqa: PT031 - (said once, by the writer's thread)
        traced = run([trace, PutsOddThings()])
        trace.flush()
    plain = run([PutsOddThings()])
    assert whole_state(traced["messages"]) == whole_state(plain["messages"])
    rec = _root(db)
    assert rec.summary.status == "completed"
    final = rec.state.final()
    assert final["cyclic"]["__type__"] == "builtins.dict" and "loop" in final["cyclic"]["__repr__"]
    assert final["lock"]["__type__"] == "_thread.lock"
    assert final["unprintable"]["__type__"].endswith("Unprintable")
    assert "unrepresentable" in final["unprintable"]["__repr__"]
    assert final["huge"]["looptrace_truncated"]["original_chars"] > 3_000_000
    # redacted as messages are
    assert final["secret"] == {"api_key": "[REDACTED]", "note": "[REDACTED]"}


# -- runtime.context -------------------------------------------------------------------------

@dataclass
class Ctx:
    user: str
    tier: int


def test_runtime_context_is_recorded_at_the_start(tmp_path):
    db = tmp_path / "ctx.db"
    trace = TraceMiddleware(db=db)
    agent = create_agent(two_lap_model(), [get_weather], middleware=[trace], context_schema=Ctx)
    agent.invoke({"messages": [("user", "Weather in Oslo?")]}, context=Ctx("ada", 2))
    trace.flush()
    log = _root(db).state
    assert log.context() == {"user": "ada", "tier": 2}
    [v] = [v for v in log.versions if v.key.startswith("@")]
    assert v.seq == 0 and v.by == "runtime"
    assert "@runtime.context" not in log.final()  # not a state key


def test_no_state_beyond_messages_writes_no_state_row(tmp_path):
    db = tmp_path / "plain.db"
    trace = TraceMiddleware(db=db)
    create_agent(two_lap_model(), [get_weather], middleware=[trace]).invoke(
        {"messages": [("user", "Weather in Oslo?")]})
    trace.flush()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM state").fetchone()[0] == 0
    finally:
        conn.close()


def test_invoke_and_stream_record_the_same_final_state(tmp_path):
    """``invoke``'s output leaves out the private keys (a call limit's counters): they
    stay in the final state as ``stream`` records it, and only the ephemeral
    ``jump_to`` leaves (a replay through ``invoke`` of a streamed run was a state
    difference at the end)."""
    from truth.scenarios import SCENARIOS

    finals = []
    for how in ("stream", "invoke"):
        db = tmp_path / f"{how}.db"
        trace = TraceMiddleware(db=db)
        agent = SCENARIOS["model_call_limit"].build([trace], position="first")
        agent = agent.with_config(callbacks=[trace.callback_handler()])
        inp = {"messages": [("user", "Ping until stopped.")]}
        if how == "stream":
            list(agent.stream(inp))
        else:
            agent.invoke(inp)
        trace.flush()
        finals.append(_root(db).state.final())
    assert finals[0] == finals[1] == {"run_model_call_count": 2,
                                      "thread_model_call_count": 2}
