"""Whether a process is gone from this host: its pid names no process, a zombie, or a
process that started later than it was known alive (the pid was reused, as a restarted
container's often is). The recorder closes a dead process's runs by it
(``tracer.db.writer.close_dead``); the debugger's channel drops a dead process's pauses
(``tracer.debug.owner``); ``prune`` keeps a live paused run."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["PID_SLACK_S", "_proc_stat", "process_gone"]

PID_SLACK_S = 2.0  # a process start time read from /proc is this precise (whole seconds)


def process_gone(pid: int, started_at: Any) -> bool:
    """Whether the process ``pid``, which recorded a run started at ``started_at``, is
    gone from this host."""
    if pid <= 0:
        return False  # (not a process's id: nothing to say)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # (PermissionError: another user's, alive)
        pass
    stat = _proc_stat(pid)
    if stat is None:  # (no /proc: alive is all that is known)
        return False
    state, start = stat
    return state in ("Z", "X") or (isinstance(started_at, (int, float))
                                   and start > started_at + PID_SLACK_S)


def _proc_stat(pid: int) -> tuple[str, float] | None:
    """The state and start time (seconds since the epoch) of process ``pid``, from
    /proc; None where there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as f:
            boot = next(int(ln.split()[1]) for ln in f if ln.startswith(b"btime "))
        return fields[0].decode(), boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except FileNotFoundError:
        return ("X", 0.0) if os.path.isdir("/proc/self") else None  # (it died since)
    except (OSError, ValueError, IndexError, StopIteration):
        return None
