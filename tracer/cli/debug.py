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

The prompt shows the pauses of the command's whole process tree (every process that
inherits its ``LOOPTRACE_DEBUG_OWNER``, or descends from it), one at a time, by id.
No paused process outlives the debugger: stopped (Ctrl-C, SIGTERM, SIGHUP, its terminal
closed) or failed, ``looptrace debug`` lets each pause of its command go on with ``run``
(the run goes on to its end, pausing no more), clears the breakpoints it armed, and
sends the command the same signal (SIGTERM after Ctrl-C or a failure); an agent whose
``looptrace debug`` is gone (even SIGKILLed) pauses no more.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from tracer.db.url import is_url, safe
from tracer.debug.raised import raised_lines
from tracer.errors import LooptraceError, UsageError
from tracer.vocab.edits import Edit, edits_of
from tracer.vocab.words import plural

from . import DEFAULT_DB

POLL_S = 0.05  # a SQLite file: how often the prompt reads the open pauses
PG_POLL_S = 1.0  # a PostgreSQL store: the same, when no NOTIFY woke it (a fallback)
LISTEN_S = 5.0  # how long the prompt waits for its listening connection at its start

HELP = """\
  c, continue         go on to the next breakpoint
  s, step             go on to the next hook firing of this run; at a tool call (before
                      it runs): into the subagent it runs, at its first hook
  o, out, finish      step out: run to the end of this subagent (or subgraph) and pause
                      back in its parent after the call (breakpoints on the way hit)
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
  edit JSON           continue with this edit (tracer.vocab.edits: {"kind": ..., ...}),
                      or a list of them ([{...}, {...}]: made in order)
  rewind K [EDIT]     go back to step K of this run and go on from there, as a fork of it:
                      the steps before K come from the record (no model or tool call),
                      EDIT (a JSON edit a fork makes, or a list of model-call edits) is
                      made at K, the same breakpoints hit after it; this run stays paused
  b SPEC              arm another breakpoint (for as long as this debugger runs)
  pause N             answer pause N (of the pauses listed at once) next
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
    p.add_argument("--db", default=DEFAULT_DB, help="trace database")
    p.add_argument("--break", dest="breaks", action="append", default=[], metavar="SPEC",
                   help="a breakpoint (see above); none: the agents listen for breakpoints "
                        "set from the app or MCP")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds a pause waits for an answer before the run continues "
                        "(default: it waits)")
    p.add_argument("--agent", metavar="MODULE:FACTORY",
                   help="how rewind builds the agent again: a factory as looptrace rerun "
                        "takes (default: the create_agent call the command made)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                   help="the command to run")
    p.set_defaults(func=run)


class _Stopped(BaseException):  # (not an Exception: the prompt catches those)
    """``looptrace debug`` was sent a signal to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _on_signal(signum: int, _frame: Any) -> None:
    raise _Stopped(signum)


def run(args: argparse.Namespace) -> int:
    from tracer.checks.run import RULES
    from tracer.debug import owner
    from tracer.debug.breakpoints import parse

    specs = [parse(b, rules=tuple(RULES)).spec for b in args.breaks]  # bad: one line, now
    if args.timeout is not None and not (0 <= args.timeout < float("inf")):
        msg = "--timeout must be a number of seconds from 0"
        raise UsageError(msg)
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    from .run import check_db_file, child_env

    check_db_file(args.db)
    me = owner.token()
    if is_url(args.db):  # (the prompt reads the open pauses at each NOTIFY: a pooled
        from tracer.db import pool  # connection is a round trip, a new one a login)

        pool.enable()
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if not cmd:
            return _serve_all(args.db, specs, me)
        return _serve_command(args, cmd, specs, me, child_env(args.db))
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _serve_all(db: str, specs: list[str], me: str) -> int:
    """No command: drive the pauses of every agent of ``db`` until stopped."""
    from tracer.debug import channel

    prompt = Prompt(db, sys.stdin, sys.stdout, owner=me)
    try:
        for spec in specs:
            channel.arm(db, spec, source="cli", owner=me)
        print(f"looptrace debug: waiting for pauses in {safe(db)} (Ctrl-C to stop)",
              file=sys.stderr)
        prompt.serve(lambda: True)
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        _let_go(db, me, prompt.shown)
    return 0


