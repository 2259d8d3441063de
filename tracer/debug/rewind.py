"""Rewind, on the agent's side: at a pause, go back to step K of this run and go on
from there with edits, as a fork of it (``tracer.whatif.rewind``: the fork machinery,
live and debugged).

The pause is answered ``rewind`` (``tracer.debug.channel.rewind``: K and the edits).
In the agent's process the debugger asks for a fork of the paused run at step K: its
agent built again (the factory ``looptrace debug --agent`` names,
``LOOPTRACE_REWIND_AGENT``; else the ``create_agent`` call ``looptrace debug`` saw,
``tracer.record.rebuild``), the steps before K served from the record (no model or
tool call), in a thread of its own, pausing at the breakpoints from step K on. The
paused run stays paused at the same place (a new pause, its reason naming the fork):
answer it as any other (continue, abort ...).

Where the agent cannot be built again (a graph the script compiled itself, an agent
armed outside ``looptrace debug`` with no ``--agent``, a subagent's run) the pause
says why (``pending.rewind.why``): the driver refuses the rewind in one line and the
run stays paused.
"""

from __future__ import annotations

import os
from typing import Any

from tracer.db.url import default_db
from tracer.errors import LooptraceError
from tracer.record.rebuild import Build, builds_of, starter

__all__ = ["AGENT_ENV", "start", "status"]

AGENT_ENV = "LOOPTRACE_REWIND_AGENT"  # (looptrace debug --agent MODULE:FACTORY)

NOT_BUILT = ("this agent was not built by create_agent under looptrace debug (a graph "
             "the script compiled itself, or an agent armed outside looptrace debug): "
             "name its factory with looptrace debug --agent MODULE:FACTORY to rewind it")


def _builds(dbg: Any, run: Any) -> tuple[list[Build], str | None]:
    """The ``create_agent`` calls that can build ``run``'s agent again, and why none
    can when so."""
    builds = [b for mw in dbg.holders() for b in builds_of(mw)]
    if not builds:
        return [], NOT_BUILT
    if len(builds) == 1:
        return builds, None
    named = [b for b in builds if b.name is not None and b.name == getattr(run, "name", None)]
    if len(named) == 1:
        return named, None
    return [], (f"its tracer is shared by {len(builds)} agents and none is named "
                f"{getattr(run, 'name', None)!r} alone: name each agent (create_agent(..., "
                "name=...)), or give looptrace debug --agent MODULE:FACTORY")


def status(dbg: Any, run: Any) -> dict[str, Any]:
    """Whether this run can be rewound here, for the pause's ``pending.rewind``:
    ``{"can": bool, "agent": how it is built again, "why": why not (or None)}``."""
    parent = getattr(getattr(run, "parent", None), "id", None)
    if parent is not None:
        return {"can": False, "agent": None,
                "why": f"a subagent's run is rewound with its parent: rewind run {parent}"}
    spec = os.environ.get(AGENT_ENV)
    if spec:
        return {"can": True, "agent": spec, "why": None}
    builds, why = _builds(dbg, run)
    if builds:
        return {"can": True, "agent": "the create_agent call of the script", "why": None}
    return {"can": False, "agent": None, "why": why}


def start(dbg: Any, rec: Any, run: Any, raw: Any, *, is_async: bool = False) -> dict[str, Any]:
    """Start the rewind a pause was answered with (``raw``: ``{"step": K, "edits":
    [...]}``): what the record says of it (``outcome`` rewound or rejected, and the
    ``line`` the run pauses again with). ``is_async``: the paused run is async (the
    fork then runs on an event loop of its own)."""
    raw = raw if isinstance(raw, dict) else {}
    step, edits = raw.get("step"), raw.get("edits") or []
    out: dict[str, Any] = {"step": step, "edits": edits}
    said = status(dbg, run)
    start_fork = starter()
    if not said["can"] or start_fork is None:
        why = said["why"] or "the fork machinery is not loaded"
        return {**out, "outcome": "rejected", "line": f"cannot rewind: {why}"[:300]}
    agent: Any = os.environ.get(AGENT_ENV) or _builds(dbg, run)[0][0]
    rec.writer.flush()  # (the fork reads the record up to this pause)
    try:
        got = start_fork(db=dbg._db or default_db(), run_id=run.id, step=step,
                         edits=edits, agent=agent, is_async=is_async)
    except LooptraceError as exc:
        return {**out, "outcome": "rejected", "line": f"cannot rewind: {exc}"[:300]}
    fork = got.get("run")
    named = f"run {str(fork)[:12]}" if fork else f"a new run (rerun_token {got.get('token')})"
    return {**out, **got, "outcome": "rewound",
            "line": f"rewound to step {step} as {named}; this run stays paused here"}
