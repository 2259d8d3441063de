"""The read side: load runs, events and messages from a looptrace database.

Pure Python, no Streamlit: the app, the CLI, ``check`` and the exporters all
read through ``TraceDB``. Every problem with the file is a one-line
``LooptraceError``.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Self, TypeVar

from tracer.db import search
from tracer.db.notes import TAGS_SQL, Note, read_notes, with_steps
from tracer.db.schema import connect
from tracer.db.summaries import COUNT_FIELDS, chunks, live_counts
from tracer.db.url import is_url, safe
from tracer.errors import NotALooptraceDatabase, RunNotFound
from tracer.vocab.content import content_text as content_text  # noqa: PLC0414 - re-exported for its readers
from tracer.vocab.records import MODEL_HOOKS, EventRecord

from . import run_list
from .pause_time import without_pauses
from .run_list import RunFilter
from .state_at import StateLog, load_state

T = TypeVar("T")

_RUN_FIELDS = (
    "id", "parent_id", "parent_tool_call_id", "name", "thread_id", "agent_name", "status",
    "started_at", "ended_at", "error", "model", "provider", "input_tokens", "output_tokens",
    "total_tokens", "source",
)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One row of the runs list: a run's name, status, times, model and token totals,
    and its counts (laps, model calls, tool calls, errors, events)."""

    id: str
    parent_id: str | None
    parent_tool_call_id: str | None
    name: str | None
    thread_id: str | None
    agent_name: str | None
    status: str
    started_at: float | None
    ended_at: float | None
    error: str | None
    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int | None
    source: str | None
    laps: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    errors: int = 0
    events: int = 0

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return max(0.0, self.ended_at - self.started_at)

    @property
    def tokens_text(self) -> str:
        """The run's tokens as every reader says them (``looptrace runs`` and ``show``,
        the app, the HTML replay): "not reported" where none of its model calls
        reported usage (``total_tokens`` None), else the count ("0" for a run that
        asked no model)."""
        return tokens_text(self.total_tokens)

    @property
    def tokens_phrase(self) -> str:
        """``tokens_text`` with its unit: "1,234 tokens", "tokens not reported"."""
        return tokens_text(self.total_tokens, unit=True)


NOT_REPORTED = "not reported"


def tokens_text(total: int | None, *, unit: bool = False) -> str:
    """A token count as said everywhere: ``NOT_REPORTED`` for None (no model call
    reported usage), else the number (with "token(s)" after it with ``unit``)."""
    if total is None:
        return NOT_REPORTED if not unit else f"tokens {NOT_REPORTED}"
    return f"{total:,}" if not unit else f"{total:,} token{'' if total == 1 else 's'}"


# An event as read back is the record the writer was given (its payload parsed):
# one definition for both sides.
Event = EventRecord


def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return {"__unparsed__": text}


@dataclass(frozen=True)
class Message:
    """One message of a run's conversation as recorded: its place (``position``), the
    event that added it (``seq``) and the LangChain message as a dict (``data``)."""

    position: int
    seq: int
    msg_id: str | None
    type: str
    tool_call_id: str | None
    text: str
    data: dict[str, Any]  # {"type": ..., "data": {...}}
    stored_key: str | None = None  # the writer's key (schema 2); None in older files

    @property
    def key(self) -> str:
        """The writer's key (``tracer.vocab.records.message_key``); for a file written
        before keys were stored, the same rule with the position standing in for
        the object of a message without id."""
        if self.stored_key:
            return self.stored_key
        if self.tool_call_id:
            return "t:" + self.tool_call_id
        return self.msg_id or f"p:{self.position}"

    @property
    def body(self) -> dict[str, Any]:
        d = self.data.get("data")
        return d if isinstance(d, dict) else {}

    @property
    def content(self) -> Any:
        return self.body.get("content")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.body.get("tool_calls") or [])

    @property
    def invalid_tool_calls(self) -> list[dict[str, Any]]:
        return list(self.body.get("invalid_tool_calls") or [])

    @property
    def status(self) -> str | None:
        return self.body.get("status")

    @property
    def name(self) -> str | None:
        return self.body.get("name")

    def to_langchain(self) -> Any:
        """The LangChain message, rebuilt losslessly from its stored dict."""
        from langchain_core.messages import messages_from_dict

        return messages_from_dict([self.data])[0]




