"""``looptrace ui --host``: a non-loopback address needs ``--password`` or ``--token``,
and then every page asks for it (``app/kit/access.py``). On the main branch before issue
21, ``--host 0.0.0.0`` served every run to the network with no question asked."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from app_kit import app_test, runs_grid

from tracer.cli import main

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_lan_address_without_password_is_refused_before_listening() -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tracer.cli", "ui", "--host", "0.0.0.0",
                             "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)
        pytest.fail("looptrace ui --host 0.0.0.0 started serving without a password")
    assert proc.returncode == 1 and out == ""
    assert err.startswith("looptrace ui: refusing to listen on 0.0.0.0 without a password "
                          "(--password-file, $LOOPTRACE_PASSWORD, --ask-password, --password) "
                          "or --token: traces hold whole conversations")
    assert err.count("\n") == 1


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_password(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.cli import ui

    seen: list[dict[str, str]] = []
    monkeypatch.setenv("LOOPTRACE_TOKEN", "left-over")  # (not passed on by accident)
    monkeypatch.setattr(ui, "serve", lambda cmd, env: seen.append(env) or 0)
    assert main(["ui", "--host", host]) == 0
    assert "LOOPTRACE_TOKEN" not in seen[0]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.org"])
def test_password_and_token_are_passed_to_the_app(host: str, monkeypatch: pytest.MonkeyPatch,
                                                  capsys) -> None:  # type: ignore[no-untyped-def]
    from tracer.cli import ui

    seen: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(ui, "serve", lambda cmd, env: seen.append((cmd, env)) or 0)
    assert main(["ui", "--host", host, "--password", "s3cret"]) == 0
    cmd, env = seen[-1]
    assert env["LOOPTRACE_TOKEN"] == "s3cret"
    assert cmd[cmd.index("--server.address") + 1] == host
    err = capsys.readouterr().err
    assert "warning: traces hold whole conversations" in err and "s3cret" not in err
    assert main(["ui", "--host", host, "--token", "--port", "9000"]) == 0
    token = seen[-1][1]["LOOPTRACE_TOKEN"]
    assert len(token) >= 32
    # (the link is the server's to print, once warmed up and listening: tests/cli/test_ui_ready.py)
    assert seen[-1][1]["LOOPTRACE_UI_LINK"].endswith(f":9000/?token={token}")
    assert token not in capsys.readouterr().err
    assert main(["ui", "--host", host, "--password", ""]) == 1


def test_every_page_asks_for_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPTRACE_TOKEN", "s3cret")
    for page in ("runs", "replay", "wire"):
        at = app_test(page).run()
        assert not at.exception
        assert [t.label for t in at.text_input] == ["Password"]
        assert not at.dataframe and not at.get("bidi_component")
        assert at.title[0].value == "looptrace"
    wrong = app_test("runs", token="guess").run()
    assert [t.label for t in wrong.text_input] == ["Password"] and runs_grid(wrong) is None
    right = app_test("runs", token="s3cret").run()
    assert not right.exception and runs_grid(right) is not None  # the runs table
    typed = app_test("runs").run()
    typed.text_input(key="lt_access_password").input("nope").run()
    assert typed.error[0].value == "Wrong password." and runs_grid(typed) is None
    typed.text_input(key="lt_access_password").input("s3cret").run()
    assert runs_grid(typed) is not None
    assert "Password" not in [t.label for t in typed.text_input]


# -- issue 36, round two: where the password comes from (the server side is in
# test_hostile_ui_server.py) --------------------------------------------------------------

def test_the_password_from_a_file_the_environment_or_the_terminal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """Before: only ``--password SECRET``, which every local user reads in the process list."""
    import getpass

    from tracer.cli import ui

    seen: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(ui, "serve", lambda cmd, env: seen.append((cmd, env)) or 0)
    monkeypatch.delenv("LOOPTRACE_PASSWORD", raising=False)
    secret = tmp_path / "pw"
    secret.write_text("from the file\nsecond line\n")
    secret.chmod(0o600)
    assert main(["ui", "--host", "0.0.0.0", "--password-file", str(secret)]) == 0
    assert seen[-1][1]["LOOPTRACE_TOKEN"] == "from the file"
    assert all("from the file" not in a for a in seen[-1][0])
    assert capsys.readouterr().err.count("warning: ") == 1  # (the traces one only)
    secret.chmod(0o644)
    assert main(["ui", "--password-file", str(secret)]) == 0
    assert f"warning: {secret} can be read by other users (chmod 600 {secret})" in (
        capsys.readouterr().err)
    secret.chmod(0o600)
    for text in ("", "\n", "  \nsecond\n"):
        secret.write_text(text)
        assert main(["ui", "--host", "0.0.0.0", "--password-file", str(secret)]) == 1
        assert capsys.readouterr().err == ("looptrace ui: --password-file: give a non-empty "
                                           "password\n")
    assert main(["ui", "--password-file", str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err.startswith(
        f"looptrace ui: --password-file: cannot read {tmp_path / 'missing'} (")

    monkeypatch.setenv("LOOPTRACE_PASSWORD", "from the env")
    assert main(["ui", "--host", "0.0.0.0"]) == 0
    assert seen[-1][1]["LOOPTRACE_TOKEN"] == "from the env"
    assert "LOOPTRACE_PASSWORD" not in seen[-1][1]
    assert main(["ui", "--password", "given"]) == 0  # (the flag wins over the environment)
    assert seen[-1][1]["LOOPTRACE_TOKEN"] == "given"
    assert ("warning: --password is visible to every user of this machine in the process list "
            "(ps, /proc/PID/cmdline)") in capsys.readouterr().err
    monkeypatch.setenv("LOOPTRACE_PASSWORD", "")
    assert main(["ui"]) == 1
    assert capsys.readouterr().err == ("looptrace ui: $LOOPTRACE_PASSWORD: give a non-empty "
                                       "password\n")
    monkeypatch.delenv("LOOPTRACE_PASSWORD")

    monkeypatch.setattr(getpass, "getpass", lambda prompt: "typed")
    assert main(["ui", "--host", "0.0.0.0", "--ask-password"]) == 0
    assert seen[-1][1]["LOOPTRACE_TOKEN"] == "typed"

    def no_terminal(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr(getpass, "getpass", no_terminal)
    assert main(["ui", "--ask-password"]) == 1
    assert capsys.readouterr().err.endswith("--ask-password: no terminal to ask on "
                                            "(use --password-file)\n")
    with pytest.raises(SystemExit):  # (one of them)
        main(["ui", "--password-file", str(secret), "--password", "x"])
