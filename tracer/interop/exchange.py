"""Export runs to readable JSONL files and import them back, losslessly.

A trace file is JSON Lines: a header line, then one line per stored row
(``{"table": "runs" | "events" | "messages" | "wire" | "state" | "state_values" |
"notes", "row": {...}}``), the
run first and its subagent runs after it. Never pickle.

Notes (``tracer.db.notes``) travel with their run but are not its content: an import
adds the file's notes to those already stored on the run (a note stored twice is
kept once), and a run stored with other notes than the file's is not "other content".
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sqlite3
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tracer.db.notes import TAG, check_author, check_text
from tracer.db.schema import (
    connect,
    refuse_database,
    written_whole,
)
from tracer.db.search import BATCH as SEARCH_BATCH
from tracer.db.search import catch_up
from tracer.db.summaries import refresh
from tracer.db.tables import (
    EVENTS_COLUMNS,
    MESSAGES_COLUMNS,
    NOTES_COLUMNS,
    RUN_STATUSES,
    RUNS_COLUMNS,
    SCHEMA_VERSION,
    STATE_COLUMNS,
    STATE_VALUES_COLUMNS,
    WIRE_COLUMNS,
)
from tracer.db.url import is_url
from tracer.errors import (
    InvalidOption,
    LooptraceError,
    RunConflict,
    TraceFileError,
    storage_errors,
)
from tracer.read.loader import TraceDB
from tracer.vocab.records import MODEL_HOOKS

FORMAT = "looptrace-trace"
FORMAT_VERSION = 1
TABLES: dict[str, dict[str, type]] = {
    "runs": RUNS_COLUMNS, "events": EVENTS_COLUMNS, "messages": MESSAGES_COLUMNS,
    "wire": WIRE_COLUMNS, "state": STATE_COLUMNS, "state_values": STATE_VALUES_COLUMNS,
    "notes": NOTES_COLUMNS,
}
# The note columns that say what a note is (its id is the file's own: not exported).
NOTE_FIELDS = ("run_id", "seq", "text", "tags", "author", "created_at")


def run_tree(db: TraceDB, run_id: str) -> list[str]:
    """``run_id`` and all its nested subagent runs, parents first.

    Each level is asked for by parent (indexed): exporting one run costs the same
    in a database of ten runs or of ten thousand (``runs()`` reads them all)."""
    out = [run_id]
    seen = {run_id}
    i = 0
    while i < len(out):
        kids = sorted(db.runs(parent_id=out[i]), key=lambda r: r.started_at or 0)
        for k in kids:
            if k.id not in seen:  # (parents in a cycle, written by other means than
                seen.add(k.id)  # ``import``, which refuses them: each run once)
                out.append(k.id)
        i += 1
    return out


# What ``str.splitlines`` splits at and ``json.dumps(ensure_ascii=False)`` leaves raw
# (it escapes every character below U+0020 itself): escaped, a trace file is one
# record per line for every reader of lines.
_LINE_BREAKS = {c: f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}
_LINE_BREAKS_RE = re.compile("[\x85\u2028\u2029]")


def json_line(rec: Any) -> str:
    """``rec`` as one line of JSON (UTF-8 text kept readable, line breaks escaped)."""
    text = json.dumps(rec, ensure_ascii=False, sort_keys=False)
    return _LINE_BREAKS_RE.sub(lambda m: _LINE_BREAKS[m.group(0)], text)


def export_lines(db: TraceDB, run_id: str) -> Iterator[str]:
    ids = run_tree(db, run_id)
    yield json.dumps({"format": FORMAT, "version": FORMAT_VERSION,
                      "schema_version": SCHEMA_VERSION, "root": run_id, "runs": len(ids)})
    for rid in ids:
        for table in TABLES:
            for row in db.raw_rows(table, rid):
                if table in ("wire", "notes"):
                    row.pop("id", None)
                yield json_line({"table": table, "row": row})


def export_run(db_path: str | Path, run_id: str, out: str | Path) -> Path:
    """Write run ``run_id`` (an id or unique prefix) and its subagent runs to the trace
    file ``out`` (JSON Lines); return its path. ``out`` is never the database itself
    (``InvalidOption``), and is replaced only once written whole (a failed export leaves
    an earlier file as it was)."""
    refuse_database(out, db_path)
    with TraceDB(db_path) as db:
        rid = db.resolve(run_id)
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with written_whole(out) as f:
            for line in export_lines(db, rid):
                f.write(line + "\n")
    return out


def read_trace(path: str | Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """Parse and validate a trace file; raise ``TraceFileError`` naming the bad line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"{p}: cannot read trace file ({exc})"
        raise TraceFileError(msg) from None
    # (split at newlines only: str.splitlines also splits at U+2028, U+0085 ..., which
    # an older export left raw inside its strings)
    lines = [(n, ln) for n, ln in enumerate(text.split("\n"), start=1) if ln.strip()]
    if not lines:
        msg = f"{p}: empty trace file"
        raise TraceFileError(msg)
    try:
        header = json.loads(lines[0][1])
    except (ValueError, RecursionError) as exc:
        msg = f"{p}:{lines[0][0]}: not a looptrace trace file ({_json_error(exc)})"
        raise TraceFileError(msg) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        msg = f"{p}:{lines[0][0]}: not a looptrace trace file (no '{FORMAT}' header)"
        raise TraceFileError(msg)
    version = header.get("schema_version", 0)
    if not _is_int(version) or not 0 <= version < 2**63:
        msg = f"{p}:{lines[0][0]}: schema_version {_short_repr(version)} is not a schema number"
        raise TraceFileError(msg)
    if version > SCHEMA_VERSION:
        msg = (f"{p}: written by a newer looptrace (schema {header.get('schema_version')}); "
               "upgrade looptrace to import it")
        raise TraceFileError(msg)
    rows: list[tuple[str, dict[str, Any]]] = []
    numbers: list[int] = []  # (each row's line number)
    for n, line in lines[1:]:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError) as exc:
            msg = f"{p}:{n}: malformed JSON ({_json_error(exc)})"
            raise TraceFileError(msg) from None
        problem = row_problem(rec)
        if problem:
            msg = f"{p}:{n}: {problem}"
            raise TraceFileError(msg)
        rows.append((rec["table"], rec["row"]))
        numbers.append(n)
    if not any(t == "runs" for t, _ in rows):
        msg = f"{p}: the trace file holds no run"
        raise TraceFileError(msg)
    stray = foreign_row(rows) or parent_cycle(rows) or stray_note(rows)
    if stray is not None:
        msg = f"{p}:{numbers[stray[0]]}: {stray[1]}; nothing imported"
        raise TraceFileError(msg)
    if version < 6:
        unreported_tokens(rows)
    return header, rows


