"""The runs a demo recorded: the top-level runs of a database, and a run's name."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tracer.db.schema import connect


def root_ids(db: str | Path) -> set[str]:
    """The ids of the runs in ``db`` that are no subagent run."""
    conn = connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id IS NULL")}
    except sqlite3.DatabaseError:
        return set()
    finally:
        conn.close()


def run_name(db: str, run_id: str) -> str:
    conn = connect(db)
    try:
        row = conn.execute("SELECT name FROM runs WHERE id = ?", [run_id]).fetchone()
    finally:
        conn.close()
    return str(row[0]) if row and row[0] else run_id[:12]
