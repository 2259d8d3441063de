"""The debugger inside the agent's process: ``TraceMiddleware(debug=...)`` holds one.

At each hook firing the middleware asks it (one ``is None`` check when no debugger is
armed). It decides whether the firing is a breakpoint (the breakpoints armed in code
or by ``LOOPTRACE_DEBUG``, those armed from outside in the database, read again
whenever the file changed since the last firing: ``PRAGMA data_version``, a memory
read; and the run's own step / next-lap / run-to-end state); when it is, it records a ``pause`` event, writes the pause with what is
pending to the channel (``tracer.debug.channel``) and waits for the answer: a sync
agent in its own thread (sleeping between polls, never spinning), an async agent in
a worker thread its task awaits (the event loop and the other runs go on). The answer
is recorded as a ``debug`` event (the command, and an edit with what it changed:
before and after), and the edit is made; an edit that cannot be made is recorded and
the run pauses again at the same place.

A pause nobody answers continues after ``timeout`` seconds (None: it waits), and the
record says so. A pause is let go on its own (``released``: the run goes on to its
end, pausing no more) when the ``looptrace debug`` that started the agent is gone
(``LOOPTRACE_DEBUG_OWNER``) or its database file is; a pause whose call was cancelled
(an async parallel tool call) is closed as ``cancelled`` and can no longer be
answered. A database busy for longer than ``BUSY_S`` is warned about and waited for:
the debugger never kills the run it debugs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import json
import math
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tracer.db.schema import connect
from tracer.db.url import default_db
from tracer.errors import DebugAborted, DebugRaised, LooptraceError
from tracer.record.rebuild import quiet
from tracer.vocab.content import content_text
from tracer.vocab.edits import describe_json
from tracer.vocab.records import tool_name

from . import channel, frames, owner, rewind
from .breakpoints import Breakpoint, Moment, parse, parse_all
from .findings import FindingWatch, with_reply

__all__ = ["DebugAborted", "Debugger", "aimessage_of", "arm", "from_env", "in_thread", "message_json",
           "request_json", "tool_call_json"]

ENV = "LOOPTRACE_DEBUG"
ENV_TIMEOUT = "LOOPTRACE_DEBUG_TIMEOUT"
SERVER_TIMEOUT = 600.0  # a server armed through LOOPTRACE_DEBUG continues after this
POLL_S = 0.02  # how often a paused run asks for its answer
# PostgreSQL: a paused run is woken by its answer's NOTIFY (tracer.debug.wake) and asks
# again after this anyway; the breakpoints are read again after a NOTIFY, or this long
PG_WAIT_S = 0.2
PG_REREAD_S = 5.0
WATCH_S = 0.5  # how often a paused run asks whether its debugger and its file are there
BUSY_S = 10.0  # a busy database: wait this long, then warn and try again
# characters of one message's text in the pending JSON (a longer one is cut, marked
# ``text_cut``: its editors refuse to start from it)
CUT = 1_000_000
# set (by ``in_thread``) when the task awaiting a pause is cancelled
_CANCELLED: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "looptrace_debug_cancelled", default=None)


@dataclass
class _RunDebug:
    """One run's debugging state."""

    model_calls: int = 0
    step: bool = False  # pause at its next hook firing
    lap_target: int | None = None  # pause at the model call of this lap
    done: bool = False  # run to the end: no more pauses
    findings: FindingWatch = field(default_factory=FindingWatch)  # each finding once
    # edits marked from_now_on (tracer.vocab.edits): made again at every later model call
    sticky: list[dict[str, Any]] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)  # spec -> its place reached


@dataclass
class _Answer:
    pause_id: int
    command: str
    edit: dict[str, Any] | None
    waited: float
    timed_out: bool = False
    ended: str | None = None  # released / cancelled: nobody answered, and nobody will


