"""Who a pause or a breakpoint belongs to, and whether that process still lives.

A ``looptrace debug`` process is named by a token ``PID@START`` (its pid and the time it
started, so that a pid reused by a later process is not taken for it). It hands the
token to the command it runs (``LOOPTRACE_DEBUG_OWNER``, inherited by the whole process
tree: ``sh -c``, ``uv run``, test workers), so the agents in it, and the pauses they
open, are known as its own; the breakpoints it arms carry it too, and apply only while
it lives. A process is gone when no process has its pid, or the one that has it is a
zombie or started later (``tracer.db.writer``'s test for a run's recorder).
"""

from __future__ import annotations

import os
import time

from tracer.db.processes import process_gone

__all__ = ["ENV", "alive", "descends", "gone", "token"]

ENV = "LOOPTRACE_DEBUG_OWNER"


def token(pid: int | None = None, started: float | None = None) -> str:
    """``PID@START`` for this process (or ``pid``, which started at ``started``)."""
    return f"{os.getpid() if pid is None else pid}@{time.time() if started is None else started:.3f}"


def _parse(tok: str) -> tuple[int, float] | None:
    pid, sep, start = str(tok).partition("@")
    try:
        return (int(pid), float(start)) if sep else None
    except ValueError:
        return None


def gone(tok: str | None) -> bool:
    """Whether the process ``tok`` names is gone (a token that names none is gone)."""
    if not tok:
        return False
    got = _parse(tok)
    return got is None or process_gone(got[0], got[1])


def alive(pid: int | None, since: float | None) -> bool:
    """Whether process ``pid``, alive at ``since`` (epoch seconds), still is."""
    if not pid:
        return True  # (no pid written: nothing to say)
    try:
        return not process_gone(int(pid), since)
    except (TypeError, ValueError):
        return True


def descends(pid: int, ancestor: int) -> bool:
    """Whether process ``pid`` is ``ancestor`` or below it (its parent's parent ...)."""
    seen = 0
    while pid > 1 and seen < 64:
        if pid == ancestor:
            return True
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        seen += 1
    return pid == ancestor