def unreported_tokens(rows: list[tuple[str, dict[str, Any]]]) -> None:
    """A file written before schema 6 says 0 for tokens no model call reported: make
    them None ("not reported") as the schema 6 migration does (``tracer.db.schema``), in
    place: a run that asked a model and holds 0 tokens."""
    asked = {r.get("run_id") for t, r in rows if t == "events" and r.get("phase") == "enter"
             and r.get("hook") in MODEL_HOOKS}
    for t, r in rows:
        if t == "runs" and r.get("id") in asked and not any(
                r.get(c) for c in ("input_tokens", "output_tokens", "total_tokens")):
            r.update(input_tokens=None, output_tokens=None, total_tokens=None)


def parent_cycle(rows: list[tuple[str, dict[str, Any]]]) -> tuple[int, str] | None:
    """The first runs row (its index, and what is wrong) whose ``parent_id`` leads back
    to itself through the rows' runs (a run its own parent, A under B under A ...):
    every reader that walks a run's subagent runs would walk forever."""
    index = {r["id"]: i for i, (t, r) in enumerate(rows) if t == "runs"}
    parents = {rid: rows[i][1].get("parent_id") for rid, i in index.items()}
    cycle = _first_cycle(list(index), parents.get)
    if cycle is None:
        return None
    return index[cycle[0]], f"run {cycle[0]!r} is its own ancestor ({_chain(cycle)})"


