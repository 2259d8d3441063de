"""The runs table: one row per run, subagent runs nested under their parent, and
forks and reruns (``tracer.read.fork_links``) under the run they fork or rerun.

``runs_frame`` is a pure function (pandas), tested directly. Its numbers are numbers
(the table sorts them as such): ``tokens`` is empty (``<NA>``) for a run whose model
calls reported no usage, 0 for a run without model calls. ``cost`` is the run's cost
with its subagent runs as text ("unknown", never $0, when no call has a known price;
"≥ $0.01 (2/3)" when some have), ``cost_usd`` the dollars it sorts by (the priced part).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from ...data.forks import Fork
from ...data.runs import RunCost, RunSummary

COLUMNS = ["run", "name", "agent", "status", "health", "started", "duration_s", "laps",
           "model_calls", "tool_calls", "errors", "tokens", "cost", "cost_usd", "what_if",
           "depth", "parent", "id"]


def _above(r: RunSummary, forks: Mapping[str, Fork]) -> str | None:
    """The run ``r`` sits under: its parent run, or the run it forks or reruns."""
    fork = forks.get(r.id)
    return r.parent_id or (fork.of if fork else None)


def nested(runs: Sequence[RunSummary],
           forks: Mapping[str, Fork] | None = None) -> list[tuple[RunSummary, int]]:
    """Runs in display order (newest parent first), each followed by its subagent runs
    and its forks and reruns (``forks``: by run id), oldest first."""
    forks = forks or {}
    runs = list({r.id: r for r in runs}.values())  # (a fork may be on the page and below it)
    ids = {r.id for r in runs}
    kids: dict[str, list[RunSummary]] = {}
    for r in runs:
        up = _above(r, forks)
        if up and up in ids:
            kids.setdefault(up, []).append(r)
    out: list[tuple[RunSummary, int]] = []
    seen: set[str] = set()

    def add(r: RunSummary, depth: int) -> None:
        if r.id in seen:  # (parents in a cycle: each run once)
            return
        seen.add(r.id)
        out.append((r, depth))
        for k in sorted(kids.get(r.id, ()), key=lambda x: x.started_at or 0):
            add(k, depth + 1)

    for r in runs:
        up = _above(r, forks)
        if not (up and up in ids):
            add(r, 0)
    for r in runs:  # runs whose parents form a cycle: under none of them, but shown
        add(r, 0)
    return out


def runs_frame(runs: Sequence[RunSummary],
               health: Callable[[RunSummary], str] | None = None,
               forks: Mapping[str, Fork] | None = None,
               costs: Mapping[str, RunCost] | None = None,
               paused: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The runs as rows, nested; ``paused``: {run id: "paused" or "paused at an error"},
    the status shown for a run paused in the debugger."""
    forks = forks or {}
    paused = paused or {}
    costs = costs or {}
    rows = []
    for r, depth in nested(runs, forks):
        name = r.name or r.agent_name or "run"
        fork = forks.get(r.id)
        mark = "" if fork is None else (
            "rerun: " if fork.step is None else f"fork @ step {fork.step}: ")
        rows.append({
            "run": ("    " * depth + "↳ " if depth else "") + mark + name,
            "name": name,
            "agent": r.agent_name or "",
            "status": paused.get(r.id, r.status),
            "health": health(r) if health else "–",
            "started": (dt.datetime.fromtimestamp(r.started_at) if r.started_at else None),
            "duration_s": None if r.duration_s is None else round(r.duration_s, 3),
            "laps": r.laps,
            "model_calls": r.model_calls,
            "tool_calls": r.tool_calls,
            "errors": r.errors,
            "tokens": tokens(r),
            "cost": costs[r.id].total.short() if r.id in costs else "",
            "cost_usd": (float(costs[r.id].total.priced_usd)
                         if r.id in costs and costs[r.id].total.priced else None),
            "what_if": fork.what if fork else "",
            "depth": depth,
            "parent": r.parent_id or "",
            "id": r.id,
        })
    df = pd.DataFrame(rows, columns=COLUMNS)
    df["tokens"] = df["tokens"].astype("Int64")
    df["cost_usd"] = df["cost_usd"].astype("Float64")
    return df


def tokens(r: RunSummary) -> int | None:
    """The run's tokens: None where no model call of the run reported usage (stored
    NULL: "not reported"), 0 for a run that asked no model."""
    return None if r.total_tokens is None else int(r.total_tokens)
