"""Runs whose ``parent_id``s form a cycle (issue 36, item 7): A under B under A, or a run
its own parent. ``looptrace import`` took them; then ``export -o`` / ``--html`` (and MCP
``export_html``) never finished, memory growing, and ``diff`` (and MCP ``diff_runs``)
died in a RecursionError. Import now refuses them (a looptrace file, an OTLP file, a
file closing a cycle with the runs already stored); every reader that walks a run's
subagent runs stops at a run already met (a database can be written by other means)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from hostile_kit import cli, trace_file
from otel_kit import json_body

from tracer.db.schema import SCHEMA_VERSION
from tracer.interop.exchange import import_rows, run_tree
from tracer.otel.runspans import spans_from_rows
from tracer.read.loader import TraceDB

HEADER = {"format": "looptrace-trace", "version": 1, "schema_version": SCHEMA_VERSION,
          "root": "a", "runs": 2}


def run(rid: str, parent: str | None = None, start: float = 1.0) -> tuple[str, dict]:
    return ("runs", {"id": rid, "parent_id": parent, "name": f"run {rid}",
                     "status": "completed", "started_at": start, "ended_at": start + 1})


def event(rid: str, seq: int = 0) -> tuple[str, dict]:
    return ("events", {"run_id": rid, "seq": seq, "ts": 1.0 + seq, "hook": "run",
                       "phase": "start", "lap": 0})


def write(path: Path, rows: list[tuple[str, dict]]) -> Path:
    return trace_file(path, rows, HEADER)


def run_ids(db: Path) -> list[str]:
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY id")]
    finally:
        conn.close()


# -- import refuses them ---------------------------------------------------------------------
@pytest.mark.parametrize(("rows", "line", "says"), [
    ([run("a", "b"), event("a"), run("b", "a"), event("b")], 2,
     "run 'a' is its own ancestor ('a' -> 'b' -> 'a')"),
    ([run("a", "a"), event("a")], 2, "run 'a' is its own ancestor ('a' -> 'a')"),
    ([run("x"), run("a", "c"), run("b", "a"), run("c", "b")], 3,
     "run 'a' is its own ancestor ('a' -> 'c' -> 'b' -> 'a')"),
])
def test_a_file_with_parents_in_a_cycle_is_refused(tmp_path: Path, capsys, rows, line,  # type: ignore[no-untyped-def]
                                                   says) -> None:
    path = write(tmp_path / "cycle.jsonl", rows)
    db = tmp_path / "x.db"
    code, out, err = cli(capsys, "import", "--db", str(db), str(path))
    assert (code, out) == (1, "")
    assert err == f"looptrace import: {path}:{line}: {says}; nothing imported\n"
    assert run_ids(db) == []


def test_a_file_closing_a_cycle_with_stored_runs_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "x.db"
    import_rows([run("b", "a"), event("b")], db)
    path = write(tmp_path / "a.jsonl", [run("a", "b"), event("a")])
    code, out, err = cli(capsys, "import", "--db", str(db), str(path))
    assert (code, out) == (1, "")
    assert err == ("looptrace import: run 'a' would be its own ancestor ('a' -> 'b' -> 'a', "
                   "with the runs already stored); nothing imported\n")
    assert run_ids(db) == ["b"]


def test_an_otlp_file_with_parents_in_a_cycle_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "cycle.json"
    path.write_bytes(json_body(spans_from_rows([run("a", "b"), event("a"), run("b", "a"),
                                                event("b")])))
    db = tmp_path / "x.db"
    code, out, err = cli(capsys, "import", "--db", str(db), str(path))
    assert (code, out) == (1, "")
    assert err == ("looptrace import: run 'a' would be its own ancestor ('a' -> 'b' -> 'a', "
                   "with the runs already stored); nothing imported\n")
    assert run_ids(db) == []


def test_a_tree_still_imports(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "tree.jsonl", [run("a"), run("b", "a"), run("c", "b"),
                                           run("d", "a"), run("e", "elsewhere")])
    db = tmp_path / "x.db"
    assert cli(capsys, "import", "--db", str(db), str(path))[0] == 0
    assert run_ids(db) == ["a", "b", "c", "d", "e"]


# -- readers stop at a run already met ---------------------------------------------------------
@pytest.fixture
def cyclic_db(tmp_path: Path) -> Path:
    """a under b under a, and s its own parent, written past ``import`` (by SQL)."""
    db = tmp_path / "c.db"
    import_rows([run("a"), event("a"), run("b", start=1.5), event("b"), run("s"), event("s")],
                db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET parent_id = 'b' WHERE id = 'a'")
        conn.execute("UPDATE runs SET parent_id = 'a' WHERE id = 'b'")
        conn.execute("UPDATE runs SET parent_id = 's' WHERE id = 's'")
    conn.close()
    return db


def test_export_walks_each_run_of_a_cycle_once(cyclic_db: Path) -> None:
    with TraceDB(cyclic_db) as db:
        assert run_tree(db, "a") == ["a", "b"]
        assert run_tree(db, "s") == ["s"]
        assert db.run("s").children == []
        assert [c.id for c in db.run("a").children] == ["b"]


@pytest.mark.parametrize("rid", ["a", "s"])
def test_export_and_html_finish(cyclic_db: Path, tmp_path: Path, capsys, rid: str) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / f"{rid}.jsonl"
    assert cli(capsys, "export", rid, "--db", str(cyclic_db), "-o", str(out)) == (
        0, f"{out}\n", "")
    tables = [json.loads(line).get("table") for line in out.read_text().splitlines()]
    assert tables == ([None, "runs", "events", "runs", "events"] if rid == "a"
                      else [None, "runs", "events"])
    html = tmp_path / f"{rid}.html"
    assert cli(capsys, "export", rid, "--db", str(cyclic_db), "--html", str(html)) == (
        0, f"{html}\n", "")
    assert html.stat().st_size > 1000


def test_diff_finishes(cyclic_db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(capsys, "diff", "a", "b", "--db", str(cyclic_db))
    assert (code, err) == (0, "")
    # a's subagent b is paired with b's subagent a; below them, nothing again
    assert out.endswith("subagent #1 run b: identical (b / a)\n"), out
    code, out, err = cli(capsys, "diff", "s", "s", "--db", str(cyclic_db))
    assert (code, err) == (0, "") and "subagent" not in out


def test_the_runs_table_shows_every_run_once(cyclic_db: Path) -> None:
    from app.screens.runs.runs_table import nested

    with TraceDB(cyclic_db) as db:
        runs = list(db.runs())
    # (were left out: each run of the cycle sat under another one, none at the top)
    # b started last (the newest first): a under it, once; s at the top
    assert [(r.id, depth) for r, depth in nested(runs)] == [("b", 0), ("a", 1), ("s", 0)]


# -- MCP and the app, over the same database -------------------------------------------------
def test_mcp_export_html_and_diff_runs_finish(cyclic_db: Path, tmp_path: Path) -> None:
    from tracer.mcp.server import build_server

    server = build_server(cyclic_db, export_dir=str(tmp_path))
    got = str(asyncio.run(server.call_tool("export_html", {"run": "a"})))
    assert (tmp_path / "looptrace-a.html").exists() and "looptrace-a.html" in got
    got = str(asyncio.run(server.call_tool("diff_runs", {"run_a": "a", "run_b": "b"})))
    assert "subagent #1 run b: identical (b / a)" in got


@pytest.mark.usefixtures("clean_streamlit_caches")
@pytest.mark.parametrize("rid", ["a", "b", "s"])
def test_the_app_offers_no_run_above_as_a_subagent(cyclic_db: Path, monkeypatch,  # type: ignore[no-untyped-def]
                                                   rid: str) -> None:
    """a's subagent b is also its parent (and s its own): the header offers the way back
    to the parent, and no "open subagent" into a run above (was: a button into it)."""
    from app_kit import app_test

    monkeypatch.setenv("LOOPTRACE_DB", str(cyclic_db))
    at = app_test("replay", run=rid).run()
    assert not at.exception and not at.error
    keys = {b.key for b in at.button}
    assert "to_parent" in keys
    assert not any(k and k.startswith("open_child_") for k in keys), keys
