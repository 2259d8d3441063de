"""What if: rerun a recorded run from its record, or fork it at a step with an edit.

``rerun(run_id, agent=factory, db=path)`` runs the user's agent again on the
run's recorded input, with ``RerunMiddleware`` outermost (``tracer.whatif.player``): every
model call whose request matches the record is answered from it, every tool call
with its recorded result, every pause with the recorded human decision. The agent's
own tracer records the rerun as a new run whose ``runs.metadata`` names the run it
reruns (``rerun_of``) and, for a fork, ``forked_from`` (run, step, edit).

With ``at=STEP`` and an ``Edit``, the steps before STEP come from the record; at the
first call at or after STEP the edit is made, and from the first request that no
longer matches the record, calls go to the agent's own model and tools (or, with
``offline=``, to that chat model instead of the agent's).

The factory: a function whose ``middleware`` parameter defaults to the agent's
middleware list (the tracer in it as usual). looptrace calls it with that list, the
rerun layer first (and, for a middleware edit, one removed or moved)::

    trace = TraceMiddleware(db="looptrace.db")

    def make_agent(middleware=(trace,)):
        return create_agent(model, tools, middleware=list(middleware))

Bad input (a factory that cannot be imported, a run without recorded input, a step
out of range, an edit naming a message the step does not have, a record of an older
schema) raises ``RerunError`` before the agent runs: nothing is written. The record
is read only: the original run is never changed.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tracer.errors import RerunDiverged, RerunError
from tracer.read.loader import TraceDB
from tracer.record.edit_apply import apply_stack, chat_model
from tracer.vocab.edits import KINDS, Edit
from tracer.vocab.words import plural

from .cassette import Cassette, ModelCall, ToolCall
from .player import RerunMiddleware, Session, Stats
from .tool_writes import channels_of

__all__ = ["EDIT_KINDS", "Edit", "RerunDiverged", "RerunError", "RerunResult", "arerun",
           "load_factory", "rerun"]

# edit kind -> what it changes (the kinds a fork makes: ``tracer.vocab.edits.KINDS``)
EDIT_KINDS: dict[str, str] = {k.name: k.help for k in KINDS.values() if k.fork}


def chat_model_problem(model: Any) -> str | None:
    """Why ``model`` is not a chat model a fork can swap in (None: it is one, a
    LangChain ``BaseChatModel``): ``os:sep`` named a string, and the fork ran on into an
    error run, exit 0."""
    from langchain_core.language_models import BaseChatModel

    if isinstance(model, BaseChatModel):
        return None
    shown = repr(model)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return f"{type(model).__name__} {shown} is not a BaseChatModel"


def _live_from(live: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where the rerun went live, as its JSON says it: the record's step counted from 1
    (``step``), not the player's 0-based ``index``."""
    if live is None:
        return None
    index = live.get("index")
    return {"call": live.get("call"), "step": None if index is None else int(index) + 1,
            "why": live.get("why")}


