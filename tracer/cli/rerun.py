"""``looptrace rerun``: rerun a run from its record, or fork it (``tracer.whatif.rerun``)."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from tracer.cli import INT64_MAX, int_range
from tracer.db.url import safe
from tracer.errors import UsageError
from tracer.vocab.edits import KINDS, Edit
from tracer.vocab.terminal import safe_text

from . import DEFAULT_DB

HELP = """A rerun: run your agent again on a recorded run's input, answering every model call,
tool call and human decision from the record (a paused run reruns unattended). With no
edit the rerun reproduces the record (`looptrace diff RUN RERUN` finds nothing).

With --at STEP and one edit it forks: the steps before STEP come from the record at
no cost; the edit is made at the first call at or after STEP; from the first request
that no longer matches the record, calls go to the agent's own model and tools (or,
with --offline, to a scripted model). The rerun is recorded by the agent's own
tracer, as a new run whose metadata names the run it reruns (rerun_of) and, for a
fork, forked_from (run, step, edit).

--agent module:factory names a function whose `middleware` parameter defaults to the
agent's middleware list (its TraceMiddleware writing to --db); looptrace calls it with
that list, its rerun layer first:

    trace = TraceMiddleware(db="looptrace.db")
    def make_agent(middleware=(trace,)):
        return create_agent(model, tools, middleware=list(middleware))