def _first_cycle(ids: Iterable[str], parent: Any) -> list[str] | None:
    """The first cycle of parents met from ``ids`` (``parent(id)``: the parent's id or
    None), as the ids on it from where it closes; None when there is none. Each run is
    walked once."""
    done: set[str] = set()
    for start in ids:
        path: list[str] = []
        on_path: set[str] = set()
        x: str | None = start
        while x is not None and x not in done:
            if x in on_path:
                return path[path.index(x):]
            on_path.add(x)
            path.append(x)
            x = parent(x)
        done.update(path)
    return None


def _chain(cycle: list[str]) -> str:
    ids = [*cycle, cycle[0]]
    shown = ids if len(ids) <= 6 else [*ids[:3], "...", *ids[-2:]]
    return " -> ".join(f"{i!r}" if i != "..." else i for i in shown)


def foreign_row(rows: list[tuple[str, dict[str, Any]]]) -> tuple[int, str] | None:
    """The first row (its index, and what is wrong) that names a run the rows do not
    hold, or a run held twice: such a file would write into a run it was not given."""
    ids: set[str] = set()
    for i, (table, row) in enumerate(rows):
        if table == "runs":
            rid = row.get("id")
            if not isinstance(rid, str) or not rid:
                return i, "a runs row without an id"
            if rid in ids:
                return i, f"run {rid!r} is held twice"
            ids.add(rid)
    for i, (table, row) in enumerate(rows):
        if table != "runs" and row.get("run_id") not in ids:
            return i, (f"a {table} row of run {row.get('run_id')!r}, which the file does "
                       "not hold")
    return None


def stray_note(rows: list[tuple[str, dict[str, Any]]]) -> tuple[int, str] | None:
    """The first notes row (its index, and what is wrong) on a step its run does not
    have: a ``seq`` with no event of the run in the file (``add_note`` refuses it; shown,
    it would name a step the run never took)."""
    seqs = {(r.get("run_id"), r.get("seq")) for t, r in rows if t == "events"}
    for i, (table, row) in enumerate(rows):
        if table == "notes" and row.get("seq") is not None and (
                row.get("run_id"), row["seq"]) not in seqs:
            return i, (f"a note on event {row['seq']} of run {row.get('run_id')!r}, which "
                       "the run does not have")
    return None


def _note_problem(row: dict[str, Any]) -> str | None:
    """What ``add_note`` would refuse in a notes row: empty or too long a text, an author
    that is not a short printable name."""
    try:
        check_text(row.get("text"))
        check_author(row.get("author"))
    except InvalidOption as exc:
        return f"notes: {exc}"
    return None


def row_problem(rec: Any) -> str | None:
    """What is wrong with one ``{"table": ..., "row": {...}}`` record (None: nothing)."""
    if not isinstance(rec, dict) or rec.get("table") not in TABLES or not isinstance(
            rec.get("row"), dict):
        return f"expected {{'table': {'|'.join(TABLES)}, 'row': {{...}}}}"
    unknown = set(rec["row"]) - set(TABLES[rec["table"]])
    if unknown:
        return f"unknown columns for {rec['table']}: {', '.join(sorted(unknown))}"
    table, row = rec["table"], rec["row"]
    for col in (*REQUIRED.get(table, ()), *row):
        problem = value_problem(table, col, row.get(col))
        if problem:
            return problem
    return _note_problem(row) if table == "notes" else None


# -- the values a row may hold: the schema's types (tracer.db.schema), in SQLite's ranges ---

