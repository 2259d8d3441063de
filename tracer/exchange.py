"""Export runs to readable JSONL files and import them back, losslessly.

A trace file is JSON Lines: a header line, then one line per stored row
(``{"table": "runs" | "events" | "messages" | "wire", "row": {...}}``), the
run first and its subagent runs after it. Never pickle.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .errors import TraceFileError
from .loader import TraceDB
from .schema import (
    EVENTS_COLUMNS,
    MESSAGES_COLUMNS,
    RUNS_COLUMNS,
    SCHEMA_VERSION,
    WIRE_COLUMNS,
    connect,
)
from .search import BATCH as SEARCH_BATCH
from .search import catch_up
from .summaries import refresh

FORMAT = "looptrace-trace"
FORMAT_VERSION = 1
TABLES: dict[str, dict[str, type]] = {
    "runs": RUNS_COLUMNS, "events": EVENTS_COLUMNS, "messages": MESSAGES_COLUMNS,
    "wire": WIRE_COLUMNS,
}


def run_tree(db: TraceDB, run_id: str) -> list[str]:
    """``run_id`` and all its nested subagent runs, parents first.

    Each level is asked for by parent (indexed): exporting one run costs the same
    in a database of ten runs or of ten thousand (``runs()`` reads them all)."""
    out = [run_id]
    i = 0
    while i < len(out):
        kids = sorted(db.runs(parent_id=out[i]), key=lambda r: r.started_at or 0)
        out.extend(k.id for k in kids)
        i += 1
    return out


def export_lines(db: TraceDB, run_id: str) -> Iterator[str]:
    ids = run_tree(db, run_id)
    yield json.dumps({"format": FORMAT, "version": FORMAT_VERSION,
                      "schema_version": SCHEMA_VERSION, "root": run_id, "runs": len(ids)})
    for rid in ids:
        for table in ("runs", "events", "messages", "wire"):
            for row in db.raw_rows(table, rid):
                if table == "wire":
                    row.pop("id", None)
                yield json.dumps({"table": table, "row": row}, ensure_ascii=False,
                                 sort_keys=False)


def export_run(db_path: str | Path, run_id: str, out: str | Path) -> Path:
    """Write run ``run_id`` (an id or unique prefix) and its subagent runs to the trace
    file ``out`` (JSON Lines); return its path."""
    with TraceDB(db_path) as db:
        rid = db.resolve(run_id)
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as f:
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
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        msg = f"{p}: empty trace file"
        raise TraceFileError(msg)
    try:
        header = json.loads(lines[0])
    except ValueError as exc:
        msg = f"{p}:1: not a looptrace trace file ({exc})"
        raise TraceFileError(msg) from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        msg = f"{p}:1: not a looptrace trace file (no '{FORMAT}' header)"
        raise TraceFileError(msg)
    if int(header.get("schema_version", 0)) > SCHEMA_VERSION:
        msg = (f"{p}: written by a newer looptrace (schema {header.get('schema_version')}); "
               "upgrade looptrace to import it")
        raise TraceFileError(msg)
    rows: list[tuple[str, dict[str, Any]]] = []
    for n, line in enumerate(lines[1:], start=2):
        try:
            rec = json.loads(line)
        except ValueError as exc:
            msg = f"{p}:{n}: malformed JSON ({exc})"
            raise TraceFileError(msg) from None
        problem = row_problem(rec)
        if problem:
            msg = f"{p}:{n}: {problem}"
            raise TraceFileError(msg)
        rows.append((rec["table"], rec["row"]))
    if not any(t == "runs" for t, _ in rows):
        msg = f"{p}: the trace file holds no run"
        raise TraceFileError(msg)
    return header, rows


def row_problem(rec: Any) -> str | None:
    """What is wrong with one ``{"table": ..., "row": {...}}`` record (None: nothing)."""
    if not isinstance(rec, dict) or rec.get("table") not in TABLES or not isinstance(
            rec.get("row"), dict):
        return "expected {'table': runs|events|messages|wire, 'row': {...}}"
    unknown = set(rec["row"]) - set(TABLES[rec["table"]])
    if unknown:
        return f"unknown columns for {rec['table']}: {', '.join(sorted(unknown))}"
    return None


def import_trace(path: str | Path, db_path: str | Path, *, replace: bool = True) -> list[str]:
    """Load a trace file into ``db_path``; return the run ids it held."""
    _header, rows = read_trace(path)
    return import_rows(rows, db_path, replace=replace)


def import_rows(rows: list[tuple[str, dict[str, Any]]], db_path: str | Path, *,
                replace: bool = True, keep_stored: bool = False) -> list[str]:
    """Write validated ``(table, row)`` pairs into ``db_path`` in one transaction
    (with ``replace``, the runs they hold are deleted first, and no other); return
    the run ids. Every importer (trace files, OTLP spans) goes through here.

    ``keep_stored`` is for a partial set of rows (a trace cut in transit): what is
    already stored stays, a row with the same key is overwritten, a wire row
    already there (same run, event and time) is not added twice."""
    conn = connect(db_path)
    try:
        ids = [r["id"] for t, r in rows if t == "runs"]
        with conn:
            if replace and not keep_stored:
                for rid in ids:
                    for table, key in (("events", "run_id"), ("messages", "run_id"),
                                       ("wire", "run_id"), ("runs", "id")):
                        conn.execute(f"DELETE FROM {table} WHERE {key} = ?", [rid])
            for table, row in rows:
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
            # the counts of every run written here that has ended (tracer.summaries)
            refresh(conn, {r["id"] if t == "runs" else r.get("run_id") for t, r in rows})
            catch_up(conn, at_least=SEARCH_BATCH)  # (the search index: tracer.search)
    finally:
        conn.close()
    return ids


def import_many(paths: Iterable[str | Path], db_path: str | Path) -> list[str]:
    """``import_trace`` of each file in turn; return every run id they held."""
    out: list[str] = []
    for p in paths:
        out.extend(import_trace(p, db_path))
    return out


# The bundled sample traces: package data in an installed looptrace (the wheel holds
# sample_traces/ as tracer/_samples/), the repository's sample_traces/ in a checkout.
_PACKAGE = Path(__file__).resolve().parent
SAMPLES_DIR = (_PACKAGE / "_samples" if (_PACKAGE / "_samples").is_dir()
               else _PACKAGE.parent / "sample_traces")


def sample_files() -> list[Path]:
    return sorted(SAMPLES_DIR.glob("*.jsonl"))


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
    import re

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
        text = re.sub(r'"(created_at|created|timestamp)(\\?)": ?(?:\\?"[0-9T:.\-Z]+\\?"|[0-9.]+)',
                      r'"\1\2": 0', text)
        out.append(json.loads(text))
    return out
