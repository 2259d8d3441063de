"""``looptrace ui``: open the replay app (Streamlit) on a database or the sample traces."""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path

from tracer.cli import PORT_MAX, add_prices, int_range, use_prices
from tracer.db.url import DB_ENV, absolute
from tracer.errors import UsageError
from tracer.read.loader import TraceDB
from tracer.vocab.terminal import safe_text

ENV = "LOOPTRACE_TOKEN"  # (app/kit/access.py reads it: the password reaches the server there,
# in its environment, which only its user can read, never in its command line)
PASSWORD_ENV = "LOOPTRACE_PASSWORD"  # a password chosen without the command line
LINK_ENV = "LOOPTRACE_UI_LINK"  # (app/serve.py prints it when the server listens)

# The replay app's entry script: package data in an installed looptrace (the wheel holds
# app/ as tracer/_app/), the repository's app/ in a checkout.
_PACKAGE = Path(__file__).resolve().parents[1]
APP = (_PACKAGE / "_app" / "main.py" if (_PACKAGE / "_app").is_dir()
       else _PACKAGE.parent / "app" / "main.py")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("ui", help="open the replay app")
    p.add_argument("--db", help="database to open (default: $LOOPTRACE_DB when set, else "
                                "the bundled sample traces)")
    p.add_argument("--port", type=int_range(1, PORT_MAX), default=8501)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only); any "
                        "other needs a password or --token")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--password-file", metavar="PATH",
                   help="every browser session must give the password in this file (its "
                        "first line; the page asks, or ?token=); or set $LOOPTRACE_PASSWORD")
    g.add_argument("--ask-password", action="store_true",
                   help="ask for the password on the terminal")
    g.add_argument("--token", action="store_true",
                   help="make a random password and print the link that carries it")
    g.add_argument("--password", metavar="SECRET",
                   help="the password itself: every local user can read it in the process "
                        "list (ps); prefer --password-file, $LOOPTRACE_PASSWORD or "
                        "--ask-password")
    p.add_argument("--agent", metavar="MODULE:FACTORY",
                   help="the agent of the runs, so that \"Fork here\" runs forks "
                        "(see looptrace rerun)")
    add_prices(p)
    p.set_defaults(func=run)


WARNING = ("traces hold whole conversations (prompts, answers, tool results) and the "
           "database's path")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # (a name: it may resolve to anything)


def password(args: argparse.Namespace) -> tuple[str | None, str]:
    """The password chosen, and where it came from: ``--password``, ``--password-file``
    (its first line), ``--ask-password`` (the terminal), else ``$LOOPTRACE_PASSWORD``;
    None if none was. Never from a command line the child process shows."""
    if getattr(args, "password_file", None):
        try:
            text = Path(args.password_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            msg = f"--password-file: cannot read {args.password_file} ({exc})"
            raise UsageError(msg) from exc
        if Path(args.password_file).stat().st_mode & 0o077:
            print(safe_text(f"warning: {args.password_file} can be read by other users "
                            f"(chmod 600 {args.password_file})"), file=sys.stderr, flush=True)
        lines = text.splitlines()
        return (lines[0] if lines else ""), "--password-file"
    if getattr(args, "ask_password", False):
        import getpass

        try:
            return getpass.getpass("looptrace ui password: "), "--ask-password"
        except EOFError as exc:
            msg = "--ask-password: no terminal to ask on (use --password-file)"
            raise UsageError(msg) from exc
    if args.password is not None:
        return args.password, "--password"
    if PASSWORD_ENV in os.environ:
        return os.environ[PASSWORD_ENV], f"${PASSWORD_ENV}"
    return None, ""


def access(args: argparse.Namespace) -> str | None:
    """The token every session must give, or None (loopback, no password); refuse a
    non-loopback address without one."""
    if args.token:
        return secrets.token_urlsafe(24)
    token, source = password(args)
    if token is not None and not token.strip():
        msg = f"{source}: give a non-empty password"
        raise UsageError(msg)
    if token is None and not is_loopback(args.host):
        msg = (f"refusing to listen on {args.host} without a password (--password-file, "
               f"${PASSWORD_ENV}, --ask-password, --password) or --token: {WARNING}, "
               "and Streamlit asks for no password of its own")
        raise UsageError(msg)
    if source == "--password":
        print("warning: --password is visible to every user of this machine in the process "
              f"list (ps, /proc/PID/cmdline): prefer --password-file, ${PASSWORD_ENV} or "
              "--ask-password", file=sys.stderr, flush=True)
    return token


def run(args: argparse.Namespace) -> int:
    use_prices(args)  # (the app, a child, finds the file in $LOOPTRACE_PRICES)
    env = dict(os.environ)
    if getattr(args, "agent", None):
        env["LOOPTRACE_AGENT"] = args.agent  # (the app's AGENT_ENV: app/data/forks.py)
    env.pop(ENV, None)
    env.pop(LINK_ENV, None)
    env.pop(PASSWORD_ENV, None)
    token = access(args)
    if token is not None:
        env[ENV] = token
        where = "localhost" if args.host in ("0.0.0.0", "::") else args.host
        link = f"http://{where}:{args.port}/?token={token}" if args.token else (
            f"http://{where}:{args.port}/ (the page asks for the password)")
        print(safe_text(f"warning: {WARNING}; anyone with the password sees them all, and "
                        "plain HTTP carries them in clear text (use an SSH tunnel or "
                        "--server.sslCertFile on an untrusted network)"),
              file=sys.stderr, flush=True)
        # (the server prints the link once it is warmed up and listening: app/serve.py)
        env[LINK_ENV] = safe_text(f"looptrace ui: {link}")
    db = args.db or env.get(DB_ENV)  # (neither: the app opens the bundled samples)
    if db:
        TraceDB(db).close()  # fail here, clearly, for a bad file
        env[DB_ENV] = absolute(db)
    from tracer.db import pool

    env[pool.ENV] = "1"  # (a PostgreSQL store: the app's connections from a pool)
    # (app/serve.py is ``streamlit run main.py`` with what the first page needs imported
    # before the server waits for a browser: the first visit is as fast as the next)
    cmd = [sys.executable, str(APP.parent / "serve.py"), "--server.address", args.host,
           "--server.port", str(args.port), "--browser.gatherUsageStats", "false"]
    return serve(cmd, env)


def serve(cmd: list[str], env: dict[str, str]) -> int:
    """Run the app's server as a child and wait for it. A SIGTERM or SIGHUP sent to
    ``looptrace ui`` (a service manager, a closed terminal) is passed on, so the
    server stops with it instead of being left running; Ctrl-C reaches both."""
    proc = subprocess.Popen(cmd, env=env)

    def forward(signum: int, _frame: object) -> None:
        proc.send_signal(signum)

    kept = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:  # the server got the same Ctrl-C: wait for it to stop
                continue
    finally:
        for s, handler in kept.items():
            signal.signal(s, handler)
