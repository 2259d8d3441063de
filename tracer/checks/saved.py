"""Findings found once: ``tracer.checks.run``'s results kept per run, read back after.

Storage only: it never runs the checks (``tracer.checks.run.findings_for`` does, and keeps
what it found here); what it keeps goes through the file's one writer
(``tracer.db.writer``).

A run that has ended is checked the first time its findings are asked for
(``looptrace check``, the Runs page's health column) and what was found is kept
in ``findings`` and ``run_checks`` with two stamps: the rules version
(``tracer.checks.RULES_VERSION``) and the ``gen`` of the run's counts
(``tracer.db.summaries``), which moves on whenever rows of the run are written after
it ended. Findings kept under another rules version or another gen are stale
and found again. Kept findings are those of every provider with the default
thresholds; the findings for some providers are those of all, filtered.

A run still running is checked afresh each time and nothing is kept; nor is
anything kept in a file of an older schema (read as it is) or one this process
cannot write to.

Example:
    ```python
    from tracer.checks.run import findings_for
    from tracer.read.loader import TraceDB

    with TraceDB("looptrace.db") as db:
        found = findings_for(db, [r.id for r in db.runs(limit=100)])
    ```
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Sequence

from tracer.db.summaries import chunks
from tracer.db.url import is_url
from tracer.read.loader import TraceDB
from tracer.vocab.rules_version import RULES_VERSION

from .base import SEVERITIES, Finding, health

SAVE_EVERY = 200  # runs per write transaction while checking many

__all__ = ["SAVE_EVERY", "gens", "health_badge", "keep", "only", "save", "stored",
           "stored_health"]


# (the one health function, under the name the app's badge has used)
health_badge = health


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
            out[rid] = health({"error": e, "warning": w, "info": i})
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


def gens(db: TraceDB, run_ids: Sequence[str]) -> dict[str, int]:
    """The counts' gen of each of ``run_ids`` that has ended (read before its rows)."""
    out: dict[str, int] = {}
    for part in chunks(list(run_ids)):
        out.update(db.query(
            "SELECT s.run_id, s.gen FROM run_stats s JOIN runs r ON r.id = s.run_id"
            f" WHERE r.status != 'running' AND s.run_id IN ({','.join('?' * len(part))})",
            list(part)))
    return out


def keep(path: str, found: Sequence[tuple[str, int, list[Finding]]]) -> None:
    """Keep ``found`` (each ``(run_id, gen, findings)``) in the file at ``path``, through
    the file's one writer (``tracer.db.writer``: its thread, its connection), in one
    transaction, and wait until it is written. A file this process cannot write to
    (read-only, on a read-only filesystem) is left alone; one that fails the write
    (locked for long) is left as it was: the findings are found again next time.

    Args:
        path: the database file (``TraceDB.path``).
        found: the findings of runs that had ended, with the gen of their counts read
            before their rows (``gens``).
    """
    if not found or not _writable(path):
        return
    batch = list(found)

    def write(conn: sqlite3.Connection) -> None:
        for run_id, gen, findings in batch:
            save(conn, run_id, gen, findings)

    from tracer.db.writer import get_writer  # (the writer imports LangChain: only when keeping)

    writer = get_writer(path)
    writer.submit(write)
    writer.flush()


def _writable(path: str) -> bool:
    """This process can write the file and make its journal beside it (a PostgreSQL
    store: the server says, and a refused write is best effort as any other)."""
    if is_url(path):
        return True
    folder = os.path.dirname(os.path.abspath(path)) or "."
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK)


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