A rerun whose agent asks for something the record does not hold before the fork
stops there and prints the request's diff to the nearest recorded one (exit 1),
unless --continue-live. Bad input (an agent that cannot be imported, a run without
recorded input, a step out of range, an edit naming a message the step does not
have, a record of an older schema) is one line and exit 1, with nothing written."""


FORK_KINDS = tuple(k.name for k in KINDS.values() if k.fork)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("rerun", help="rerun a run from its record, or fork it with an edit",
                       description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", metavar="RUN", help="run id (or a unique prefix)")
    p.add_argument("--agent", required=True, metavar="MODULE:FACTORY",
                   help="the agent's factory (see above)")
    p.add_argument("--db", default=DEFAULT_DB, help="database holding RUN")
    p.add_argument("--at", type=int_range(-INT64_MAX - 1), metavar="STEP",
                   help="fork at this step (counted from 1, as the replay shows it)")
    e = p.add_argument_group("the edit (one)").add_mutually_exclusive_group()
    e.add_argument("--edit", metavar="JSON",
                   help='any edit a fork makes, as JSON: {"kind": "message", "position": 2, '
                        '"text": "..."} (kinds: ' + ", ".join(FORK_KINDS) + ")")
    e.add_argument("--message", metavar="POS=TEXT",
                   help="replace the content of message POS of the model's request")
    e.add_argument("--drop", type=int_range(-INT64_MAX - 1), metavar="POS", help="drop message POS")
    e.add_argument("--insert", metavar="POS=TEXT", help="insert a message before POS")
    e.add_argument("--system", metavar="TEXT", help="change the system prompt")
    e.add_argument("--model", metavar="SPEC",
                   help="swap the model: module:attr (a chat model) or an init_chat_model "
                        "name such as openai:gpt-4o-mini")
    e.add_argument("--tool-result", metavar="TEXT", help="replace the tool call's result")
    e.add_argument("--tool-args", metavar="JSON", help="change the tool call's arguments")
    e.add_argument("--drop-middleware", metavar="NAME", help="remove a middleware")
    e.add_argument("--move-middleware", metavar="NAME=INDEX",
                   help="move a middleware to INDEX in the agent's list")
    p.add_argument("--role", default="human", choices=("human", "ai", "system"),
                   help="--insert: the role of the new message (default human)")
    p.add_argument("--offline", nargs="?", const="echo", metavar="MODULE:ATTR",
                   help="answer the live part with a chat model instead of the agent's "
                        "(default: a scripted model that echoes the last message)")
    p.add_argument("--continue-live", action="store_true",
                   help="go on live when the agent diverges from the record before the fork")
    p.add_argument("--async", dest="use_async", action="store_true",
                   help="run the agent through its async API (ainvoke): an agent with "
                        "async-only tools reruns only so")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--token", metavar="HEX", type=_token,
                   help="the new run's rerun_token metadata (default: a new one): how a "
                        "caller running this in the background finds the run as it records")
    p.set_defaults(func=run)


def _token(text: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{16,64}", text):
        msg = f"--token takes 16 to 64 lowercase hex digits, not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return text


def _pair(text: str, flag: str) -> tuple[int, str]:
    pos, sep, rest = text.partition("=")
    if not sep or not pos.strip().lstrip("-").isdigit():
        msg = f"{flag} expects POS=TEXT (e.g. {flag} 2=hello), not {text!r}"
        raise UsageError(msg)
    return int(pos), rest


def _object(spec: str) -> Any:
    """``module:attr``: the object, or what calling it makes (a class or a factory)."""
    import inspect

    from tracer.whatif.rerun import load_factory

    obj = load_factory(spec)
    if inspect.isclass(obj) or (callable(obj) and not hasattr(obj, "invoke")):
        try:
            return obj()
        except Exception as exc:  # noqa: BLE001 - whatever the user's factory raises
            first = (str(exc).strip().splitlines() or [""])[0]  # (pydantic's: many lines)
            msg = f"{spec!r}: calling it failed: {type(exc).__name__}: {first}"
            raise UsageError(msg) from None
    return obj


def edit_of(args: argparse.Namespace) -> Edit | None:
    """The ``Edit`` the options name (None: a plain rerun); each option is a shorthand
    of ``--edit JSON``."""
    if args.edit is not None:
        edit = Edit.of(args.edit)
        if edit.kind not in FORK_KINDS:
            msg = f"--edit: a fork makes the edits {', '.join(FORK_KINDS)}, not {edit.kind!r}"
            raise UsageError(msg)
        if edit.kind == "model" and isinstance(edit.model, str) and edit.model != "offline":
            return Edit("model", model=_model(edit.model))
        return edit
    if args.message is not None:
        pos, text = _pair(args.message, "--message")
        return Edit("message", position=pos, text=text)
    if args.drop is not None:
        return Edit("drop", position=args.drop)
    if args.insert is not None:
        pos, text = _pair(args.insert, "--insert")
        return Edit("insert", position=pos, text=text, role=args.role)
    if args.system is not None:
        return Edit("system", text=args.system)
    if args.model is not None:
        return Edit("model", model=_model(args.model))
    if args.tool_result is not None:
        return Edit("tool_result", text=args.tool_result)
    if args.tool_args is not None:
        try:
            value = json.loads(args.tool_args)
        except ValueError as exc:
            msg = f"--tool-args is not JSON: {exc}"
            raise UsageError(msg) from None
        if not isinstance(value, dict):
            msg = "--tool-args must be a JSON object"
            raise UsageError(msg)
        return Edit("tool_args", args=value)
    if args.drop_middleware is not None:
        return Edit("drop_middleware", middleware=args.drop_middleware)
    if args.move_middleware is not None:
        name, sep, index = args.move_middleware.rpartition("=")
        if not sep or not index.strip().isdigit():
            msg = f"--move-middleware expects NAME=INDEX, not {args.move_middleware!r}"
            raise UsageError(msg)
        return Edit("move_middleware", middleware=name, index=int(index))
    return None


def _model(spec: str) -> Any:
    """``module:attr`` of an importable module (a chat model, or a function making one),
    else a name for LangChain's ``init_chat_model``."""
    import importlib.util

    module = spec.split(":", 1)[0]
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if ":" in spec and found:
        try:
            model = _object(spec)
        except UsageError as exc:
            msg = f"--model {exc}"
            raise UsageError(msg) from None
    else:
        try:
            from langchain.chat_models import init_chat_model

            model = init_chat_model(spec)
        except Exception as exc:  # noqa: BLE001 - a missing provider package, a bad name
            msg = f"--model {spec!r}: {type(exc).__name__}: {exc}"
            raise UsageError(msg) from None
    from tracer.whatif.rerun import chat_model_problem

    problem = chat_model_problem(model)
    if problem:  # (checked before anything runs: nothing is written)
        msg = (f"--model {spec!r}: {problem} (module:attr must name a chat model or a "
               "function making one; or an init_chat_model name such as openai:gpt-4o-mini)")
        raise UsageError(msg)
    return model


def offline_model(spec: str | None) -> Any:
    if spec is None:
        return None
    if spec == "echo":
        from tracer.demo.models import echo_model

        return echo_model()
    return _object(spec)


def run(args: argparse.Namespace) -> int:
    from tracer.whatif.rerun import rerun

    edit = edit_of(args)
    if args.at is not None and edit is None:
        msg = "--at needs an edit (--message, --drop, --insert, --system, --model, ...)"
        raise UsageError(msg)
    kw: dict[str, Any] = {"agent": args.agent, "db": args.db, "at": args.at, "edit": edit,
                          "offline": offline_model(args.offline),
                          "continue_live": args.continue_live, "token": args.token}
    if getattr(args, "use_async", False):
        import asyncio

        from tracer.whatif.rerun import arerun

        res = asyncio.run(arerun(args.run, **kw))
    else:
        res = rerun(args.run, **kw)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, ensure_ascii=False))
    else:
        # (the agent's error and the reason the live part began are the agent's text)
        print(safe_text(res.summary(), keep_newlines=True))
        print(safe_text(f"compare: looptrace diff {res.of[:12]} {res.run_id[:12]} "
                        f"--db {safe(args.db)}"))
    return 0