@dataclass
class RerunResult:
    """What a rerun did: the run it recorded, what it served from the record and
    where its live part began (``stats``), and the agent's own exception if it
    ended with one (as its record may have)."""

    run_id: str
    of: str
    at: int | None
    edit: Edit | None
    stats: Stats
    error: str | None = None
    seconds: float = 0.0
    record_calls: int = 0  # the model calls the record holds (the run and its subagents)
    record_tokens: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        s = self.stats
        return {"run": self.run_id, "of": self.of, "at": self.at,
                "edit": self.edit.to_json() if self.edit else None, "error": self.error,
                "served": {"model_calls": s.model_calls, "tokens": s.tokens,
                           "seconds": round(s.seconds, 3), "tool_calls": s.tool_calls},
                "subagent_calls": s.subagent_calls,
                "live": {"model_calls": s.live_model_calls, "tool_calls": s.live_tool_calls,
                         "from": _live_from(s.live_from),
                         "unrecorded_model_calls": s.unrecorded_model_calls,
                         "why": dict(s.live_why)},
                "record": {"model_calls": self.record_calls, "tokens": self.record_tokens},
                "seconds": round(self.seconds, 3)}

    def summary(self) -> str:
        s = self.stats
        what = "forked" if self.edit is not None else "rerun"
        lines = [f"{what} {self.of} as {self.run_id}"
                 + (f" at step {self.at} ({self.edit.describe()})" if self.edit else "")]
        lines.append(f"  from the record: {s.model_calls} of {plural(self.record_calls, 'model call')} "
                     f"({plural(s.tokens, 'token')}, {s.seconds:.2f} s as recorded), "
                     f"{plural(s.tool_calls, 'tool call')}")
        live = (f"{plural(s.live_model_calls, 'model call')}, "
                f"{plural(s.live_tool_calls, 'tool call')} live")
        if s.live_from is not None:
            where = f"model call {s.live_from['call']}"
            if s.live_from.get("index") is not None:
                where += f" (step {s.live_from['index'] + 1} of the record)"
            lines.append(f"  live from {where}: {s.live_from['why']}; {live}")
        elif s.live_model_calls or s.live_tool_calls:  # (said only when something ran live)
            # why each ran, as the rerun found it (none given: no parenthesis)
            why = "; ".join(w if n == 1 and len(s.live_why) == 1 else f"{w}: {n}"
                            for w, n in s.live_why.items())
            lines.append(f"  {live}" + (f" ({why})" if why else ""))
        else:
            lines.append("  nothing ran live: every model and tool call came from the record")
        if s.subagent_calls:
            lines.append(f"  {plural(s.subagent_calls, 'subagent call')} ran, their model and "
                         "tool calls served from their own records")
        if s.unrecorded_model_calls:
            lines.append(f"  {plural(s.unrecorded_model_calls, 'model call')} the record "
                         "does not hold "
                         "(made inside a node hook, such as a summariser's) ran")
        if self.error:
            lines.append(f"  the agent ended with {self.error}")
        lines.extend("  " + n for n in self.notes)
        return "\n".join(lines)


# -- the factory -------------------------------------------------------------------


def load_factory(spec: str) -> Any:
    """``module:attr`` (a module on ``sys.path`` or the current folder) -> the factory."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        msg = f"--agent {spec!r}: expected module:factory (e.g. my_agent:make_agent)"
        raise RerunError(msg)
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # noqa: BLE001 - whatever the user's module raises
        msg = f"cannot import the agent factory {spec!r}: {type(exc).__name__}: {exc}"
        raise RerunError(msg) from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        msg = f"cannot import the agent factory {spec!r}: {module} has no {attr!r}"
        raise RerunError(msg) from None


def default_stack(factory: Any) -> list[Any]:
    """The factory's own middleware list (the default of its ``middleware`` parameter)."""
    if not callable(factory):
        msg = f"the agent factory {factory!r} is not callable"
        raise RerunError(msg)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    p = params.get("middleware")
    if p is None or not isinstance(p.default, (list, tuple)):
        name = getattr(factory, "__name__", repr(factory))
        msg = (f"the agent factory {name} must take middleware= with the agent's middleware "
               "list as its default (looptrace puts its rerun layer first in it)")
        raise RerunError(msg)
    return list(p.default)


# -- checking a fork before anything runs -----------------------------------------


def _check(cassette: Cassette, at: int | None, edit: Edit | None) -> None:
    n = len(cassette.replay.steps)
    if edit is not None and at is None:
        at = 1
    if at is not None and not 1 <= at <= n:
        msg = f"step {at} is out of range: run {cassette.root.id[:12]} has steps 1 to {n}"
        raise RerunError(msg)
    if edit is None or at is None or edit.everywhere:
        return
    root = cassette.root.id
    if edit.on_model:
        call: ModelCall | None = next((c for c in cassette.model_calls.get(root, [])
                                       if max(c.index, c.end) >= at - 1 and c.hook != "model"),
                                      None)
        if call is None:
            msg = f"no model call at or after step {at} to make the edit at"
            raise RerunError(msg)
        count = len(call.request.messages)
        if edit.position is not None:
            top = count if edit.kind == "insert" else count - 1
            if not 0 <= edit.position <= top:
                msg = (f"the model call at step {call.index + 1} was sent "
                       f"{plural(count, 'message')} "
                       f"(positions 0 to {count - 1}): there is no message {edit.position}")
                raise RerunError(msg)
    else:
        tcall: ToolCall | None = next((c for c in cassette.tool_calls.get(root, [])
                                       if max(c.index, c.end) >= at - 1), None)
        if tcall is None:
            msg = f"no tool call at or after step {at} to make the edit at"
            raise RerunError(msg)


