"""``looptrace copy --from A --to B``: every run of one store into another, between
engines (a SQLite file, a PostgreSQL store) or the same one, with nothing lost: each run
tree goes as ``looptrace export`` writes it (runs, events, messages, wire bodies, state,
notes) through ``import_rows`` (one transaction per tree: a copy stopped half-way
leaves whole runs), then what the trace format does not carry: the debugger's records
(breakpoints, pauses) and the kept findings (``run_checks``, ``findings``, made current
for the copy's counts). A run already in B is replaced by A's; copying again changes
nothing.

Example:
    ```python
    from tracer.interop.copy import copy_store

    copied = copy_store("looptrace.db", "postgresql://ci@db.internal/looptrace")
    print(copied.runs, "runs")
    ```
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracer.db.schema import connect
from tracer.db.url import is_url, safe
from tracer.errors import InvalidOption
from tracer.read.loader import TraceDB

from .exchange import export_lines, import_rows

# (table, its columns copied as they are; ``id`` is the target's own)
_DEBUG = {
    "debug_breaks": ("spec", "run_id", "thread_id", "source", "created_at", "cleared_at"),
    "debug_pauses": ("run_id", "seq", "hook", "at", "reason", "pending", "pid", "paused_at",
                     "command", "edit", "commanded_at", "resumed_at", "outcome"),
}
_FINDINGS = ("run_id", "n", "rule", "severity", "provider", "message", "seq", "message_keys")
_CHECKS = ("run_id", "rules", "errors", "warnings", "infos")


@dataclass(frozen=True)
class Copied:
    runs: int  # runs copied, subagent runs included
    trees: int  # top-level runs
    debug_records: int  # breakpoints and pauses
    findings: int


def _same(a: str, b: str) -> bool:
    if is_url(a) or is_url(b):
        return safe(a) == safe(b)
    return Path(a).resolve() == Path(b).resolve()


def copy_store(src: str, dst: str) -> Copied:
    """Copy every run of ``src`` into ``dst`` (created if new); see the module."""
    if _same(src, dst):
        msg = f"--from and --to name the same store ({safe(src)})"
        raise InvalidOption(msg)
    runs = trees = 0
    with TraceDB(src) as db:
        roots = [str(r[0]) for r in db.query(
            "SELECT id FROM runs WHERE parent_id IS NULL OR parent_id NOT IN"
            " (SELECT id FROM runs) ORDER BY started_at, id")]
        ids: list[str] = []
        for root in roots:
            rows: list[tuple[str, dict[str, Any]]] = []
            for i, line in enumerate(export_lines(db, root)):
                if i:  # (the first line is the header)
                    rec = json.loads(line)
                    rows.append((rec["table"], rec["row"]))
            got = import_rows(rows, dst, replace=True, on_conflict="replace")
            ids += got
            runs += len(got)
            trees += 1
        debug = _copy_debug(db, dst, ids)
        findings = _copy_findings(db, dst, ids)
    return Copied(runs, trees, debug, findings)


def _copy_debug(db: TraceDB, dst: str, ids: list[str]) -> int:
    """The debugger's records of the copied runs (breakpoints of no run: all), each once
    (a record already in ``dst`` with the same fields is not added again)."""
    if db.schema_version < 6:
        return 0
    wanted = set(ids)
    n = 0
    conn = connect(dst)
    try:
        with conn:
            for table, cols in _DEBUG.items():
                for row in db.query(f"SELECT {', '.join(cols)} FROM {table} ORDER BY id"):
                    if row[1 if table == "debug_breaks" else 0] not in wanted and not (
                            table == "debug_breaks" and row[1] is None):
                        continue
                    same = " AND ".join(f"{c} IS ?" for c in cols)
                    if conn.execute(f"SELECT 1 FROM {table} WHERE {same}", list(row)).fetchone():
                        continue
                    conn.execute(f"INSERT INTO {table}({', '.join(cols)}) VALUES"
                                 f" ({', '.join('?' * len(cols))})", list(row))
                    n += 1
    finally:
        conn.close()
    return n


def _copy_findings(db: TraceDB, dst: str, ids: list[str]) -> int:
    """The kept findings of the copied runs, made current for ``dst``'s counts of them
    (the same rows give the same findings)."""
    if not db.derived:
        return 0
    n = 0
    conn = connect(dst)
    try:
        with conn:
            for rid in ids:
                checks = db.query(f"SELECT {', '.join(_CHECKS)} FROM run_checks"
                                  " WHERE run_id = ?", [rid])
                if not checks:
                    continue
                gen = conn.execute("SELECT gen FROM run_stats WHERE run_id = ?",
                                   [rid]).fetchone()
                if gen is None:
                    continue
                conn.execute("DELETE FROM findings WHERE run_id = ?", [rid])
                conn.execute(f"INSERT OR REPLACE INTO run_checks({', '.join(_CHECKS)}, gen)"
                             " VALUES (?, ?, ?, ?, ?, ?)", [*checks[0], gen[0]])
                found = db.query(f"SELECT {', '.join(_FINDINGS)} FROM findings"
                                 " WHERE run_id = ? ORDER BY n", [rid])
                if found:
                    conn.executemany(f"INSERT INTO findings({', '.join(_FINDINGS)}) VALUES"
                                     f" ({', '.join('?' * len(_FINDINGS))})", found)
                n += len(found)
    finally:
        conn.close()
    return n
