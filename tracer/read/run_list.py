"""The runs list: which runs, filtered and paged in SQL.

``RunFilter`` says which runs (status, name, time range, health, parent, text in
their messages, ids); ``TraceDB.runs(filter, limit=..., offset=...)`` pages through
them newest first, and ``TraceDB.count_runs(filter)`` counts them. The page is read
from indexes and from the counts kept per run (``tracer.db.summaries``): a page costs
about the same in a file of ten runs and of a hundred thousand.

Example:
    ```python
    from tracer.read.loader import TraceDB
    from tracer.read.run_list import RunFilter

    with TraceDB("looptrace.db") as db:
        f = RunFilter(status=("error",), top_level=True, since=1_700_000_000)
        page = db.runs(f, limit=100, offset=0)
        total = db.count_runs(f)
    ```
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracer.db.notes import TAGS_SQL
from tracer.db.prune import parse_age
from tracer.db.search import exact, matching_runs, run_has
from tracer.db.tables import SCHEMA_VERSION
from tracer.errors import InvalidOption, LooptraceError
from tracer.vocab.rules_version import RULES_VERSION

# What a run's stored check says (``tracer.checks.saved``): its worst severity,
# "ok" for none, or "unchecked" (never checked, checked with older rules or on
# data that has changed since, or still running).
HEALTH_CLASSES: tuple[str, ...] = ("error", "warning", "info", "ok", "unchecked")

_HEALTH_SQL = {
    "error": "c.errors > 0",
    "warning": "c.errors = 0 AND c.warnings > 0",
    "info": "c.errors = 0 AND c.warnings = 0 AND c.infos > 0",
    "ok": "c.errors = 0 AND c.warnings = 0 AND c.infos = 0",
}


@dataclass(frozen=True)
class RunFilter:
    """Which runs to list (every field optional; all given must hold).

    ``status``: any of these statuses. ``name``: text in the run's name or agent
    name (ASCII case-insensitive). ``since`` / ``until``: started at or after /
    before these times (epoch seconds). ``health``: any of ``HEALTH_CLASSES``.
    ``parent_id``: the subagent runs of that run. ``top_level``: runs that are no
    subagent run. ``search``: text in one of the run's messages or notes (with
    ``top_level``, in one of its own or its subagent runs' messages or notes).
    ``tags``: runs with a note tagged with any of these (with ``top_level``, a
    note on a subagent run counts for its top-level run). ``ids``: these runs.
    ``thread``: the runs recorded under that ``thread_id`` (a conversation's turns;
    ``tracer.read.threads``). A
    ``name`` or ``search`` text holding a NUL is ``InvalidOption``.
    """

    status: Sequence[str] = ()
    name: str | None = None
    since: float | None = None
    until: float | None = None
    health: Sequence[str] = ()
    parent_id: str | None = None
    top_level: bool = False
    search: str | None = None
    ids: Sequence[str] | None = None
    tags: Sequence[str] = ()
    thread: str | None = None

    def __post_init__(self) -> None:
        bad = [h for h in self.health if h not in HEALTH_CLASSES]
        if bad:
            msg = f"unknown health {bad[0]!r} (choose from {', '.join(HEALTH_CLASSES)})"
            raise InvalidOption(msg)
        # (SQLite's LIKE ends a pattern at a NUL: "\x00" would match every run)
        for field, text in (("name", self.name), ("search", self.search)):
            if text and "\x00" in text:
                msg = f"a {field} text cannot hold a NUL character (U+0000)"
                raise InvalidOption(msg)


def parse_when(text: str, now: float | None = None) -> float:
    """Epoch seconds from a date (``2026-01-31``), an ISO time (``2026-01-31T12:00``)
    or an age before ``now`` (``7d``, ``12h``): what ``RunFilter.since`` and ``until``
    take, from text."""
    try:
        return dt.datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        pass
    try:
        return (time.time() if now is None else now) - parse_age(text)
    except LooptraceError:
        msg = f"not a date, time or age: {text!r} (e.g. 2026-01-31, 2026-01-31T12:00, 7d)"
        raise LooptraceError(msg) from None


def _esc(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def where(f: RunFilter, derived: bool, *, common: bool = False,
          schema: int = SCHEMA_VERSION, fts: bool | None = None,
          engine: str = "sqlite") -> tuple[str, list[Any]]:
    """The WHERE clause (over ``runs r``, ``run_stats s``, ``run_checks c``) for ``f``;
    ``derived``: the file has the derived tables (schema 3); ``common``: ``f.search`` is
    a common text (``tracer.db.search.is_common``), tested run by run; ``schema``: the
    file's version; ``fts``: it has the SQLite search index (default: ``derived``; a
    PostgreSQL store has its trigram index on ``messages.text`` instead); ``engine``:
    the store's (``TraceDB.engine``; ``tracer.db.search.exact``: what a search matches,
    the same on both).

    The clause is SQLite's; ``tracer.db.pg`` translates it. No clause is a bare ``0``
    (PostgreSQL wants a boolean: ``1 = 0``)."""
    parts: list[str] = []
    params: list[Any] = []
    if f.ids is not None:
        parts.append(f"r.id IN ({','.join('?' * len(f.ids))})" if f.ids else _NONE)
        params.extend(f.ids)
    if f.parent_id is not None:
        parts.append("r.parent_id = ?")
        params.append(f.parent_id)
    if f.top_level:
        parts.append("r.parent_id IS NULL")
    if f.thread is not None:
        parts.append("r.thread_id = ?")
        params.append(f.thread)
    if f.status:
        parts.append(f"r.status IN ({','.join('?' * len(f.status))})")
        params.extend(f.status)
    if f.name:
        # SQLite's LIKE folds ASCII letters only; PostgreSQL's ILIKE (its LIKE, through
        # tracer.db.pg) folds by the database's locale unless told the C collation
        fold = ' COLLATE "C"' if engine == "postgresql" else ""
        parts.append(f"(r.name{fold} LIKE ? ESCAPE '\\'"
                     f" OR r.agent_name{fold} LIKE ? ESCAPE '\\')")
        params.extend([_esc(f.name)] * 2)
    if f.since is not None:
        parts.append("r.started_at >= ?")
        params.append(f.since)
    if f.until is not None:
        parts.append("r.started_at < ?")
        params.append(f.until)
    # (a file older than schema 6, read as it is, has no notes)
    noted = schema >= 6
    if f.search:
        in_notes, note_params = _noted(f.search, engine) if noted else ("", [])
        if common:
            sql, p = run_has(f.search, below=f.top_level, engine=engine)
            if in_notes:  # ... or in one of its notes
                sql = f"({sql} OR r.id IN ({_up(in_notes) if f.top_level else in_notes}))"
                p = [*p, *note_params]
        else:
            sql, p = matching_runs(f.search, indexed=derived if fts is None else fts,
                                   schema=schema, engine=engine)
            if in_notes:  # ... or in one of its notes (one set of runs: PostgreSQL
                # then starts from the few runs it holds, not from every run, newest first)
                sql, p = f"{sql} UNION {in_notes}", [*p, *note_params]
            sql = f"r.id IN ({_up(sql) if f.top_level else sql})"
        parts.append(sql)
        params.extend(p)
    if f.tags:
        tagged = (f"SELECT n.run_id FROM notes n, json_each({TAGS_SQL}) j"
                  f" WHERE j.value IN ({','.join('?' * len(f.tags))})")
        parts.append(f"r.id IN ({_up(tagged) if f.top_level else tagged})" if noted else _NONE)
        if noted:
            params.extend(f.tags)
    if f.health:
        ors = []
        for h in dict.fromkeys(f.health):
            if h == "unchecked":
                ors.append("c.run_id IS NULL")
            elif derived:
                ors.append(f"(c.run_id IS NOT NULL AND {_HEALTH_SQL[h]})")
        parts.append("(" + " OR ".join(ors) + ")" if ors else _NONE)
    return (" WHERE " + " AND ".join(parts)) if parts else "", params


_NONE = "1 = 0"  # (no run: a boolean on both engines)


def _noted(text: str, engine: str) -> tuple[str, list[Any]]:
    """The runs with a note containing ``text``, as a search matches it."""
    cond, params = exact("text", text, engine)
    return f"SELECT run_id FROM notes WHERE {cond}", params


def _up(sql: str) -> str:
    """The runs ``sql`` selects and the runs above them (a hit in a subagent run counts
    for its top-level run)."""
    return ("WITH RECURSIVE up(id, parent_id) AS (SELECT id, parent_id FROM runs"
            f" WHERE id IN ({sql}) UNION SELECT p.id, p.parent_id FROM runs p"
            " JOIN up ON p.id = up.parent_id) SELECT id FROM up")


_NO_STATS = ("(SELECT NULL AS run_id, NULL AS laps, NULL AS model_calls, NULL AS tool_calls,"
             " NULL AS errors, NULL AS events, NULL AS gen)")
_NO_CHECKS = "(SELECT NULL AS run_id, 0 AS errors, 0 AS warnings, 0 AS infos)"


def joins(derived: bool) -> tuple[str, list[Any]]:
    """``run_stats s`` (a run's kept counts) and ``run_checks c`` (its stored check, when
    still valid); in a file without them, stand-ins that join nothing."""
    if not derived:
        return f" LEFT JOIN {_NO_STATS} s ON 0 LEFT JOIN {_NO_CHECKS} c ON 0", []
    sql = (" LEFT JOIN run_stats s ON s.run_id = r.id"
           " LEFT JOIN run_checks c ON c.run_id = r.id AND c.rules = ? AND c.gen = s.gen"
           " AND r.status != 'running'")
    return sql, [RULES_VERSION]


ORDER = " ORDER BY r.started_at DESC, r.id DESC"
