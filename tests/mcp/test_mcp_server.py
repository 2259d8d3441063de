"""``looptrace mcp`` through the MCP SDK's own client, over stdio and over streamable
HTTP: every tool, paging, errors (a bad run id, a step out of range, a file that is not
ours, a locked one), the database never written; and a scripted agent session that finds,
from the samples and with MCP calls only, the run that looped and the dangling call of
the footgun sample with its step."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tracer.mcp.debug_tools import DEBUG_TOOLS
from tracer.mcp.server import TOOLS
from tracer.mcp.whatif_tools import WHATIF_TOOLS

ROOT = Path(__file__).resolve().parents[2]

# the runs of the bundled samples, written out (sample_traces/*.jsonl)
SAMPLE_NAMES = sorted([
    "researcher", "deep-research", "release-notes", "footgun-swallowed-error", "footgun-wrong-id",
    "footgun-no-bound", "weather_loop", "ollama-shopping", "ollama-weather",
    "anthropic-shopping", "anthropic-weather", "openai-shopping", "openai-weather",
    "stock-check", "booking", "support-desk", "hostile-page", "approvals", "stuck-search",
    "shopping", "weather", "anthropic: What's the weather in Oslo and in Bergen right n...",
    "openai: What's the weather in Oslo and in Bergen right n..."])


class Client:
    """The SDK's client session, with the answers parsed."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **args: Any) -> Any:
        res = await self.session.call_tool(tool, args)
        assert not res.is_error, res.content[0].text
        return json.loads(res.content[0].text)

    async def error(self, tool: str, **args: Any) -> str:
        res = await self.session.call_tool(tool, args)
        assert res.is_error, res.content
        return str(res.content[0].text)


def env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("LOOPTRACE_") or k == "LOOPTRACE_CACHE_DIR"},
            "PYTHONPATH": str(ROOT)}


@asynccontextmanager
async def stdio(db: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "tracer", "mcp", "--db", str(db)], env=env())
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        yield Client(s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def http(db: Path) -> AsyncIterator[Client]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tracer", "mcp", "--db", str(db), "--http",  # noqa: ASYNC220
                             "--port", str(port)], env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.3)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams, \
                ClientSession(streams[0], streams[1]) as s:
            await s.initialize()
            yield Client(s)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


TRANSPORTS = {"stdio": stdio, "http": http}


def run_with(transport: str, db: Path, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with TRANSPORTS[transport](db) as client:
            await body(client)
    asyncio.run(main())


@pytest.fixture
def samples(sample_db: Path, tmp_path: Path) -> Path:
    """A copy of the samples' database (a test may lock it)."""
    out = tmp_path / "samples.db"
    shutil.copy(sample_db, out)
    return out


def fingerprint(db: Path) -> tuple[Any, ...]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                     for t in ("runs", "events", "messages", "wire")) + (
            conn.execute("PRAGMA data_version").fetchone()[0],)
    finally:
        conn.close()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_every_tool(samples: Path, tmp_path: Path, transport: str) -> None:
    before = samples.stat().st_mtime_ns, fingerprint(samples)
    run_with(transport, samples, every_tool(tmp_path))
    assert (samples.stat().st_mtime_ns, fingerprint(samples)) == before


def test_every_tool_on_postgresql(sample_db: Path, pg_url: str | None, tmp_path: Path) -> None:
    """The same questions and answers with the samples in a PostgreSQL store (``looptrace
    copy``'s ``copy_store``), over stdio; the read tools write nothing there either."""
    if pg_url is None:
        if os.environ.get("CI"):
            pytest.fail("no PostgreSQL: .ci/run must start one (LOOPTRACE_TEST_PG_URL)")
        pytest.skip("no PostgreSQL here")
    from pg_kit import fresh_store
    from tracer_kit import rows

    from tracer.interop.copy import copy_store

    store = fresh_store(pg_url)
    copy_store(str(sample_db), store)
    counts = ("SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM events),"
              " (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM wire),"
              " (SELECT COUNT(*) FROM notes), (SELECT COUNT(*) FROM run_checks)")
    before = rows(store, counts)
    run_with("stdio", store, every_tool(tmp_path))  # type: ignore[arg-type]
    assert rows(store, counts) == before


