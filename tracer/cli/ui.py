"""``looptrace ui``: open the replay app (Streamlit) on a database or the sample traces."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

from ..loader import TraceDB

# The replay app's entry script: package data in an installed looptrace (the wheel holds
# app/ as tracer/_app/), the repository's app/ in a checkout.
_PACKAGE = Path(__file__).resolve().parents[1]
APP = (_PACKAGE / "_app" / "main.py" if (_PACKAGE / "_app").is_dir()
       else _PACKAGE.parent / "app" / "main.py")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("ui", help="open the replay app")
    p.add_argument("--db", help="database to open (default: the bundled sample traces)")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--agent", metavar="MODULE:FACTORY",
                   help="the agent of the runs, so that \"Fork here\" runs forks "
                        "(see looptrace replay)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if getattr(args, "agent", None):
        env["LOOPTRACE_AGENT"] = args.agent  # (tracer.fork_links.AGENT_ENV)
    if args.db:
        TraceDB(args.db).close()  # fail here, clearly, for a bad file
        env["LOOPTRACE_DB"] = str(Path(args.db).resolve())
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
