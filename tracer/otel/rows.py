"""looptrace's stored rows, carried in span events so that OTLP loses nothing.

The GenAI attributes of an exported span are a view (what a tracing backend
shows); what makes the round trip exact is that every stored row of the run
travels too: one span event ``looptrace.row`` per row (``looptrace.table``,
``looptrace.row`` = the row as JSON, ``looptrace.row.index`` = its place in the
JSONL trace file). A row longer than ``CHUNK`` characters is split over several
events (``looptrace.row.part`` of ``looptrace.row.parts``): backends cap
attribute values (New Relic at 4095 characters, others at 16 or 64 KB), and a
cut row would be a lost row. The JSON is ASCII-only (``\\uXXXX`` escapes), so a
chunk boundary never splits a character and strings that are not valid UTF-8
(a lone surrogate in a tool result) still travel as valid protobuf strings.

Each row rides on the span it describes (an event's row on its chat or tool
span, a message on the span of the event that recorded it), so no span carries
thousands of events; the root span says how many rows the trace carries
(``looptrace.rows``), which tells the receiver when a trace is complete.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..exchange import FORMAT, FORMAT_VERSION, row_problem
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


def row_events(index: int, table: str, row: dict[str, Any], ts: float) -> list[SpanEvent]:
    """The span events that carry one stored row."""
    text = json.dumps(row, ensure_ascii=True, separators=(",", ":"))
    chunks = [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)] or [""]
    out = []
    for part, chunk in enumerate(chunks):
        attrs: dict[str, Any] = {A_TABLE: table, A_INDEX: index, A_ROW: chunk}
        if len(chunks) > 1:
            attrs[A_PART] = part
            attrs[A_PARTS] = len(chunks)
        out.append(SpanEvent(ROW_EVENT, ts, attrs))
    return out


def is_looptrace(span: Span) -> bool:
    """Whether a span was written by looptrace's exporter (and may carry rows)."""
    return A_RUN in span.attributes or A_FORMAT in span.attributes


@dataclass
class Gathered:
    """The rows a trace's spans carry, in trace-file order."""

    rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    expected: int | None = None  # from the root span (None: the root has not arrived)
    incomplete: int = 0  # rows with parts missing (left out)
    problems: list[str] = field(default_factory=list)  # malformed rows (left out)

    @property
    def complete(self) -> bool:
        return (self.expected is not None and not self.incomplete and not self.problems
                and len(self.rows) == self.expected)

    @property
    def missing(self) -> int:
        """Rows announced by the root and not (wholly) here."""
        if self.expected is None:
            return self.incomplete
        return max(0, self.expected - len(self.rows))


def gather(spans: list[Span]) -> Gathered:
    """Reassemble the rows carried by ``spans`` (any order, any split over requests)."""
    out = Gathered()
    parts: dict[int, dict[int, str]] = {}
    meta: dict[int, tuple[str, int]] = {}
    for span in spans:
        if A_FORMAT in span.attributes and isinstance(span.attributes.get(A_ROWS), int):
            out.expected = max(out.expected or 0, span.attributes[A_ROWS])
        for ev in span.events:
            if ev.name != ROW_EVENT:
                continue
            a = ev.attributes
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
        except ValueError as exc:
            out.problems.append(f"row {index}: malformed JSON ({exc})")
            continue
        rec = {"table": table, "row": row}
        problem = row_problem(rec)
        if problem:
            out.problems.append(f"row {index}: {problem}")
            continue
        out.rows.append((table, row))
    return out
