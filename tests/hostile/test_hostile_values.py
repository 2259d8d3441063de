"""``looptrace import`` against values of the wrong type or out of range (issue 36, item 8):
a ``schema_version`` of "abc", null or [], a ``seq`` of 2**70, a lone surrogate, a row
nested 100,000 deep gave tracebacks; a ``seq`` of "zero" or a ``started_at`` of
"yesterday" or Infinity was stored, and ``show``, ``check``, ``runs --json``, the exports,
``diff`` and the replay page crashed on it after. Each such file is now refused whole,
as one line naming its line, with nothing written; in an OTLP file, the row is left out
with a warning (as a malformed row always was), never stored, never a traceback."""

from __future__ import annotations

import json
import math
import sqlite3
import sys
import uuid
from pathlib import Path

import pytest
from hostile_kit import cli, trace_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from otel_kit import json_body

from tracer.db.schema import (
    EVENTS_COLUMNS,
    MESSAGES_COLUMNS,
    RUNS_COLUMNS,
    SCHEMA_VERSION,
    STATE_COLUMNS,
    STATE_VALUES_COLUMNS,
    WIRE_COLUMNS,
)
from tracer.interop.exchange import import_rows
from tracer.otel.runspans import run_spans
from tracer.read.loader import TraceDB

HEADER = {"format": "looptrace-trace", "version": 1, "schema_version": SCHEMA_VERSION,
          "root": "r", "runs": 1}

# One valid row of every table (the runs row first), written out by hand.
ROWS: list[tuple[str, dict]] = [
    ("runs", {"id": "r", "parent_id": None, "name": "a run", "status": "completed",
              "started_at": 1700000000.0, "ended_at": 1700000001.5, "input_tokens": 3,
              "output_tokens": 4, "total_tokens": 7, "source": "import", "pid": 42,
              "metadata": "{}"}),
    ("events", {"run_id": "r", "seq": 0, "ts": 1700000000.0, "hook": "run", "phase": "start",
                "duration_ms": 0.5, "lap": 0, "payload": "{}"}),
    ("messages", {"run_id": "r", "position": 0, "seq": 0, "msg_id": "m0", "type": "human",
                  "text": "hi", "data": json.dumps({"type": "human", "data": {"content": "hi"}}),
                  "version": 0, "key": "m0"}),
    ("wire", {"run_id": "r", "seq": 0, "ts": 1700000000.2, "provider": "openai",
              "method": "POST", "url": "https://x.invalid/v1", "status": 200,
              "duration_ms": 12.0}),
    ("state", {"run_id": "r", "seq": 0, "key": "todos", "hash": "h0", "by": "model"}),
    ("state_values", {"run_id": "r", "hash": "h0", "data": "[]"}),
]
COLUMNS = {"runs": RUNS_COLUMNS, "events": EVENTS_COLUMNS, "messages": MESSAGES_COLUMNS,
           "wire": WIRE_COLUMNS, "state": STATE_COLUMNS, "state_values": STATE_VALUES_COLUMNS}
# the keys that tie the rows together (changed, the file names another run, refused
# for that: tests/hostile/test_hostile_import.py)
KEYS = {("runs", "id"), ("runs", "parent_id"), *((t, "run_id") for t in COLUMNS)}
# written by hand: the columns that count from 0, the times, the columns never null
COUNTS = {"seq", "position", "lap", "version", "input_tokens", "output_tokens",
          "total_tokens", "pid"}
TIMES = {"started_at", "ended_at", "ts"}
YEAR_10000 = 253402300800
NOT_NULL = {("runs", "status"), ("events", "seq"), ("messages", "position"),
            ("messages", "seq"), ("state", "seq"), ("state", "key"), ("state_values", "hash")}
STATUSES = ["running", "completed", "error", "interrupted"]


def write(path: Path, rows: list[tuple[str, dict]], header: dict | None = None,
          raw: dict[int, str] | None = None) -> Path:
    """A trace file of ``rows``; ``raw``: lines (by their number) written as given."""
    return trace_file(path, rows, header or HEADER, raw)


def stored_runs(db: Path) -> list[tuple]:
    if not db.exists():
        return []
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT id FROM runs").fetchall()
    finally:
        conn.close()


def refused(capsys: pytest.CaptureFixture[str], path: Path, db: Path, line: int,
            says: str) -> None:
    code, out, err = cli(capsys, "import", "--db", str(db), str(path))
    assert (code, out) == (1, ""), err
    assert err == f"looptrace import: {path}:{line}: {says}\n"
    assert stored_runs(db) == []


# -- the cases of the issue ------------------------------------------------------------------
@pytest.mark.parametrize(("version", "shown"), [("abc", "'abc'"), (None, "None"), ([], "[]"),
                                                (-1, "-1"), (True, "True"),
                                                (10**40, "an integer of 41 digits")])
def test_a_schema_version_that_is_no_number_is_one_line(tmp_path: Path, capsys, version,  # type: ignore[no-untyped-def]
                                                        shown) -> None:
    path = write(tmp_path / "t.jsonl", ROWS[:1], {**HEADER, "schema_version": version})
    refused(capsys, path, tmp_path / "x.db", 1, f"schema_version {shown} is not a schema number")


