"""Rewind: a fork of a paused run from its step K, run live in the agent's process.

A pause answered ``rewind`` (``tracer.debug.channel.rewind``, made by
``tracer.debug.rewind`` in the agent's process) starts here: the paused run's agent
is built again (the factory ``looptrace debug --agent`` names, or the ``create_agent``
call ``looptrace debug`` saw: ``tracer.record.rebuild.Build``) with the rerun layer
first, and run in a thread of its own on the paused run's input (``rerun``, or
``arerun`` on an event loop of its own when the paused run is async): the steps
before K come from the record with no model or tool call, the edits are made at the
first call at or after K, and from there it runs live, with the same breakpoints (its
debugger keeps quiet before K: ``tracer.record.rebuild.BEFORE_FORK``). The record ends
at the pause: what comes after it runs live (``continue_live``).

Why in the agent's process, and not by launching the command again: the objects the
script gave ``create_agent`` (its model, tools, prompt, middleware) are there, as the
script made them; launching the command again would run the script's other work
again, and which of its invocations to fork is not knowable from outside.

The fork is recorded as any fork (``runs.metadata.forked_from`` with ``rewind``:
true; several edits: ``edits``): the app's fork links, ``looptrace runs`` and
``show`` list it.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import uuid
from typing import Any

from tracer.errors import RerunError
from tracer.read.loader import TraceDB
from tracer.record.rebuild import Build
from tracer.vocab.edits import Edit

from .cassette import Cassette
from .rerun import _check, arerun, load_factory, rerun

__all__ = ["check", "start"]

WAIT_S = 30.0  # how long the pause waits for the fork's run to be recorded


def _edits(edits: Any) -> tuple[Edit | None, tuple[Edit, ...]]:
    made = [Edit.of(e) for e in edits or ()]
    return (made[0] if made else None), tuple(made[1:])


def check(db: str, run_id: str, step: int, edits: Any = ()) -> None:
    """A rewind of ``run_id`` to ``step`` with ``edits``, checked against the record
    (``RerunError``, one line: a step out of range, no call at or after it to make
    the edit at, a message position the request there does not have)."""
    first, _more = _edits(edits)
    with TraceDB(db) as tdb:
        cassette = Cassette.load(tdb, run_id)
    if not cassette.input:
        msg = f"run {cassette.root.id[:12]} has no recorded input to rewind it from"
        raise RerunError(msg)
    _check(cassette, step, first)


def _factory(agent: Any, db: str) -> Any:
    """The factory ``rerun`` takes: ``module:factory``, or one from a ``Build``
    (the script's middleware, and a tracer into ``db`` last if it had none)."""
    if isinstance(agent, str):
        return load_factory(agent)
    if isinstance(agent, Build):
        if any(hasattr(m, "callback_handler") and getattr(m, "recorder", None) is not None
               for m in agent.middleware):
            return agent.factory()
        from tracer.record.middleware import TraceMiddleware

        stack = (*agent.middleware, TraceMiddleware(db=db))
        build = Build(agent.create, agent.args, agent.kwargs, stack)
        return build.factory()
    return agent


def start(*, db: str, run_id: str, step: int, edits: Any = (), agent: Any,
          is_async: bool = False) -> dict[str, Any]:
    """Start the rewind in a thread of its own; ``{"token", "run"}`` once its run is
    recorded (``run`` None if it was not within ``WAIT_S``). ``RerunError`` (one line)
    for what cannot be rewound: nothing runs then."""
    check(db, run_id, step, edits)
    first, more = _edits(edits)
    factory = _factory(agent, db)
    token = uuid.uuid4().hex
    box: dict[str, Any] = {}
    kw: dict[str, Any] = {"agent": factory, "db": db, "at": step, "edit": first,
                          "more": more, "continue_live": True, "token": token,
                          "rewind": True}

    def go() -> None:
        try:
            if is_async:
                box["result"] = asyncio.run(arerun(run_id, **kw))
            else:
                box["result"] = rerun(run_id, **kw)
        except RerunError as exc:
            box["error"] = exc
        except Exception as exc:  # noqa: BLE001 - said on stderr: the paused run goes on
            box["error"] = exc
            print(f"looptrace debug: the rewound run of {run_id[:12]} failed: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)

    thread = threading.Thread(target=go, name=f"looptrace-rewind-{token[:8]}")
    thread.start()
    fork = _wait_for_run(db, token, thread, box)
    return {"token": token, "run": fork}


def _wait_for_run(db: str, token: str, thread: threading.Thread,
                  box: dict[str, Any]) -> str | None:
    """The fork's run id once it is recorded; ``RerunError`` if the fork failed
    before recording one."""
    from tracer.db import writer as store

    end = time.monotonic() + WAIT_S
    while time.monotonic() < end:
        for w in list(store._writers.values()):
            w.flush()
        with TraceDB(db) as tdb:
            rows = tdb.query("SELECT id FROM runs WHERE parent_id IS NULL AND metadata LIKE ?",
                             [f"%{token}%"])
        if rows:
            return str(rows[0][0])
        if not thread.is_alive():
            err = box.get("error")
            if isinstance(err, RerunError):
                raise err
            return None
        time.sleep(0.05)
    return None
