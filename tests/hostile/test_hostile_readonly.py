"""Reading commands on a read-only filesystem: ``runs``, ``check``, ``diff``, ``export``
(trace file and HTML), ``ui`` and the app's pages read a WAL-mode database on a tmpfs
remounted read-only (root's writes fail there too, with EROFS: file permissions would
not stop root). SQLite cannot make the ``-shm`` file such a file needs, so the file is
opened ``?mode=ro&immutable=1`` there (``tracer.db.schema.readonly_uri``). On the main
branch before issue 21 each of these failed with "unable to open database file"."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from app_kit import app_test, runs_grid
from hostile_kit import read_only, tmpfs

from tracer.cli import main
from tracer.interop.exchange import build_sample_db, read_trace, sample_files

WEATHER = next(p for p in sample_files() if p.stem == "weather")


@pytest.fixture(scope="module")
def ro_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    base = tmp_path_factory.mktemp("ro")
    with tmpfs(base / "mnt", "32m") as where:
        db = build_sample_db(where / "s.db")
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode = WAL")  # (as the tracer writes it)
        conn.close()
        read_only(where)
        with pytest.raises(OSError):
            (where / "probe").write_text("x")
        yield db


def test_runs_check_diff_export_read_a_read_only_filesystem(ro_db: Path, tmp_path: Path,
                                                           capsys) -> None:  # type: ignore[no-untyped-def]
    root = str(read_trace(WEATHER)[0]["root"])
    assert main(["runs", "--db", str(ro_db), "--name", "weather"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and root[:12] in out
    assert main(["check", "--db", str(ro_db), root]) in (0, 1)
    out, err = capsys.readouterr()
    assert err == "" and out.startswith(f"run {root[:12]} weather: ")
    assert main(["diff", root, root, "--db", str(ro_db)]) == 0
    assert "identical" in capsys.readouterr().out
    assert main(["export", root, "--db", str(ro_db), "-o", str(tmp_path / "w.jsonl")]) == 0
    assert read_trace(tmp_path / "w.jsonl")[1] == read_trace(WEATHER)[1]
    assert main(["export", root, "--db", str(ro_db), "--html", str(tmp_path / "w.html")]) == 0
    assert (tmp_path / "w.html").stat().st_size > 10_000


def test_ui_and_the_app_read_it(ro_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.cli import ui

    monkeypatch.setattr(ui, "serve", lambda cmd, env: 0)
    assert main(["ui", "--db", str(ro_db)]) == 0  # (its check of the file passes)
    monkeypatch.setenv("LOOPTRACE_DB", str(ro_db))
    at = app_test("runs").run()
    assert not at.exception and runs_grid(at) is not None


def test_a_write_still_fails_cleanly(ro_db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["import", "--db", str(ro_db), str(WEATHER)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("looptrace import: ") and err.count("\n") == 1
