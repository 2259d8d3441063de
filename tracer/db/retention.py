"""A retention policy: how long runs are kept (an age) and/or how many (the newest N
top-level runs), applied by ``prune`` by hand or every INTERVAL by one long-lived
``looptrace prune --every`` (``keep_pruning``).

The policy is written as ``prune``'s flags (``--older-than 30d --keep 10000``) or once
in the setting ``LOOPTRACE_RETAIN`` (``30d``, ``10000``, or both: ``30d,10000``), which
``prune`` reads when given neither flag.

Why one scheduled ``prune`` and not every ``looptrace ui``/``collect`` pruning on its
own: a team's store is read by many apps on many laptops; a delete (and on SQLite the
vacuum after it, which holds the write lock) belongs to one process that was started
for it, whose output says what went, not to a viewer that happens to be open.

Example:
    ```python
    from tracer.db.retention import parse_retain

    policy = parse_retain("30d,10000")  # Retention(older_than=2592000.0, keep=10000)
    ```
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from tracer.errors import LooptraceError

from .prune import PruneResult, parse_age, prune

RETAIN_ENV = "LOOPTRACE_RETAIN"


@dataclass(frozen=True)
class Retention:
    """Delete the top-level runs started more than ``older_than`` seconds ago, and
    those beyond the newest ``keep`` (None: no such limit)."""

    older_than: float | None = None
    keep: int | None = None


def parse_retain(text: str) -> Retention:
    """``30d`` (an age), ``10000`` (a run count), or both, separated by a comma or
    spaces; anything else is one clear error."""
    older_than: float | None = None
    keep: int | None = None
    items = [t for t in re.split(r"[,\s]+", text.strip()) if t]
    for item in items:
        if item.isdigit():
            if keep is not None:
                break
            keep = int(item)
        else:
            try:
                age = parse_age(item)
            except LooptraceError:
                break
            if older_than is not None:
                break
            older_than = age
    else:
        if items:
            return Retention(older_than, keep)
    msg = (f"{RETAIN_ENV}={text!r}: an age (30d, 12h ...) and/or a number of runs to keep,"
           " e.g. 30d,10000")
    raise LooptraceError(msg)


def from_env() -> Retention | None:
    """The policy ``LOOPTRACE_RETAIN`` sets (None: unset or empty)."""
    text = os.environ.get(RETAIN_ENV, "")
    return parse_retain(text) if text.strip() else None


def keep_pruning(db: str, policy: Retention, every: float, *,
                 say: Callable[[PruneResult | LooptraceError | sqlite3.Error], None],
                 rounds: int | None = None, sleep: Callable[[float], None] = time.sleep,
                 vacuum: bool = True) -> None:
    """Apply ``policy`` to ``db`` now, then every ``every`` seconds (``rounds`` times;
    None: until stopped), telling ``say`` each round's result, or the error that
    stopped it (a store away or missing: the next round tries again)."""
    done = 0
    while rounds is None or done < rounds:
        try:
            say(prune(db, older_than=policy.older_than, keep=policy.keep, vacuum=vacuum))
        except (LooptraceError, sqlite3.Error) as exc:
            say(exc)
        done += 1
        if rounds is None or done < rounds:
            sleep(every)
