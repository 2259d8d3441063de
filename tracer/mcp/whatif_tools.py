"""The what-if tools of ``looptrace mcp``: ``rerun`` and ``fork_run``.

The only tools that write to the database. Each runs ``looptrace rerun ... --json`` as a
child process (as the app's "Fork here" does), awaited without blocking the server's event
loop: the user's agent module, its tracer's writer and the rerun layer's patches live and
die in that child, whether the agent is sync or async; the server process itself still
opens the database read-only, for these tools too (to check the input's run id and to
diff the new run against its record). The child records one new run, linked to the one it
reruns (``rerun_of``, ``forked_from`` in its metadata); the original never changes. Bad
input (an agent factory that cannot be imported, a step out of range, an edit naming a
message the step does not have) is the child's one-line error, nothing written; an agent
that leaves its record before the fork is an error showing the request's diff, the
rerun up to there recorded (as ``looptrace rerun`` does) and named in the error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tracer.db.url import for_child
from tracer.errors import LooptraceError
from tracer.read.fork_links import forks_of
from tracer.read.loader import TraceDB

__all__ = ["EDIT_KINDS", "WHATIF_TOOLS", "WhatIf"]

# kind -> what it needs, in the words of ``looptrace rerun``
EDIT_KINDS: dict[str, str] = {
    "message": "position, text: replace the content of message `position` of the request",
    "drop": "position: drop message `position` of the request",
    "insert": "position, text, role (human/ai/system): insert a message before `position`",
    "system": "text: change the system prompt",
    "model": "model: swap the model (module:attr, or an init_chat_model name)",
    "tool_result": "text: replace the tool call's result",
    "tool_args": "args (an object): change the tool call's arguments",
    "drop_middleware": "middleware: remove a middleware",
    "move_middleware": "middleware, index: move a middleware to `index` in the list",
}
TIMEOUT = 600.0  # seconds a rerun may take before it is stopped
CUT = 3000  # characters of an error (a divergence's request diff) or a divergence detail

_COMMON = (
    " agent: the agent's factory as module:factory (importable from the server's working "
    "folder; default: `looptrace mcp --agent`), a function whose `middleware` parameter "
    "defaults to the agent's middleware list, its TraceMiddleware writing to this database. "
    "offline: answer the live part with a scripted echo model instead of the agent's own. "
    "Answer: the new run's id, what was served from the record (model calls, tokens, "
    "seconds as recorded, tool calls), where the live part began, the first divergence "
    "from the record (lap, steps of both runs) and the next calls (diff_runs, get_step). "
    "Bad input (a factory that cannot be imported, a step out of range, an edit naming a "
    "message the step does not have) is an error naming the problem, nothing written; an "
    "agent that leaves its record before the fork (without continue_live) is an error "
    "with the request's diff, naming the run that recorded the rerun up to there.")

WHATIF_TOOLS: dict[str, str] = {
    "rerun": (
        "WRITES a new run to the database (the recorded one never changes): run the "
        "agent again on a recorded run's input, every model call, tool call and human "
        "decision answered from the record, at no cost; the new run is linked to the "
        "original (rerun_of) and, when the agent still matches its record, identical to "
        "it (the answer says whether diff_runs finds anything)." + _COMMON),
    "fork_run": (
        "WRITES a new run to the database (the recorded one never changes): fork a "
        "recorded run at `step` (counted from 1, as list_steps shows it) with one edit; "
        "the steps before it come from the record at no cost, the edit is made at the "
        "first model call (or tool call, for tool_result/tool_args) at or after the step, "
        "and from the first request the record does not hold the agent's own model and "
        "tools run live. The new run is linked to the original (forked_from: run, step, "
        "edit). edit_kind is one of: " + "; ".join(f"{k} ({v})" for k, v in
                                                 EDIT_KINDS.items()) + "."
        " continue_live: go on live when the agent leaves its record before the fork "
        "(otherwise that is an error showing the request's diff)." + _COMMON),
}


class WhatIf:
    """The two tools over one database; ``agent`` is the server's default factory."""

    def __init__(self, db: str, agent: str | None = None) -> None:
        self.db = db
        self.agent = agent

    async def rerun(self, run: str, agent: str | None = None, offline: bool = False,
                         continue_live: bool = False) -> dict[str, Any]:
        argv = self._argv(run, agent, offline, continue_live)
        return await self._run(argv)

    async def fork_run(self, run: str, step: int, edit_kind: str,
                       position: int | None = None, text: str | None = None,
                       role: str = "human", model: str | None = None,
                       args: dict[str, Any] | None = None, middleware: str | None = None,
                       index: int | None = None, agent: str | None = None,
                       offline: bool = False, continue_live: bool = False) -> dict[str, Any]:
        flags = edit_flags(edit_kind, position=position, text=text, role=role, model=model,
                           args=args, middleware=middleware, index=index)
        argv = self._argv(run, agent, offline, continue_live)
        return await self._run([*argv, "--at", str(int(step)), *flags])

    # ------------------------------------------------------------------------------
    def _argv(self, run: str, agent: str | None, offline: bool,
              continue_live: bool) -> list[str]:
        spec = agent or self.agent
        if not spec:
            msg = ("no agent: pass agent='module:factory' (or start the server with "
                   "`looptrace mcp --agent module:factory`)")
            raise LooptraceError(msg)
        with TraceDB(self.db) as db:  # a bad or ambiguous run id fails here, read-only
            rid = db.resolve(run)
        argv = ["rerun", rid, "--agent", spec, "--db", for_child(self.db)[0], "--json"]
        if offline:
            argv.append("--offline")
        if continue_live:
            argv.append("--continue-live")
        return argv

    async def _run(self, argv: list[str]) -> dict[str, Any]:
        import anyio

        before = await anyio.to_thread.run_sync(self._reruns_of, argv[1])
        with anyio.move_on_after(TIMEOUT) as scope:
            done = await anyio.run_process(
                [sys.executable, "-m", "tracer", *argv], check=False,
                stdin=subprocess.DEVNULL, cwd=os.getcwd(),
                env={**os.environ, **for_child(self.db)[1]})
        if scope.cancelled_caught:
            msg = f"the rerun took longer than {TIMEOUT:.0f} s and was stopped"
            raise LooptraceError(msg)
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip()
            err = err.removeprefix("looptrace rerun: ") or f"exit {done.returncode}"
            err = err[:CUT] + (" ..." if len(err) > CUT else "")
            partial = await anyio.to_thread.run_sync(self._reruns_of, argv[1])
            if partial - before:  # (a divergence: the rerun up to there is recorded)
                err += (f"\n(the rerun up to there is recorded as run "
                        f"{', '.join(sorted(partial - before))}; the original is unchanged)")
            raise LooptraceError(err)
        res = json.loads(done.stdout)
        return await anyio.to_thread.run_sync(self._answer, res)

    def _reruns_of(self, run_id: str) -> set[str]:
        """The ids of the reruns and forks of ``run_id`` (read-only)."""
        with TraceDB(self.db) as db:
            return {f.run_id for f in forks_of(db, run_id)}

    def _answer(self, res: dict[str, Any]) -> dict[str, Any]:
        """``looptrace rerun --json``'s result, with the first divergence from the record
        (``diff_tree``, read-only) and the calls that follow."""
        from tracer.read.diff import diff_tree

        of, new = res["of"], res["run"]
        with TraceDB(self.db) as db:
            d = diff_tree(db, of, db, new)
        first = d.first_divergence
        div = None
        if first is not None:
            div = {"kind": first.kind, "lap": first.lap, "description": first.description[:600],
                   "step_in_original": None if first.index_a is None else first.index_a + 1,
                   "step_in_new_run": None if first.index_b is None else first.index_b + 1,
                   "detail": first.detail[:CUT]}
        live = dict(res["live"])  # (its "from" step counted from 1 already: RerunResult)
        nxt: dict[str, Any] = {"diff_runs": {"run_a": of, "run_b": new},
                               "run_summary": {"run": new}}
        if div and div["step_in_new_run"] is not None:
            nxt["get_step"] = {"run": new, "step": div["step_in_new_run"]}
        return {"run_id": new, "of": of, "at": res.get("at"), "edit": res.get("edit"),
                "agent_error": res.get("error"), "served_from_record": res["served"],
                "live": live, "record": res["record"], "seconds": res["seconds"],
                "identical_to_original": d.identical, "first_divergence": div, "next": nxt}


