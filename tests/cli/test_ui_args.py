"""``looptrace ui``'s options, as far as the command line takes them: what the server (a
child process) is started with. The server itself is not started here: ``serve`` (the
process) is replaced by a list that keeps what it was given, so these tests are fast
enough for mutmut's selection. The server's side: ``tests/cli/test_ui_ready.py`` and
``tests/hostile/test_hostile_ui*.py``; the app's side of ``--agent``:
``tests/whatif/test_whatif_app.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tracer.cli import main, ui

WARNING = ("warning: traces hold whole conversations (prompts, answers, tool results) and the "
           "database's path; anyone with the password sees them all, and plain HTTP carries "
           "them in clear text (use an SSH tunnel or --server.sslCertFile on an untrusted "
           "network)\n")


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, str]]]:
    """What each ``looptrace ui`` would have started its server with; the variables the
    command reads or sets, cleared (and put back after the test)."""
    seen: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(ui, "serve", lambda cmd, env: seen.append((cmd, env)) or 0)
    for name in ("LOOPTRACE_TOKEN", "LOOPTRACE_PASSWORD", "LOOPTRACE_UI_LINK",
                 "LOOPTRACE_AGENT", "LOOPTRACE_DB", "LOOPTRACE_PRICES"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    return seen


def test_the_server_command_and_a_plain_start(served: list, capsys: pytest.CaptureFixture[str],
                                              ) -> None:
    assert main(["ui", "--port", "8600"]) == 0
    cmd, env = served[-1]
    assert cmd == [sys.executable, str(Path(ui.APP).parent / "serve.py"),
                   "--server.address", "127.0.0.1", "--server.port", "8600",
                   "--browser.gatherUsageStats", "false"]
    assert Path(cmd[1]).is_file()
    for name in ("LOOPTRACE_TOKEN", "LOOPTRACE_UI_LINK", "LOOPTRACE_AGENT", "LOOPTRACE_DB",
                 "LOOPTRACE_PRICES"):
        assert name not in env
    assert capsys.readouterr() == ("", "")  # (no password: no warning)


def test_agent_is_passed_to_the_app(served: list) -> None:
    """``--agent`` reaches the app as ``$LOOPTRACE_AGENT`` (``app.data.forks.AGENT_ENV``), so
    that "Fork here" runs forks; without it the variable is not set."""
    from app.data.forks import AGENT_ENV  # (the name the app reads)

    assert AGENT_ENV == "LOOPTRACE_AGENT"
    assert main(["ui", "--agent", "tests.whatif_kit:make_agent"]) == 0
    assert served[-1][1][AGENT_ENV] == "tests.whatif_kit:make_agent"
    assert main(["ui"]) == 0
    assert AGENT_ENV not in served[-1][1]


def test_secrets_left_in_the_environment_are_not_passed_on(
        served: list, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPTRACE_TOKEN", "left-over")
    monkeypatch.setenv("LOOPTRACE_UI_LINK", "looptrace ui: http://old/?token=left-over")
    assert main(["ui"]) == 0
    env = served[-1][1]
    assert "LOOPTRACE_TOKEN" not in env and "LOOPTRACE_UI_LINK" not in env
    monkeypatch.setenv("LOOPTRACE_PASSWORD", "from the env")
    assert main(["ui"]) == 0
    env = served[-1][1]
    assert env["LOOPTRACE_TOKEN"] == "from the env" and "LOOPTRACE_PASSWORD" not in env


@pytest.mark.parametrize(("host", "where"), [("0.0.0.0", "localhost"), ("::", "localhost"),
                                             ("192.168.1.20", "192.168.1.20")])
def test_token_link_and_password_link(host: str, where: str, served: list,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "--host", host, "--port", "8700", "--token"]) == 0
    cmd, env = served[-1]
    token = env["LOOPTRACE_TOKEN"]
    assert len(token) == 32  # (token_urlsafe(24): 24 bytes, 32 characters)
    assert env["LOOPTRACE_UI_LINK"] == f"looptrace ui: http://{where}:8700/?token={token}"
    assert cmd[cmd.index("--server.address") + 1] == host
    assert capsys.readouterr() == ("", WARNING)
    assert main(["ui", "--host", host, "--port", "8701", "--password", "s3cret"]) == 0
    env = served[-1][1]
    assert env["LOOPTRACE_TOKEN"] == "s3cret"
    assert env["LOOPTRACE_UI_LINK"] == (f"looptrace ui: http://{where}:8701/ (the page asks "
                                        "for the password)")
    assert capsys.readouterr() == ("", (
        "warning: --password is visible to every user of this machine in the process list "
        "(ps, /proc/PID/cmdline): prefer --password-file, $LOOPTRACE_PASSWORD or "
        "--ask-password\n" + WARNING))


def test_two_tokens_differ(served: list) -> None:
    assert main(["ui", "--token"]) == 0 and main(["ui", "--token"]) == 0
    assert served[0][1]["LOOPTRACE_TOKEN"] != served[1][1]["LOOPTRACE_TOKEN"]


def test_a_name_needs_a_password_and_localhost_does_not(
        served: list, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ui", "--host", "example.org"]) == 1 and not served
    assert capsys.readouterr().err.startswith("looptrace ui: refusing to listen on example.org "
                                              "without a password")
    for host in ("localhost", " LocalHost ", "127.0.0.9", "[::1]"):
        assert main(["ui", "--host", host]) == 0
        assert "LOOPTRACE_TOKEN" not in served[-1][1]


def test_db_is_checked_then_passed_by_its_full_path(
        served: list, sample_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite only: a file's relative path, and a file that is not a database."""
    monkeypatch.chdir(sample_db.parent)
    assert main(["ui", "--db", sample_db.name]) == 0
    assert served[-1][1]["LOOPTRACE_DB"] == str(sample_db.resolve())
    bad = tmp_path / "not-a-trace.db"
    bad.write_text("not SQLite at all\n" * 100)
    assert main(["ui", "--db", str(bad)]) == 1
    assert len(served) == 1  # (no server for a bad file)
    err = capsys.readouterr().err
    assert err.startswith("looptrace ui: ") and err.count("\n") == 1


def test_prices_file_is_read_first_and_named_for_the_app(
        served: list, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    f = tmp_path / "prices.toml"
    f.write_text('[models."scripted-weather"]\ninput_per_mtok = 1\noutput_per_mtok = 2\n')
    assert main(["ui", "--prices", str(f)]) == 0
    assert os.environ["LOOPTRACE_PRICES"] == str(f.resolve())
    assert served[-1][1]["LOOPTRACE_PRICES"] == str(f.resolve())
    f.write_text("[models.x]\ninput_per_mtok = 1\n")
    assert main(["ui", "--prices", str(f)]) == 1 and len(served) == 1
    assert capsys.readouterr().err == (f"looptrace ui: prices file {f}: models.x needs "
                                       "output_per_mtok (USD per million tokens)\n")