@dataclass
class Run:
    """One recorded run, read whole: its summary, every event and message, the
    summaries of its subagent runs (``children``) and later message revisions."""

    summary: RunSummary
    events: list[Event]
    messages: list[Message]  # each message as first recorded, ordered by (position, seq)
    children: list[RunSummary] = field(default_factory=list)
    metadata: Any = None
    # later versions of those messages (same key, other content: a middleware
    # redacted, cleared or evicted it), ordered by seq
    revisions: list[Message] = field(default_factory=list)
    # the other state keys, as versions (``tracer.read.state_at``)
    state: StateLog = field(default_factory=StateLog)
    _views: dict[Any, Any] = field(default_factory=dict, init=False, repr=False,
                                   compare=False)

    def view(self, build: Callable[[Run], T]) -> T:
        """What ``build(self)`` returns, built once for this run (as ``Replay.view``:
        ``build``, a module-level pure function of the run, is the key); the model
        calls decoded (``tracer.read.calls``) are kept here."""
        try:
            return self._views[build]  # type: ignore[no-any-return]
        except KeyError:
            made = self._views[build] = build(self)
            return made

    @property
    def id(self) -> str:
        return self.summary.id

    @property
    def observed(self) -> str | None:
        """What saw this run from outside ("wire": a proxy's traffic; "otel": spans),
        or None for a run the tracer recorded from inside (``tracer/record/ingest.py``)."""
        meta = self.metadata if isinstance(self.metadata, dict) else {}
        return str(meta["observed"]) if meta.get("observed") else None

    @cached_property
    def message_by_key(self) -> dict[str, Message]:
        return {m.key: m for m in self.messages}

    @cached_property
    def messages_by_seq(self) -> dict[int, list[Message]]:
        """The messages (as first recorded) that each event added."""
        out: dict[int, list[Message]] = {}
        for m in self.messages:
            out.setdefault(m.seq, []).append(m)
        return out


