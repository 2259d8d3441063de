"""``looptrace rerun`` on the command line: what it saved, and bad input.

Bad input (a factory that cannot be imported, a run with no recorded input, a step out
of range, an edit naming a message the step does not have, a record of an older
schema, --at without an edit) is one line on stderr, exit 1, and the database holds
exactly what it held. An agent that no longer matches its record stops at the call
where it diverges, with the request's diff, unless --continue-live.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import uuid
from pathlib import Path

import pytest
from tracer_kit import rows
from whatif_kit import AGENT_MODULE, CHANGED_MODULE, root_run, rows_of

from tracer.cli import main
from tracer.db.schema import connect
from tracer.read.loader import TraceDB

FIXTURES = Path(__file__).parents[1] / "fixtures"



def dump(db: str) -> list[str]:
    """Every row of the store, as text (to see that nothing changed): SQLite's dump of
    the file, or each table of the PostgreSQL schema in its key's order."""
    if db.startswith("postgresql://"):
        tables = [t for (t,) in rows(db, "SELECT table_name FROM information_schema.tables"
                                         " WHERE table_schema = current_schema()"
                                         " ORDER BY table_name")]
        return [f"{t}: {r!r}" for t in tables
                for r in rows(db, f"SELECT * FROM {t} ORDER BY 1, 2")]
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


