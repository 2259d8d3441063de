"""``looptrace``: a thin command line over the Python API.

One module here per command (or per group of commands), each exposing
``register(sub)``: it adds its subparser, and its ``run`` opens the database,
calls one API function and prints the result. Only the module of the command
given is imported, so ``looptrace runs`` and ``looptrace check`` start without
LangChain. Errors are one clear line and a non-zero exit, never a traceback.

=========  ==========================  ==================================
command    module                      API
=========  ==========================  ==================================
runs       ``tracer.cli.runs``         ``TraceDB.runs`` (``RunFilter``)
check      ``tracer.cli.check``        ``tracer.checks.run.check_db``
diff       ``tracer.cli.diff``         ``tracer.read.diff.diff_tree``
rerun      ``tracer.cli.rerun``        ``tracer.whatif.rerun.rerun``
export     ``tracer.cli.exchange``     ``tracer.interop.exchange.export_run``,
                                       ``tracer.interop.html_export.export_html``,
                                       ``tracer.otel.export_otlp``
import     ``tracer.cli.exchange``     ``tracer.interop.exchange.import_many``,
                                       ``tracer.otel.import_otlp_file``
prune      ``tracer.cli.prune``        ``tracer.db.prune.prune``
demo       ``tracer.cli.demo``         ``tracer.demo.record.record_all``
ui         ``tracer.cli.ui``           the Streamlit app
proxy      ``tracer.cli.proxy``         ``tracer.wire.WireServer``
traffic    ``tracer.cli.proxy``         ``tracer.wire.traffic.build_runs``
collect    ``tracer.cli.collect``      ``tracer.otel.CollectServer``
run        ``tracer.cli.run``          ``tracer.record.autotrace`` (in the child)
show       ``tracer.cli.show``         ``tracer.interop.show``
mcp        ``tracer.cli.mcp``          ``tracer.mcp.server``
note       ``tracer.cli.note``         ``tracer.db.notes.add_note``, ``TraceDB.notes``
threads    ``tracer.cli.threads``      ``tracer.read.threads``
=========  ==========================  ==================================
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from tracer.errors import LooptraceError
from tracer.vocab.terminal import safe_text

__all__ = ["COMMANDS", "DB_DEFAULT_HELP", "DEFAULT_DB", "RENAMED", "SAMPLES", "add_prices", "build_parser", "int_range", "main",
           "read_db", "serve", "stop_on_sigterm", "use_prices"]

class _DefaultDb(str):
    """The ``--db`` default as argparse holds it (``looptrace.db``, what the reference
    shows): marked, so that ``main`` tells it from a ``--db looptrace.db`` typed, and
    puts ``$LOOPTRACE_DB`` in its place when set (``tracer.db.url.default_db``)."""

    __slots__ = ()


DEFAULT_DB = _DefaultDb("looptrace.db")
DB_DEFAULT_HELP = "(default: $LOOPTRACE_DB when set, else looptrace.db)"
SAMPLES = "samples"  # what ``--db`` takes for the bundled sample traces


def read_db(arg: str) -> str:
    """The ``--db`` of a command that reads (its argparse ``type``): ``samples`` (when no
    file of that name is in the folder) is the database of the bundled sample traces,
    the app's, built or brought up to date first; anything else is the path given."""
    if arg != SAMPLES or Path(arg).exists():
        return arg
    from tracer.interop.exchange import build_sample_db, sample_db_path

    return str(build_sample_db(sample_db_path()))

def add_prices(p: argparse.ArgumentParser) -> None:
    """The ``--prices`` option of a command that shows costs."""
    p.add_argument("--prices", metavar="PRICES.toml",
                   help="your own prices, over genai-prices' (USD per million tokens; "
                        "default: $LOOPTRACE_PRICES; docs/guide/cost.md)")


def use_prices(args: argparse.Namespace) -> None:
    """Read the ``--prices`` file now (a bad one is one line, before any work) and name
    it in ``$LOOPTRACE_PRICES`` for what prices runs in this process and its children
    (the app under ``looptrace ui``)."""
    import os

    from tracer.read.cost import ENV_VAR, Prices

    path = getattr(args, "prices", None) or os.environ.get(ENV_VAR)
    if path:
        Prices.load(path)
        os.environ[ENV_VAR] = str(Path(path).resolve())

