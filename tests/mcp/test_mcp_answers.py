"""What ``looptrace mcp`` answers, held to the record (issue 39, items 11-13), through
the MCP SDK's own client: a model call's system prompt and tools come with its messages
("exactly what the model received"); ``list_runs`` by health finds runs never checked;
``list_steps`` says what each hook does once, not in every caption."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from test_mcp_server import Client, stdio


def _run_id(db: Path, name: str) -> str:
    (rid,) = sqlite3.connect(db).execute("SELECT id FROM runs WHERE name = ?", [name]).fetchone()
    return str(rid)


def _enter_payload(db: Path, run_id: str, seq: int) -> dict[str, Any]:
    (p,) = sqlite3.connect(db).execute(
        "SELECT payload FROM events WHERE run_id = ? AND seq = ?", [run_id, seq]).fetchone()
    return dict(json.loads(p))


def _seq_of_step(db: Path, run_id: str, step: int) -> int:
    seqs = [r[0] for r in sqlite3.connect(db).execute(
        "SELECT seq FROM events WHERE run_id = ? ORDER BY seq", [run_id])]
    return int(seqs[step - 1])


def test_a_model_call_comes_with_its_system_prompt_and_tools(sample_db: Path,
                                                              tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    shutil.copy(sample_db, db)
    rid = _run_id(db, "weather")
    first = _enter_payload(db, rid, _seq_of_step(db, rid, 4))  # (the first model call)
    assert first["system"] and first["tools"]
    # the second model call names them (system_same, tool_names) without repeating them
    steps = [r[0] for r in sqlite3.connect(db).execute(
        "SELECT seq FROM events WHERE run_id = ? AND hook = 'wrap_model_call'"
        " AND phase = 'enter' ORDER BY seq", [rid])]
    second_seq = steps[1]
    second = _enter_payload(db, rid, second_seq)
    assert "system" not in second and second.get("system_same")
    second_step = 1 + [r[0] for r in sqlite3.connect(db).execute(
        "SELECT seq FROM events WHERE run_id = ? ORDER BY seq", [rid])].index(second_seq)

    async def main() -> None:
        async with stdio(db) as c:
            for step in (4, second_step):
                got = await c.call("get_messages", run=rid, step=step)
                assert got["request"]["system"] == first["system"]
                assert got["request"]["tools"] == first["tools"]
                assert (await c.call("get_step", run=rid, step=step))["request"] == got["request"]
            later = await c.call("get_messages", run=rid, step=second_step + 1)  # (not a call)
            assert "request" not in later

    asyncio.run(main())


def test_list_runs_by_health_finds_runs_never_checked(sample_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    shutil.copy(sample_db, db)
    conn = sqlite3.connect(db)  # (never checked: other tests may have checked the samples)
    with conn:
        conn.execute("DELETE FROM run_checks")
        conn.execute("DELETE FROM findings")
    conn.close()
    checked = tmp_path / "checked.db"
    shutil.copy(db, checked)
    out = subprocess.run([sys.executable, "-m", "tracer", "check", "--db", str(checked),
                          "--json"], capture_output=True, text=True, check=False)
    by_run = {f["run_id"] for f in json.loads(out.stdout) if f["severity"] == "error"}
    errors = {r[0] for r in sqlite3.connect(db).execute(
        f"SELECT name FROM runs WHERE id IN ({','.join('?' * len(by_run))})", list(by_run))}

    async def main() -> None:
        async with stdio(db) as c:
            got = await c.call("list_runs", health=["error"], limit=200)
            names = {r["name"] for r in got["runs"]}
            # what `looptrace check` (another path: it stores the findings) calls errors
            assert names == errors and {"footgun-wrong-id", "footgun-no-bound"} <= names
            assert "weather" not in names and got["health_found_now"] > 0
            assert got["total"] == len(got["runs"])
            ok = await c.call("list_runs", health=["ok"], limit=200)
            assert "weather" in {r["name"] for r in ok["runs"]}
            assert not names & {r["name"] for r in ok["runs"]}

    asyncio.run(main())


def test_list_steps_says_what_a_hook_does_once(sample_db: Path) -> None:
    rid = _run_id(sample_db, "weather")

    async def main() -> None:
        async with stdio(sample_db) as c:
            got = await c.call("list_steps", run=rid)
            hooks = got["hooks"]
            assert hooks["wrap_model_call"].startswith("wrap_model_call wraps the model call")
            captions = [s["caption"] for s in got["steps"]]
            assert not any(c.startswith(tuple(hooks.values())) for c in captions)
            assert "The model is called with 1 message and the system prompt (lap 1)." in captions

    asyncio.run(main())


def test_runs_come_with_their_cost(sample_db: Path, tmp_path: Path) -> None:
    """Issue 37: ``list_runs`` and ``run_summary`` say each run's cost_usd; a run whose
    model has no price says null, not 0. (By hand: claude-haiku-4-5 is $1 in, $5 out per
    million tokens; anthropic-shopping's five calls took 368 in and 92 out.)"""
    db = tmp_path / "s.db"
    shutil.copy(sample_db, db)

    async def main() -> None:
        async with stdio(db) as c:
            runs = {r["name"]: r for r in (await c.call("list_runs", limit=50))["runs"]}
            assert abs(runs["anthropic-shopping"]["cost_usd"] - (368 + 92 * 5) / 1e6) < 1e-12
            assert runs["anthropic-shopping"]["cost"] == "$0.000828"
            assert runs["weather"]["cost_usd"] is None and runs["weather"]["cost"] == "unknown"
            s = await c.call("run_summary", run=runs["anthropic-shopping"]["id"])
            assert s["cost_usd"] == runs["anthropic-shopping"]["cost_usd"]
            assert len(s["cost"]["model_calls"]) == 5

    asyncio.run(main())
