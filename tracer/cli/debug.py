"""``looptrace debug [--db F] [--break SPEC]... [--timeout S] -- COMMAND ...``: run a
command with every agent in it debugged, no code change, and a prompt like pdb's in
this terminal when a breakpoint hits.

The command runs as under ``looptrace run`` (traced through LangChain's configure
hook), with ``LOOPTRACE_DEBUG`` set: every agent ``create_agent`` builds gets a
debugging ``TraceMiddleware`` (its innermost middleware) unless it has one, and an
agent with its own ``TraceMiddleware`` is armed too. The agent's process and this
prompt talk through the trace database (``tracer.debug.channel``): the app and MCP
can answer the same pauses.

Without ``-- COMMAND``, ``looptrace debug`` drives the pauses of agents already
running (armed with ``LOOPTRACE_DEBUG`` or ``TraceMiddleware(debug=...)``) into the
database, until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Any, TextIO

from tracer.errors import LooptraceError, UsageError
from tracer.vocab.words import plural

from . import DEFAULT_DB

HELP = """\
  c, continue         go on to the next breakpoint
  s, step             go on to the next hook firing of this run
  n, next             go on to the next lap's model call
  r, run              run this run to the end (no more pauses)
  a, abort            end the run here as an error ("aborted in the debugger")
  p, print            print what is pending (the request, the tool call, the reply) as JSON
  e, edit             edit what is pending as JSON in $EDITOR, then continue with it
  reply TEXT          at a model call: answer it yourself (after the model: the new answer)
  result TEXT         at a tool call: give its result yourself (after it: the new result)
  args JSON           at a tool call: run it with these arguments
  state JSON          at a graph node: merge these keys into what it receives (before)
                      or into its update (after), through the graph's reducers
  edit JSON           continue with this edit (tracer.debug.edits: {"kind": ..., ...})
  b SPEC              arm another breakpoint (every run of this database)
  h, help             this list"""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from tracer.debug.breakpoints import CONDITION_HELP, FORMS

    forms = "\n".join(f"  {form:<26} {what}" for form, what in FORMS.values())
    p = sub.add_parser(
        "debug", help="run a command with its agents debugged: breakpoints at any hook, "
                      "a prompt when one hits",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Run COMMAND with every agent in it debugged, no code change, and a prompt "
            "like pdb's here when a breakpoint hits: look at what is about to happen, "
            "change it, go on. Without COMMAND, drive the pauses of agents already "
            "running into the database (armed with LOOPTRACE_DEBUG=1 or "
            "TraceMiddleware(debug=True)).\n\nBreakpoints (--break, repeatable):\n"
            + forms + "\n\n" + "\n".join(textwrap.wrap(CONDITION_HELP, 86))
            + "\n\nAt the prompt:\n" + HELP
            + "\n\nExample: looptrace debug --break tool:get_weather -- python agent.py"))
    p.add_argument("--db", default=DEFAULT_DB, help=f"trace database (default {DEFAULT_DB})")
    p.add_argument("--break", dest="breaks", action="append", default=[], metavar="SPEC",
                   help="a breakpoint (see above); none: the agents listen for breakpoints "
                        "set from the app or MCP")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds a pause waits for an answer before the run continues "
                        "(default: it waits)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the command to run")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tracer.checks.run import RULES
    from tracer.debug.breakpoints import parse

    specs = [parse(b, rules=tuple(RULES)).spec for b in args.breaks]  # bad: one line, now
    if args.timeout is not None and args.timeout < 0:
        msg = "--timeout must be a number of seconds from 0"
        raise UsageError(msg)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    from .run import _check_db, child_env

    _check_db(args.db)
    if not cmd:
        from tracer.debug import channel

        for spec in specs:
            channel.arm(args.db, spec, source="cli")
        print(f"looptrace debug: waiting for pauses in {args.db} (Ctrl-C to stop)",
              file=sys.stderr)
        Prompt(args.db, sys.stdin, sys.stdout).serve(lambda: True)
        return 0
    env = child_env(args.db)
    env["LOOPTRACE_HOW"] = "looptrace debug"
    env["LOOPTRACE_DEBUG"] = ",".join(specs) or "1"
    env["LOOPTRACE_DEBUG_TIMEOUT"] = "none" if args.timeout is None else str(args.timeout)
    try:
        child = subprocess.Popen(cmd, env=env)
    except OSError as exc:
        msg = f"cannot run {cmd[0]!r}: {exc.strerror or exc}"
        raise UsageError(msg) from None
    try:
        Prompt(args.db, sys.stdin, sys.stdout, pid=child.pid).serve(
            lambda: child.poll() is None)
        code = child.wait()
    except KeyboardInterrupt:
        child.terminate()
        code = child.wait()
    return 128 - code if code < 0 else code


class Prompt:
    """The terminal's side of the channel: waits for a pause (of process ``pid``, or
    any), shows it, reads commands until one lets the run go on."""

    def __init__(self, db: str, stdin: TextIO, stdout: TextIO, pid: int | None = None) -> None:
        self.db, self.stdin, self.out, self.pid = db, stdin, stdout, pid
        self.eof = False

    def say(self, text: str) -> None:
        from tracer.vocab.terminal import safe_text

        for line in text.split("\n"):  # (each line made safe: its newlines are ours)
            print(safe_text(line), file=self.out, flush=True)

    def serve(self, alive: Any) -> None:
        from tracer.debug import channel

        while alive():
            try:
                paused = [p for p in channel.list_paused(self.db, with_pending=True)
                          if self.pid is None or p["pid"] == self.pid]
            except LooptraceError:
                paused = []
            if not paused:
                time.sleep(0.05)
                continue
            self.handle(paused[0])

    def handle(self, p: dict[str, Any]) -> None:
        from tracer.debug import channel

        self.show(p)
        while True:
            if self.eof:  # (no more input: let every run go to its end)
                line = "run"
            else:
                self.out.write("(looptrace) ")
                self.out.flush()
                raw = self.stdin.readline()
                if not raw:
                    self.eof = True
                    line = "run"
                else:
                    line = raw.strip()
            if not line:
                continue
            try:
                done = self.command(p, line)
            except channel.NotPaused as exc:
                self.say(f"looptrace debug: {exc}")
                return
            except LooptraceError as exc:
                self.say(f"looptrace debug: {exc}")
                continue
            if done:
                return

    def show(self, p: dict[str, Any]) -> None:
        who = p.get("run_name") or "run"
        sub = f" (a subagent of {p['parent_run'][:8]})" if p.get("parent_run") else ""
        self.say(f"\nlooptrace debug: paused {who} {p['run'][:8]}{sub} at step "
                 f"{p.get('step') or '?'}: {p['hook']} {p['at']} (breakpoint "
                 f"{p.get('reason')})")
        self.say(summary(p.get("pending") or {}))

    def command(self, p: dict[str, Any], line: str) -> bool:
        from tracer.debug import channel

        word, _, rest = line.partition(" ")
        word = word.lower()
        moves = {"c": "continue", "continue": "continue", "s": "step", "step": "step",
                 "n": "lap", "next": "lap", "lap": "lap", "r": "run", "run": "run",
                 "a": "abort", "abort": "abort", "q": "abort"}
        pend = p.get("pending") or {}
        if word in moves and not rest:
            channel.answer(self.db, p["run"], moves[word])
            return True
        if word in ("h", "help", "?"):
            self.say(HELP)
            return False
        if word in ("p", "print"):
            self.say(json.dumps(pend, indent=2, ensure_ascii=False))
            return False
        if word == "b" and rest:
            channel.arm(self.db, rest.strip(), source="cli")
            self.say(f"breakpoint {rest.strip()} armed")
            self._say_unreachable(rest.strip())
            return False
        edit = self.edit_of(word, rest, pend)
        if edit is None:
            self.say(f"looptrace debug: unknown command {line!r} (h for help)")
            return False
        channel.answer(self.db, p["run"], "continue", edit)
        self.say("changed in the debugger; going on")
        return True

    def _say_unreachable(self, spec: str) -> None:
        from tracer.debug.breakpoints import parse
        from tracer.debug.reach import unreachable

        said = unreachable(self.db, parse(spec))
        if said is not None:
            self.say(f"looptrace debug: {said}")

    def edit_of(self, word: str, rest: str, pend: dict[str, Any]) -> dict[str, Any] | None:
        kind = pend.get("kind")
        if word == "reply":
            return {"kind": "reply", "text": rest}
        if word == "result":
            return {"kind": "tool_result", "text": rest}
        if word == "args":
            try:
                return {"kind": "tool_args", "args": json.loads(rest)}
            except json.JSONDecodeError as exc:
                msg = f"args: not valid JSON ({exc.msg} at column {exc.colno})"
                raise UsageError(msg) from None
        if word == "state":
            if not rest.strip():
                msg = 'state: give a JSON object of state keys, e.g. state {"count": 3}'
                raise UsageError(msg)
            return {"kind": "state", "text": rest}
        if word == "edit" and rest:
            return json.loads(rest) if rest.strip().startswith("{") else {"kind": rest}
        if word in ("e", "edit"):
            return self.in_editor(template(kind, pend))
        return None

    def in_editor(self, start: dict[str, Any]) -> dict[str, Any]:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.NamedTemporaryFile("w+", suffix=".json", delete=False) as f:
            json.dump(start, f, indent=2, ensure_ascii=False)
            path = f.name
        try:
            subprocess.run([*shlex.split(editor), path], check=False)
            with open(path, encoding="utf-8") as f:
                text = f.read()
        finally:
            os.unlink(path)
        try:
            out = json.loads(text)
        except json.JSONDecodeError as exc:
            msg = f"the edit is not valid JSON ({exc.msg} at line {exc.lineno})"
            raise UsageError(msg) from None
        if not isinstance(out, dict):
            msg = "the edit must be a JSON object"
            raise UsageError(msg)
        return out


def template(kind: Any, pend: dict[str, Any]) -> dict[str, Any]:
    """The edit ``e`` opens in the editor: what is pending, in the form that changes it."""
    if kind == "tool_call":
        return {"kind": "tool_args", "args": (pend.get("tool_call") or {}).get("args") or {}}
    if kind == "tool_result":
        return {"kind": "tool_result", "text": (pend.get("message") or {}).get("text", "")}
    if kind == "model_reply":
        m = pend.get("message") or {}
        return {"kind": "reply", "text": m.get("text", ""),
                "tool_calls": m.get("tool_calls") or []}
    if kind == "model_request":
        return {"kind": "system", "text": pend.get("system") or ""}
    if kind == "node":
        return {"kind": "state", "values": pend.get("state") or {}}
    if kind == "error":
        if pend.get("where") == "node":
            return {"kind": "state", "values": {}}
        return ({"kind": "tool_result", "text": ""} if pend.get("where") == "tool"
                else {"kind": "reply", "text": ""})
    return {"kind": "?"}


def summary(pend: dict[str, Any]) -> str:
    """What is pending in a few lines."""
    kind = pend.get("kind")
    if kind == "tool_call":
        c = pend.get("tool_call") or {}
        return f"  tool call {c.get('name')} {json.dumps(c.get('args'))} (id {c.get('id')})"
    if kind == "tool_result":
        m = pend.get("message") or {}
        return f"  tool result ({m.get('status')}): {_cut(m.get('text'))}"
    if kind == "model_reply":
        m = pend.get("message") or {}
        calls = ", ".join(f"{c['name']}({json.dumps(c.get('args'))})"
                          for c in m.get("tool_calls") or [])
        return f"  the model answered: {_cut(m.get('text'))}" + (
            f"\n  and asks for: {calls}" if calls else "")
    if kind == "model_request":
        lines = [f"  model {pend.get('model')}, tools: {', '.join(pend.get('tools') or [])}"]
        if pend.get("system"):
            lines.append(f"  system: {_cut(pend['system'])}")
        for m in pend.get("messages") or []:
            extra = (" -> " + ", ".join(c["name"] for c in m["tool_calls"])
                     if m.get("tool_calls") else "")
            tcid = f" [{m['tool_call_id']}]" if m.get("tool_call_id") else ""
            lines.append(f"  [{m.get('position')}] {m.get('type')}{tcid}: "
                         f"{_cut(m.get('text'))}{extra}")
        return "\n".join(lines)
    if kind == "error":
        where = f"node {pend.get('node')}" if pend.get("where") == "node" else pend.get("where")
        return f"  the {where} raised {_cut(pend.get('error'))}"
    if kind == "node":
        what = ("the node will receive" if pend.get("at") == "before"
                else "the node returned the update")
        return f"  {what}:\n" + _state_lines(pend.get("state") or {})
    if kind == "state":
        head = f"  {plural(pend.get('messages_count'), 'message')} in the state"
        return head + ("\n" + _state_lines(pend["state"]) if pend.get("state") else "")
    return ""


def _state_lines(state: dict[str, Any]) -> str:
    """A state, one line per key (messages: their count and the last one)."""
    lines = []
    for key, value in state.items():
        if isinstance(value, list) and value and all(
                isinstance(m, dict) and "type" in m and "text" in m for m in value):
            last = value[-1]
            lines.append(f"  {key}: {plural(len(value), 'message')}, the last "
                         f"{last.get('type')}: {_cut(last.get('text'), 120)}")
        else:
            lines.append(f"  {key}: {_cut(json.dumps(value, ensure_ascii=False), 160)}")
    return "\n".join(lines) or "  (nothing)"


def _cut(text: Any, n: int = 200) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 3] + "..."