def every_tool(tmp_path: Path) -> Callable[[Client], Awaitable[None]]:
    """Every read tool asked about the samples, each answer checked by hand."""

    async def body(c: Client) -> None:
        listed = await c.session.list_tools()
        assert sorted(t.name for t in listed.tools) == sorted({**TOOLS, **WHATIF_TOOLS, **DEBUG_TOOLS})
        for t in listed.tools:
            assert t.description == {**TOOLS, **WHATIF_TOOLS, **DEBUG_TOOLS}[t.name]
        # list_runs, paged: every page follows next_offset, all runs once
        names: list[str] = []
        offset: int | None = 0
        while offset is not None:
            page = await c.call("list_runs", offset=offset, limit=5)
            assert page["total"] == 23 and len(page["runs"]) <= 5
            names += [r["name"] for r in page["runs"]]
            offset = page["next_offset"]
        assert sorted(names) == SAMPLE_NAMES
        # the filters of `looptrace runs`
        errs = await c.call("list_runs", status=["error"])
        assert sorted(r["name"] for r in errs["runs"]) == [
            "anthropic: What's the weather in Oslo and in Bergen right n...",
            "footgun-no-bound", "stock-check"]
        top = await c.call("list_runs", top_level=True, limit=100)
        assert "researcher" not in [r["name"] for r in top["runs"]] and top["total"] == 22
        (deep,) = (await c.call("list_runs", name="deep-research"))["runs"]
        kids = await c.call("list_runs", parent=deep["id"][:12])
        assert [r["name"] for r in kids["runs"]] == ["researcher"]
        found = await c.call("search_runs", text="population")
        assert sorted(r["name"] for r in found["runs"]) == ["deep-research", "researcher"]
        # run_summary: findings with their steps
        (wrong,) = (await c.call("list_runs", name="footgun-wrong-id"))["runs"]
        summ = await c.call("run_summary", run=wrong["id"])
        assert summ["run"]["name"] == "footgun-wrong-id" and summ["steps"] == 10
        # (6 errors and 3 warnings: the Ollama-ids warning is only on runs that talked to
        # Ollama since the rules' version 3)
        assert summ["findings_total"] == 9 and summ["health"] == "6 errors, 3 warnings"
        assert {(f["rule"], f["provider"], f["step"]) for f in summ["findings"]} >= {
            ("dangling-tool-call", "openai", 8), ("orphan-tool-result", "anthropic", 8)}
        paged = await c.call("run_summary", run=wrong["id"], findings_offset=7,
                             findings_limit=5)
        assert len(paged["findings"]) == 2 and paged["findings_next_offset"] is None
        # steps
        steps = await c.call("list_steps", run=wrong["id"])
        assert [s["step"] for s in steps["steps"]] == list(range(1, 11))
        oslo = await c.call("list_steps", run=wrong["id"], tool_call_id="call_fc_oslo")
        assert [(s["hook"], s["phase"]) for s in oslo["steps"]] == [
            ("tool", "enter"), ("tool", "exit")]
        step = await c.call("get_step", run=wrong["id"], step=8)
        assert (step["hook"], step["phase"], step["steps"]) == ("model", "enter", 10)
        assert step["pending_tool_calls"] == ["call_fc_bergen", "call_fc_oslo"]
        msgs = await c.call("get_messages", run=wrong["id"], step=8)
        assert msgs["messages_are"] == "what the model received at this call"
        assert [(m["type"], m.get("tool_call_id")) for m in msgs["messages"]] == [
            ("human", None), ("ai", None), ("tool", "call_0"), ("tool", "call_1")]
        assert [t["id"] for t in msgs["messages"][1]["tool_calls"]] == [
            "call_fc_oslo", "call_fc_bergen"]
        page2 = await c.call("get_messages", run=wrong["id"], step=8, offset=1, limit=2)
        assert [m["index"] for m in page2["messages"]] == [1, 2] and page2["next_offset"] == 3
        # a long content is cut, and get_message_text gives the rest
        (hostile,) = (await c.call("list_runs", name="hostile-page"))["runs"]
        last = (await c.call("run_summary", run=hostile["id"]))["steps"]
        full = await c.call("get_messages", run=hostile["id"], step=last, cut=200)
        cut = [m for m in full["messages"] if m.get("cut")]
        assert cut, full
        m = cut[0]
        assert len(m["content"]) == 200 and m["cut"]["rest"].startswith("get_message_text(")
        text = ""
        off: int | None = 0
        while off is not None:
            part = await c.call("get_message_text", run=hostile["id"], step=last,
                                index=m["index"], offset=off, limit=100)
            text += part["text"]
            off = part["next_offset"]
        assert len(text) == m["cut"]["total"] and text.startswith(m["content"])
        # the wire exchange of a model call
        (ow,) = (await c.call("list_runs", name="openai-weather"))["runs"]
        calls = await c.call("list_steps", run=ow["id"], hook="wrap_model_call")
        first = calls["steps"][0]["step"]
        wire = await c.call("get_wire", run=ow["id"], step=first)
        (ex,) = wire["exchanges"]
        assert (ex["provider"], ex["status"]) == ("openai", 200)
        assert json.loads(ex["request_body"])["messages"][-1]["role"] == "user"
        nowire = await c.call("get_wire", run=wrong["id"], step=8)
        assert nowire["exchanges"] == [] and "looptrace run --wire" in nowire["note"]
        # diff
        (aw,) = (await c.call("list_runs", name="anthropic-weather"))["runs"]
        d = await c.call("diff_runs", run_a=ow["id"], run_b=aw["id"])
        assert d["identical"] is False and d["text"]
        same = await c.call("diff_runs", run_a=ow["id"], run_b=ow["id"])
        assert same["identical"] is True
        # an HTML export: a file written, never the database
        out = await c.call("export_html", run=ow["id"][:12], path=str(tmp_path / "ow.html"))
        html = Path(out["path"]).read_text(encoding="utf-8")
        assert out["run_id"] == ow["id"] and html.startswith("<!DOCTYPE html>")

    return body