def _serve_command(args: argparse.Namespace, cmd: list[str], specs: list[str], me: str,
                   env: dict[str, str]) -> int:
    """Run ``cmd`` debugged; its pauses let go, whatever ends this."""
    from tracer.debug import owner

    env["LOOPTRACE_HOW"] = "looptrace debug"
    env["LOOPTRACE_DEBUG"] = ",".join(specs) or "1"
    env["LOOPTRACE_DEBUG_TIMEOUT"] = "none" if args.timeout is None else str(args.timeout)
    env[owner.ENV] = me
    if getattr(args, "agent", None):
        from tracer.debug.rewind import AGENT_ENV

        env[AGENT_ENV] = args.agent
    try:
        child = subprocess.Popen(cmd, env=env)
    except OSError as exc:
        msg = f"cannot run {cmd[0]!r}: {exc.strerror or exc}"
        raise UsageError(msg) from None
    prompt = Prompt(args.db, sys.stdin, sys.stdout, pid=child.pid, owner=me)
    send: int | None = signal.SIGTERM
    try:
        # (the command's end wakes the prompt's wait for a pause: it ends at once)
        def ended() -> None:
            child.wait()
            prompt.wake()

        threading.Thread(target=ended, daemon=True, name="looptrace-debug-child").start()
        prompt.serve(lambda: child.poll() is None)
        send = None
        code = child.wait()
    except _Stopped as exc:
        send = exc.signum
        code = 128 + exc.signum
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    finally:
        _let_go(args.db, me, prompt.shown, mine=prompt.mine)
        if send is not None and child.poll() is None:
            with contextlib.suppress(OSError):
                child.send_signal(send)
    if send is not None:  # (stopped: the command is given time to end; the code says why)
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=10)
        return code
    return 128 - code if code < 0 else code


def _let_go(db: str, me: str, shown: set[int],
            mine: Callable[[dict[str, Any]], bool] | None = None) -> None:
    """The debugger is going: every pause of its own (or that it showed) goes on with
    ``run``; the breakpoints it armed are cleared. Never raises (it runs as the
    debugger ends, however it ends)."""
    from tracer.debug import channel

    try:
        ids = [int(p["pause"]) for p in channel.list_paused(db)
               if int(p["pause"]) in shown or (mine is not None and mine(p))]
        channel.release(db, ids, "run")
        channel.clear(db, owner=me)
    except Exception:  # noqa: BLE001, S110 - leaving: the agents notice it is gone anyway
        pass


