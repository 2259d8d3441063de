"""Record every demo scenario into a database: what ``looptrace demo`` does.

``record_all(db)`` runs each scenario of ``tracer.demo.scenarios.SCENARIOS``
(real agents driven by scripted models) and then, through the provider
emulator, the provider demos of ``tracer.demo.providers``; offline, in seconds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..schema import connect


def record_all(db: str, only: list[str] | None = None,
               providers: bool = True) -> dict[str, list[str]]:
    """Record every scenario (or those in ``only``) into ``db``; with ``providers`` (and no
    ``only``), the provider demos too. Return scenario name -> its new root run ids."""
    from .scenarios import SCENARIOS

    out: dict[str, list[str]] = {}
    for name, scenario in SCENARIOS.items():
        if only and name not in only:
            continue
        before = root_ids(db)
        scenario(db)
        out[name] = sorted(root_ids(db) - before)
    if providers and not only:
        from .providers import record_provider_demos

        for run_id in record_provider_demos(db):
            out.setdefault(f"provider-{_run_name(db, run_id)}", []).append(run_id)
    return out


def root_ids(db: str | Path) -> set[str]:
    """The ids of the runs in ``db`` that are no subagent run."""
    conn = connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id IS NULL")}
    except sqlite3.DatabaseError:
        return set()
    finally:
        conn.close()


def _run_name(db: str, run_id: str) -> str:
    conn = connect(db)
    try:
        row = conn.execute("SELECT name FROM runs WHERE id = ?", [run_id]).fetchone()
    finally:
        conn.close()
    return str(row[0]) if row and row[0] else run_id[:8]
