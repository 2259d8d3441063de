"""``tracer.interop.exchange`` on small hand-written traces: export, import, bad files,
replace or add, the run tree, the sample database, ``normalize``.

Every expected value is written out here, not computed by the code under test.
Fast (no agent): ``mutmut`` runs this file (tests/README.md).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from pg_kit import untouched
from tracer_kit import rows

from tracer.db.schema import SCHEMA_VERSION, connect
from tracer.errors import RunNotFound, TraceFileError
from tracer.interop.exchange import (
    FORMAT,
    build_sample_db,
    export_lines,
    export_run,
    import_many,
    import_rows,
    import_trace,
    normalize,
    read_trace,
    row_problem,
    run_tree,
    sample_files,
)
from tracer.read.loader import TraceDB

HEADER = {"format": "looptrace-trace", "version": 1, "schema_version": SCHEMA_VERSION,
          "root": "run-a", "runs": 2}
RUN_A = {"id": "run-a", "parent_id": None, "parent_tool_call_id": None, "name": "weather",
         "thread_id": None, "agent_name": "agent", "status": "completed", "started_at": 10.0,
         "ended_at": 11.5, "error": None, "model": "scripted", "provider": None,
         "input_tokens": 5, "output_tokens": 7, "total_tokens": 12, "source": "middleware",
         "pid": 42, "metadata": '{"team":"search"}'}
RUN_B = {**RUN_A, "id": "run-b", "parent_id": "run-a", "parent_tool_call_id": "c1",
         "name": "helper", "started_at": 10.5, "metadata": None}
EVENTS_A = [
    {"run_id": "run-a", "seq": 0, "ts": 10.0, "hook": "run", "phase": "start",
     "duration_ms": None, "middleware": None, "lap": 0, "tool_call_id": None, "task": "t",
     "payload": None},
    {"run_id": "run-a", "seq": 1, "ts": 10.1, "hook": "wrap_model_call", "phase": "enter",
     "duration_ms": None, "middleware": "TraceMiddleware", "lap": 1, "tool_call_id": None,
     "task": "t", "payload": '{"messages":1}'},
]
MESSAGE_A = {"run_id": "run-a", "position": 0, "seq": 0, "msg_id": "m1", "type": "human",
             "tool_call_id": None, "text": "Weather in Oslo?",
             "data": '{"type":"human","data":{"content":"Weather in Oslo?","id":"m1"}}',
             "version": 0, "key": "m1"}
WIRE_A = {"run_id": "run-a", "seq": 1, "ts": 10.2, "provider": "openai", "method": "POST",
          "url": "http://x/v1/chat/completions", "request_headers": "{}",
          "request_body": '{"model":"m"}', "status": 200, "response_headers": "{}",
          "response_body": "{}", "chunks": None, "error": None, "duration_ms": 3.0}
EVENT_B = {"run_id": "run-b", "seq": 0, "ts": 10.5, "hook": "run", "phase": "start",
           "duration_ms": None, "middleware": None, "lap": 0, "tool_call_id": None, "task": "u",
           "payload": None}


def rec(table: str, row: dict) -> str:
    return json.dumps({"table": table, "row": row})


def trace_lines() -> list[str]:
    return [json.dumps(HEADER), rec("runs", RUN_A), *(rec("events", e) for e in EVENTS_A),
            rec("messages", MESSAGE_A), rec("wire", WIRE_A), rec("runs", RUN_B),
            rec("events", EVENT_B)]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write(tmp_path / "t.jsonl", trace_lines())


def table(db: str | Path, sql: str) -> list[tuple]:
    """Rows of ``sql`` read straight from the store (SQLite or PostgreSQL)."""
    if str(db).startswith("postgresql://"):
        return rows(str(db), sql)
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# -- a round trip, line for line ----------------------------------------------------
def test_import_then_export_gives_the_file_back(trace: Path, tmp_path: Path, store_db: str) -> None:
    db = store_db
    assert import_trace(trace, db) == ["run-a", "run-b"]
    out = export_run(db, "run-a", tmp_path / "sub" / "again.jsonl")
    assert out == tmp_path / "sub" / "again.jsonl"  # parent folders made
    got = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    want = [json.loads(x) for x in trace_lines()]
    assert got == want
    assert out.read_text(encoding="utf-8").endswith("}\n")
    # every column as it was, types included
    assert table(db, "SELECT id, status, total_tokens, metadata FROM runs ORDER BY id") == [
        ("run-a", "completed", 12, '{"team":"search"}'), ("run-b", "completed", 12, None)]
    assert table(db, "SELECT run_id, seq, hook, phase, payload FROM events ORDER BY run_id, seq"
                 ) == [("run-a", 0, "run", "start", None),
                       ("run-a", 1, "wrap_model_call", "enter", '{"messages":1}'),
                       ("run-b", 0, "run", "start", None)]
    assert table(db, "SELECT run_id, seq, status, duration_ms FROM wire") == [
        ("run-a", 1, 200, 3.0)]


def test_export_by_prefix_writes_the_full_tree_with_a_header(trace: Path,
                                                            tmp_path: Path, store_db: str) -> None:
    db = store_db
    import_trace(trace, db)
    with TraceDB(db) as tdb:
        assert run_tree(tdb, "run-a") == ["run-a", "run-b"]
        assert run_tree(tdb, "run-b") == ["run-b"]
        lines = list(export_lines(tdb, "run-b"))
    assert json.loads(lines[0]) == {"format": FORMAT, "version": 1,
                                    "schema_version": SCHEMA_VERSION, "root": "run-b", "runs": 1}
    assert [json.loads(x)["table"] for x in lines[1:]] == ["runs", "events"]
    out = export_run(db, "run-b", tmp_path / "b.jsonl")  # the full id
    assert json.loads(out.read_text().splitlines()[0])["root"] == "run-b"
    with pytest.raises(RunNotFound, match="ambiguous"):
        export_run(db, "run-", tmp_path / "c.jsonl")
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        export_run(db, "nope", tmp_path / "d.jsonl")
    assert not (tmp_path / "c.jsonl").exists() and not (tmp_path / "d.jsonl").exists()


def test_run_tree_is_parents_first_and_children_by_start(store_db: str) -> None:
    runs = [
        {**RUN_A, "id": "root", "started_at": 1.0},
        {**RUN_A, "id": "late", "parent_id": "root", "started_at": 3.0},
        {**RUN_A, "id": "early", "parent_id": "root", "started_at": 2.0},
        {**RUN_A, "id": "grandchild", "parent_id": "early", "started_at": 2.5},
        {**RUN_A, "id": "other", "started_at": 0.5},
    ]
    db = store_db
    import_rows([("runs", r) for r in runs], db)
    with TraceDB(db) as tdb:
        assert run_tree(tdb, "root") == ["root", "early", "late", "grandchild"]
        assert run_tree(tdb, "other") == ["other"]


def test_wire_ids_are_not_exported(trace: Path, store_db: str) -> None:
    db = store_db
    import_trace(trace, db)
    import_trace(trace, db)  # imported again: replaced, not added
    assert table(db, "SELECT COUNT(*) FROM wire") == [(1,)]
    with TraceDB(db) as tdb:
        wire = [json.loads(x)["row"] for x in export_lines(tdb, "run-a")
                if json.loads(x).get("table") == "wire"]
    assert wire == [WIRE_A] and "id" not in wire[0]


# -- replace, add, keep_stored ----------------------------------------------------------
def test_replace_deletes_the_runs_it_holds_and_no_other(trace: Path, store_db: str) -> None:
    db = store_db
    import_rows([("runs", {**RUN_A, "id": "bystander"}),
                 ("events", {**EVENTS_A[0], "run_id": "bystander"})], db)
    import_rows([("runs", RUN_A), ("events", EVENTS_A[0]), ("events", EVENTS_A[1])], db)
    # a shorter version of run-a: its old events go, the bystander stays
    import_rows([("runs", {**RUN_A, "status": "error"}), ("events", EVENTS_A[0])], db)
    assert table(db, "SELECT run_id, seq FROM events ORDER BY run_id, seq") == [
        ("bystander", 0), ("run-a", 0)]
    assert table(db, "SELECT id, status FROM runs ORDER BY id") == [
        ("bystander", "completed"), ("run-a", "error")]


def test_without_replace_a_second_copy_is_refused(trace: Path, store_db: str) -> None:
    db = store_db
    import_trace(trace, db, replace=False)
    with pytest.raises(sqlite3.IntegrityError):
        import_trace(trace, db, replace=False)
    # one transaction: the failed import left the first copy exactly as it was
    assert table(db, "SELECT COUNT(*) FROM events") == [(3,)]
    assert table(db, "SELECT COUNT(*) FROM wire") == [(1,)]


def test_keep_stored_adds_a_partial_trace_without_losing_or_doubling(store_db: str) -> None:
    db = store_db
    import_rows([("runs", RUN_A), ("events", EVENTS_A[0]), ("wire", WIRE_A)], db)
    # the rest of the run arrives: an event, the same wire row again, a later run status
    import_rows([("runs", {**RUN_A, "status": "error"}), ("events", EVENTS_A[1]),
                 ("wire", WIRE_A), ("wire", {**WIRE_A, "ts": 10.3})], db, keep_stored=True)
    assert table(db, "SELECT seq FROM events ORDER BY seq") == [(0,), (1,)]
    assert table(db, "SELECT ts FROM wire ORDER BY ts") == [(10.2,), (10.3,)]
    assert table(db, "SELECT status FROM runs") == [("error",)]


def test_import_many_returns_every_run_id(trace: Path, tmp_path: Path, store_db: str) -> None:
    other = write(tmp_path / "o.jsonl", [json.dumps({**HEADER, "root": "solo", "runs": 1}),
                                         rec("runs", {**RUN_A, "id": "solo"})])
    assert import_many([trace, other], store_db) == ["run-a", "run-b", "solo"]
    assert import_many([], store_db) == []


# -- bad trace files: one line naming the file and the line ---------------------------------
BAD = [
    ([], "empty trace file"),
    (["", "   "], "empty trace file"),
    (["not json"], ":1: not a looptrace trace file"),
    (['{"format": "something-else"}'], ":1: not a looptrace trace file (no 'looptrace-trace'"),
    (["[1, 2]"], ":1: not a looptrace trace file (no 'looptrace-trace'"),
    ([json.dumps({**HEADER, "schema_version": SCHEMA_VERSION + 1})],
     f"written by a newer looptrace (schema {SCHEMA_VERSION + 1})"),
    ([json.dumps(HEADER), rec("runs", RUN_A), "{oops"], ":3: malformed JSON"),
    ([json.dumps(HEADER), '{"table": "people", "row": {}}'],
     ":2: expected {'table': runs|events|messages|wire|state|state_values|notes, 'row': {...}}"),
    ([json.dumps(HEADER), '{"table": "runs", "row": [1]}'], ":2: expected {'table'"),
    ([json.dumps(HEADER), '"just a string"'], ":2: expected {'table'"),
    ([json.dumps(HEADER), rec("runs", {**RUN_A, "colour": 1, "avatar": 2})],
     ":2: unknown columns for runs: avatar, colour"),
    ([json.dumps(HEADER), rec("events", EVENTS_A[0])], "the trace file holds no run"),
]


@pytest.mark.parametrize(("lines", "words"), BAD)
def test_a_bad_trace_file_is_one_clear_error(tmp_path: Path, lines: list[str],
                                             words: str, store_db: str) -> None:
    path = write(tmp_path / "bad.jsonl", lines) if lines else tmp_path / "bad.jsonl"
    if not lines:
        path.write_text("", encoding="utf-8")
    with pytest.raises(TraceFileError) as info:
        read_trace(path)
    msg = str(info.value)
    assert msg.startswith(str(path)) and words in msg and "\n" not in msg
    db = store_db
    with pytest.raises(TraceFileError):
        import_trace(path, db)
    assert untouched(db)  # nothing was written


def test_unreadable_trace_files(tmp_path: Path) -> None:
    with pytest.raises(TraceFileError, match="cannot read trace file"):
        read_trace(tmp_path / "missing.jsonl")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TraceFileError, match="cannot read trace file"):
        read_trace(binary)


def test_read_trace_returns_the_header_and_rows(trace: Path) -> None:
    header, rows = read_trace(trace)
    assert header == HEADER
    assert [t for t, _ in rows] == ["runs", "events", "events", "messages", "wire", "runs",
                                    "events"]
    assert rows[0][1] == RUN_A and rows[4][1] == WIRE_A
    # an older schema, and blank lines between records, are fine
    lines = [json.dumps({**HEADER, "schema_version": 1}), "", rec("runs", RUN_A), "  "]
    header, rows = read_trace(write(trace, lines))
    assert header["schema_version"] == 1 and rows == [("runs", RUN_A)]


@pytest.mark.parametrize(("record", "problem"), [
    ({"table": "runs", "row": {"id": "x", "status": "error"}}, None),
    # (was None: the insert then failed, a NOT NULL constraint in a traceback: issue 36)
    ({"table": "runs", "row": {"id": "x"}}, "runs.status is missing (null)"),
    ({"table": "wire", "row": {}}, None),
    ({"table": "runs"}, "expected {'table': runs|events|messages|wire|state|state_values|notes, 'row': {...}}"),
    ({"row": {}}, "expected {'table': runs|events|messages|wire|state|state_values|notes, 'row': {...}}"),
    (["runs", {}], "expected {'table': runs|events|messages|wire|state|state_values|notes, 'row': {...}}"),
    ({"table": "events", "row": {"seq": 1, "zz": 2, "aa": 3}},
     "unknown columns for events: aa, zz"),
])
def test_row_problem(record: object, problem: str | None) -> None:
    assert row_problem(record) == problem


# -- the sample database ---------------------------------------------------------------------
def test_sample_files_are_the_bundled_jsonl_files() -> None:
    files = sample_files()
    assert files == sorted(files)
    assert {p.name for p in files} >= {"weather.jsonl", "shopping.jsonl", "deep-agent.jsonl"}
    assert all(p.parent.name == "sample_traces" for p in files)


def test_build_sample_db_builds_once_and_rebuilds_when_stale(tmp_path: Path) -> None:
    db = tmp_path / "samples.db"
    assert build_sample_db(db) == db
    n_samples = len(sample_files())
    roots = table(db, "SELECT COUNT(*) FROM runs WHERE parent_id IS NULL")[0][0]
    assert roots == n_samples
    # a self-contained file: no WAL left beside it, not in WAL mode
    assert not Path(str(db) + "-wal").exists()
    assert table(db, "PRAGMA journal_mode") == [("delete",)]
    # up to date: kept as it is (a marker row survives)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO meta(key, value) VALUES ('marker', '1')")
    conn.commit()
    conn.close()
    build_sample_db(db)
    assert table(db, "SELECT value FROM meta WHERE key = 'marker'") == [("1",)]
    # older than the samples: rebuilt (the marker is gone)
    os.utime(db, (1, 1))
    build_sample_db(db)
    assert table(db, "SELECT value FROM meta WHERE key = 'marker'") == []
    # unreadable: rebuilt
    db.write_bytes(b"garbage" * 100)
    build_sample_db(db)
    assert table(db, "SELECT COUNT(*) FROM runs WHERE parent_id IS NULL")[0][0] == n_samples
    assert not Path(str(db) + ".tmp").exists()


# -- normalize ----------------------------------------------------------------------------
def test_normalize_numbers_ids_and_zeroes_times() -> None:
    lines = [
        json.dumps({"format": FORMAT, "root": "0f8fad5b-d9cb-469f-a165-70867728950e"}),
        rec("runs", {"id": "0f8fad5b-d9cb-469f-a165-70867728950e", "started_at": 3.5,
                     "ended_at": 4.5, "pid": 77, "name": "n"}),
        rec("events", {"run_id": "0f8fad5b-d9cb-469f-a165-70867728950e", "seq": 0, "ts": 3.6,
                       "duration_ms": 1.5, "task": "MainThread:1",
                       "payload": '{"id": "lc_run--7c9e6679-7425-40de-944b-e07fc1f90ae7",'
                                  ' "duration_ms": 12.5}'}),
        rec("messages", {"run_id": "0f8fad5b-d9cb-469f-a165-70867728950e",
                         "key": "o:140234", "msg_id": "3f2504e04f8911d39a0c0305e82c3301",
                         "data": '{"created_at": "2025-01-01T00:00:00Z", "created": 17}'}),
        rec("events", {"run_id": "x", "seq": 1, "ts": None, "task": None}),
    ]
    out = normalize(lines)
    assert out == [
        {"format": FORMAT, "root": "<id0>"},
        {"table": "runs", "row": {"id": "<id0>", "started_at": 0, "ended_at": 0, "pid": 0,
                                  "name": "n"}},
        {"table": "events", "row": {"run_id": "<id0>", "seq": 0, "ts": 0, "duration_ms": 0,
                                    "task": "<task>",
                                    "payload": '{"id": "<id1>", "duration_ms": 0}'}},
        {"table": "messages", "row": {"run_id": "<id0>", "key": "<id2>", "msg_id": "<id3>",
                                      "data": '{"created_at": 0, "created": 0}'}},
        {"table": "events", "row": {"run_id": "x", "seq": 1, "ts": None, "task": None}},
    ]


def test_normalize_keeps_what_is_not_an_id() -> None:
    lines = [rec("events", {"seq": 3, "payload": "call_weather_1 o:12 abc12345",
                            "hook": "before_model"})]
    assert normalize(lines) == [{"table": "events", "row": {
        "seq": 3, "payload": "call_weather_1 o:12 abc12345", "hook": "before_model"}}]


def test_an_imported_file_opens_in_the_reader(trace: Path, store_db: str) -> None:
    db = store_db
    import_trace(trace, db)
    connect(db).close()
    with TraceDB(db) as tdb:
        run = tdb.run("run-a")
    assert [c.id for c in run.children] == ["run-b"]
    assert run.metadata == {"team": "search"}
    assert [(m.key, m.text) for m in run.messages] == [("m1", "Weather in Oslo?")]
    assert (run.summary.laps, run.summary.model_calls, run.summary.events) == (1, 1, 2)


# -- what mutation testing showed untested (tests/README.md) --------------------------------
def test_an_exported_file_is_readable_text_in_column_order(tmp_path: Path, store_db: str) -> None:
    """Readable JSONL: non-ASCII text as it is (not \\u escapes), each row's columns in
    the table's order, "table" before "row"."""
    db = store_db
    text = "Light snow, -3°C — Tromsø"
    import_rows([("runs", RUN_A), ("messages", {**MESSAGE_A, "text": text})], db)
    out = export_run(db, "run-a", tmp_path / "a" / "b" / "c.jsonl")  # folders made
    raw = out.read_bytes().decode("utf-8").splitlines()
    assert text in raw[2]
    assert raw[1].startswith('{"table": "runs", "row": {"id": "run-a", "parent_id": null,')
    cols = list(json.loads(raw[1])["row"])
    assert cols[:4] == ["id", "parent_id", "parent_tool_call_id", "name"]
    assert list(json.loads(raw[2])["row"])[:3] == ["run_id", "position", "seq"]


