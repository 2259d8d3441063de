"""The runs table: one row per run, subagent runs nested under their parent.

``runs_frame`` is a pure function (pandas), tested directly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import pandas as pd

from tracer.loader import RunSummary

COLUMNS = ["run", "name", "agent", "status", "health", "started", "duration_s", "laps",
           "model_calls", "tool_calls", "errors", "tokens", "depth", "parent", "id"]


def nested(runs: Sequence[RunSummary]) -> list[tuple[RunSummary, int]]:
    """Runs in display order (newest parent first), each followed by its subagent runs."""
    ids = {r.id for r in runs}
    kids: dict[str, list[RunSummary]] = {}
    for r in runs:
        if r.parent_id and r.parent_id in ids:
            kids.setdefault(r.parent_id, []).append(r)
    out: list[tuple[RunSummary, int]] = []

    def add(r: RunSummary, depth: int) -> None:
        out.append((r, depth))
        for k in sorted(kids.get(r.id, ()), key=lambda x: x.started_at or 0):
            add(k, depth + 1)

    for r in runs:
        if not (r.parent_id and r.parent_id in ids):
            add(r, 0)
    return out


def runs_frame(runs: Sequence[RunSummary],
               health: Callable[[RunSummary], str] | None = None) -> pd.DataFrame:
    rows = []
    for r, depth in nested(runs):
        name = r.name or r.agent_name or "run"
        rows.append({
            "run": ("    " * depth + "↳ " if depth else "") + name,
            "name": name,
            "agent": r.agent_name or "",
            "status": r.status,
            "health": health(r) if health else "–",
            "started": (dt.datetime.fromtimestamp(r.started_at) if r.started_at else None),
            "duration_s": None if r.duration_s is None else round(r.duration_s, 3),
            "laps": r.laps,
            "model_calls": r.model_calls,
            "tool_calls": r.tool_calls,
            "errors": r.errors,
            "tokens": r.tokens_text,
            "depth": depth,
            "parent": r.parent_id or "",
            "id": r.id,
        })
    return pd.DataFrame(rows, columns=COLUMNS)