class Prompt:
    """The terminal's side of the channel: waits for a pause (of process ``pid``'s tree
    and of the agents started with ``owner``, or any), shows it, reads commands until
    one lets it go on; several pauses at once are listed, and ``pause N`` picks one."""

    def __init__(self, db: str, stdin: TextIO, stdout: TextIO, pid: int | None = None,
                 owner: str | None = None) -> None:
        self.db, self.stdin, self.out, self.pid, self.owner = db, stdin, stdout, pid, owner
        self.eof = False
        self.shown: set[int] = set()  # the pauses this prompt showed
        self.current: int | None = None  # the pause the prompt answers
        self._buf = b""
        self._waker: Any = None  # PostgreSQL: tracer.debug.wake.Waker, while serving

    def say(self, text: str) -> None:
        from tracer.vocab.terminal import safe_text

        for line in text.split("\n"):  # (each line made safe: its newlines are ours)
            print(safe_text(line), file=self.out, flush=True)

    def mine(self, p: dict[str, Any]) -> bool:
        """Whether pause ``p`` is of the command this prompt runs (any, without one)."""
        from tracer.debug import owner

        if self.pid is None:
            return True
        return (self.owner is not None and p.get("owner") == self.owner) or (
            isinstance(p.get("pid"), int) and owner.descends(int(p["pid"]), self.pid))

    def paused(self) -> list[dict[str, Any]]:
        from tracer.debug import channel

        try:
            return [p for p in channel.list_paused(self.db, with_pending=True) if self.mine(p)]
        except (LooptraceError, OSError, ValueError):
            return []
        except Exception as exc:  # noqa: BLE001 - sqlite3 and the like: one line, try again
            self.say(f"looptrace debug: the database cannot be read ({exc})")
            return []

    def serve(self, alive: Any) -> None:
        """Show each pause as it comes, until ``alive()`` is false (checked after each
        wait: ``wake`` ends one at once). A SQLite file is read every ``POLL_S``; a
        PostgreSQL store when a pause's NOTIFY arrives (``tracer.debug.wake``), and
        every ``PG_POLL_S`` anyway."""
        waker = self._listen()
        try:
            while alive():
                if waker is not None:
                    waker.clear_paused()  # (before the read: a pause after it wakes us)
                paused = self.paused()
                if not paused:
                    if waker is not None:
                        waker.wait_paused(PG_POLL_S)
                    else:
                        time.sleep(POLL_S)
                    continue
                self._serve_one(paused)
        finally:
            self._waker = None
            if waker is not None:
                waker.close()

    def _listen(self) -> Any:
        """A PostgreSQL store: its listening connection, listening (None: a SQLite file,
        or a server that cannot be reached now, polled)."""
        if not is_url(self.db):
            return None
        from tracer.debug.wake import Waker

        waker = Waker(self.db)
        waker.start()
        waker.listening.wait(LISTEN_S)
        self._waker = waker
        return waker

    def wake(self) -> None:
        """End the prompt's wait for a pause now (its command ended: ``serve`` checks
        ``alive``)."""
        waker = self._waker
        if waker is not None:
            waker.wake()

    def _serve_one(self, paused: list[dict[str, Any]]) -> None:
        """Show the pause the prompt answers (the first, unless one was picked)."""
        ids = [int(p["pause"]) for p in paused]
        if self.current not in ids:
            self.current = ids[0]
        self.handle(paused[ids.index(self.current)], paused)

    def handle(self, p: dict[str, Any], others: list[dict[str, Any]] | None = None) -> None:
        from tracer.debug import channel

        others = others or [p]
        self.shown.add(int(p["pause"]))
        self.show(p)
        if len(others) > 1:
            self.listing(others, int(p["pause"]))
        while True:
            if self.eof:  # (no more input: let every run go to its end)
                line = "run"
            else:
                self.out.write("(looptrace) ")
                self.out.flush()
                raw = self.read_line(int(p["pause"]))
                if raw is None:  # (answered elsewhere, or its process ended)
                    self.say(f"\nlooptrace debug: pause {p['pause']} is over (answered "
                             "elsewhere, or its run ended)")
                    return
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
            except Exception as exc:  # noqa: BLE001 - a mistake at the prompt: one line, stay
                text = " ".join(str(exc).split())[:300]
                self.say(f"looptrace debug: {type(exc).__name__}: {text}")
                continue
            if done:
                return

    def listing(self, paused: list[dict[str, Any]], current: int) -> None:
        """The pauses at once, the one the prompt answers marked."""
        self.say(f"  {len(paused)} pauses at once (pause N answers another):")
        for q in paused:
            call = (q.get("pending") or {}).get("tool_call") or {}
            what = f" {call.get('name')} {json.dumps(call.get('args'))} (id {call.get('id')})" \
                if call else ""
            mark = "  <- this prompt answers it" if int(q["pause"]) == current else ""
            self.say(f"  pause {q['pause']}: run {str(q['run'])[:12]} {q['hook']} {q['at']}"
                     f"{what}{mark}")

    def read_line(self, pause: int) -> str | None:
        """A line of input ('' at its end), or None once pause ``pause`` is over (it is
        checked every 0.2 s while waiting: answered from the app or MCP, or its process
        gone)."""
        try:
            fd = self.stdin.fileno()
        except (AttributeError, OSError, ValueError):
            return self.stdin.readline()  # (not a file: read as it is)
        while b"\n" not in self._buf:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                if not any(int(q["pause"]) == pause for q in self.paused()):
                    return None
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                out, self._buf = self._buf, b""
                return out.decode("utf-8", "replace")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode("utf-8", "replace") + "\n"

    def show(self, p: dict[str, Any]) -> None:
        who = p.get("run_name") or "run"
        sub = f" (a subagent of {p['parent_run'][:12]})" if p.get("parent_run") else ""
        self.say(f"\nlooptrace debug: paused {who} {p['run'][:12]}{sub} at step "
                 f"{p.get('step') or '?'}: {p['hook']} {p['at']} (breakpoint "
                 f"{p.get('reason')})")
        self.say(summary(p.get("pending") or {}))
        nested = frame_lines(p.get("pending") or {})
        if nested:
            self.say(nested)

    def command(self, p: dict[str, Any], line: str) -> bool:
        from tracer.debug import channel

        word, _, rest = line.partition(" ")
        word = word.lower()
        moves = {"c": "continue", "continue": "continue", "s": "step", "step": "step",
                 "n": "lap", "next": "lap", "lap": "lap", "r": "run", "run": "run",
                 "a": "abort", "abort": "abort", "q": "abort",
                 "o": "out", "out": "out", "finish": "out"}
        pend = p.get("pending") or {}
        pause = int(p["pause"])
        if word in moves and not rest:
            channel.answer(self.db, p["run"], moves[word], pause=pause)
            return True
        if word == "pause":
            return self.switch(rest.strip())
        if word in ("h", "help", "?"):
            self.say(HELP)
            return False
        if word in ("p", "print"):
            self.say(json.dumps(pend, indent=2, ensure_ascii=False))
            return False
        if word == "rewind":
            return self.rewind(p, rest)
        if word == "b" and rest:
            channel.arm(self.db, rest.strip(), source="cli", owner=self.owner,
                        owner_only=self.pid is not None)
            self.say(f"breakpoint {rest.strip()} armed")
            self._say_unreachable(rest.strip())
            return False
        edit = self.edit_of(word, rest, pend)
        if edit is None:
            self.say(f"looptrace debug: unknown command {line!r} (h for help)")
            return False
        got = channel.answer(self.db, p["run"], "continue", edit, pause=pause)
        self.say("changed in the debugger; going on" if got.get("edit") is not None
                 else "nothing changed; going on")
        return True

    def rewind(self, p: dict[str, Any], rest: str) -> bool:
        """``rewind K [EDIT]``: a fork of this run from step K (``tracer.debug.rewind``);
        one line for one that cannot be (the run stays paused)."""
        from tracer.debug import channel

        step, edits = rewind_args(rest)
        said = (p.get("pending") or {}).get("rewind") or {}
        if said.get("can"):  # (checked against the record first: a step, an edit's place)
            from tracer.whatif.rewind import check

            check(self.db, p["run"], step, [e.to_json() for e in channel.rewind_edits(edits)])
        channel.rewind(self.db, p["run"], step, edits, pause=int(p["pause"]))
        self.say(f"rewinding to step {step}: a fork of this run (it pauses at the "
                 "breakpoints after the step); this run stays paused")
        return True

    def switch(self, which: str) -> bool:
        """``pause N``: answer pause N next (True: the prompt shows it now)."""
        paused = {int(q["pause"]): q for q in self.paused()}
        try:
            n = int(which)
        except ValueError:
            n = -1
        if n not in paused:
            have = ", ".join(str(k) for k in paused) or "none"
            msg = f"pause {which or '?'}: no such pause open here (open: {have})"
            raise UsageError(msg)
        self.current = n
        return True

    def _say_unreachable(self, spec: str) -> None:
        from tracer.debug.breakpoints import parse
        from tracer.debug.reach import unreachable

        said = unreachable(self.db, parse(spec))
        if said is not None:
            self.say(f"looptrace debug: {said}")

    def edit_of(self, word: str, rest: str, pend: dict[str, Any]) -> Edit | list[Edit] | None:
        """The edit a prompt line asks, or the list ``edit [...]`` gives (``BadEdit``,
        one line, for one that is not)."""
        if word == "reply":
            return Edit("reply", text=rest)
        if word == "result":
            return Edit("tool_result", text=rest)
        if word == "args":
            try:
                return Edit("tool_args", args=json.loads(rest))
            except json.JSONDecodeError as exc:
                msg = f"args: not valid JSON ({exc.msg} at column {exc.colno})"
                raise UsageError(msg) from None
        if word == "state":
            if not rest.strip():
                msg = 'state: give a JSON object of state keys, e.g. state {"count": 3}'
                raise UsageError(msg)
            return Edit("state", text=rest)
        if word == "edit" and rest:
            if rest.strip().startswith("["):
                return list(edits_of(rest))
            return Edit.of(rest if rest.strip().startswith("{") else {"kind": rest.strip()})
        if word in ("e", "edit"):
            return Edit.of(self.in_editor(template(pend.get("kind"), pend)))
        return None

    def in_editor(self, start: dict[str, Any]) -> dict[str, Any]:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.NamedTemporaryFile("w+", suffix=".json", delete=False) as f:
            json.dump(start, f, indent=2, ensure_ascii=False)
            path = f.name
        try:
            try:
                subprocess.run([*shlex.split(editor), path], check=False)
            except (OSError, ValueError) as exc:
                msg = (f"the editor {editor!r} cannot start "
                       f"({getattr(exc, 'strerror', None) or exc}): set $EDITOR, or give the "
                       "change on the line (result TEXT, reply TEXT, args JSON, edit JSON)")
                raise UsageError(msg) from None
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