# -- running ---------------------------------------------------------------------


def _prepare(run_id: str, agent: Any, db: str, at: int | None, edit: Edit | None,
             offline: Any, continue_live: bool, token: str | None = None,
             more: tuple[Edit, ...] = (), rewind: bool = False,
             ) -> tuple[Session, Any, dict[str, Any], str]:
    # (the record is read and checked before the user's module is imported: a module
    # that makes its tracer on import must not touch a file that cannot be rerun)
    with TraceDB(db) as tdb:
        cassette = Cassette.load(tdb, run_id)
    if not cassette.input:
        msg = f"run {cassette.root.id[:12]} has no recorded input to rerun it from"
        raise RerunError(msg)
    if edit is not None and at is None:
        at = 1
    _check(cassette, at, edit)
    if edit is not None:
        edit = _fork_model(edit)
    more = tuple(_fork_model(e) for e in more)
    if isinstance(agent, str):
        agent = load_factory(agent)
    stack = default_stack(agent)
    if edit is not None:
        stack = apply_stack(stack, edit)
    session = Session(cassette, edit=edit, fork_index=None if at is None else at - 1,
                      offline=offline, continue_live=continue_live, more=more)
    token = token or uuid.uuid4().hex
    meta: dict[str, Any] = {"rerun_of": cassette.root.id, "rerun_token": token}
    if edit is not None or rewind:
        meta["forked_from"] = {"run": cassette.root.id, "step": at,
                               "edit": edit.to_json() if edit is not None else None}
        if more:
            meta["forked_from"]["edits"] = [e.to_json() for e in (edit, *more) if e]
        if rewind:  # (a rewind at a pause: tracer.whatif.rewind)
            meta["forked_from"]["rewind"] = True
    config: dict[str, Any] = {"metadata": meta}
    if cassette.thread_id:
        config["configurable"] = {"thread_id": f"looptrace-rerun-{token[:16]}"}
    if not _has_tracer(stack):  # (a factory without TraceMiddleware: one writing to db)
        from tracer.record.middleware import TraceMiddleware

        stack = [TraceMiddleware(db=db), *stack]
    try:
        built = agent(middleware=[RerunMiddleware(session), *stack])
    except RerunError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's factory
        msg = f"the agent factory failed: {type(exc).__name__}: {exc}"
        raise RerunError(msg) from None
    session.channels = channels_of(built)
    return session, built, config, token


def _has_tracer(stack: list[Any]) -> bool:
    """Whether a middleware of ``stack`` is a tracer (``TraceMiddleware``, lean or not,
    named or not). One writing to another file is the user's choice: ``rerun``
    then says that no run was recorded into the database."""
    return any(hasattr(m, "callback_handler") and getattr(m, "recorder", None) is not None
               for m in stack)


def _inputs(session: Session) -> Any:
    from langchain_core.messages import messages_from_dict

    return {"messages": messages_from_dict(session.cassette.input)}


def _resume(value: Any) -> Any:
    from langgraph.types import Command

    return Command(resume=value)


def _paused(result: Any) -> bool:
    return isinstance(result, dict) and bool(result.get("__interrupt__"))


def _finish(session: Session, db: str, token: str, of: str, at: int | None,
            edit: Edit | None, error: str | None, t0: float) -> RerunResult:
    from tracer.db.writer import flush_all

    flush_all()
    with TraceDB(db) as tdb:
        rows = tdb.query("SELECT id FROM runs WHERE parent_id IS NULL AND metadata LIKE ?",
                         [f"%{token}%"])
    if not rows:
        msg = (f"the agent recorded no run into {db}: its TraceMiddleware must write to the "
               "file the run was read from")
        raise RerunError(msg)
    c = session.cassette
    calls = [m for ms in (*c.model_calls.values(), *c.hook_calls.values()) for m in ms]
    return RerunResult(str(rows[0][0]), of, at, edit, session.stats, error,
                        time.perf_counter() - t0, len(calls), sum(m.tokens for m in calls))