def edit_flags(kind: str, *, position: int | None, text: str | None, role: str,
               model: str | None, args: dict[str, Any] | None, middleware: str | None,
               index: int | None) -> list[str]:
    """The ``looptrace rerun`` options of one edit; a missing field is named."""
    if kind not in EDIT_KINDS:
        msg = f"edit_kind {kind!r} is not one of {', '.join(EDIT_KINDS)}"
        raise LooptraceError(msg)

    def need(name: str, value: Any) -> Any:
        if value is None:
            msg = f"edit_kind {kind} needs {EDIT_KINDS[kind].split(':')[0]} ({name} is missing)"
            raise LooptraceError(msg)
        return value

    if kind in ("message", "insert"):
        flags = [f"--{kind}={int(need('position', position))}={need('text', text)}"]
        if kind == "insert":
            flags.append(f"--role={role}")
        return flags
    # (--flag=VALUE: a value starting with "-" is not taken for an option)
    if kind == "drop":
        return [f"--drop={int(need('position', position))}"]
    if kind == "system":
        return [f"--system={need('text', text)}"]
    if kind == "model":
        return [f"--model={need('model', model)}"]
    if kind == "tool_result":
        return [f"--tool-result={need('text', text)}"]
    if kind == "tool_args":
        return [f"--tool-args={json.dumps(need('args', args))}"]
    if kind == "drop_middleware":
        return [f"--drop-middleware={need('middleware', middleware)}"]
    return [f"--move-middleware={need('middleware', middleware)}={int(need('index', index))}"]
