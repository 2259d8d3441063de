"""``looptrace``: a thin command line over the Python API.

Each subcommand lives in its own module, which exposes ``register(sub)``
(add the subparser and set ``func``). Errors are one clear line and a
non-zero exit, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .errors import LooptraceError

DEFAULT_DB = "looptrace.db"

# subcommand -> module that registers it (imported lazily so the CLI starts fast)
COMMANDS: dict[str, str] = {
    "demo": "tracer.demo.cli",
    "runs": "tracer.runs_cli",
    "prune": "tracer.prune_cli",
    "export": "tracer.commands",
    "import": "tracer.commands",
    "ui": "tracer.commands",
    "check": "tracer.check",
    "diff": "tracer.diff",
    "proxy": "tracer.wire.cli",
    "traffic": "tracer.wire.cli",
    "collect": "tracer.otel.cli",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand's module is imported (fast start)."""
    parser = argparse.ArgumentParser(
        prog="looptrace", description="Record and replay LLM agent loops.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    done: set[str] = set()
    for name, module in COMMANDS.items():
        if module in done or (only is not None and name != only):
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            if exc.name is not None and exc.name.startswith(module.split(".")[0]):
                p = sub.add_parser(name, help="(not available in this build)")
                p.set_defaults(func=_unavailable(name, str(exc)))
                continue
            raise
        mod.register(sub)
        done.add(module)
    return parser


def _unavailable(name: str, why: str):  # type: ignore[no-untyped-def]
    def run(args: argparse.Namespace) -> int:
        print(f"looptrace {name}: not available yet ({why})", file=sys.stderr)
        return 2

    return run


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(first if first in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except LooptraceError as exc:
        print(f"looptrace {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        print(f"looptrace {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
