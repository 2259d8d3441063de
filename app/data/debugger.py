"""The debugger (``tracer.debug``) as the app sees it: the runs paused now, the
breakpoints armed, and the controls (answer a pause, arm, clear, check an edit).

Read-only until a control is used. The debugger's modules are imported on first use
(``import app.data.debugger`` imports no LangChain).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from tracer.db.url import is_url
from tracer.errors import LooptraceError
from tracer.read.loader import RunSummary

__all__ = [
    "armed_for",
    "breakpoint_help",
    "debug_answer",
    "debug_arm",
    "debug_clear",
    "debug_rewind",
    "debug_validate",
    "next_pause_waiter",
    "paused_runs",
    "paused_status",
    "raised_lines",
    "shown_statuses",
    "stop_listening",
]

_wakers: dict[str, Any] = {}  # a PostgreSQL store's listening connection (one per store)
_wakers_lock = threading.Lock()
LISTEN_S = 2.0  # the first answer's wait for that connection to listen


def next_pause_waiter(path: str) -> Callable[[float], object]:
    """Before an answer is sent: a wait, up to the seconds it is given, for the agent's
    next pause. A PostgreSQL store's wait ends at the pause's NOTIFY (``tracer.debug.
    wake``, one listening connection per store for the app's life); a SQLite file's
    is a sleep (the agent polls its answer every 20 ms)."""
    if not is_url(path):
        return time.sleep
    from tracer.debug.wake import Waker

    with _wakers_lock:
        waker = _wakers.get(path)
        if waker is None:
            waker = _wakers[path] = Waker(path)
            waker.start()
            waker.listening.wait(LISTEN_S)  # (listening before the answer goes)
    waker.clear_paused()  # (a pause after this wakes the wait)
    return waker.wait_paused


def stop_listening() -> None:
    """End every wait for a pause now and close the listening connections (a later
    answer makes its store's again)."""
    with _wakers_lock:
        wakers = list(_wakers.values())
        _wakers.clear()
    for waker in wakers:
        waker.wake()
        waker.close()


def breakpoint_help() -> str:
    """The breakpoint field's help: every form, and SPEC if EXPR (the debugger is
    imported on first use: ``import app.data`` imports no LangChain)."""
    from tracer.debug.breakpoints import CONDITION_HELP, FORMS

    return ("A breakpoint for this run: " + "; ".join(
        f"{form}: {what}" for form, what in FORMS.values()) + ". " + CONDITION_HELP)


def paused_runs(path: str) -> list[dict[str, Any]]:
    """The runs paused in the debugger now (``tracer.debug.channel.list_paused``, with
    what each waits on), read now; none for a file the channel cannot read."""
    import sqlite3

    from tracer.debug.channel import list_paused

    try:
        return list_paused(path, with_pending=True)
    except (LooptraceError, sqlite3.Error, OSError, ValueError):
        return []


def paused_status(path: str) -> dict[str, str]:
    """{run id: "paused" or "paused at an error"} for the runs paused in the debugger now
    (``tracer.debug.channel.paused_status``: shown instead of the status recorded, which
    reads ``running``, or ``error`` while paused at an error); none for a file the
    channel cannot read."""
    import sqlite3

    from tracer.debug.channel import paused_status as status

    try:
        return status(path)
    except (LooptraceError, sqlite3.Error, OSError, ValueError):
        return {}


def shown_statuses(path: str, runs: list[RunSummary]) -> dict[str, str]:
    """{run id: the status to show}: "paused" (or "paused at an error") for a run paused
    in the debugger now, else the status recorded. The header, the run pickers and the
    replayer all read it, so they agree (issue 44: the picker said "running" beside a
    "paused" header)."""
    paused = paused_status(path) if any(r.status in ("running", "error") for r in runs) else {}
    return {r.id: paused.get(r.id, r.status) if r.status in ("running", "error") else r.status
            for r in runs}


def armed_for(path: str, run_id: str) -> list[str]:
    """The breakpoints armed from outside for ``run_id`` (its specs), read-only."""
    import sqlite3

    from tracer.db.schema import connect
    from tracer.debug.channel import armed_breaks

    try:
        conn = connect(path, readonly=True)
    except (LooptraceError, sqlite3.Error, OSError):
        return []
    try:
        return [b[1] for b in armed_breaks(conn) if b[2] == run_id]
    except sqlite3.Error:  # (a file older than schema 6)
        return []
    finally:
        conn.close()


def raised_lines(pending: dict[str, Any]) -> list[str]:
    """An error pause's exception: ``Type: message`` and the frames of the user's code
    (``tracer.debug.raised.raised_lines``)."""
    from tracer.debug.raised import raised_lines as lines

    return lines(pending)


def debug_answer(path: str, run_id: str, command: str,
                 edit: dict[str, Any] | None = None, pause: int | None = None) -> dict[str, Any]:
    """Answer pause ``pause`` of run ``run_id`` (``tracer.debug.channel.answer``: the
    edit is validated first; a bad one raises ``InvalidOption`` and nothing is written;
    a pause that is over raises ``NotPaused``)."""
    from tracer.debug.channel import answer

    return answer(path, run_id, command, edit, pause=pause)


def debug_rewind(path: str, run_id: str, step: int, edits: Any = None,
                 pause: int | None = None) -> dict[str, Any]:
    """Answer pause ``pause`` of ``run_id`` with a rewind to ``step`` with ``edits``
    (``tracer.debug.channel.rewind``), checked against the record first
    (``tracer.whatif.rewind.check``): one line (a ``LooptraceError``) for one that
    cannot be, and nothing is written."""
    from tracer.debug.channel import pending, rewind, rewind_edits
    from tracer.whatif.rewind import check

    made = [e.to_json() for e in rewind_edits(edits)]
    said = (pending(path, run_id, pause).get("pending") or {}).get("rewind") or {}
    if said.get("can"):
        check(path, run_id, step, made)
    return rewind(path, run_id, step, made, pause=pause)


def debug_arm(path: str, spec: str, run_id: str) -> int:
    """Arm ``spec`` for ``run_id`` (and its subagent runs) from the app."""
    from tracer.debug.channel import arm

    return arm(path, spec, run=run_id, source="app")


def debug_clear(path: str, run_id: str) -> int:
    """Clear the breakpoints armed for ``run_id``."""
    from tracer.debug.channel import clear

    return clear(path, run=run_id)


def debug_validate(edit: dict[str, Any], pending: dict[str, Any]) -> dict[str, Any]:
    """``edit`` checked against what is ``pending`` (``tracer.vocab.edits.Edit``):
    ``BadEdit`` (an ``InvalidOption``) with one line when it is not a valid edit of it."""
    from tracer.vocab.edits import Edit

    return Edit.of(edit).check(pending).to_json()