def rerun(run_id: str, *, agent: Any, db: str | Path = "looptrace.db",
               at: int | None = None, edit: Edit | None = None, offline: Any = None,
               continue_live: bool = False, token: str | None = None,
               more: tuple[Edit, ...] = (), rewind: bool = False) -> RerunResult:
    """Rerun run ``run_id`` of ``db`` through ``agent`` (a factory, or ``module:attr``),
    or fork it at step ``at`` (counted from 1, as the replay shows it) with ``edit``.
    ``token`` (default: a new one) is kept as the new run's ``rerun_token`` metadata:
    a caller that runs this in another process finds the run by it while it records.

    ``more``: model-call edits made after ``edit`` at the same call; ``rewind``: a
    rewind at a pause (``tracer.whatif.rewind``): the debugger keeps quiet before the
    fork step, and the fork is marked so.

    Raises ``RerunError`` for bad input (nothing written) and ``RerunDiverged`` when
    the agent asks for something the record does not hold before the fork (unless
    ``continue_live``; the rerun is then recorded up to there, ended by it).
    """
    db = str(db)
    session, built, config, token = _prepare(run_id, agent, db, at, edit, offline,
                                             continue_live, token, more, rewind)
    from .player import install, serve, stop, uninstall

    _quiet_before_fork(session, rewind)

    t0 = time.perf_counter()
    error: str | None = None
    install()
    ctx = serve(session)
    try:
        result = built.invoke(_inputs(session), config=config)
        for value in session.cassette.resumes:
            if not _paused(result):
                break
            result = built.invoke(_resume(value), config=config)
    except RerunDiverged:
        _finish_quietly()
        raise
    except Exception as exc:  # noqa: BLE001 - the agent's own failure, as recorded
        error = f"{type(exc).__name__}: {exc}"
    finally:
        stop(ctx)
        uninstall()
    at_ = at if edit is None or at is not None else 1
    return _finish(session, db, token, session.cassette.root.id, at_, edit, error, t0)


async def arerun(run_id: str, *, agent: Any, db: str | Path = "looptrace.db",
                      at: int | None = None, edit: Edit | None = None, offline: Any = None,
                      continue_live: bool = False, token: str | None = None,
                      more: tuple[Edit, ...] = (), rewind: bool = False) -> RerunResult:
    """``rerun`` through the agent's async API (``ainvoke``); the file is read in a
    worker thread, so nothing blocks the event loop."""
    db = str(db)
    session, built, config, made = await asyncio.to_thread(
        _prepare, run_id, agent, db, at, edit, offline, continue_live, token, more, rewind)
    from .player import install, serve, stop, uninstall

    _quiet_before_fork(session, rewind)

    t0 = time.perf_counter()
    error: str | None = None
    install()
    ctx = serve(session)
    try:
        result = await built.ainvoke(_inputs(session), config=config)
        for value in session.cassette.resumes:
            if not _paused(result):
                break
            result = await built.ainvoke(_resume(value), config=config)
    except RerunDiverged:
        await asyncio.to_thread(_finish_quietly)
        raise
    except Exception as exc:  # noqa: BLE001
        error = f"{type(exc).__name__}: {exc}"
    finally:
        stop(ctx)
        uninstall()
    at_ = at if edit is None or at is not None else 1
    return await asyncio.to_thread(_finish, session, db, made, session.cassette.root.id,
                                   at_, edit, error, t0)


def _quiet_before_fork(session: Session, rewind: bool) -> None:
    """A rewind: the debugger of this context pauses from the fork step on only."""
    if rewind:
        from tracer.record.rebuild import BEFORE_FORK

        BEFORE_FORK.set(lambda: session.before_fork)


def _finish_quietly() -> None:
    from tracer.db.writer import flush_all

    flush_all()


def edit_from_json(text: str) -> Edit:
    """An ``Edit`` from its JSON form (``Edit.to_json``), as the app passes it on."""
    return Edit.of(text)


def _fork_model(edit: Edit) -> Edit:
    """A model edit with its chat model made (an ``init_chat_model`` name, ``offline``)
    and checked before anything runs: ``RerunError`` for what is not one."""
    if edit.kind != "model":
        return edit
    model = edit.model
    if isinstance(model, str):
        try:
            model = chat_model(model)
        except Exception as exc:  # noqa: BLE001 - an unknown provider, a missing package
            msg = f"the model edit needs a chat model: {type(exc).__name__}: {exc}"
            raise RerunError(msg.splitlines()[0]) from None
    problem = chat_model_problem(model)
    if problem:
        msg = f"the model edit needs a chat model: {problem}"
        raise RerunError(msg)
    return replace(edit, model=model)
