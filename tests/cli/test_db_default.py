"""``$LOOPTRACE_DB`` is every command's default store (issue 46): before, ``--db``
defaulted to ``looptrace.db`` whatever the environment said, so
``LOOPTRACE_DB=postgresql://... looptrace runs`` silently read the local file. On each
engine: ``$LOOPTRACE_DB`` names a store (another SQLite file, or a PostgreSQL URL) and
the current folder holds a ``looptrace.db`` with other runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from cli_kit import cli
from tracer.cli import main, ui
from tracer.interop.exchange import import_rows

SECRET = "s3cret-pw-7731"


def _runs(*names: str) -> list[tuple[str, dict[str, object]]]:
    return [("runs", {"id": f"run-{n}", "name": n, "status": "completed",
                      "started_at": float(i)}) for i, n in enumerate(names)]


@pytest.fixture
def two_stores(new_store: Callable[..., str], tmp_path: Path,
               monkeypatch: pytest.MonkeyPatch) -> str:
    """The store ``$LOOPTRACE_DB`` names (runs ``team-a``, ``team-b``), and a
    ``looptrace.db`` in the current folder (run ``local``); its name."""
    team = new_store("team.db")
    import_rows(_runs("team-a", "team-b"), team)
    monkeypatch.chdir(tmp_path)
    import_rows(_runs("local"), tmp_path / "looptrace.db")
    monkeypatch.setenv("LOOPTRACE_DB", team)
    return team


def test_runs_without_db_reads_looptrace_db(two_stores: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "runs", "--json")
    assert (code, err) == (0, "")
    assert [r["name"] for r in json.loads(out)] == ["team-b", "team-a"]
    code, out, _ = cli(capsys, "show", "team-a", "--json")
    assert code == 0 and json.loads(out)["run"]["id"] == "run-team-a"


def test_an_explicit_db_wins(two_stores: str, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "runs", "--json", "--db", "looptrace.db")
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["local"]
    code, out, _ = cli(capsys, "runs", "--json", "--db", str(tmp_path / "looptrace.db"))
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["local"]


def test_without_looptrace_db_the_folders_file(two_stores: str,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("LOOPTRACE_DB")
    code, out, _ = cli(capsys, "runs", "--json")
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["local"]
    monkeypatch.setenv("LOOPTRACE_DB", "")  # (set but empty: not a store)
    code, out, _ = cli(capsys, "runs", "--json")
    assert code == 0 and [r["name"] for r in json.loads(out)] == ["local"]


def test_a_command_that_writes_writes_there(two_stores: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "one.jsonl"
    assert main(["export", "run-local", "--db", "looptrace.db", "-o", str(trace)]) == 0
    code, out, _ = cli(capsys, "import", str(trace))
    assert code == 0 and out.startswith("imported 1 run into ")
    code, out, _ = cli(capsys, "runs", "--json")
    assert [r["name"] for r in json.loads(out)] == ["team-b", "team-a", "local"]


def test_the_help_says_the_variable_never_its_value(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LOOPTRACE_DB", f"postgresql://looptrace:{SECRET}@db.internal/looptrace")
    for command in ("runs", "show", "check", "prune", "mcp", "collect", "ui"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        assert "$LOOPTRACE_DB" in " ".join(out.split()), command
        assert SECRET not in out and "db.internal" not in out, command


@pytest.mark.parametrize("engine", ["postgresql"], indirect=True)
def test_a_password_in_the_url_is_never_shown(two_stores: str, engine: str,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """The test cluster trusts its users: the password is taken and not needed."""
    parts = urlsplit(two_stores)
    with_pw = urlunsplit(parts._replace(netloc=f"postgres:{SECRET}@{parts.hostname}:{parts.port}"))
    monkeypatch.setenv("LOOPTRACE_DB", with_pw)
    code, out, err = cli(capsys, "runs")
    assert code == 0 and "team-a" in out and SECRET not in out + err
    code, out, err = cli(capsys, "show", "no-such-run")
    assert code == 1 and err.startswith("looptrace show: no run 'no-such-run' in postgresql://")
    assert "postgres:****@" in err and SECRET not in out + err


def test_ui_opens_looptrace_db_and_passes_it_on(two_stores: str,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[dict[str, str]] = []
    monkeypatch.setattr(ui, "serve", lambda cmd, env: seen.append(env) or 0)
    assert main(["ui"]) == 0
    assert seen[-1]["LOOPTRACE_DB"] == two_stores  # (an absolute path, or the URL)
    assert main(["ui", "--db", "looptrace.db"]) == 0  # (--db wins, made absolute)
    assert seen[-1]["LOOPTRACE_DB"] == str(Path("looptrace.db").resolve())
    # a relative path is the folder's, made absolute for the app (it was passed as it was)
    monkeypatch.setenv("LOOPTRACE_DB", "looptrace.db")
    assert main(["ui"]) == 0
    assert seen[-1]["LOOPTRACE_DB"] == str(Path("looptrace.db").resolve())
    # a store that is not looptrace's is one line before any server (it was started)
    Path("junk.db").write_bytes(b"not a database" * 100)
    monkeypatch.setenv("LOOPTRACE_DB", "junk.db")
    code, out, err = cli(capsys, "ui")
    assert (code, out, len(seen)) == (1, "", 3)
    assert err.startswith("looptrace ui: junk.db ") and err.count("\n") == 1