INT64 = (-(2**63), 2**63 - 1)  # what an SQLite INTEGER holds
# Columns that may not be NULL (a primary key's, and a run's status).
REQUIRED: dict[str, tuple[str, ...]] = {
    "runs": ("id", "status"), "events": ("run_id", "seq"),
    "messages": ("run_id", "position", "seq"),
    "state": ("run_id", "seq", "key"), "state_values": ("run_id", "hash"),
    "notes": ("run_id", "text"),
}
# Integer columns that count or index from 0 (every other integer: any INT64).
NON_NEGATIVE = frozenset({"seq", "position", "lap", "version", "input_tokens", "output_tokens",
                          "total_tokens", "pid"})
# Times (seconds since 1970): what a date can show, up to the year 9999.
TIMES = frozenset({"started_at", "ended_at", "ts"})
LAST_TIME = 253402300799.0


def value_problem(table: str, col: str, value: Any) -> str | None:
    """What is wrong with ``value`` in column ``col`` of ``table`` (None: nothing): the
    type the schema declares (NULL allowed but where ``REQUIRED``), a text SQLite can
    store (UTF-8: no lone surrogate), an integer in SQLite's 64 bits (and not below 0
    where it counts), a finite number (a time in the range of dates)."""
    kind = TABLES[table][col]
    where = f"{table}.{col}"
    if value is None:
        return f"{where} is missing (null)" if col in REQUIRED.get(table, ()) else None
    if kind is str:
        if not isinstance(value, str):
            return f"{where} {_short_repr(value)}: expected a string"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{where} {_short_repr(value)}: not valid Unicode (a lone surrogate)"
        if table == "runs" and col == "status" and value not in RUN_STATUSES:
            return f"{where} {_short_repr(value)}: expected one of {', '.join(RUN_STATUSES)}"
        if table == "notes" and col == "tags" and not _tag_list(value):
            return f"{where} {_short_repr(value)}: expected a JSON list of tags (short words)"
        return None
    if kind is int:
        low = 0 if col in NON_NEGATIVE else INT64[0]
        if not _is_int(value) or not low <= value <= INT64[1]:
            return f"{where} {_short_repr(value)}: expected an integer from {low} to 2**63-1"
        return None
    # a float column: any finite number; a time from 0 to the year 9999
    # (an integer is sent to SQLite as one: in its 64 bits too)
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            not math.isfinite(value) if isinstance(value, float)
            else not INT64[0] <= value <= INT64[1]):
        return f"{where} {_short_repr(value)}: expected a finite number"
    if col in TIMES and not 0 <= value <= LAST_TIME:
        return f"{where} {_short_repr(value)}: expected a time (seconds from 0 to {LAST_TIME:.0f})"
    return None