def test_seq_past_64_bits_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "t.jsonl", [ROWS[0], ("events", {**ROWS[1][1], "seq": 2**70})])
    refused(capsys, path, tmp_path / "x.db", 3, "events.seq 1180591620717411303424: expected "
            "an integer from 0 to 2**63-1")


def test_a_lone_surrogate_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path / "t.jsonl", ROWS[:2],
                 raw={3: '{"table": "events", "row": {"run_id": "r", "seq": 0, "hook": "\\ud800"}}'})
    refused(capsys, path, tmp_path / "x.db", 3,
            r"events.hook '\ud800': not valid Unicode (a lone surrogate)")


def test_a_row_nested_100000_deep_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    deep = '{"table": "runs", "row": {"id": "r", "status": "completed", "name": ' + (
        "[" * 100_000 + "]" * 100_000 + "}}")
    path = write(tmp_path / "t.jsonl", ROWS[:2], raw={2: deep})
    refused(capsys, path, tmp_path / "x.db", 2, "malformed JSON (nested too deeply)")


@pytest.mark.parametrize(("table", "col", "value", "says"), [
    ("events", "seq", "zero", "events.seq 'zero': expected an integer from 0 to 2**63-1"),
    ("runs", "started_at", "yesterday", "runs.started_at 'yesterday': expected a finite number"),
    ("runs", "started_at", math.inf, "runs.started_at inf: expected a finite number"),
    ("runs", "ended_at", math.nan, "runs.ended_at nan: expected a finite number"),
    ("runs", "started_at", -1.0,
     "runs.started_at -1.0: expected a time (seconds from 0 to 253402300799)"),
    ("runs", "status", "done",
     "runs.status 'done': expected one of running, completed, error, interrupted, handoff, stopped"),
    ("runs", "status", None, "runs.status is missing (null)"),
    ("messages", "position", True,
     "messages.position True: expected an integer from 0 to 2**63-1"),
    ("wire", "status", 2**63,
     "wire.status 9223372036854775808: expected an integer from -9223372036854775808 to 2**63-1"),
    ("events", "ts", 2**64, "events.ts 18446744073709551616: expected a finite number"),
])
def test_a_value_readers_would_crash_on_is_refused(tmp_path: Path, capsys, table, col,  # type: ignore[no-untyped-def]
                                                   value, says) -> None:
    """(were stored: ``show``, ``check``, ``runs --json``, ``export --html``, ``diff``
    and the replay page then crashed on the run)"""
    rows = [(t, {**r, col: value} if t == table else r) for t, r in ROWS]
    line = 2 + [t for t, _ in ROWS].index(table)
    refused(capsys, write(tmp_path / "t.jsonl", rows), tmp_path / "x.db", line, says)