def rewind_args(rest: str) -> tuple[int, str | None]:
    """``K [EDIT]`` of ``rewind``: the step and the edit's JSON (or None)."""
    first, _, edit = rest.strip().partition(" ")
    try:
        step = int(first)
    except ValueError:
        msg = ("rewind K [EDIT]: K is the step to go back to (1 to the step paused at), "
               f"not {first or 'nothing'!r}")
        raise UsageError(msg) from None
    return step, edit.strip() or None


def template(kind: Any, pend: dict[str, Any]) -> dict[str, Any]:
    """The edit ``e`` opens in the editor: what is pending, in the form that changes it
    (from the whole text: a text cut in what is pending is refused)."""
    cut = (pend.get("message") or {}).get("text_cut") if kind in (
        "tool_result", "model_reply") else pend.get("system_cut") if kind == "model_request" \
        else None
    if cut:
        msg = (f"the text is too long to edit here ({cut} characters more than are shown): "
               "give the new one on the line (result TEXT, reply TEXT, edit JSON)")
        raise UsageError(msg)
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
        if pend.get("seen_at"):
            lines.append(f"  seen {pend['seen_at']}")
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
        lines = raised_lines(pend)
        where = f"node {pend.get('node')}" if pend.get("where") == "node" else pend.get("where")
        return "\n".join([f"  the {where} raised {_cut(lines[0], 400)}",
                          *(f"  {ln}" for ln in lines[1:])])
    if kind == "node":
        what = ("the node will receive" if pend.get("at") == "before"
                else "the node returned the update")
        return f"  {what}:\n" + _state_lines(pend.get("state") or {})
    if kind == "state":
        head = f"  {plural(pend.get('messages_count'), 'message')} in the state"
        return head + ("\n" + _state_lines(pend["state"]) if pend.get("state") else "")
    return ""


def frame_lines(pend: dict[str, Any]) -> str:
    """Where a pause stands among nested runs: the subagent stepped into (its parent
    run and the call), and where ``o`` (out) goes back to."""
    lines = []
    into = pend.get("into")
    if isinstance(into, dict):
        lines.append(f"  stepped into subagent {into.get('subagent')}, from run "
                     f"{str(into.get('parent_run'))[:12]}'s {into.get('tool') or 'tool'} call "
                     f"{into.get('tool_call')}")
    out = pend.get("out")
    if isinstance(out, dict):
        lines.append(f"  o (out): run {out.get('from')} to its end, then pause {out.get('to')}")
    return "\n".join(lines)


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