def _tag_list(text: str) -> bool:
    """Whether ``text`` is a JSON list of tags as ``tracer.db.notes`` writes them."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, list) and all(isinstance(t, str) and TAG.fullmatch(t)
                                           for t in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _short_repr(value: Any, n: int = 40) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else (
        f"an integer of {len(str(abs(value)))} digits")
    return text if len(text) <= n else text[: n - 3] + "..."


def _json_error(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def import_trace(path: str | Path, db_path: str | Path, *, replace: bool = True,
                 on_conflict: str = "refuse") -> list[str]:
    """Load a trace file into ``db_path``; return the ids its runs were stored under.

    A run already stored with the same content is replaced by itself (importing a
    file twice changes nothing); one stored with other content is, by
    ``on_conflict``: ``"refuse"`` (``RunConflict``, nothing imported), ``"rename"``
    (the file's runs imported under new ids) or ``"replace"`` (overwritten). A full
    disk or a damaged file is one ``DatabaseUnavailable`` / ``NotALooptraceDatabase``
    error, with nothing written."""
    _header, rows = read_trace(path)
    with storage_errors(db_path):
        return import_rows(rows, db_path, replace=replace, on_conflict=on_conflict)


def import_rows(rows: list[tuple[str, dict[str, Any]]], db_path: str | Path, *,
                replace: bool = True, keep_stored: bool = False,
                on_conflict: str = "replace") -> list[str]:
    """Write validated ``(table, row)`` pairs into ``db_path`` in one transaction
    (with ``replace``, the runs they hold are deleted first, and no other); return
    the run ids. Every importer (trace files, OTLP spans) goes through here.

    ``on_conflict`` says what becomes of a run stored with other content than the
    rows' (``CONFLICTS``; the same content is always replaced by itself).

    ``keep_stored`` is for a partial set of rows (a trace cut in transit): what is
    already stored stays, a row with the same key is overwritten, a wire row
    already there (same run, event and time) is not added twice."""
    if on_conflict not in CONFLICTS:
        msg = f"on_conflict={on_conflict!r}: one of {', '.join(CONFLICTS)}"
        raise InvalidOption(msg)
    conn = connect(db_path, verify=True)
    try:
        with conn:
            if on_conflict != "replace" and not keep_stored:
                conn.execute("BEGIN IMMEDIATE")  # (no writer between the look and the write)
                clash = [rid for rid in _run_ids(rows) if stored_differs(conn, rid, rows)]
                if clash and on_conflict == "refuse":
                    more = f" (and {len(clash) - 1} more)" if len(clash) > 1 else ""
                    msg = (f"run {clash[0]} is already stored with other content{more}: "
                           "nothing imported (--rename imports the file's runs under new "
                           "ids, --replace overwrites the stored ones)")
                    raise RunConflict(msg)
                if clash:
                    rows = renamed(rows)
            ids = _run_ids(rows)
            # the notes already stored on these runs stay (deleting a run deletes its notes)
            kept = _stored_notes(conn, ids)
            if replace and not keep_stored:
                for rid in ids:
                    for table, key in (("events", "run_id"), ("messages", "run_id"),
                                       ("wire", "run_id"), ("state", "run_id"),
                                       ("state_values", "run_id"), ("runs", "id")):
                        conn.execute(f"DELETE FROM {table} WHERE {key} = ?", [rid])
            for table, row in [*rows, *(("notes", n) for n in kept)]:
                if table == "notes":
                    _add_note_row(conn, row)
                    continue
                cols = list(row)
                if keep_stored and table == "wire" and conn.execute(
                        "SELECT 1 FROM wire WHERE run_id IS ? AND seq IS ? AND ts IS ?",
                        [row.get("run_id"), row.get("seq"), row.get("ts")]).fetchone():
                    continue
                verb = "INSERT OR REPLACE" if replace or keep_stored else "INSERT"
                conn.execute(
                    f"{verb} INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [row[c] for c in cols],
                )
            _refuse_cycles(conn, ids)
            # the counts of every run written here that has ended (tracer.db.summaries)
            refresh(conn, {r["id"] if t == "runs" else r.get("run_id") for t, r in rows})
            catch_up(conn, at_least=SEARCH_BATCH)  # (the search index: tracer.db.search)
    finally:
        conn.close()
    return ids


def _stored_notes(conn: sqlite3.Connection, ids: list[str]) -> list[dict[str, Any]]:
    rows = []
    for rid in ids:
        rows += [dict(zip(NOTE_FIELDS, r)) for r in conn.execute(
            f"SELECT {', '.join(NOTE_FIELDS)} FROM notes WHERE run_id = ? ORDER BY id", [rid])]
    return rows


def _add_note_row(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    """Add a note unless the run has one just like it (an import of a file twice, or a
    stored note the file holds too: kept once)."""
    values = [row.get(c) for c in NOTE_FIELDS]
    conn.execute(
        f"INSERT INTO notes({', '.join(NOTE_FIELDS)}) SELECT ?, ?, ?, ?, ?, ?"
        " WHERE NOT EXISTS (SELECT 1 FROM notes WHERE "
        + " AND ".join(f"{c} IS ?" for c in NOTE_FIELDS) + ")", [*values, *values])


def _refuse_cycles(conn: sqlite3.Connection, ids: list[str]) -> None:
    """Raise ``TraceFileError`` (the caller's transaction is rolled back) if a run of
    ``ids`` is now its own ancestor, with the runs already stored."""

    def parent(rid: str) -> str | None:
        row = conn.execute("SELECT parent_id FROM runs WHERE id = ?", [rid]).fetchone()
        return row[0] if row else None

    cycle = _first_cycle(ids, parent)
    if cycle is not None:
        msg = (f"run {cycle[0]!r} would be its own ancestor ({_chain(cycle)}, with the runs "
               "already stored); nothing imported")
        raise TraceFileError(msg)


def import_many(paths: Iterable[str | Path], db_path: str | Path, *,
                on_conflict: str = "refuse") -> list[str]:
    """``import_trace`` of each file in turn; return every run id they were stored under."""
    out: list[str] = []
    for p in paths:
        out.extend(import_trace(p, db_path, on_conflict=on_conflict))
    return out


# -- runs already stored ------------------------------------------------------------------

CONFLICTS = ("refuse", "rename", "replace")


def _run_ids(rows: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [r["id"] for t, r in rows if t == "runs"]


def _canon(row: dict[str, Any], cols: Iterable[str]) -> str:
    # (1 and 1.0 are one value: SQLite stores a REAL column's integer as a float)
    return json.dumps([int(v) if isinstance(v, float) and v.is_integer() else v
                       for v in (row.get(c) for c in cols)])


def stored_alike(db_path: str | Path, rows: list[tuple[str, dict[str, Any]]]) -> set[str]:
    """The run ids of ``rows`` already stored in ``db_path`` with the same content (an
    import of them changes nothing); empty when there is no such file yet."""
    if is_url(str(db_path)):
        try:
            conn: Any = connect(str(db_path), readonly=True)
        except LooptraceError:  # (an empty store, or none yet: the import says so)
            return set()
    elif not Path(db_path).exists():
        return set()
    else:
        conn = sqlite3.connect(f"file:{Path(db_path).as_posix()}?mode=ro", uri=True)
    try:
        return {rid for rid in _run_ids(rows)
                if conn.execute("SELECT 1 FROM runs WHERE id = ?", [rid]).fetchone()
                and not stored_differs(conn, rid, rows)}
    except sqlite3.DatabaseError:
        return set()
    finally:
        conn.close()


def stored_differs(conn: sqlite3.Connection, run_id: str,
                   rows: list[tuple[str, dict[str, Any]]]) -> bool:
    """Whether ``run_id`` is stored with other rows than those of ``rows`` (False when
    it is not stored at all). Compared: the columns the rows carry, row for row."""
    if not conn.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone():
        return False
    for table in TABLES:
        if table == "notes":
            continue  # (notes are added to, not compared: see the module's docstring)
        key = "id" if table == "runs" else "run_id"
        mine = [r for t, r in rows if t == table and r.get(key) == run_id]
        cols = sorted({c for r in mine for c in r} - {"id" if table == "wire" else ""})
        stored_cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        if not cols:
            count = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {key} = ?",
                                 [run_id]).fetchone()[0]
            if count:
                return True
            continue
        stored = [dict(zip(stored_cols, r)) for r in conn.execute(
            f"SELECT * FROM {table} WHERE {key} = ?", [run_id])]
        if sorted(_canon(r, cols) for r in stored) != sorted(_canon(r, cols) for r in mine):
            return True
    return False


def renamed(rows: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """``rows`` with every run under a new id (parents pointed at their new ids); each
    run's metadata says which id it was exported with (``imported_from``)."""
    new = {rid: str(uuid.uuid4()) for rid in _run_ids(rows)}
    out = []
    for table, row in rows:
        row = dict(row)
        if table == "runs":
            old = row["id"]
            row["id"] = new[old]
            if row.get("parent_id") in new:
                row["parent_id"] = new[row["parent_id"]]
            row["metadata"] = _with_origin(row.get("metadata"), old)
        else:
            row["run_id"] = new[row["run_id"]]
        out.append((table, row))
    return out


def _with_origin(metadata: Any, old_id: str) -> Any:
    try:
        meta = json.loads(metadata) if isinstance(metadata, str) else metadata
    except ValueError:
        return metadata  # (not ours to rewrite: kept as it was)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return metadata
    return json.dumps({**meta, "imported_from": old_id})


# The bundled sample traces: package data in an installed looptrace (the wheel holds
# sample_traces/ as tracer/_samples/), the repository's sample_traces/ in a checkout.
_PACKAGE = Path(__file__).resolve().parents[1]
SAMPLES_DIR = (_PACKAGE / "_samples" if (_PACKAGE / "_samples").is_dir()
               else _PACKAGE.parent / "sample_traces")


def sample_files() -> list[Path]:
    return sorted(SAMPLES_DIR.glob("*.jsonl"))


SAMPLES = "samples"  # what ``--db`` takes for the bundled sample traces


def sample_db_path() -> Path:
    """Where the database of the bundled ``sample_traces/`` is kept (the app's and the
    command line's, rebuilt when they change): this user's folder in the temp dir."""
    cache = Path(tempfile.gettempdir()) / f"looptrace-{os.getuid()}"
    cache.mkdir(parents=True, exist_ok=True)
    return cache / "samples.db"


def build_sample_db(db_path: str | Path) -> Path:
    """A database holding every bundled sample trace (rebuilt if older than them)."""
    db_path = Path(db_path)
    files = sample_files()
    newest = max((f.stat().st_mtime for f in files), default=0)
    if db_path.exists() and db_path.stat().st_mtime >= newest:
        with contextlib.suppress(Exception):  # (rebuild anything unreadable)
            TraceDB(db_path).close()
            return db_path
    for suffix in ("", "-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    tmp = db_path.with_name(db_path.name + ".tmp")
    for suffix in ("", "-wal", "-shm"):
        Path(str(tmp) + suffix).unlink(missing_ok=True)
    import_many(files, tmp)
    conn = connect(tmp)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    tmp.replace(db_path)
    return db_path


def normalize(lines: Iterable[str]) -> list[dict[str, Any]]:
    """A trace with ids, timestamps and durations made canonical, for comparing
    two recordings of the same scenario."""
    ids: dict[str, str] = {}
    uuidish = re.compile(r"(lc_run--)?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?"
                         r"[0-9a-f]{12}(-\d+)?|\b[0-9a-f]{32}\b|\bo:\d{4,}\b")
    # (the last: the key of a message without id, which names its object)

    def canon(m: re.Match[str]) -> str:
        return ids.setdefault(m.group(0), f"<id{len(ids)}>")

    out = []
    for line in lines:
        rec = json.loads(line)
        row = rec.get("row")
        if isinstance(row, dict):
            for k in ("ts", "started_at", "ended_at", "duration_ms", "pid"):
                if k in row and row[k] is not None:
                    row[k] = 0
            if rec["table"] == "events" and row.get("task"):
                row["task"] = "<task>"
        text = json.dumps(rec, sort_keys=True)
        text = uuidish.sub(canon, text)
        text = re.sub(r'\\"duration_ms\\": ?[0-9.e-]+', r'\\"duration_ms\\": 0', text)
        # Inside JSON-in-JSON (wire bodies) the quotes are escaped: keep the escapes.
        text = re.sub(r'"(created_at|modified_at|created|timestamp)(\\?)": ?'
                      r'(?:\\?"[0-9T:.\-+Z]+\\?"|[0-9.]+)', r'"\1\2": 0', text)
        # a state value's content address (tracer.db.state_rows.value_hash): of a value
        # that holds times (Deep Agents' files), so it differs from one recording to the next
        text = re.sub(r'\b[0-9a-f]{24}\b', "<hash>", text)
        out.append(json.loads(text))
    return out