def test_the_valid_rows_import_and_read(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "x.db"
    code, out, err = cli(capsys, "import", "--db", str(db), str(write(tmp_path / "t.jsonl", ROWS)))
    assert (code, out, err) == (0, f"imported 1 run into {db}\n", "")
    code, out, _ = cli(capsys, "show", "r", "--db", str(db))
    assert code == 0 and "a run" in out


# -- the property ------------------------------------------------------------------------------
def bad_values(table: str, col: str) -> st.SearchStrategy[object]:
    """Values column ``col`` of ``table`` may not hold (by the schema's type, by hand)."""
    kind = COLUMNS[table][col]
    others = st.one_of(st.booleans(), st.lists(st.integers(), max_size=2),
                       st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
    if kind is str:
        surrogate = st.builds(lambda a, s, b: a + s + b, st.text(max_size=3),
                              st.sampled_from(["\ud800", "\udfff", "\udc80"]), st.text(max_size=3))
        bad = st.one_of(others, st.integers(), st.floats(allow_nan=False), surrogate)
        if (table, col) == ("runs", "status"):
            bad = st.one_of(bad, st.text(max_size=12).filter(lambda s: s not in STATUSES))
        return bad
    if kind is int:
        low = 0 if col in COUNTS else -(2**63)
        return st.one_of(others, st.text(max_size=5), st.floats(),
                         st.integers(min_value=2**63), st.integers(max_value=low - 1))
    # a float column
    out_of_range = st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(
        lambda v: not math.isfinite(v)), st.integers(min_value=2**63),
        st.integers(max_value=-(2**63) - 1))
    if col in TIMES:
        out_of_range = st.one_of(out_of_range, st.floats(max_value=-1e-9),
                                 st.floats(min_value=YEAR_10000, allow_infinity=False))
    return st.one_of(others, st.text(max_size=5), out_of_range)


def good_values(table: str, col: str) -> st.SearchStrategy[object]:
    kind = COLUMNS[table][col]
    if (table, col) == ("runs", "status"):
        return st.sampled_from(STATUSES)
    if kind is str:
        return st.text(max_size=20)
    if kind is int:
        return st.integers(min_value=0 if col in COUNTS else -(2**63), max_value=2**63 - 1)
    if col in TIMES:
        return st.floats(min_value=0, max_value=YEAR_10000 - 1)
    return st.floats(allow_nan=False, allow_infinity=False)


FIELDS = [(t, c) for t, cols in COLUMNS.items() for c in cols
          if (t, c) not in KEYS and (t, c) != ("wire", "id")]


@st.composite
def one_bad_field(draw: st.DrawFn) -> tuple[str, str, object]:
    table, col = draw(st.sampled_from(FIELDS))
    return table, col, draw(bad_values(table, col))


@st.composite
def one_good_field(draw: st.DrawFn) -> tuple[str, str, object]:
    table, col = draw(st.sampled_from(FIELDS))
    return table, col, draw(good_values(table, col))


PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@PROPERTY
@given(bad=one_bad_field())
def test_any_wrong_value_refuses_the_file_with_its_line(tmp_path: Path, capsys, bad) -> None:  # type: ignore[no-untyped-def]
    table, col, value = bad
    rows = [(t, {**r, col: value} if t == table else r) for t, r in ROWS]
    line = 2 + [t for t, _ in ROWS].index(table)
    path = tmp_path / f"{uuid.uuid4().hex}.jsonl"
    lines = [json.dumps(HEADER)] + [json.dumps({"table": t, "row": r}) for t, r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
    db = tmp_path / f"{uuid.uuid4().hex}.db"
    code, out, err = cli(capsys, "import", "--db", str(db), str(path))
    assert (code, out) == (1, ""), (bad, err)
    assert err.startswith(f"looptrace import: {path}:{line}: {table}.{col} "), (bad, err)
    assert err.count("\n") == 1, err
    assert stored_runs(db) == []


@PROPERTY
@given(good=one_good_field(), null=st.booleans())
def test_any_right_value_imports_as_it_was(tmp_path: Path, capsys, good, null) -> None:  # type: ignore[no-untyped-def]
    table, col, value = good
    if null and (table, col) not in NOT_NULL:
        value = None
    rows = [(t, {**r, col: value} if t == table else r) for t, r in ROWS]
    path = write(tmp_path / f"{uuid.uuid4().hex}.jsonl", rows)
    db = tmp_path / f"{uuid.uuid4().hex}.db"
    code, _out, err = cli(capsys, "import", "--db", str(db), str(path))
    assert (code, err) == (0, ""), (good, err)
    conn = sqlite3.connect(db)
    try:
        (stored,) = conn.execute(f"SELECT {col} FROM {table}").fetchone()
    finally:
        conn.close()
    assert stored == value and type(stored) is (  # (a REAL column gives a float back)
        float if COLUMNS[table][col] is float and value is not None else type(value)), good


# -- OTLP files --------------------------------------------------------------------------------
@pytest.fixture
def otlp_text(tmp_path: Path) -> str:
    db = tmp_path / "src.db"
    import_rows(ROWS[:2], db)
    with TraceDB(db) as tdb:
        return json_body(run_spans(tdb, "r")).decode()


@pytest.mark.parametrize(("edit", "says"), [
    (('\\"seq\\":0', '\\"seq\\":1180591620717411303424'),
     "row 1: events.seq 1180591620717411303424: expected an integer from 0 to 2**63-1"),
    (('\\"seq\\":0', '\\"seq\\":\\"zero\\"'),
     "row 1: events.seq 'zero': expected an integer from 0 to 2**63-1"),
    (('\\"hook\\":\\"run\\"', '\\"hook\\":\\"\\\\ud800\\"'),
     r"row 1: events.hook '\ud800': not valid Unicode (a lone surrogate)"),
    (('\\"name\\":\\"a run\\"', '\\"name\\":' + "[" * 100_000 + "]" * 100_000),
     "a looptrace.row event with malformed JSON (nested too deeply)"),
])
def test_an_otlp_row_with_a_wrong_value_is_left_out(tmp_path: Path, capsys, otlp_text,  # type: ignore[no-untyped-def]
                                                    edit, says) -> None:
    assert edit[0] in otlp_text
    path = tmp_path / "t.json"
    path.write_text(otlp_text.replace(edit[0], edit[1], 1), encoding="utf-8")
    db = tmp_path / "x.db"
    code, _out, err = cli(capsys, "import", "--db", str(db), str(path))
    assert code == 0 and "Traceback" not in err
    assert says in err, err
    if db.exists():  # (no row left to write: no file)
        conn = sqlite3.connect(db)
        try:
            assert conn.execute("SELECT seq, hook FROM events").fetchall() == []
        finally:
            conn.close()


def test_an_otlp_file_nested_100000_deep_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.json"
    path.write_text('{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    code, out, err = cli(capsys, "import", "--db", str(tmp_path / "x.db"), str(path))
    assert (code, out) == (1, "")
    assert err == f"looptrace import: {path}:1: malformed JSON (nested too deeply)\n"
    assert sys.getrecursionlimit() >= 1000  # (untouched)