def test_children_without_a_start_time_come_first(store_db: str) -> None:
    db = store_db
    import_rows([("runs", {**RUN_A, "id": "root"}),
                 ("runs", {**RUN_A, "id": "timed", "parent_id": "root", "started_at": 0.5}),
                 ("runs", {**RUN_A, "id": "untimed", "parent_id": "root", "started_at": None})],
                db)
    with TraceDB(db) as tdb:
        assert run_tree(tdb, "root") == ["root", "untimed", "timed"]


def test_a_header_without_schema_version_is_read(tmp_path: Path) -> None:
    lines = [json.dumps({"format": FORMAT, "root": "run-a"}), rec("runs", RUN_A)]
    header, rows = read_trace(write(tmp_path / "old.jsonl", lines))
    assert header == {"format": FORMAT, "root": "run-a"} and rows == [("runs", RUN_A)]


def test_a_trace_holding_a_row_twice_keeps_the_last(store_db: str) -> None:
    db = store_db
    import_rows([("runs", RUN_A), ("events", EVENTS_A[0]),
                 ("events", {**EVENTS_A[0], "payload": '{"again":1}'})], db)
    assert table(db, "SELECT payload FROM events") == [('{"again":1}',)]


def test_keep_stored_without_replace_overwrites_rows_it_holds(store_db: str) -> None:
    db = store_db
    import_rows([("runs", RUN_A), ("events", EVENTS_A[0])], db)
    import_rows([("runs", {**RUN_A, "status": "error"}), ("events", EVENTS_A[0])], db,
                replace=False, keep_stored=True)
    assert table(db, "SELECT status FROM runs") == [("error",)]
    assert table(db, "SELECT COUNT(*) FROM events") == [(1,)]


