"""``looptrace check``: its output, --json, --provider, and its exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tracer.cli import main
from tracer.read.loader import TraceDB

ROOT = Path(__file__).resolve().parents[2]


def _id(db: Path, name: str) -> str:
    with TraceDB(db) as tdb:
        return next(r.id for r in tdb.runs() if r.name == name)


def test_errors_exit_1_with_readable_output(sample_store: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["check", "--db", str(sample_store)]) == 1
    out = capsys.readouterr().out
    assert "ERROR   loop-bound-hit [all]" in out
    assert "WARNING repeated-tool-call [all]" in out
    # by hand: hand-rolled-loop 1 (loop-bound-hit) and repeated-tool 1 (loop-bound-hit);
    # the footguns: no-bound 1 (runaway-loop), wrong-id 6 (two orphans and one dangling
    # call, each for OpenAI and Anthropic), swallowed-error 1, sdk-loop-missing-result 2
    # (the dangling call, for OpenAI and Anthropic)
    assert "run(s) checked: 12 error(s)" in out


def test_clean_run_exits_0(sample_store: str, capsys) -> None:  # type: ignore[no-untyped-def]
    rid = _id(sample_store, "weather")
    assert main(["check", "--db", str(sample_store), rid[:12]]) == 0
    assert f"run {rid[:12]} weather: ok" in capsys.readouterr().out


def test_the_list_names_each_run(sample_store: str, capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 47, in the way 7 (issue 44, item 10): ``check`` listed runs by id alone
    ("run 6b11824db415: 6 errors")."""
    rid = _id(sample_store, "footgun-wrong-id")
    main(["check", "--db", str(sample_store)])
    lines = capsys.readouterr().out.splitlines()
    assert f"run {rid[:12]} footgun-wrong-id: 6 errors, 3 warnings" in lines
    assert f"run {_id(sample_store, 'weather')[:12]} weather: ok" in lines


def test_warnings_alone_exit_0(sample_store: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["check", "--db", str(sample_store), _id(sample_store, "ollama-shopping")]) == 0
    assert "2 warnings" in capsys.readouterr().out  # the unknown tool, Ollama's ids


def test_json_and_provider_filter(sample_store: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["check", "--db", str(sample_store), "--json", "--provider", "openai"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and data
    assert set(data[0]) == {"rule", "severity", "provider", "message", "run_id", "seq",
                            "step", "message_keys"}
    assert {d["provider"] for d in data} <= {"openai", None}
    assert {"loop-bound-hit", "repeated-tool-call", "unknown-tool"} <= {d["rule"] for d in data}


def test_bad_database_is_one_line_exit_1(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """SQLite only: a file that is not a database, and no file."""
    bad = tmp_path / "notes.db"
    bad.write_text("not a database at all " * 100)
    assert main(["check", "--db", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("looptrace check: ") and "\n" not in err
    assert main(["check", "--db", str(tmp_path / "missing.db")]) == 1
    assert "no such database" in capsys.readouterr().err


def test_unknown_run_exit_1(sample_store: str, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["check", "--db", str(sample_store), "nosuchrun"]) == 1
    assert "no run 'nosuchrun'" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
def test_uv_run_looptrace_check(sample_db: Path) -> None:
    """(SQLite only: the command as a user types it, in a process of its own.)"""
    proc = subprocess.run(["uv", "run", "looptrace", "check", "--db", str(sample_db), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    rules = {d["rule"] for d in json.loads(proc.stdout)}
    assert {"loop-bound-hit", "repeated-tool-call"} <= rules


def test_check_says_the_step_show_and_the_app_say(sample_store: str, capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 39, item 8: one numbering. ``check`` said "at seq 10" where ``show``, the
    app and MCP said "step 11" for the same finding."""
    rid = _id(sample_store, "footgun-wrong-id")
    assert main(["check", "--db", str(sample_store), rid]) == 1
    out = capsys.readouterr().out
    assert "  ERROR   dangling-tool-call [openai] at step 8" in out.splitlines()
    assert " at seq " not in out
    assert main(["show", rid, "--db", str(sample_store)]) == 0
    assert "  ERROR   dangling-tool-call [openai] at step 8" in capsys.readouterr().out