def test_errors_name_the_problem(samples: Path, tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE x (y)")
    conn.commit()
    conn.close()

    async def body(c: Client) -> None:
        assert f"no run 'nope' in {samples}" in await c.error("run_summary", run="nope")
        (wrong,) = (await c.call("list_runs", name="footgun-wrong-id"))["runs"]
        rid = wrong["id"][:12]
        for tool in ("get_step", "get_messages", "get_wire"):
            assert f"run {rid} has steps 1 to 10, not 11" in await c.error(
                tool, run=rid, step=11)
        assert "not 0" in await c.error("get_step", run=rid, step=0)
        assert "has messages 0 to 3, not 9" in await c.error(
            "get_message_text", run=rid, step=8, index=9)
        assert "unknown status 'done'" in await c.error("list_runs", status=["done"])
        # the database locked by another process: said at once
        locker = sqlite3.connect(samples)
        locker.execute("PRAGMA locking_mode = EXCLUSIVE")
        locker.execute("BEGIN EXCLUSIVE")
        try:
            t0 = time.monotonic()
            text = await c.error("list_runs")
            assert "is locked by another process" in text and str(samples) in text
            assert time.monotonic() - t0 < 20
        finally:
            locker.rollback()
            locker.close()
        assert (await c.call("list_runs", limit=1))["total"] == 23

    run_with("stdio", samples, body)

    async def foreign_body(c: Client) -> None:
        text = await c.error("list_runs")
        assert "is a SQLite database but not a looptrace one" in text
        assert str(foreign) in text

    run_with("stdio", foreign, foreign_body)

    async def missing_body(c: Client) -> None:
        assert "no such database" in await c.error("run_summary", run="x")

    run_with("stdio", tmp_path / "missing.db", missing_body)
    assert not (tmp_path / "missing.db").exists()


def test_an_agent_session_finds_the_loop_and_the_dangling_call(samples: Path) -> None:
    """What a coding agent does when asked "which run looped, and which call was left
    without a result, where?": MCP calls only, ids taken from the previous answers."""
    async def body(c: Client) -> None:
        summaries = {}
        offset: int | None = 0
        while offset is not None:
            page = await c.call("list_runs", offset=offset, limit=10)
            for r in page["runs"]:
                summaries[r["id"]] = await c.call("run_summary", run=r["id"])
            offset = page["next_offset"]
        looped = [s["run"]["name"] for s in summaries.values()
                  if any(f["rule"] == "runaway-loop" for f in s["findings"])]
        assert looped == ["footgun-no-bound"]
        dangling = {s["run"]["name"]: [f for f in s["findings"]
                                       if f["rule"] == "dangling-tool-call"
                                       and f["severity"] == "error"]
                    for s in summaries.values()}
        dangling = {k: v for k, v in dangling.items() if v}
        footgun = "anthropic: What's the weather in Oslo and in Bergen right n..."
        assert sorted(dangling) == sorted(["footgun-wrong-id", footgun])
        # (one finding per provider whose API rejects it, all at the same step)
        assert sorted(f["provider"] for f in dangling[footgun]) == ["anthropic", "openai"]
        (f,) = [f for f in dangling[footgun] if f["provider"] == "anthropic"]
        run_id = f["run_id"]
        step = await c.call("get_step", run=run_id, step=f["step"])
        assert (f["step"], step["hook"], step["phase"]) == (5, "model", "enter")
        assert step["pending_tool_calls"] == ["toolu_8b9d28dc117ba53724aa"]
        # where it was asked for: the model reply that holds that tool_use id
        msgs = await c.call("get_messages", run=run_id, step=f["step"])
        asked = [m for m in msgs["messages"]
                 if any(t["id"] == "toolu_8b9d28dc117ba53724aa" for t in m.get("tool_calls", ()))]
        assert [m["type"] for m in asked] == ["ai"]
        assert "toolu_8b9d28dc117ba53724aa" not in [m.get("tool_call_id")
                                                   for m in msgs["messages"]]

    run_with("stdio", samples, body)


def test_the_readmes_client_configuration_starts_the_server(samples: Path) -> None:
    """The snippet of "Use it from a coding agent", as an MCP client reads it."""
    import re

    section = (ROOT / "docs" / "guide" / "mcp.md").read_text(encoding="utf-8")
    assert section.startswith("# Use it from a coding agent\n")
    (block,) = re.findall(r"^```json\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    server = json.loads(block)["mcpServers"]["looptrace"]
    assert server["command"] == "looptrace"
    args = [str(samples) if a.endswith("looptrace.db") else a for a in server["args"]]
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "looptrace"),
                                   args=args, env=env())

    async def main() -> None:
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            res = await s.call_tool("list_runs", {"limit": 1})
            assert json.loads(res.content[0].text)["total"] == 23

    asyncio.run(main())


