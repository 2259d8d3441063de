"""Reruns and forks of a run, as the read side sees them (no LangChain).

A rerun or fork (``tracer.whatif.rerun``) is a run whose ``runs.metadata`` holds
``rerun_of`` (the run it reruns; replay_of in runs recorded before the word, read
too: ``rerun_of_meta``) and, for a fork, ``forked_from`` (run, step, edit).
``forks_of`` lists them for a run, ``forks_among`` for many, ``tagged_run`` finds the
run whose metadata holds a token (a fork the app started tags its run so). The command
line that forks a run is the app's (``app/data/forks.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .loader import TraceDB

# The metadata key naming the run a rerun reruns, and its older name (runs recorded
# before issue 43 hold that one: still read, never written).
RERUN_OF = "rerun_of"
OLD_RERUN_OF = "replay_of"  # words: keep
# (a LIKE that finds a rerun's metadata under either key)
_EITHER_KEY = "(metadata LIKE '%rerun_of%' OR metadata LIKE '%replay_of%')"  # words: keep


def rerun_of_meta(meta: dict[str, Any]) -> Any:
    """The run a rerun's (or fork's) metadata names, under either key (None: not one)."""
    of = meta.get(RERUN_OF)
    return meta.get(OLD_RERUN_OF) if of is None else of


@dataclass(frozen=True)
class Fork:
    """A rerun (``step`` None) or fork of a run."""

    run_id: str
    of: str
    step: int | None
    edit: dict[str, Any] | None
    started_at: float | None

    @property
    def label(self) -> str:
        if self.step is None:
            return f"rerun {self.run_id[:12]}"
        what = (self.edit or {}).get("kind", "edit")
        return f"fork {self.run_id[:12]} at step {self.step} ({what})"

    @property
    def what(self) -> str:
        """What the Runs page says of it: the step and the edit, shortened."""
        if self.step is None:
            return f"rerun of {self.of[:12]}"
        edit = self.edit or {}
        kind = str(edit.get("kind", "edit")).replace("_", " ")
        if edit.get("position") is not None:
            kind += f" {edit['position']}"
        text = edit.get("text")
        if text is None and edit.get("model") is not None:
            text = edit["model"]
        said = "" if text is None else " → " + " ".join(str(text).split())[:60]
        return f"fork of {self.of[:12]} at step {self.step}: {kind}{said}"


def _meta(text: Any) -> dict[str, Any]:
    try:
        meta = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def _fork(rid: Any, meta: dict[str, Any], started: Any) -> Fork | None:
    of = rerun_of_meta(meta)
    if not isinstance(of, str):
        return None
    fork = meta.get("forked_from")
    if isinstance(fork, dict):
        step = int(fork["step"]) if fork.get("step") else None
        edit = fork.get("edit") if isinstance(fork.get("edit"), dict) else None
        return Fork(str(rid), of, step, edit, started)
    return Fork(str(rid), of, None, None, started)


def forks_among(db: TraceDB, run_ids: list[str],
                since: float | None = None) -> dict[str, Fork]:
    """The reruns and forks of any of ``run_ids`` (started at or after ``since``: a
    fork starts after the run it forks), by their run id: what the Runs page nests."""
    wanted = set(run_ids)
    if not wanted:
        return {}
    sql = ("SELECT id, metadata, started_at FROM runs WHERE parent_id IS NULL"
           " AND " + _EITHER_KEY)
    params: list[Any] = []
    if since is not None:
        sql += " AND started_at >= ?"
        params.append(since)
    out = {}
    for rid, text, started in db.query(sql, params):
        f = _fork(rid, _meta(text), started)
        if f is not None and f.of in wanted and f.run_id != f.of:
            out[f.run_id] = f
    return out


def forks_of(db: TraceDB, run_id: str) -> list[Fork]:
    """The reruns and forks of ``run_id``, oldest first."""
    rows = db.query("SELECT id, metadata, started_at FROM runs WHERE parent_id IS NULL AND "
                    "metadata LIKE ? ORDER BY started_at, id", [f"%{run_id}%"])
    out = []
    for rid, text, started in rows:
        meta = _meta(text)
        if rerun_of_meta(meta) != run_id:
            continue
        fork = meta.get("forked_from")
        if isinstance(fork, dict):
            step = int(fork["step"]) if fork.get("step") else None
            out.append(Fork(str(rid), run_id, step, fork.get("edit"), started))
        else:
            out.append(Fork(str(rid), run_id, None, None, started))
    return out


def origin_of(metadata: Any) -> tuple[str, int | None] | None:
    """(the run it reruns, the fork step or None) for a rerun's or fork's metadata."""
    meta = metadata if isinstance(metadata, dict) else _meta(metadata)
    of = rerun_of_meta(meta)
    if not isinstance(of, str):
        return None
    fork = meta.get("forked_from")
    step = fork.get("step") if isinstance(fork, dict) else None
    return of, int(step) if isinstance(step, int) else None


def tagged_run(db: TraceDB, token: str) -> str | None:
    """The top-level run whose metadata holds ``token`` (a fork started from the app
    tags its run so); None while there is none."""
    rows = db.query("SELECT id FROM runs WHERE parent_id IS NULL AND metadata LIKE ?",
                    [f"%{token}%"])
    return str(rows[0][0]) if rows else None
