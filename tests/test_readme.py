"""The README's claims are tested: the hooks table, the CLI table, the quick start."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tracer.cli import COMMANDS, main
from tracer.hooks import HOOKS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_hooks_table_matches_hooks() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (node|wrap) \| (.+) \|$", README, re.MULTILINE)
    assert [(h.name, h.kind, h.purpose) for h in HOOKS] == rows


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_cli_command_is_documented(command: str) -> None:
    assert f"`looptrace {command}" in README


def test_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = README.split("### `create_agent`", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README quick start", "exec"), {})  # noqa: S102
    conn = sqlite3.connect(tmp_path / "looptrace.db")
    (status, laps), = conn.execute(
        "SELECT status, (SELECT MAX(lap) FROM events) FROM runs").fetchall()
    assert (status, laps) == ("completed", 2)
    assert main(["runs", "--db", str(tmp_path / "looptrace.db")]) == 0