def test_counts_follow_a_run_that_arrives_in_parts(new_store: Callable[..., str]) -> None:
    """A trace cut in transit (keep_stored): the runs list's counts cover every part,
    whichever part holds the run's row."""
    db = new_store("x.db")
    model_exit = {**EVENTS_A[1], "seq": 2, "phase": "exit"}
    # the run's row (ended) and its first event, then the rest without the run's row
    import_rows([("runs", RUN_A), ("events", EVENTS_A[0])], db)
    import_rows([("events", EVENTS_A[1]), ("events", model_exit)], db, keep_stored=True)
    with TraceDB(db) as tdb:
        (s,) = tdb.runs()
    assert (s.laps, s.model_calls, s.events) == (1, 1, 3)
    # events first while it runs, then the row saying it ended
    other = new_store("y.db")
    import_rows([("runs", {**RUN_A, "status": "running"}), ("events", EVENTS_A[0]),
                 ("events", EVENTS_A[1])], other)
    import_rows([("runs", RUN_A)], other, keep_stored=True)
    with TraceDB(other) as tdb:
        (s,) = tdb.runs()
    assert (s.status, s.laps, s.model_calls, s.events) == ("completed", 1, 1, 2)


def test_a_build_cleans_what_a_crashed_build_or_an_old_file_left(tmp_path: Path) -> None:
    """Beside the sample database: an old write-ahead log (which SQLite would replay
    into the new file), and a half-built temporary file with a run of its own."""
    db = tmp_path / "samples.db"
    build_sample_db(db)
    n_samples = len(sample_files())
    # a half-built temporary database holding a stray run, with its WAL
    stray = tmp_path / "stray.db"
    import_rows([("runs", {**RUN_A, "id": "stray-run"})], stray)
    conn = sqlite3.connect(stray)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("INSERT INTO runs(id, status) VALUES ('stray-in-wal', 'completed')")
    conn.commit()
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(stray) + suffix)
        if src.exists():
            Path(str(db) + ".tmp" + suffix).write_bytes(src.read_bytes())
            Path(str(db) + suffix).write_bytes(src.read_bytes()) if suffix else None
    conn.close()
    os.utime(db, (1, 1))  # older than the samples: rebuilt
    build_sample_db(db)
    ids = {i for (i,) in table(db, "SELECT id FROM runs")}
    assert not ids & {"stray-run", "stray-in-wal"}
    assert table(db, "SELECT COUNT(*) FROM runs WHERE parent_id IS NULL")[0][0] == n_samples
    for suffix in ("-wal", "-shm", ".tmp", ".tmp-wal", ".tmp-shm"):
        assert not Path(str(db) + suffix).exists(), suffix