class Debugger:
    """Breakpoints and pauses for the runs one ``TraceMiddleware`` records.

    Args:
        breaks: breakpoint specs (``tracer.debug.breakpoints``) or parsed breakpoints;
            empty: none yet (breakpoints armed from the app, the CLI or MCP still hit).
        timeout: seconds a pause waits for an answer before the run continues (None:
            it waits for ever).
    """

    def __init__(self, breaks: Any = (), *, timeout: float | None = None) -> None:
        from tracer.checks.run import RULES

        self.rules = tuple(RULES)
        self.breaks: list[Breakpoint] = parse_all(breaks, rules=self.rules)
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, (int, float))
                                    or math.isnan(timeout) or timeout < 0):
            msg = f"debug timeout must be a number of seconds from 0, not {timeout!r}"
            raise LooptraceError(msg)
        self.timeout = None if timeout is None or math.isinf(timeout) else float(timeout)
        self.owner = os.environ.get(owner.ENV) or None  # the looptrace debug that started us
        self._runs: dict[str, _RunDebug] = {}
        self._remote: list[tuple[int, Breakpoint, str | None, str | None, str | None,
                                 bool]] = []
        self._live = self._remote  # those whose owner lives, at this hook firing
        self._version: int | None = None  # PRAGMA data_version when the breaks were read
        self._read_at = 0.0  # (monotonic) when they were read
        self._waker: Any = None  # PostgreSQL: tracer.debug.wake.Waker
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._db: str | None = None
        self._warned: set[str] = set()
        self._holders: list[weakref.ref[Any]] = []  # the tracers holding it (a rewind's)

    def hold(self, middleware: object) -> None:
        """``middleware`` (a ``TraceMiddleware``) holds this debugger: a rewind builds
        its agent again from the call it keeps (``tracer.record.rebuild``)."""
        with contextlib.suppress(TypeError):
            self._holders.append(weakref.ref(middleware))

    def holders(self) -> list[Any]:
        return [m for m in (r() for r in self._holders) if m is not None]

    # -- the channel's connection -----------------------------------------------------
    def bind(self, db: str | Path) -> None:
        self._db = str(db)

    def _wake(self) -> Any:
        """The store's listening connection (None: a SQLite file)."""
        if self._waker is None and self._db is not None:
            from tracer.db.url import is_url

            if is_url(self._db):
                from .wake import Waker

                self._waker = Waker(self._db)
        return self._waker

    def _c(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self._db or default_db(), busy_timeout=BUSY_S)
        return self._conn

    def _busy(self, fn: Callable[[sqlite3.Connection], Any]) -> Any:
        """``fn(connection)``, waited for while the file is busy (warned once): a lock
        another process holds never ends the run."""
        while True:
            try:
                with self._lock:
                    conn = self._c()
                    try:
                        return fn(conn)
                    finally:
                        _end_read(conn)
            except sqlite3.OperationalError as exc:
                text = str(exc).lower()
                if "locked" not in text and "busy" not in text:
                    raise
                self._warn("busy", f"looptrace debug: the database is busy ({exc}); "
                           "waiting for it")
                time.sleep(POLL_S)

    # -- deciding -------------------------------------------------------------------
    def state(self, run: Any) -> _RunDebug:
        rd = self._runs.get(run.id)
        if rd is None:
            rd = self._runs[run.id] = _RunDebug()
        return rd

    def moment(self, run: Any, hook: str, at: str, messages: Any = None, **kw: Any) -> Moment:
        """The moment ``hook`` fires ``at``; ``messages``: the conversation there (the
        run's tokens so far are its replies' usage)."""
        rd = self.state(run)
        if hook == "wrap_model_call" and at == "before":
            rd.model_calls += 1
        used = usage_of(messages) if messages is not None else None
        if used is None:
            used = list(getattr(run, "tokens", None) or (0, 0, 0))
        m = Moment(hook, at, lap=int(run.lap or 0), model_call=rd.model_calls,
                   tokens=int(used[2] or 0), **kw)
        taken: list[set[str]] = []

        def findings() -> set[str]:  # (the new ones, taken by the first moment that asks)
            if not taken:
                taken.append(rd.findings.take())
            return taken[0]

        m.findings = findings
        m.cost = lambda: run_cost(run, used)
        return m

    @staticmethod
    def _sees_findings(m: Moment) -> bool:
        """Whether the findings are looked for at ``m``: before a call, and after the
        model answered (its reply may make one, and the run may end before the next)."""
        return m.at == "before" or (m.hook == "wrap_model_call" and m.at == "after")

    def io_due(self, m: Moment) -> bool:
        """Whether deciding on ``m`` needs the database first (run it off the loop): at
        every hook firing, so that a breakpoint armed or cleared from outside applies to
        the next one (``refresh``: a memory read, unless the file changed)."""
        return True

    def check_layers(self, mw: Any) -> None:
        """Say once, on stderr, each ``layer:NAME`` breakpoint that cannot hit in the
        agent of ``mw`` (a ``TraceMiddleware``): NAME is no middleware it wraps with
        ``trace.around``."""
        specs = [b for b in self.breaks if b.kind == "layer"] + [
            r[1] for r in self._remote if r[1].kind == "layer"]
        if not specs:
            return
        layers = [str(x) for x in getattr(mw, "_around", None) or () if x != mw.name]
        for b in specs:
            key = f"layer:{id(mw)}:{b.spec}"
            if b.value in layers or key in self._warned:
                continue
            self._warned.add(key)
            import sys

            print(f"looptrace debug: breakpoint {b.spec} cannot hit in this agent: "
                  f"{b.value!r} is not a middleware wrapped with trace.around (wrapped: "
                  f"{', '.join(layers) or 'none'})", file=sys.stderr)

    def finding_armed(self) -> bool:
        """Whether a ``finding:`` breakpoint is armed (here or from outside)."""
        return any(b.kind == "finding" for b in self.breaks) or any(
            r[1].kind == "finding" for r in self._remote)

    def io(self, rec: Any, run: Any, m: Moment) -> None:
        """Open the channel and read the breakpoints armed from outside and, with a
        finding breakpoint armed, the findings the record shows now."""
        try:
            self.refresh()
            self._live = [r for r in self._remote if not owner.gone(r[4])]
            if self._sees_findings(m) and m.hook != "node" and self.finding_armed():
                self._findings(rec, run, m.reply)
        except (sqlite3.Error, LooptraceError, OSError) as exc:
            self._warn("io", f"looptrace debug: the channel cannot be read ({exc})")

    def refresh(self) -> None:
        """Read the breakpoints armed from outside again if the file changed since they
        were last read (``PRAGMA data_version``: a read of shared memory; the table is
        read only after a change), so that one armed or cleared applies to the next
        hook firing."""
        waker = self._wake()
        with self._lock:
            conn = self._c()
            if waker is not None:  # PostgreSQL: after a NOTIFY (or PG_REREAD_S)
                now = time.monotonic()
                if not waker.breaks_changed() and now - self._read_at < PG_REREAD_S:
                    return
                self._read_at = now
                version = 0
            else:
                version = int(conn.execute("PRAGMA data_version").fetchone()[0])
                if version == self._version:
                    return
            try:
                rows = channel.armed_breaks(conn)
            except sqlite3.Error:
                if waker is not None:
                    self._read_at = 0.0  # (read again at the next firing)
                raise
            finally:
                _end_read(conn)
            self._version = version
        fresh = []
        for bid, spec, rid, tid, own, only in rows:
            try:
                fresh.append((bid, parse(spec, rules=self.rules), rid, tid, own, only))
            except LooptraceError as exc:
                self._warn(f"bad-{bid}", str(exc))
        self._remote = fresh

    def _findings(self, rec: Any, run: Any, reply: Any = None) -> None:
        from tracer.checks.run import check_run
        from tracer.read.loader import TraceDB

        rd = self.state(run)
        rec.writer.flush()
        with TraceDB(self._db or "") as db:
            loaded = db.run(run.id)
        rd.findings.update(check_run(with_reply(loaded, reply)))

    def decide(self, run: Any, m: Moment) -> str | None:
        """Why ``m`` is a breakpoint of ``run`` (the spec that hit, ``step``, ``lap``), or
        None."""
        rd = self.state(run)
        if rd.done or quiet():
            return None  # (quiet: a rewound run's part served from the record, before K)
        into = frames.entered(run)  # (the first hook firing inside a call stepped into)
        if m.hook != "node":
            frames.hooked(run)
        if into is not None:
            return frames.into_reason(into)
        back = frames.back_reason(run, m)  # (a call stepped into, or out of, came back)
        if back is not None:
            return back
        if rd.lap_target is not None and m.hook == "wrap_model_call" and m.at == "before" \
                and m.lap >= rd.lap_target:
            return "next lap"
        if (rd.step or frames.stepping(run)) and (m.hook != "node" or (
                m.at != "after" and (not m.in_agent or frames.bare(run)))):
            return "step"  # (a plain graph's steps: before each node, and its errors)
        hit = None
        for b in self.breaks:
            if self._hits(rd, b, m) and hit is None:
                hit = b.spec
        if self._live:
            parent = getattr(getattr(run, "parent", None), "id", None)
            for _bid, b, rid, tid, own, only in self._live:
                if rid is not None and rid not in (run.id, parent):
                    continue
                if tid is not None and tid != run.thread_id:
                    continue
                if only and own != self.owner:
                    continue  # (armed at the prompt of a looptrace debug for its own agents)
                if self._hits(rd, b, m) and hit is None:
                    hit = b.spec
        return hit

    @staticmethod
    def _hits(rd: _RunDebug, b: Breakpoint, m: Moment) -> bool:
        """``b`` stops at ``m``; its place reached counts as a hit (``hits`` of its
        condition) whether or not its condition holds."""
        if not b.at(m):
            return False
        n = rd.hits[b.spec] = rd.hits.get(b.spec, 0) + 1
        return b.cond is None or b.cond.holds(m, n)

    # -- pausing ----------------------------------------------------------------------
    def _pause(self, rec: Any, run: Any, mw: str, m: Moment, reason: str,
               pending: dict[str, Any], tcid: str | None) -> _Answer:
        """Record the pause, write it to the channel, wait for the answer (blocking)."""
        small = {"at": m.at, "reason": reason, "pending_kind": pending.get("kind")}
        if m.node is not None:
            small["node"] = m.node
        if pending.get("tool_call"):
            small["tool_call"] = pending["tool_call"]
        seq = rec.event(run, m.hook, "pause", middleware=mw, tool_call_id=tcid, payload=small)
        rec.writer.flush()
        red = getattr(rec.writer, "redactor", None)
        if red is not None and getattr(red, "enabled", True):
            pending = json.loads(red(json.dumps(pending, default=str)))
        pending = {**pending, "rewind": rewind.status(self, run)}
        cancelled = _CANCELLED.get()
        pid = self._busy(lambda c: channel.open_pause(
            c, run_id=run.id, seq=seq, hook=m.hook, at=m.at, reason=reason, pending=pending,
            owner=self.owner))
        waker = self._wake()
        if waker is not None:
            waker.expect(pid)
        try:
            return self._wait(pid, cancelled, waker)
        finally:
            if waker is not None:
                waker.forget(pid)

    def _wait(self, pid: int, cancelled: threading.Event | None, waker: Any) -> _Answer:
        """Wait for pause ``pid``'s answer: a SQLite file asked every ``POLL_S``; a
        PostgreSQL store woken by its NOTIFY (asked again every ``PG_WAIT_S``)."""
        t0 = time.monotonic()
        deadline = None if self.timeout is None else t0 + self.timeout
        file = self._file()
        watched = t0
        while True:
            got = self._busy(lambda c: channel.poll(c, pid))
            now = time.monotonic()
            if got is not None:
                return _Answer(pid, got[0], got[1], now - t0)
            if cancelled is not None and cancelled.is_set():
                return _Answer(pid, "continue", None, now - t0, ended="cancelled")
            if deadline is not None and now >= deadline:
                return _Answer(pid, "continue", None, now - t0, timed_out=True)
            if now - watched >= WATCH_S:
                watched = now
                gone = self._gone(file)
                if gone is not None:
                    self._warn(f"released-{gone}", f"looptrace debug: {gone}; the paused "
                               "run goes on to its end")
                    return _Answer(pid, "run", None, now - t0, ended="released")
            if waker is not None:
                wait = PG_WAIT_S if deadline is None else max(0.0, min(PG_WAIT_S,
                                                                       deadline - now))
                waker.wait(pid, wait)
            else:
                time.sleep(POLL_S)

    def _file(self) -> tuple[int, int] | None:
        """The database file's (device, inode), to notice it deleted or replaced."""
        try:
            st = os.stat(self._db or default_db())
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _gone(self, file: tuple[int, int] | None) -> str | None:
        """Why nobody can answer a pause any more (None: somebody still can)."""
        if self.owner is not None and owner.gone(self.owner):
            return "its looptrace debug is gone"
        if file is not None and self._file() != file:
            return "its database file is gone"
        return None

    def _close(self, rec: Any, run: Any, mw: str, m: Moment, ans: _Answer, outcome: str,
               tcid: str | None, **extra: Any) -> None:
        payload: dict[str, Any] = {"command": ans.command, "outcome": outcome,
                                   "waited_s": round(ans.waited, 3), **extra}
        if ans.timed_out:
            payload["timeout_s"] = self.timeout
        if ans.ended is not None:
            payload["ended"] = ans.ended
        if ans.edit is not None:
            payload["edit"] = ans.edit
            payload["change"] = describe_json(ans.edit)
        rec.event(run, m.hook, "debug", middleware=mw, tool_call_id=tcid, payload=payload)
        if ans.ended != "released" or self._file() is not None:
            with contextlib.suppress(sqlite3.Error):  # (a file gone: nothing to close)
                self._busy(lambda c: channel.close_pause(c, ans.pause_id, outcome,
                                                         ans.command))
        rd = self.state(run)
        # (a run stepped into steps as its Into says, whoever decides its hook firings)
        stepped_into = frames.answered(run, ans.command)
        rd.step = ans.command == "step" and not stepped_into
        if ans.command == "step" and m.hook == "wrap_tool_call" and m.at in ("before", "layer"):
            frames.mark_into(run, rd, m.call_id, m.tool)  # (into the graph it runs, if any)
        elif ans.command == "out":
            frames.out_to(run, m)
        if ans.command == "lap":
            rd.lap_target = int(run.lap or 0) + 1
        elif outcome != "rejected":
            rd.lap_target = None
        if ans.command == "run":
            rd.done = True

    def resolve(self, rec: Any, run: Any, mw: str, m: Moment, reason: str,
                pending: dict[str, Any], apply: Callable[[dict[str, Any] | None], Any],
                tcid: str | None = None) -> Any:
        """Pause, then go on as answered: ``apply(edit)`` returns (what the hook goes on
        with, before, after), ``apply(None)`` what it goes on with unchanged. Blocking:
        an async hook runs it in a worker thread."""
        if self._gone(None) is not None:
            return apply(None)  # (its looptrace debug is gone: nobody to answer)
        pending = frames.noted(pending, run, m, reason)
        while True:
            ans = self._pause(rec, run, mw, m, reason, pending, tcid)
            if ans.ended is not None:
                self._close(rec, run, mw, m, ans, ans.ended, tcid)
                return apply(None)
            if ans.command == "rewind":  # (a fork of this run; this one stays paused)
                said = rewind.start(self, rec, run, ans.edit,
                                     is_async=_CANCELLED.get() is not None)
                self._close(rec, run, mw, m, replace(ans, edit=None), said["outcome"], tcid,
                            rewind=said)
                reason = said["line"]
                continue
            if ans.command == "abort":
                self._close(rec, run, mw, m, ans, "aborted", tcid)
                rec.writer.flush()
                raise DebugAborted
            if ans.edit is None:
                self._close(rec, run, mw, m, ans, "timeout" if ans.timed_out else "continued",
                            tcid)
                return apply(None)
            try:
                out, before, after = apply(ans.edit)
            except (DebugRaised, DebugAborted):
                self._close(rec, run, mw, m, ans, "edited", tcid)
                raise
            except Exception as exc:  # noqa: BLE001 - said in the record, and paused again
                self._close(rec, run, mw, m, ans, "rejected", tcid, error=repr(exc)[:500])
                reason = f"the edit could not be made: {exc}"[:300]
                continue
            self._close(rec, run, mw, m, ans, "edited", tcid, before=before, after=after)
            return out

    def _warn(self, key: str, text: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        import warnings

        warnings.warn(text, RuntimeWarning, stacklevel=3)

    def close(self) -> None:
        if self._waker is not None:
            self._waker.close()
            self._waker = None
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None


def _end_read(conn: Any) -> None:
    """End the transaction a read began on a PostgreSQL connection: a paused agent's
    connection left idle in a transaction would hold its snapshot and its table locks
    for as long as it waits (a SQLite read holds nothing after it)."""
    if getattr(conn, "dialect", None) == "postgresql" and conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.commit()


def arm(debug: object, db: str) -> Debugger | None:
    """The debugger ``TraceMiddleware(debug=...)`` arms (``True``: one with no breakpoint
    yet; specs: one with those; a ``Debugger``), or ``LOOPTRACE_DEBUG``'s when ``debug``
    is None, bound to the middleware's file; None when neither asks for one."""
    if debug is False:
        return None
    dbg = from_env(dict(os.environ)) if debug is None else (
        debug if isinstance(debug, Debugger) else Debugger(debug))
    if dbg is not None:
        dbg.bind(db)
    return dbg


def from_env(env: dict[str, str]) -> Debugger | None:
    """The debugger ``LOOPTRACE_DEBUG`` arms (None when it is unset): its breakpoints
    (comma-separated specs, or ``1`` for none yet), waiting ``LOOPTRACE_DEBUG_TIMEOUT``
    seconds (default 600; ``none``: for ever)."""
    spec = env.get(ENV)
    if spec is None or spec.strip().lower() in ("0", "off", "false", "no"):
        return None
    raw = env.get(ENV_TIMEOUT, "").strip().lower()
    if raw in ("none", "never", "inf", "forever"):
        timeout: float | None = None
    elif raw:
        try:
            timeout = float(raw)
        except ValueError:
            timeout = math.nan
        if not (math.isfinite(timeout) and timeout >= 0):
            msg = f"{ENV_TIMEOUT}={raw!r} is not a number of seconds from 0 (or none)"
            raise LooptraceError(msg) from None
    else:
        timeout = SERVER_TIMEOUT
    return Debugger(_good_specs(spec), timeout=timeout)


def _good_specs(spec: str) -> Any:
    """The specs of ``LOOPTRACE_DEBUG`` that parse; each bad one is one line on stderr
    and is not armed (the user's ``TraceMiddleware()`` never raises for it)."""
    from tracer.checks.run import RULES

    from .breakpoints import split_specs

    if spec.strip().lower() in ("1", "on", "true", "yes", ""):
        return spec
    good = []
    for one in split_specs(spec):
        try:
            parse(one, rules=tuple(RULES))
        except LooptraceError as exc:
            import sys

            print(f"looptrace: {ENV}: {exc}; not armed", file=sys.stderr)
            continue
        good.append(one)
    return good


def usage_of(messages: Any) -> list[int] | None:
    """(input, output, total) tokens the replies among ``messages`` reported, or None
    when none did."""
    out = [0, 0, 0]
    seen = False
    for m in messages or ():
        u = getattr(m, "usage_metadata", None)
        if isinstance(u, dict):
            seen = True
            for i, k in enumerate(("input_tokens", "output_tokens", "total_tokens")):
                out[i] += int(u.get(k) or 0)
    return out if seen else None


def run_cost(run: Any, tokens: Any = None) -> float | None:
    """The run's cost so far in USD (its tokens so far priced for its model, as
    ``looptrace runs`` prices a call), or None when it cannot be priced."""
    tokens = tokens if tokens is not None else getattr(run, "tokens", None)
    model = getattr(run, "model", None)
    if not tokens or not model:
        return None
    from tracer.read.cost import default_prices

    total = default_prices().price({"input_tokens": tokens[0], "output_tokens": tokens[1]},
                                   str(model), getattr(run, "provider", None))[0]
    return float(total) if total is not None else None


# -- what is pending, as JSON ---------------------------------------------------------
def _text(content: Any) -> str:
    """A message's content as text (``content_text``), cut at ``CUT`` characters."""
    s = content_text(content)
    return s if len(s) <= CUT else s[:CUT] + f"... ({len(s) - CUT} more characters)"


def _over(content: Any) -> int:
    """How many characters of ``content``'s text ``_text`` cuts off."""
    return max(0, len(content_text(content)) - CUT)


def message_json(m: Any, position: int | None = None) -> dict[str, Any]:
    content = getattr(m, "content", "")
    out: dict[str, Any] = {"type": getattr(m, "type", "?"), "id": getattr(m, "id", None),
                           "text": _text(content)}
    if _over(content):
        out["text_cut"] = _over(content)
    if position is not None:
        out["position"] = position
    calls = getattr(m, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"name": c.get("name"), "args": c.get("args"), "id": c.get("id")}
                             for c in calls]
    if getattr(m, "tool_call_id", None):
        out["tool_call_id"] = m.tool_call_id
        out["status"] = getattr(m, "status", None)
        out["name"] = getattr(m, "name", None)
    return out


