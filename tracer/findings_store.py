"""Findings found once: ``tracer.check``'s results kept per run, read back after.

A run that has ended is checked the first time its findings are asked for
(``looptrace check``, the Runs page's health column) and what was found is kept
in ``findings`` and ``run_checks`` with two stamps: the rules version
(``tracer.checks.RULES_VERSION``) and the ``gen`` of the run's counts
(``tracer.summaries``), which moves on whenever rows of the run are written after
it ended. Findings kept under another rules version or another gen are stale
and found again. Kept findings are those of every provider with the default
thresholds; the findings for some providers are those of all, filtered.

A run still running is checked afresh each time and nothing is kept; nor is
anything kept in a file of an older schema (read as it is) or one this process
cannot write to.

Example:
    ```python
    from tracer.findings_store import findings_for
    from tracer.loader import TraceDB

    with TraceDB("looptrace.db") as db:
        found = findings_for(db, [r.id for r in db.runs(limit=100)])
    ```
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from .checks import RULES_VERSION
from .checks.base import SEVERITIES, Finding
from .loader import TraceDB
from .summaries import chunks
from .wire.providers import PROVIDERS

SAVE_EVERY = 200  # runs per write transaction while checking many


def health_badge(counts: dict[str, int]) -> str:
    """The worst severity with its count ("1 error", "2 warnings"), or "ok"."""
    for sev in SEVERITIES:
        n = counts.get(sev, 0)
        if n:
            return f"{n} {sev}{'' if n == 1 else 's'}"
    return "ok"


def stored_health(db: TraceDB, run_ids: Sequence[str]) -> dict[str, str]:
    """The health badge of each of ``run_ids`` whose kept findings are still valid."""
    if not db.derived:
        return {}
    out: dict[str, str] = {}
    for part in chunks(list(run_ids)):
        for rid, e, w, i in db.query(
                "SELECT c.run_id, c.errors, c.warnings, c.infos FROM run_checks c"
                " JOIN run_stats s ON s.run_id = c.run_id AND s.gen = c.gen"
                " JOIN runs r ON r.id = c.run_id AND r.status != 'running'"
                f" WHERE c.rules = ? AND c.run_id IN ({','.join('?' * len(part))})",
                [RULES_VERSION, *part]):
            out[rid] = health_badge({"error": e, "warning": w, "info": i})
    return out


def stored(db: TraceDB, run_ids: Sequence[str]) -> dict[str, list[Finding]]:
    """The kept findings of each of ``run_ids`` that has valid ones (others absent)."""
    valid = set(stored_health(db, run_ids))
    out: dict[str, list[Finding]] = {rid: [] for rid in run_ids if rid in valid}
    for part in chunks(sorted(valid)):
        for rid, rule, sev, prov, message, seq, keys in db.query(
                "SELECT run_id, rule, severity, provider, message, seq, message_keys"
                f" FROM findings WHERE run_id IN ({','.join('?' * len(part))})"
                " ORDER BY run_id, n", list(part)):
            out[rid].append(Finding(rule, sev, prov, message, rid, seq,
                                    tuple(json.loads(keys or "[]"))))
    return out


def only(findings: Iterable[Finding], providers: Sequence[str]) -> list[Finding]:
    """The findings for ``providers``: theirs, and those that concern every provider."""
    provs = set(providers)
    return [f for f in findings if f.provider is None or f.provider in provs]


def _gens(db: TraceDB, run_ids: Sequence[str]) -> dict[str, int]:
    """The counts' gen of each of ``run_ids`` that has ended (read before its rows)."""
    out: dict[str, int] = {}
    for part in chunks(list(run_ids)):
        out.update(db.query(
            "SELECT s.run_id, s.gen FROM run_stats s JOIN runs r ON r.id = s.run_id"
            f" WHERE r.status != 'running' AND s.run_id IN ({','.join('?' * len(part))})",
            list(part)))
    return out


class _Saver:
    """Keeps findings, a batch per transaction, on a connection of its own; a file it
    cannot write to (read-only, locked for long) is left alone, silently."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.pending: list[tuple[str, int, list[Finding]]] = []
        self.conn: sqlite3.Connection | None = None
        self.broken = False

    def add(self, run_id: str, gen: int, findings: list[Finding]) -> None:
        if self.broken:
            return
        self.pending.append((run_id, gen, findings))
        if len(self.pending) >= SAVE_EVERY:
            self.flush()

    def flush(self) -> None:
        if not self.pending or self.broken:
            return
        batch, self.pending = self.pending, []
        try:
            if self.conn is None:
                self.conn = sqlite3.connect(self.path, timeout=5.0)
            with self.conn:
                for run_id, gen, findings in batch:
                    save(self.conn, run_id, gen, findings)
        except sqlite3.Error:
            self.broken = True

    def close(self) -> None:
        self.flush()
        if self.conn is not None:
            self.conn.close()


def save(conn: sqlite3.Connection, run_id: str, gen: int, findings: Sequence[Finding]) -> bool:
    """Keep ``findings`` for ``run_id`` if its counts are still at ``gen`` (rows written
    since make them stale: then nothing is kept). In the caller's transaction."""
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    cur = conn.execute(
        "INSERT OR REPLACE INTO run_checks(run_id, rules, gen, errors, warnings, infos)"
        " SELECT ?, ?, ?, ?, ?, ? WHERE (SELECT gen FROM run_stats WHERE run_id = ?) = ?",
        [run_id, RULES_VERSION, gen, counts["error"], counts["warning"], counts["info"],
         run_id, gen])
    if cur.rowcount != 1:
        return False
    conn.execute("DELETE FROM findings WHERE run_id = ?", [run_id])
    conn.executemany(
        "INSERT INTO findings(run_id, n, rule, severity, provider, message, seq, message_keys)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(run_id, n, f.rule, f.severity, f.provider, f.message, f.seq,
          json.dumps(list(f.message_keys), ensure_ascii=False)) for n, f in enumerate(findings)])
    return True


def findings_for(db: TraceDB, run_ids: Sequence[str], *,
                 providers: Sequence[str] = PROVIDERS, keep: bool = True,
                 on_run: Any = None) -> dict[str, list[Finding]]:
    """Findings of each of ``run_ids`` for ``providers``: kept ones where valid; the
    others found now (and kept, with ``keep``, for runs that have ended).
    ``on_run(run_id, findings)`` is called as each run's findings are known, in the
    order of ``run_ids``."""
    from .check import check_run  # (it imports this module's callers' rules)

    provs = tuple(dict.fromkeys(providers))
    out: dict[str, list[Finding]] = {}
    saver = _Saver(db.path) if keep and db.derived else None
    try:
        for part in chunks(list(run_ids), SAVE_EVERY):
            have = stored(db, part)
            missing = [rid for rid in part if rid not in have]
            gens = _gens(db, missing) if saver is not None and missing else {}
            for rid in part:
                found = have.get(rid)
                if found is None:
                    found = check_run(db.run(rid), wire=db.wire(rid))
                    if saver is not None and rid in gens:
                        saver.add(rid, gens[rid], found)
                out[rid] = only(found, provs) if provs != PROVIDERS else found
                if on_run is not None:
                    on_run(rid, out[rid])
    finally:
        if saver is not None:
            saver.close()
    return out