def test_add_note_writes_one_note_and_the_summary_shows_it(tmp_path: Path) -> None:
    """MCP ``add_note``: one row written (a run note and a step note), read back by
    ``run_summary`` and ``get_step`` and found by ``search_runs`` and ``list_runs(tags=)``;
    bad input is one clear error and writes nothing; it is the one annotated writer
    among the read tools."""
    from tracer_kit import record_weather_run, rows

    db = tmp_path / "t.db"
    rid = record_weather_run(db)

    async def body(c: Client) -> None:
        listed = {t.name: t for t in (await c.session.list_tools()).tools}
        assert listed["add_note"].annotations.read_only_hint is False
        assert listed["add_note"].annotations.destructive_hint is False
        got = await c.call("add_note", run="weather-notes", text="the tool goes out here",
                           step=3, tags=["Workshop", "bug"])
        assert got["run_id"] == rid
        assert (got["note"]["step"], got["note"]["tags"]) == (3, ["workshop", "bug"])
        await c.call("add_note", run=rid[:8], text="answers in two laps")
        summ = await c.call("run_summary", run=rid)
        assert summ["notes_total"] == 2
        assert [(n["step"], n["text"]) for n in summ["notes"]] == [
            (None, "answers in two laps"), (3, "the tool goes out here")]
        step = await c.call("get_step", run=rid, step=3)
        assert [n["text"] for n in step["notes"]] == ["the tool goes out here"]
        assert (await c.call("get_step", run=rid, step=4))["notes"] == []
        assert [r["id"] for r in (await c.call("search_runs", text="GOES OUT"))["runs"]] == [rid]
        assert [r["id"] for r in (await c.call("list_runs", tags=["bug"]))["runs"]] == [rid]
        assert (await c.call("list_runs", tags=["other"]))["runs"] == []
        # bad input: one clear line, nothing written
        assert "a note needs text" in await c.error("add_note", run=rid, text="  ")
        assert f"run {rid[:12]} has steps 1 to 13, not 14" in await c.error(
            "add_note", run=rid, text="x", step=14)
        assert "a tag is one short word" in await c.error(
            "add_note", run=rid, text="x", tags=["two words"])
        assert "no run 'nope'" in await c.error("add_note", run="nope", text="x")

    run_with("stdio", db, body)
    assert rows(db, "SELECT seq, text, tags FROM notes ORDER BY id") == [
        (2, "the tool goes out here", '["workshop", "bug"]'), (None, "answers in two laps", "[]")]
