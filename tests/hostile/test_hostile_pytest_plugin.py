"""``pytest --looptrace=DB`` with a ``DB`` it cannot record into (issue 36, item 10): a
file that is not SQLite printed 44 lines of INTERNALERROR and ran no test. It is now one
line, as the command line says it, and pytest's usage-error exit (4). Inner sessions are
real pytest sessions in this process (pytester), as in tests/testing/test_pytest_plugin.py."""

from __future__ import annotations

import sqlite3

import pytest
from pytester_kit import run_inline

pytest_plugins = ["pytester"]


def _run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    p.makepyfile(test_one="def test_one():\n    assert True\n")
    return run_inline(p, *args)


def _one_error_line(res: pytest.RunResult) -> str:
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    text = "\n".join(res.outlines + res.errlines)
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    return lines[0]


def test_a_file_that_is_not_sqlite_is_one_line(pytester: pytest.Pytester) -> None:
    db = pytester.path / "notes.db"
    db.write_text("my notes, not a database\n" * 100)
    line = _one_error_line(_run(pytester, f"--looptrace={db.name}"))
    assert line == (f"ERROR: looptrace: --looptrace=notes.db: {db} is not a SQLite database "
                    "(file is not a database)")
    assert db.read_text() == "my notes, not a database\n" * 100  # untouched


def test_someone_elses_database_is_one_line(pytester: pytest.Pytester) -> None:
    db = pytester.path / "theirs.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE accounts (id INTEGER)")
    conn.commit()
    conn.close()
    line = _one_error_line(_run(pytester, "--looptrace=theirs.db"))
    assert line == (f"ERROR: looptrace: --looptrace=theirs.db: {db} is a SQLite database but "
                    "not a looptrace one (no meta table)")


def test_a_folder_that_is_a_file_is_one_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "afile").write_text("x")
    line = _one_error_line(_run(pytester, "--looptrace=afile/t.db"))
    assert line.startswith("ERROR: looptrace: --looptrace=afile/t.db: ")


def test_a_good_database_still_records(pytester: pytest.Pytester) -> None:
    _run(pytester, "--looptrace=t.db").assert_outcomes(passed=1)
    assert (pytester.path / "t.db").exists()
