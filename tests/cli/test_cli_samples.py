"""The bundled sample traces from the command line (issue 39, item 14): after
``looptrace ui``, the README's next commands name ``--db samples``, the app's own
database of them; a missing database's error says so."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest

from tracer.cli import main


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The samples' database is kept in this test's own temp dir. (SQLite only: the
    bundled samples' file, and the default file of the folder: no ``$LOOPTRACE_DB``.)"""
    monkeypatch.delenv("LOOPTRACE_DB", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_db_samples_is_the_bundled_sample_traces(own_tmp: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--db", "samples", "--json"]) == 0
    built = next(own_tmp.glob("looptrace-*/samples.db"))
    want = {r[0] for r in sqlite3.connect(built).execute(
        "SELECT name FROM runs WHERE parent_id IS NULL")}
    assert {"weather", "footgun-no-bound", "anthropic-shopping"} <= want
    out = capsys.readouterr().out
    assert '"weather"' in out
    assert main(["show", "weather", "--db", "samples"]) == 0
    assert capsys.readouterr().out.splitlines()[3] == "  asked: What's the weather in Oslo?"
    assert main(["check", "weather", "--db", "samples"]) == 0


def test_a_file_named_samples_is_that_file(own_tmp: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (own_tmp / "samples").write_bytes(b"not a database")
    assert main(["runs", "--db", "samples"]) == 1
    assert "samples" in capsys.readouterr().err
    assert not list(own_tmp.glob("looptrace-*/samples.db"))


def test_no_such_database_names_the_samples(own_tmp: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "weather"]) == 1
    assert capsys.readouterr().err == (
        "looptrace show: looptrace.db: no such database "
        "(the bundled sample traces: --db samples)\n")