def request_json(request: Any) -> dict[str, Any]:
    system = getattr(request, "system_message", None)
    settings = getattr(request, "model_settings", None) or {}
    model = getattr(request, "model", None)
    out = {
        "kind": "model_request",
        "messages": [message_json(m, i) for i, m in enumerate(request.messages)],
        "system": _text(system.content) if system is not None else None,
        "tools": [tool_name(t) for t in (request.tools or [])],
        "settings": json.loads(json.dumps(settings, default=str)),
        "model": str(getattr(model, "model_name", None) or getattr(model, "model", None)
                     or type(model).__name__),
    }
    if system is not None and _over(system.content):
        out["system_cut"] = _over(system.content)
    return out


def tool_call_json(request: Any) -> dict[str, Any]:
    c = request.tool_call
    return {"name": c.get("name"), "args": c.get("args"), "id": c.get("id")}


def aimessage_of(response: Any) -> Any:
    from langchain_core.messages import AIMessage

    result = getattr(response, "result", None)
    msgs = list(result) if result is not None else [response]
    for m in msgs:
        if isinstance(m, AIMessage):
            return m
    return None


_POOL: list[concurrent.futures.ThreadPoolExecutor] = []
POOL_SIZE = 256  # pauses waiting at once (asyncio's own pool has cores + 4 threads)


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    """The debugger's threads: one per pause waiting (20 parallel tool calls paused at
    once do not wait for a thread, nor hold up the loop's other work)."""
    if not _POOL:
        _POOL.append(concurrent.futures.ThreadPoolExecutor(
            max_workers=POOL_SIZE, thread_name_prefix="looptrace-debug"))
    return _POOL[0]


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run a blocking step of the debugger off the event loop. If the awaiting task is
    cancelled (a parallel tool call whose sibling raised), a pause it is waiting in is
    closed as ``cancelled``: nobody can answer it any more."""
    cancelled = threading.Event()
    token = _CANCELLED.set(cancelled)
    try:
        ctx = contextvars.copy_context()
        out = await asyncio.get_running_loop().run_in_executor(
            _pool(), functools.partial(ctx.run, fn, *args))
        frames.carry(ctx)  # (a step into the call, answered in the worker)
        return out
    except asyncio.CancelledError:
        cancelled.set()
        raise
    finally:
        _CANCELLED.reset(token)