@pytest.fixture
def recorded(store_db: str, tmp_path: Path,
             monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    """A recorded weather run (in a store on each engine), and the name of a module (in
    the current folder) whose ``make_agent`` builds its agent."""
    db = store_db
    monkeypatch.setenv("LOOPTRACE_TEST_DB", str(db))
    monkeypatch.chdir(tmp_path)
    name = f"agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(AGENT_MODULE)
    from tracer.demo.scenarios import weather_agent

    weather_agent(str(db)).record()
    yield db, root_run(db), name
    sys.modules.pop(name, None)


def test_rerun_reports_what_it_served(recorded: tuple[str, str, str],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, module = recorded
    assert main(["rerun", run_id[:12], "--agent", f"{module}:make_agent", "--db", str(db),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    with TraceDB(db) as t:
        original = t.summary(run_id)
    assert out["of"] == run_id
    assert out["served"]["model_calls"] == 2 and out["served"]["tool_calls"] == 1
    assert out["served"]["tokens"] == original.total_tokens == 77
    assert out["live"]["model_calls"] == 0 and out["live"]["from"] is None
    assert main(["diff", run_id, out["run"], "--db", str(db)]) == 0


def test_the_old_command_name_still_reruns_and_says_it_is_now_rerun(
        recorded: tuple[str, str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """``looptrace rerun`` (the name before issue 43) is an alias of ``looptrace rerun``."""
    db, run_id, module = recorded
    assert main(["replay", run_id, "--agent", f"{module}:make_agent", "--db", str(db),  # words: keep
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ("looptrace: `replay` is now `looptrace rerun` (the old name "  # words: keep
                            "still works, for now)\n")
    out = json.loads(captured.out)
    assert out["of"] == run_id
    with TraceDB(db) as t:
        assert t.run(out["run"]).metadata["rerun_of"] == run_id


def test_fork_reports_where_the_live_part_began(recorded: tuple[str, str, str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, module = recorded
    assert main(["rerun", run_id, "--agent", f"{module}:make_agent", "--db", str(db),
                 "--at", "10", "--message", "0=And in Bergen?"]) == 0
    text = capsys.readouterr().out
    assert "from the record: 1 of 2 model calls (30 tokens" in text
    assert ("live from model call 2 (step 10 of the record): the edit (message 0 of the "
            "request replaced)") in text
    fork = text.split(" as ", 1)[1].split()[0]
    assert main(["diff", run_id, fork, "--db", str(db)]) == 1
    assert "first divergence (message): lap 2, step 10 (A) / 10 (B)" in capsys.readouterr().out
    # the JSON counts the step from 1 too (it said 9: the player's 0-based index)
    assert main(["rerun", run_id, "--agent", f"{module}:make_agent", "--db", str(db),
                 "--at", "10", "--message", "0=And in Bergen?", "--json"]) == 0
    live = json.loads(capsys.readouterr().out)["live"]
    assert live["from"] == {"call": 2, "step": 10,
                            "why": "the edit (message 0 of the request replaced)"}


@pytest.mark.parametrize(("args", "error"), [
    (["--agent", "no_such_module_here:make_agent"],
     "cannot import the agent factory 'no_such_module_here:make_agent': ModuleNotFoundError"),
    (["--agent", "{module}:no_such_factory"], "has no 'no_such_factory'"),
    (["--agent", "{module}:make_agent", "--at", "99", "--system", "x"],
     "step 99 is out of range: run {run12} has steps 1 to 14"),
    (["--agent", "{module}:make_agent", "--at", "4", "--message", "3=hi"],
     "the model call at step 4 was sent 1 message (positions 0 to 0): there is no message 3"),
    (["--agent", "{module}:make_agent", "--at", "4"], "--at needs an edit"),
    (["--agent", "{module}:make_agent", "--at", "7", "--tool-args", "[1]"],
     "--tool-args must be a JSON object"),
    (["--agent", "{module}:make_agent", "--drop-middleware", "Nope"],
     "the agent has no middleware 'Nope' (its list: TraceMiddleware)"),
])
def test_bad_input_is_one_line_and_writes_nothing(
        recorded: tuple[str, str, str], capsys: pytest.CaptureFixture[str],
        args: list[str], error: str) -> None:
    db, run_id, module = recorded
    before = dump(db)
    args = [a.format(module=module) for a in args]
    assert main(["rerun", run_id, "--db", str(db), *args]) == 1
    err = capsys.readouterr().err
    assert err.startswith("looptrace rerun: ")
    assert error.format(run12=run_id[:12]) in err
    assert err.count("\n") == 1
    assert dump(db) == before


def test_a_run_without_recorded_input(recorded: tuple[str, str, str],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, module = recorded
    conn = connect(db)
    conn.execute("DELETE FROM messages WHERE run_id = ?", [run_id])
    conn.commit()
    conn.close()
    before = dump(db)
    assert main(["rerun", run_id, "--db", str(db), "--agent", f"{module}:make_agent"]) == 1
    err = capsys.readouterr().err
    assert f"run {run_id[:12]} has no recorded input to rerun it from" in err
    assert dump(db) == before


def test_a_record_of_an_older_schema(tmp_path: Path, recorded: tuple[str, str, str],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    _, _, module = recorded
    old = tmp_path / "schema2.db"
    shutil.copy(FIXTURES / "schema2.db", old)
    data = old.read_bytes()
    assert main(["rerun", "f79cc547", "--db", str(old), "--agent",
                 f"{module}:make_agent"]) == 1
    err = capsys.readouterr().err
    assert "was recorded with schema 2; rerun reads schema 4" in err
    assert old.read_bytes() == data


def test_an_agent_that_diverges_before_the_fork_stops_there(
        tmp_path: Path, recorded: tuple[str, str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id, _ = recorded
    name = f"changed_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(CHANGED_MODULE)
    before = rows_of(db, run_id)
    try:
        assert main(["rerun", run_id, "--db", str(db), "--agent", f"{name}:make_agent"]) == 1
        err = capsys.readouterr().err
        assert "the rerun diverged from the record at model call 1" in err
        assert "-[system] You are a helpful weather assistant. Use the tools." in err
        assert "+[system] You are terse." in err
        assert main(["rerun", run_id, "--db", str(db), "--agent", f"{name}:make_agent",
                     "--continue-live", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["live"]["from"]["call"] == 1 and out["served"]["model_calls"] == 0
    finally:
        sys.modules.pop(name, None)
    assert rows_of(db, run_id) == before


def test_a_rerun_served_whole_says_nothing_ran_live(recorded: tuple[str, str, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 39, item 10: "live: 0 model calls, 0 tool calls (a tool the agent lacks, a
    result the record holds only as a repr)" explained nothing when nothing ran live."""
    db, run_id, module = recorded
    assert main(["rerun", run_id, "--agent", f"{module}:make_agent", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("  from the record: 2 of 2 model calls (77 tokens, ")
    assert lines[1].endswith(" as recorded), 1 tool call")
    assert lines[2] == "  nothing ran live: every model and tool call came from the record"


ASYNC_AGENT = '''
import os
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script

@tool
async def fetch_price(item: str) -> str:
    """Price of an item (async only)."""
    return f"{item}: 10 EUR"

model = ScriptedChatModel(script=turn_script([
    AIMessage("", tool_calls=[call("fetch_price", {"item": "tea"}, "p1")]),
    AIMessage("Tea is 10 EUR.")]))
trace = TraceMiddleware(db=os.environ["LOOPTRACE_TEST_DB"])

def make_agent(middleware=(trace,)):
    return create_agent(model, tools=[fetch_price], middleware=list(middleware))
'''


def test_an_agent_with_async_only_tools_reruns_with_async(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], store_db: str) -> None:
    # (issue 44's leftover: the CLI ran every rerun through invoke, so an agent whose
    # tools are async only ended with "does not support sync invocation")
    import asyncio
    import importlib

    db = store_db
    monkeypatch.setenv("LOOPTRACE_TEST_DB", str(db))
    monkeypatch.chdir(tmp_path)
    name = f"agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(ASYNC_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        mod = importlib.import_module(name)
        asyncio.run(mod.make_agent().ainvoke({"messages": [("user", "Price of tea?")]}))
        mod.trace.flush()
        run_id = root_run(db)
        fork = ["rerun", run_id, "--agent", f"{name}:make_agent", "--db", str(db),
                "--at", "6", "--tool-args", '{"item": "coffee"}', "--json"]
        assert main(fork) == 0  # (the tool runs live, with the new arguments)
        sync = json.loads(capsys.readouterr().out)
        assert "does not support sync invocation" in (sync["error"] or "")
        assert main([*fork, "--async"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["error"] is None
        assert out["served"]["model_calls"] == 1 and out["served"]["tool_calls"] == 0
        assert out["live"]["tool_calls"] == 1 and out["live"]["model_calls"] == 1
        with TraceDB(db) as t:
            msgs = t.run(out["run"]).messages
        assert [m.text for m in msgs if m.type == "tool"] == ["coffee: 10 EUR"]
    finally:
        sys.modules.pop(name, None)