# command -> the module of this package that registers it (imported only when needed)
COMMANDS: dict[str, str] = {
    "demo": "demo",
    "runs": "runs",
    "prune": "prune",
    "copy": "copy",
    "export": "exchange",
    "import": "exchange",
    "ui": "ui",
    "check": "check",
    "diff": "diff",
    "rerun": "rerun",
    "proxy": "proxy",
    "traffic": "proxy",
    "collect": "collect",
    "run": "run",
    "debug": "debug",
    "playground": "playground",
    "show": "show",
    "mcp": "mcp",
    "note": "note",
    "threads": "threads",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that command's module is imported (fast start)."""
    parser = argparse.ArgumentParser(
        prog="looptrace", description="Record and replay LLM agent loops.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    done: set[str] = set()
    for name, module in COMMANDS.items():
        if module in done or (only is not None and name != only):
            continue
        importlib.import_module(f"{__name__}.{module}").register(sub)
        done.add(module)
    for command in sub.choices.values():  # (every --db defaulting to DEFAULT_DB says so)
        for action in command._actions:
            if action.default is DEFAULT_DB and DB_DEFAULT_HELP not in (action.help or ""):
                action.help = f"{action.help} {DB_DEFAULT_HELP}" if action.help else (
                    DB_DEFAULT_HELP)
    return parser


# old command name -> its name now: still works, and says so in one line on stderr
RENAMED: dict[str, str] = {
    "replay": "rerun",  # (issue 43: a replay plays a record back; this runs it again)  words: keep
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``looptrace`` with ``argv`` (default: ``sys.argv[1:]``); return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    if first in RENAMED:
        argv[argv.index(first)] = RENAMED[first]
        print(f"looptrace: `{first}` is now `looptrace {RENAMED[first]}` (the old name still "
              "works, for now)", file=sys.stderr)
        first = RENAMED[first]
    parser = build_parser(first if first in COMMANDS else None)
    args = parser.parse_args(argv)
    if getattr(args, "db", None) is DEFAULT_DB:  # (no --db given)
        from tracer.db.url import default_db

        args.db = default_db()
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except LooptraceError as exc:
        hint = (" (the bundled sample traces: --db samples)"
                if str(exc).endswith("no such database") else "")
        print(f"looptrace {args.command}: {safe_text(exc)}{hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"looptrace {args.command}: {safe_text(exc)}", file=sys.stderr)
        return 1


INT64_MAX = 2**63 - 1  # the largest integer SQLite stores (and binds)
PORT_MAX = 65535


def int_range(low: int, high: int = INT64_MAX) -> Callable[[str], int]:
    """An argparse ``type=`` for an integer option from ``low`` to ``high``: anything
    else is refused by the parser at once (one line, exit 2), never a traceback later
    (a number too large for SQLite, a port past 65535 ...). Not an integer at all, it
    is argparse's own "invalid int value"."""

    def integer(text: str) -> int:
        value = int(text)  # (ValueError: argparse says "invalid int value: ...")
        if not low <= value <= high:
            shown = str(value) if len(str(value)) <= 24 else f"an integer of {len(str(value))} digits"
            top = "2**63-1" if high == INT64_MAX else str(high)
            msg = f"{shown} is out of range ({low} to {top})"
            raise argparse.ArgumentTypeError(msg)
        return value

    integer.__name__ = "int"  # (argparse names the type by it)
    return integer


class Server(Protocol):
    def serve_forever(self) -> object: ...
    def stop(self) -> object: ...


def serve(server: Server) -> None:
    """Serve until Ctrl-C or SIGTERM, then stop the server (it writes what it holds)."""
    stop_on_sigterm()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def stop_on_sigterm(stop: threading.Event | None = None) -> None:
    """SIGTERM stops a serving command like Ctrl-C: set ``stop``, or (without one) raise
    ``KeyboardInterrupt`` in the main thread, so that buffered work is still written."""
    import signal

    def handler(signum: int, frame: object) -> None:
        if stop is not None:
            stop.set()
        else:
            raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)