def test_a_database_as_new_as_the_samples_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "samples.db"
    build_sample_db(db)
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO meta(key, value) VALUES ('marker', '1')")
    conn.commit()
    conn.close()
    newest = max(f.stat().st_mtime for f in sample_files())
    os.utime(db, (newest, newest))  # exactly as new: not stale
    build_sample_db(db)
    assert table(db, "SELECT value FROM meta WHERE key = 'marker'") == [("1",)]


def test_no_sample_files_builds_an_empty_database(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.interop import exchange

    monkeypatch.setattr(exchange, "sample_files", list)
    db = tmp_path / "none.db"
    assert build_sample_db(db) == db
    assert table(db, "SELECT COUNT(*) FROM runs") == [(0,)]
    assert build_sample_db(db) == db  # and again: kept


def test_normalize_does_not_depend_on_the_order_of_a_rows_keys() -> None:
    """Two recordings of the same thing, their columns in another order, normalise
    the same (ids are numbered in the order they appear in the sorted text)."""
    a = {"table": "messages", "row": {"msg_id": "3f2504e04f8911d39a0c0305e82c3301",
                                      "key": "o:140234", "seq": 1}}
    b = {"table": "messages", "row": {"seq": 1, "key": "o:140234",
                                      "msg_id": "3f2504e04f8911d39a0c0305e82c3301"}}
    assert normalize([json.dumps(a)]) == normalize([json.dumps(b)]) == [
        {"row": {"key": "<id0>", "msg_id": "<id1>", "seq": 1}, "table": "messages"}]
