"""``looptrace run [--db F] [--wire] -- COMMAND ...``: run a command with tracing on,
no code change (``tracer.record.autotrace`` through LangChain's configure hook).

The child gets ``LOOPTRACE_DB`` and, first on ``PYTHONPATH``, a folder whose
``sitecustomize`` installs the hook before the user's code (and then loads any
``sitecustomize`` of the user's). With ``--wire`` a recording proxy per provider is
started too, and the SDKs' endpoint variables point at it (``OPENAI_BASE_URL``,
``ANTHROPIC_BASE_URL``, ``OLLAMA_HOST``); each forwards to what the variable said
before (or the provider's public API). The command's output is not touched (this
command prints nothing of its own unless something fails) and its exit status is
``looptrace run``'s. SIGTERM, SIGHUP and a SIGINT that did not come from the terminal
(whose Ctrl-C reaches the command directly) are passed on to it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tracer.db.url import absolute
from tracer.errors import UsageError

from . import DEFAULT_DB

BOOT_DIR = Path(__file__).resolve().parent.parent / "record" / "_autotrace"

# provider -> (the variable its SDK reads, the path the SDK puts after it)
ENDPOINT_VARS: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_BASE_URL", "/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", ""),
    "ollama": ("OLLAMA_HOST", ""),
}


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "run", help="run a command with every LangChain/LangGraph run in it traced",
        description=(
            "Run COMMAND with tracing on, no code change: every LangChain and LangGraph run "
            "in it (and in its child processes) is recorded through LangChain's configure "
            "hook, with the callback handler. An agent with its own TraceMiddleware still "
            "works; one run is never recorded twice. The command's output and exit status "
            "are its own. Example: looptrace run -- python my_agent.py"))
    p.add_argument("--db", default=DEFAULT_DB, help="trace database")
    p.add_argument("--wire", action="store_true",
                   help="also record the provider HTTP traffic: start a recording proxy per "
                        "provider and point OPENAI_BASE_URL, ANTHROPIC_BASE_URL and "
                        "OLLAMA_HOST at it (forwarding to what they said before)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the command to run")
    p.set_defaults(func=run)


def child_env(db: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment that turns tracing on in a Python child process."""
    env = dict(os.environ if environ is None else environ)
    env["LOOPTRACE_DB"] = absolute(db)
    env.setdefault("LOOPTRACE_HOW", "looptrace run")
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join([str(BOOT_DIR), *([old] if old else [])])
    return env


def upstream_of(provider: str, value: str | None) -> str | None:
    """The upstream a proxy forwards to, from what the SDK's variable said (None: the
    provider's public API). OpenAI's base URL ends in ``/v1``, which the SDK's requests
    carry again: the proxy is given the part before it."""
    if not value:
        return None
    url = value.strip().rstrip("/")
    if "://" not in url:  # (OLLAMA_HOST may be host:port)
        url = "http://" + url
    suffix = ENDPOINT_VARS[provider][1]
    if suffix and url.endswith(suffix):
        url = url[: -len(suffix)]
    return url


def run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        msg = "no command given (looptrace run [--db F] [--wire] -- COMMAND ...)"
        raise UsageError(msg)
    check_db_file(args.db)
    env = child_env(args.db)
    proxies: list[Any] = []
    try:
        if args.wire:
            proxies = _start_proxies(args.db, env)
        return _run_child(cmd, env)
    finally:
        for srv in proxies:  # (each writes what it holds: exchanges no run claims become runs)
            srv.stop()


def check_db_file(db: str) -> None:
    """Fail here, in one line, on a file that is not ours (the child would only warn)."""
    from tracer.db.schema import connect

    conn = connect(db, verify=True)
    conn.close()


def _start_proxies(db: str, env: dict[str, str]) -> list[Any]:
    from tracer.wire.proxy import WireServer

    out = []
    try:
        for provider, (var, suffix) in ENDPOINT_VARS.items():
            srv = WireServer(mode="forward", provider=provider,
                             upstream=upstream_of(provider, env.get(var)), db=db).start()
            out.append(srv)
            env[var] = srv.url + suffix
    except Exception:
        for srv in out:
            srv.stop()
        raise
    return out


def _at_the_terminal() -> bool:
    """Whether this process runs in the foreground of a terminal (whose Ctrl-C reaches
    every process of the foreground group, the command included)."""
    try:
        return os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()
    except (OSError, ValueError, AttributeError):
        return False


def _run_child(cmd: list[str], env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(cmd, env=env)
    except OSError as exc:
        msg = f"cannot run {cmd[0]!r}: {exc.strerror or exc}"
        raise UsageError(msg) from None

    def forward(signum: int, frame: object) -> None:
        if signum == signal.SIGINT and _at_the_terminal():
            return  # (Ctrl-C: the terminal sent it to the command as well, once is enough)
        if child.poll() is None:
            child.send_signal(signum)

    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            old[sig] = signal.signal(sig, forward)
        except (ValueError, OSError):  # (not the main thread)
            pass
    try:
        code = child.wait()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if code < 0:  # killed by a signal: the shell's convention
        return 128 - code
    return code

