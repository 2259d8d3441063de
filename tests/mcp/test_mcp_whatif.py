"""The what-if tools of ``looptrace mcp`` (``rerun``, ``fork_run``) through the MCP
SDK's own client over stdio: a replay with no edit is a new run identical to its record,
a fork with an edit leaves the record at the fork step, and bad input (a factory that
cannot be imported, a step out of range, an edit naming a message the step does not
have) is an error result naming the problem, with nothing written; an agent that leaves
its record before the fork is an error naming the run that recorded it up to there."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_mcp_server import Client, env
from whatif_kit import AGENT_MODULE, CHANGED_MODULE
from whatif_kit import root_run, rows_of


def dump(db: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def record_in(folder: Path) -> tuple[Path, str, str]:
    """A recorded weather run (the demo agent of ``tracer.demo.scenarios.AGENTS``), and
    the name of a module in ``folder`` whose ``make_agent`` builds its agent."""
    db = folder / "trace.db"
    name = f"agent_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(AGENT_MODULE)
    from tracer.demo.scenarios import AGENTS

    AGENTS["weather"](str(db)).record()
    return db, root_run(db), name


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str, str]:
    return record_in(tmp_path)


@asynccontextmanager
async def server(db: Path, *extra: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tracer", "mcp", "--db", str(db), *extra],
        env={**env(), "LOOPTRACE_TEST_DB": str(db)}, cwd=str(db.parent))
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        yield Client(s)


def meta(db: Path, run_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (text,) = conn.execute("SELECT metadata FROM runs WHERE id = ?", [run_id]).fetchone()
    finally:
        conn.close()
    return dict(json.loads(text or "{}"))


@pytest.fixture(scope="module")
def reran(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One rerun over MCP of a recorded run, with a read tool called while it runs, and
    the diff of the two: one server and one rerun process for the tests that read it."""
    db, run_id, module = record_in(tmp_path_factory.mktemp("reran"))
    before = rows_of(db, run_id)
    done: list[str] = []

    async def body() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with server(db, "--agent", f"{module}:make_agent") as c:
            listed = {t.name: t.annotations.read_only_hint
                      for t in (await c.session.list_tools()).tools}

            async def rerun() -> dict[str, Any]:
                out: dict[str, Any] = await c.call("rerun", run=run_id[:12])
                done.append("rerun")
                return out

            async def read() -> None:
                await asyncio.sleep(0.2)  # (the rerun has started)
                await c.call("run_summary", run=run_id)
                done.append("run_summary")

            out, _ = await asyncio.gather(rerun(), read())
            diff = await c.call("diff_runs", **out["next"]["diff_runs"])
            return listed, out, diff

    listed, out, diff = asyncio.run(body())
    return {"db": db, "run_id": run_id, "before": before, "after": rows_of(db, run_id),
            "listed": listed, "out": out, "diff": diff, "done": done}


def test_a_rerun_is_a_new_run_identical_to_its_record(reran: dict[str, Any]) -> None:
    out, run_id = reran["out"], reran["run_id"]
    assert reran["listed"]["rerun"] is False and reran["listed"]["get_step"] is True
    assert reran["diff"]["identical"] is True
    assert out["of"] == run_id and out["run_id"] != run_id
    assert out["identical_to_original"] is True and out["first_divergence"] is None
    assert out["served_from_record"]["model_calls"] == 2
    assert out["served_from_record"]["tokens"] == 77
    assert out["served_from_record"]["tool_calls"] == 1
    assert out["live"]["model_calls"] == 0 and out["live"]["from"] is None
    assert meta(reran["db"], out["run_id"])["rerun_of"] == run_id
    assert reran["after"] == reran["before"]


def test_a_fork_leaves_the_record_at_the_fork_step(recorded: tuple[Path, str, str]) -> None:
    db, run_id, module = recorded
    before = rows_of(db, run_id)

    async def body() -> dict[str, Any]:
        async with server(db) as c:  # (no --agent: the call names it)
            return await c.call("fork_run", run=run_id, step=10, edit_kind="message",
                                position=0, text="And in Bergen?",
                                agent=f"{module}:make_agent")

    out = asyncio.run(body())
    assert out["at"] == 10 and out["edit"] == {"kind": "message", "position": 0,
                                               "text": "And in Bergen?"}
    assert out["served_from_record"]["model_calls"] == 1
    assert out["served_from_record"]["tokens"] == 30
    assert out["live"]["from"]["call"] == 2 and out["live"]["from"]["step"] == 10
    assert out["identical_to_original"] is False
    div = out["first_divergence"]
    assert (div["kind"], div["lap"], div["step_in_original"], div["step_in_new_run"]) == (
        "message", 2, 10, 10)
    assert out["next"]["get_step"] == {"run": out["run_id"], "step": 10}
    forked = meta(db, out["run_id"])["forked_from"]
    assert forked["run"] == run_id and forked["step"] == 10
    assert rows_of(db, run_id) == before


