"""``looptrace playground RUN --at STEP [--edit JSON] [--model M] [--json]``: re-send a
recorded model call, edited, to a chosen model; the new answer beside the recorded one
(``tracer.wire.playground``). Nothing is written."""

from __future__ import annotations

import argparse
import json
from typing import Any

from tracer.errors import UsageError

from . import DEFAULT_DB, int_range, read_db


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "playground", help="re-send a recorded model call (edited) to a chosen model, "
                           "beside the recorded answer",
        description=(
            "Take the model call at or after step STEP of RUN exactly as the model "
            "received it (every message, tool calls and results included, the system "
            "prompt, the tool schemas), make one edit, ask a model, and print its answer "
            "beside the recorded one, with the request in each provider's wire format "
            "(--json). Nothing is written. Example: looptrace playground weather --at 9 "
            "--edit '{\"kind\": \"drop\", \"position\": 2}' --model openai:gpt-4o-mini; "
            "--agent MODULE:FACTORY asks the agent's own model."))
    p.add_argument("run", help="run id, prefix or name")
    p.add_argument("--at", type=int_range(1), required=True, metavar="STEP",
                   help="a step (from 1); the model call at or after it is re-sent")
    p.add_argument("--edit", default=None, metavar="JSON",
                   help='one edit: {"kind": "message"|"drop"|"insert"|"system"|"tools"|'
                        '"settings", ...} (the debugger\'s edits)')
    p.add_argument("--model", default=None,
                   help="who answers: an init_chat_model name (with your key); 'recorded' "
                        "(the recorded provider and model); 'agent' (the model of the "
                        "--agent factory; the default with --agent); or 'offline' (the "
                        "default: no network, no key; the recorded answer when this run, "
                        "its subagents or its reruns and forks recorded a call with the same "
                        "request, else an answer saying it is offline and what the model "
                        "would have been sent)")
    p.add_argument("--agent", default=None, metavar="MODULE:FACTORY",
                   help="the agent factory a rerun takes (see looptrace rerun): its own "
                        "model answers (the model create_agent was given)")
    p.add_argument("--db", default=DEFAULT_DB, help="trace database")
    p.add_argument("--json", action="store_true",
                   help="print everything as JSON, the wire formats included")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracer.wire.playground import playground

    from .debug import summary

    edit: Any = None
    if args.edit is not None:
        try:
            edit = json.loads(args.edit)
        except json.JSONDecodeError as exc:
            msg = f"--edit is not valid JSON ({exc.msg} at column {exc.colno})"
            raise UsageError(msg) from None
    model = args.model or ("agent" if args.agent else "offline")
    res = playground(read_db(args.db), args.run, args.at, edit=edit, model=model,
                     agent=args.agent)
    if args.json:
        print(json.dumps(res.to_dict(), indent=2, ensure_ascii=False, default=str))
        return 0
    def say(text: str) -> None:
        from tracer.vocab.terminal import safe_text

        for line in text.split("\n"):  # (each line made safe: its newlines are ours)
            print(safe_text(line))

    say(f"model call {res.call} of run {res.run[:12]} (step {res.step})"
                    + (f", edited: {json.dumps(res.edit)}" if res.edit else ""))
    say(summary(res.request))
    say(f"\nrecorded answer:\n{_answer(res.recorded)}")
    say(f"\n{res.model} answers ({res.served}):\n{_answer(res.answer)}")
    return 0


def _answer(m: dict[str, Any] | None) -> str:
    if m is None:
        return "  (none recorded)"
    lines = [f"  {m.get('text') or '(no text)'}"]
    for c in m.get("tool_calls") or []:
        lines.append(f"  -> {c.get('name')}({json.dumps(c.get('args'), ensure_ascii=False)})")
    return "\n".join(lines)
