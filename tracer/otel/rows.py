"""looptrace's stored rows, carried in span events so that OTLP loses nothing.

The GenAI attributes of an exported span are a view (what a tracing backend
shows); what makes the round trip exact is that every stored row of the run
travels too, on the span it describes (an event's row on its chat or tool span,
a message on the span of the event that recorded it, the run's ``runs`` row on
every span of the run). Each span carries its rows in ONE compact event
``looptrace.row``, so a backend's events list shows one entry, not one per row:
``looptrace.row.index`` numbers the event within the trace, and
``looptrace.row.batch`` holds ``[[row index, table, row], ...]`` as JSON (the
row index is the row's place in the JSONL trace file), cut into strings of at
most ``CHUNK`` characters: backends cap attribute values (New Relic at 4095
characters, others at 16 or 64 KB), and a cut row would be a lost row. The JSON
is ASCII-only (``\\uXXXX`` escapes), so a chunk boundary never splits a
character and strings that are not valid UTF-8 (a lone surrogate in a tool
result) still travel as valid protobuf strings.

The root span says how many such events the trace carries (``looptrace.rows``),
which tells the receiver when a trace is complete. ``gather`` also reads the
first form of the export (one event per row: ``looptrace.table``,
``looptrace.row`` = the row or a part of it, ``looptrace.row.part`` of
``looptrace.row.parts``; ``looptrace.rows`` then counts rows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tracer.interop.exchange import FORMAT, FORMAT_VERSION, row_problem

from .spans import Span, SpanEvent

FORMAT_TAG = f"{FORMAT}/{FORMAT_VERSION}"  # "looptrace-trace/1"
ROW_EVENT = "looptrace.row"
CHUNK = 4000

A_FORMAT = "looptrace.format"
A_SCHEMA = "looptrace.schema_version"
A_ROWS = "looptrace.rows"
A_RUN = "looptrace.run.id"
A_TABLE = "looptrace.table"
A_ROW = "looptrace.row"
A_INDEX = "looptrace.row.index"
A_PART = "looptrace.row.part"
A_PARTS = "looptrace.row.parts"
A_BATCH = "looptrace.row.batch"


def row_event(ordinal: int, rows: list[tuple[int, str, dict[str, Any]]],
              ts: float) -> SpanEvent:
    """The one span event that carries a span's rows: (row index, table, row) each."""
    text = json.dumps([list(r) for r in rows], ensure_ascii=True, separators=(",", ":"))
    chunks = [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)]
    return SpanEvent(ROW_EVENT, ts, {A_INDEX: ordinal, A_BATCH: chunks})


def is_looptrace(span: Span) -> bool:
    """Whether a span was written by looptrace's exporter (and may carry rows)."""
    return A_RUN in span.attributes or A_FORMAT in span.attributes


@dataclass
class Gathered:
    """The rows a trace's spans carry, in trace-file order."""

    rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    expected: int | None = None  # from the root span (None: the root has not arrived)
    carried: int = 0  # row events read whole (in the first form: rows)
    incomplete: int = 0  # rows with parts missing (left out; the first form only)
    problems: list[str] = field(default_factory=list)  # malformed rows (left out)

    @property
    def complete(self) -> bool:
        return (self.expected is not None and not self.incomplete and not self.problems
                and self.carried == self.expected)

    @property
    def missing(self) -> int:
        """Row events (first form: rows) announced by the root and not (wholly) here."""
        if self.expected is None:
            return self.incomplete
        return max(0, self.expected - self.carried)


def gather(spans: list[Span]) -> Gathered:
    """Reassemble the rows carried by ``spans`` (any order, any split over requests)."""
    out = Gathered()
    found: dict[int, tuple[str, dict[str, Any]]] = {}
    batches: set[int] = set()
    parts: dict[int, dict[int, str]] = {}
    meta: dict[int, tuple[str, int]] = {}
    for span in spans:
        if A_FORMAT in span.attributes and isinstance(span.attributes.get(A_ROWS), int):
            out.expected = max(out.expected or 0, span.attributes[A_ROWS])
        for ev in span.events:
            if ev.name != ROW_EVENT:
                continue
            a = ev.attributes
            if A_BATCH in a:
                if _read_batch(a, found, out, span.name) and a[A_INDEX] not in batches:
                    batches.add(a[A_INDEX])
                continue
            index, table, chunk = a.get(A_INDEX), a.get(A_TABLE), a.get(A_ROW)
            part, nparts = a.get(A_PART, 0), a.get(A_PARTS, 1)
            if not (isinstance(index, int) and isinstance(table, str) and isinstance(chunk, str)
                    and isinstance(part, int) and isinstance(nparts, int) and 0 <= part < nparts):
                out.problems.append(f"span {span.name!r}: a malformed {ROW_EVENT} event")
                continue
            parts.setdefault(index, {})[part] = chunk
            meta[index] = (table, nparts)
    for index in sorted(parts):
        table, nparts = meta[index]
        got = parts[index]
        if len(got) != nparts:
            out.incomplete += 1
            continue
        try:
            row = json.loads("".join(got[k] for k in range(nparts)))
        except (ValueError, RecursionError) as exc:
            out.problems.append(f"row {index}: malformed JSON ({_why(exc)})")
            continue
        if _add(found, index, table, row, out):
            out.carried += 1
    out.carried += len(batches)
    out.rows = [found[i] for i in sorted(found)]
    return out


def _read_batch(a: dict[str, Any], found: dict[int, tuple[str, dict[str, Any]]],
                out: Gathered, span_name: str) -> bool:
    """The rows of one compact row event into ``found``; whether it was read whole."""
    chunks = a.get(A_BATCH)
    if not (isinstance(a.get(A_INDEX), int) and isinstance(chunks, list | tuple)
            and all(isinstance(c, str) for c in chunks)):
        out.problems.append(f"span {span_name!r}: a malformed {ROW_EVENT} event")
        return False
    try:
        items = json.loads("".join(chunks))
    except (ValueError, RecursionError) as exc:
        out.problems.append(f"span {span_name!r}: a {ROW_EVENT} event with malformed JSON "
                            f"({_why(exc)})")
        return False
    whole = isinstance(items, list)
    for item in items if whole else ():
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], int)
                and isinstance(item[1], str)):
            out.problems.append(f"span {span_name!r}: a malformed row in its {ROW_EVENT} event")
            whole = False
            continue
        whole = _add(found, item[0], item[1], item[2], out) and whole
    if not isinstance(items, list):
        out.problems.append(f"span {span_name!r}: a malformed {ROW_EVENT} event")
    return whole


def _why(exc: BaseException) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def _add(found: dict[int, tuple[str, dict[str, Any]]], index: int, table: str, row: Any,
         out: Gathered) -> bool:
    problem = row_problem({"table": table, "row": row})
    if problem:
        out.problems.append(f"row {index}: {problem}")
        return False
    found[index] = (table, row)
    return True