def test_bad_input_is_an_error_naming_it_with_nothing_written(
        recorded: tuple[Path, str, str]) -> None:
    db, run_id, module = recorded
    before = dump(db)
    agent = f"{module}:make_agent"

    async def body() -> list[str]:
        async with server(db) as c:
            return [
                await c.error("rerun", run=run_id),
                await c.error("rerun", run=run_id, agent="no_such_module_here:make"),
                await c.error("rerun", run=run_id, agent=f"{module}:no_such_factory"),
                await c.error("rerun", run="nosuchrun", agent=agent),
                await c.error("fork_run", run=run_id, step=99, edit_kind="system",
                              text="x", agent=agent),
                await c.error("fork_run", run=run_id, step=4, edit_kind="message",
                              position=3, text="hi", agent=agent),
                await c.error("fork_run", run=run_id, step=4, edit_kind="message",
                              text="hi", agent=agent),
                await c.error("fork_run", run=run_id, step=4, edit_kind="rewrite",
                              text="hi", agent=agent),
            ]

    errors = asyncio.run(body())
    expected = [
        "no agent: pass agent='module:factory'",
        "cannot import the agent factory 'no_such_module_here:make': ModuleNotFoundError",
        f"{module} has no 'no_such_factory'",
        "nosuchrun",
        f"step 99 is out of range: run {run_id[:12]} has steps 1 to 14",
        "the model call at step 4 was sent 1 message (positions 0 to 0): there is no message 3",
        "edit_kind message needs position, text (position is missing)",
        "edit_kind 'rewrite' is not one of message, drop",
    ]
    for err, want in zip(errors, expected, strict=True):
        assert want in err, (want, err)
        assert "\n" not in err, err
    assert dump(db) == before


def test_an_agent_that_leaves_its_record_before_the_fork_is_an_error(
        recorded: tuple[Path, str, str]) -> None:
    db, run_id, _ = recorded
    name = f"changed_{uuid.uuid4().hex[:8]}"
    (db.parent / f"{name}.py").write_text(CHANGED_MODULE)
    before = rows_of(db, run_id)

    async def body() -> tuple[str, dict[str, Any]]:
        async with server(db, "--agent", f"{name}:make_agent") as c:
            err = await c.error("rerun", run=run_id)
            out = await c.call("rerun", run=run_id, continue_live=True)
            return err, out

    err, out = asyncio.run(body())
    assert "the rerun diverged from the record at model call 1" in err
    assert "+[system] You are terse." in err
    partial = err.rsplit("recorded as run ", 1)[1].split(";")[0]
    assert meta(db, partial)["rerun_of"] == run_id and partial != out["run_id"]
    assert out["live"]["from"]["call"] == 1 and out["served_from_record"]["model_calls"] == 0
    assert out["identical_to_original"] is False
    assert rows_of(db, run_id) == before


def test_a_replay_does_not_hold_up_the_other_tools(reran: dict[str, Any]) -> None:
    """The replay runs in a child process the server awaits: a read tool called while it
    runs is answered before it ends."""
    assert reran["done"] == ["run_summary", "rerun"]


@pytest.mark.parametrize(("fields", "edit"), [
    ({"edit_kind": "message", "position": 2, "text": "-1 degrees?"},
     {"kind": "message", "position": 2, "text": "-1 degrees?"}),
    ({"edit_kind": "drop", "position": 1}, {"kind": "drop", "position": 1}),
    ({"edit_kind": "insert", "position": 0, "text": "be brief", "role": "system"},
     {"kind": "insert", "position": 0, "text": "be brief", "role": "system"}),
    ({"edit_kind": "system", "text": "--terse"}, {"kind": "system", "text": "--terse"}),
    ({"edit_kind": "tool_result", "text": "Sunny."}, {"kind": "tool_result", "text": "Sunny."}),
    ({"edit_kind": "tool_args", "args": {"city": "Bergen"}},
     {"kind": "tool_args", "args": {"city": "Bergen"}}),
    ({"edit_kind": "drop_middleware", "middleware": "TraceMiddleware"},
     {"kind": "drop_middleware", "middleware": "TraceMiddleware"}),
    ({"edit_kind": "move_middleware", "middleware": "a=b", "index": 1},
     {"kind": "move_middleware", "middleware": "a=b", "index": 1}),
])
def test_each_edit_kind_reaches_looptrace_replay_as_the_same_edit(
        fields: dict[str, Any], edit: dict[str, Any]) -> None:
    """fork_run's fields, as ``looptrace rerun`` options, parse back to that edit."""
    from tracer.cli import build_parser
    from tracer.cli.rerun import edit_of
    from tracer.mcp.whatif_tools import EDIT_KINDS, edit_flags

    assert set(EDIT_KINDS) >= {edit["kind"]}
    kw: dict[str, Any] = {"position": None, "text": None, "role": "human", "model": None,
                          "args": None, "middleware": None, "index": None}
    kw.update({k: v for k, v in fields.items() if k != "edit_kind"})
    flags = edit_flags(fields["edit_kind"], **kw)
    args = build_parser("rerun").parse_args(
        ["rerun", "RUN", "--agent", "m:f", "--at", "3", *flags])
    assert edit_of(args).to_json() == edit