class TraceDB:
    """A looptrace database opened for reading (thread-safe)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        p = Path(self.path)
        self.engine = "postgresql" if is_url(self.path) else "sqlite"
        # (a PostgreSQL store: tracer.db.pg.connect says what is wrong with it)
        if self.engine == "sqlite" and not p.exists():
            msg = f"{self.path}: no such database"
            raise NotALooptraceDatabase(msg)
        if self.engine == "sqlite" and p.is_dir():
            msg = f"{self.path} is a directory, not a looptrace database"
            raise NotALooptraceDatabase(msg)
        if self.engine == "sqlite" and p.stat().st_size == 0:
            msg = f"{self.path} is empty: no looptrace runs recorded yet"
            raise NotALooptraceDatabase(msg)
        self._conn = connect(self.path, readonly=True)
        self._lock = threading.Lock()
        # (a file of an older schema opened read-only is read as it is: schema 1 has
        # no message versions, schema 2 no derived tables)
        self._has_versions = any(r[1] == "version" for r in self._query(
            "PRAGMA table_info(messages)"))
        self.schema_version = int(self._query(
            "SELECT value FROM meta WHERE key = 'schema_version'")[0][0])
        self.derived = self.schema_version >= 3
        # (a PostgreSQL store searches messages.text through its trigram index)
        self.fts = self.derived and self.engine == "sqlite"

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        """Rows of ``sql`` (for the read-side modules: ``tracer.checks.saved`` ...)."""
        return self._query(sql, params)

    def _query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                msg = f"{safe(self.path)}: cannot read ({exc})"
                raise NotALooptraceDatabase(msg) from None

    # -- runs ---------------------------------------------------------------
    def runs(self, filter: RunFilter | None = None, *, search: str | None = None,
             ids: list[str] | None = None, parent_id: str | None = None,
             limit: int | None = None, offset: int = 0) -> list[RunSummary]:
        """Runs with their counts, newest first: all of them, or those ``filter``
        selects (``search``, ``ids`` and ``parent_id`` are its fields, kept as
        keywords), ``limit`` of them from ``offset`` on (``tracer.read.run_list``)."""
        f = filter or RunFilter()
        if search is not None or ids is not None or parent_id is not None:
            f = replace(f, search=search if search is not None else f.search,
                        ids=ids if ids is not None else f.ids,
                        parent_id=parent_id if parent_id is not None else f.parent_id)
        join, params = run_list.joins(self.derived)
        cond, more = run_list.where(f, self.derived, common=self._common(f),
                                    schema=self.schema_version, fts=self.fts,
                                    engine=self.engine)
        page = ""
        if limit is not None or offset:
            page = " LIMIT ? OFFSET ?"
            more = [*more, -1 if limit is None else max(0, int(limit)), max(0, int(offset))]
        rows = self._query(
            f"SELECT {', '.join('r.' + c for c in _RUN_FIELDS)},"
            f" {', '.join('s.' + c for c in COUNT_FIELDS)} FROM runs r{join}{cond}"
            f"{run_list.ORDER}{page}", [*params, *more])
        # A run still running has no kept counts yet (nor has any run of a file
        # without them): count those from their events, and only those.
        # (an older file, read as it is, kept its errors as error events: counted anew)
        live = {row[0] for row in rows
                if row[6] == "running" or row[16] is None or self.schema_version < 6}
        counted = live_counts(self._query, sorted(live)) if live else {}
        out = []
        for row in rows:
            counts = counted.get(row[0], (0, 0, 0, 0, 0)) if row[0] in live else row[16:21]
            # Tokens are None ("not reported") when the run asked a model and no call
            # reported usage; a run that asked none used none.
            if not counts[1] and row[14] is None:
                row = (*row[:12], 0, 0, 0, *row[15:])
            elif self.schema_version < 6 and counts[1] and not any(row[12:15]):
                # (an older file, read as it is, stored 0 for tokens no call reported:
                # read as the schema 6 migration makes them)
                row = (*row[:12], None, None, None, *row[15:])
            # (mypy cannot tell that row[:16] fills exactly the fields before ``laps``)
            out.append(RunSummary(*row[:16], laps=counts[0] or 0,  # type: ignore[misc]
                                  model_calls=counts[1] or 0,
                                  tool_calls=counts[2] or 0, errors=counts[3] or 0,
                                  events=counts[4] or 0))
        return out

    def count_runs(self, filter: RunFilter | None = None, *, at_most: int | None = None) -> int:
        """How many runs ``filter`` selects (all runs without one); counting no further
        than ``at_most`` (a search of a common text counts the runs it holds one by one:
        ``at_most`` says when to stop)."""
        f = filter or RunFilter()
        join, params = run_list.joins(self.derived) if f.health else ("", [])
        cond, more = run_list.where(f, self.derived, common=self._common(f),
                                    schema=self.schema_version, fts=self.fts,
                                    engine=self.engine)
        if at_most is None:
            return int(self._query(f"SELECT COUNT(*) FROM runs r{join}{cond}",
                                   [*params, *more])[0][0])
        return int(self._query(f"SELECT COUNT(*) FROM (SELECT 1 FROM runs r{join}{cond}"
                               " LIMIT ?) AS x", [*params, *more, max(0, int(at_most))])[0][0])

    def _common(self, f: RunFilter) -> bool:
        """Whether ``f`` searches a common text (``tracer.db.search.is_common``)."""
        return bool(f.search) and search.is_common(self._query, f.search or "",
                                                   indexed=self.fts, engine=self.engine)

    def subagent_runs(self, run_ids: list[str]) -> list[RunSummary]:
        """Every run below ``run_ids`` (their subagent runs, theirs, and so on)."""
        if not run_ids:
            return []
        marks = ",".join("?" * len(run_ids))
        below = [str(r[0]) for r in self._query(
            "WITH RECURSIVE tree(id) AS (SELECT id FROM runs WHERE parent_id IN"
            f" ({marks}) UNION SELECT r.id FROM runs r JOIN tree ON r.parent_id = tree.id)"
            " SELECT id FROM tree", run_ids)]
        return self.runs(ids=below) if below else []

    def models(self, run_ids: Iterable[str]) -> dict[str, list[str]]:
        """The models that answered each run's model calls, in the order they first did
        (a fallback's model, not the one first asked): each call's as its ``exit`` event
        says it, else as its reply's ``response_metadata`` names it (a run recorded
        before the exit events said it). A run none answered has an empty list."""
        ids = list(dict.fromkeys(run_ids))
        out: dict[str, list[str]] = {rid: [] for rid in ids}
        hooks = ", ".join(f"'{h}'" for h in sorted(MODEL_HOOKS))

        def j(col: str, path: str) -> str:
            return f"(CASE WHEN json_valid({col}) THEN json_extract({col}, '{path}') END)"

        for part in chunks(ids):
            marks = ",".join("?" * len(part))
            for rid, name in self._query(
                    f"SELECT e.run_id, COALESCE({j('e.payload', '$.model')},"
                    f" (SELECT COALESCE({j('m.data', '$.data.response_metadata.model_name')},"
                    f" {j('m.data', '$.data.response_metadata.model')}) FROM messages m"
                    " WHERE m.run_id = e.run_id AND m.seq = e.seq AND m.type = 'ai' LIMIT 1))"
                    f" FROM events e WHERE e.run_id IN ({marks}) AND e.hook IN ({hooks})"
                    " AND e.phase = 'exit' ORDER BY e.run_id, e.seq", list(part)):
                if isinstance(name, str) and name and name not in out[rid]:
                    out[rid].append(name)
        return out

    def step_numbers(self, run_id: str, seqs: Iterable[int]) -> dict[int, int]:
        """The step (counted from 1, as a person reads it) of each event ``seq`` of a
        run: one step per recorded event, the first at or after ``seq``
        (``Replay.index_of_seq``'s rule), without loading the run."""
        want = sorted(set(seqs))
        if not want:
            return {}
        have = [int(r[0]) for r in self._query(
            "SELECT seq FROM events WHERE run_id = ? ORDER BY seq", [run_id])]
        if not have:
            return {}
        return {q: min(bisect.bisect_left(have, q), len(have) - 1) + 1 for q in want}

    def summary(self, run_id: str) -> RunSummary:
        found = self.runs(ids=[run_id])
        if not found:
            msg = f"no run {run_id!r} in {safe(self.path)}"
            raise RunNotFound(msg)
        return found[0]

    def resolve(self, prefix: str) -> str:
        """A full run id from what a person types: an id, a run's name (unique in the
        file, or ``name@N``: the Nth newest run of that name, 1 the newest), or a
        unique prefix of an id (compared exactly: case counts, and ``%`` / ``_`` are
        plain characters). A full id wins over a name, a name over the longer ids it
        is a prefix of."""
        if self._query("SELECT 1 FROM runs WHERE id = ?", [prefix]):
            return prefix
        named = self._named(prefix)
        if named is not None:
            return named
        # (a range on the primary key: no LIKE, whose wildcards and case folding lie)
        rows = self._query("SELECT id FROM runs WHERE id >= ? AND id < ? LIMIT 2",
                           [prefix, prefix + "\U0010ffff"]) if prefix else []
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            msg = f"no run {prefix!r} in {safe(self.path)} (not an id, a prefix of one or a run's name)"
            raise RunNotFound(msg)
        msg = f"run id prefix {prefix!r} is ambiguous in {safe(self.path)}"
        raise RunNotFound(msg)

    def _named(self, ref: str) -> str | None:
        """The id of the run named ``ref`` (or ``name@N``), None when no run has that
        name; ``RunNotFound`` when several have it, or there is no Nth."""
        newest_first = "SELECT id FROM runs WHERE name = ? ORDER BY started_at DESC, id"
        rows = self._query(newest_first + " LIMIT 2", [ref]) if ref else []
        if len(rows) == 1:
            return str(rows[0][0])
        if len(rows) > 1:
            (n,) = self._query("SELECT count(*) FROM runs WHERE name = ?", [ref])[0]
            msg = (f"{n} runs are named {ref!r} in {safe(self.path)}: give {ref}@1 (the newest) to "
                   f"{ref}@{n}, or an id")
            raise RunNotFound(msg)
        name, at, nth = ref.rpartition("@")
        if not (at and name and nth.isdecimal() and nth.isascii()):
            return None
        k = int(nth)
        if not 1 <= k <= 1_000_000_000:
            msg = f"{ref!r}: N in name@N counts from 1 (the newest run of that name)"
            raise RunNotFound(msg)
        rows = self._query(newest_first + " LIMIT 1 OFFSET ?", [name, k - 1])
        if rows:
            return str(rows[0][0])
        (n,) = self._query("SELECT count(*) FROM runs WHERE name = ?", [name])[0]
        if not n:
            return None
        msg = f"{ref!r}: {n} run(s) are named {name!r} in {safe(self.path)}, not {k}"
        raise RunNotFound(msg)

    def run(self, run_id: str) -> Run:
        summary = self.summary(run_id)
        events = [
            # (mypy cannot tell that row[:10] fills exactly the fields before ``payload``)
            Event(*row[:10], payload=_loads(row[10]))  # type: ignore[misc]
            for row in self._query(
                "SELECT run_id, seq, ts, hook, phase, duration_ms, middleware, lap, tool_call_id,"
                " task, payload FROM events WHERE run_id = ? ORDER BY seq", [run_id])
        ]
        events = without_pauses(events)  # (a debugger's pause is not the call's time)
        extra = "version, key" if self._has_versions else "0, NULL"
        messages: list[Message] = []
        revisions: list[Message] = []
        for pos, seq, mid, typ, tcid, text, data, later, key in self._query(
                f"SELECT position, seq, msg_id, type, tool_call_id, text, data, {extra}"
                " FROM messages WHERE run_id = ? ORDER BY position, seq", [run_id]):
            m = Message(pos, seq, mid, typ or "unknown", tcid, text or "",
                        _loads(data) or {"type": typ, "data": {}}, key)
            (revisions if later else messages).append(m)
        revisions.sort(key=lambda m: m.seq)
        children = [c for c in self.runs(parent_id=run_id)  # (not every run: see runs())
                    if c.id != run_id]  # (a run its own parent: not its own subagent)
        children.sort(key=lambda s: s.started_at or 0)
        meta = self._query("SELECT metadata FROM runs WHERE id = ?", [run_id])
        return Run(summary, events, messages, children, _loads(meta[0][0]) if meta else None,
                   revisions, load_state(self._query, run_id))

    # -- notes (schema 6) -----------------------------------------------------
    @property
    def has_notes_table(self) -> bool:
        """The file has ``notes`` (schema 6; an older file opened read-only has not)."""
        return self.schema_version >= 6

    def notes(self, run_id: str) -> list[Note]:
        """A person's notes on ``run_id`` (``tracer.db.notes``), each with its step
        (counted from 1, ``step_numbers``): those on the whole run first, then by step."""
        if not self.has_notes_table:
            return []
        found = read_notes(self._query, run_id)
        steps = self.step_numbers(run_id, [n.seq for n in found if n.seq is not None])
        return with_steps(found, steps)

    def note_tags(self) -> list[tuple[str, int]]:
        """Every tag of a note in the file, with the number of runs that have a note
        so tagged; most used first."""
        if not self.has_notes_table:
            return []
        return [(str(t), int(n)) for t, n in self._query(
            f"SELECT j.value, COUNT(DISTINCT n.run_id) FROM notes n, json_each({TAGS_SQL}) j"
            " GROUP BY j.value ORDER BY 2 DESC, 1")]

    def note_counts(self, run_ids: list[str]) -> dict[str, int]:
        """How many notes each of ``run_ids`` has (runs without any left out)."""
        if not self.has_notes_table or not run_ids:
            return {}
        out: dict[str, int] = {}
        for i in range(0, len(run_ids), 500):
            part = run_ids[i:i + 500]
            out.update((str(r), int(n)) for r, n in self._query(
                f"SELECT run_id, COUNT(*) FROM notes WHERE run_id IN ({','.join('?' * len(part))})"
                " GROUP BY run_id", part))
        return out

    def wire(self, run_id: str) -> list[dict[str, Any]]:
        """Provider HTTP exchanges recorded for ``run_id``, oldest first."""
        cols = [r[1] for r in self._query("PRAGMA table_info(wire)")]
        rows = self._query("SELECT * FROM wire WHERE run_id = ? ORDER BY id", [run_id])
        return [dict(zip(cols, r)) for r in rows]

    def raw_rows(self, table: str, run_id: str) -> list[dict[str, Any]]:
        """Every stored column of ``table`` for one run, for export, but a run's
        ``writer`` (the lock of the process that recorded it into this store:
        ``tracer.db.liveness``; it means nothing in another store, and a trace of the
        run never carries it)."""
        if table not in ("runs", "events", "messages", "wire", "state", "state_values", "notes"):
            msg = f"unknown table {table}"
            raise ValueError(msg)
        key = "id" if table == "runs" else "run_id"
        cols = [r[1] for r in self._query(f"PRAGMA table_info({table})")]
        order = {"runs": "id", "events": "seq", "messages": "position, seq", "wire": "id",
                 "state": "seq, key", "state_values": "hash", "notes": "id"}[table]
        if not self._query("SELECT 1 FROM sqlite_master WHERE name = ?", [table]):
            return []  # (a file older than the table, opened read-only)
        rows = self._query(f"SELECT * FROM {table} WHERE {key} = ? ORDER BY {order}", [run_id])
        local = {"writer"} if table == "runs" else set()
        return [{c: v for c, v in zip(cols, r) if c not in local} for r in rows]
