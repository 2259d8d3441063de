"""Spans into runs: looptrace's own traces exactly, anyone else's through ``genai``.

A trace written by ``looptrace export --otlp`` carries every stored row of its
runs (``rows.py``): those rows are written back through the same function as
``looptrace import`` (``tracer.interop.exchange.import_rows``), so the database ends
up holding exactly what was exported. Importing the same trace again leaves
its runs as they are; a trace naming a stored run with other content is refused.

Any other trace is handed to ``tracer.otel.genai.runs_from_spans``, which reads
the GenAI / OpenInference conventions other instrumentations write. Traces with
no GenAI span at all (HTTP servers, databases ...) are skipped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracer.db.tables import SCHEMA_VERSION
from tracer.interop.exchange import import_rows

from .otlp import read_otlp_file
from .rows import A_SCHEMA, gather, is_looptrace
from .spans import Span

if TYPE_CHECKING:
    from .genai import SpanImporter

    Importer = SpanImporter | Callable[[], SpanImporter]

_GENAI_PREFIXES = ("gen_ai.", "llm.", "openinference.")


@dataclass
class ImportResult:
    """What an OTLP import made: the new run ids, spans skipped, and warnings."""

    run_ids: list[str] = field(default_factory=list)
    skipped: int = 0  # spans that became no run (not GenAI, or unreadable)
    warnings: list[str] = field(default_factory=list)
    refused: int = 0  # spans of traces refused (they would have replaced a stored run)

    def merge(self, other: ImportResult) -> None:
        self.run_ids.extend(other.run_ids)
        self.skipped += other.skipped
        self.warnings.extend(other.warnings)
        self.refused += other.refused


def is_genai(span: Span) -> bool:
    return any(k.startswith(_GENAI_PREFIXES) for k in span.attributes)


def by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = {}
    for s in spans:
        out.setdefault(s.trace_id, []).append(s)
    return out


def import_spans(spans: list[Span], db_path: str | Path, *,
                 importer: Importer | None = None,
                 owned: Callable[[str, str], bool] | None = None) -> ImportResult:
    """Write the runs ``spans`` describe into ``db_path``; say what was skipped and why.

    Foreign traces go to ``importer`` when given (a ``genai.SpanImporter`` writing
    into ``db_path``, or a function making one when first needed): a receiver keeps
    one for its lifetime, so that a loop sending one trace per model call makes one
    run and a trace given again replaces its runs. Without it, each call converts
    its spans on their own (``genai.runs_from_spans``).

    A looptrace trace never replaces a stored run it was not given: a run id already
    stored with other content refuses the whole trace (``refused``), unless
    ``owned(run_id, trace_id)`` says that run was made from this very trace (a
    receiver importing the late pieces of a trace it imported a moment ago). A run
    stored with the same content is left as it is.
    """
    result = ImportResult()
    foreign: list[Span] = []
    for trace_id, group in by_trace(spans).items():
        if any(is_looptrace(s) for s in group):
            result.merge(import_looptrace(trace_id, group, db_path, owned=owned))
        elif any(is_genai(s) for s in group):
            foreign.extend(group)
        else:
            result.skipped += len(group)
    if foreign:
        result.merge(_import_foreign(foreign, db_path, importer))
    return result


def import_looptrace(trace_id: str, spans: list[Span], db_path: str | Path, *,
                     owned: Callable[[str, str], bool] | None = None) -> ImportResult:
    """One trace exported by looptrace: its rows back into the database (see
    ``import_spans`` for the runs already stored)."""
    result = ImportResult()
    ours = [s for s in spans if is_looptrace(s)]
    result.skipped += len(spans) - len(ours)
    newer = [s.attributes[A_SCHEMA] for s in ours if isinstance(s.attributes.get(A_SCHEMA), int)
             and s.attributes[A_SCHEMA] > SCHEMA_VERSION]
    if newer:
        result.skipped += len(ours)
        result.warnings.append(f"trace {trace_id}: written by a newer looptrace (schema "
                               f"{newer[0]}); upgrade looptrace to import it")
        return result
    got = gather(ours)
    result.warnings.extend(f"trace {trace_id}: {p}" for p in got.problems)
    run_ids = {row["id"] for table, row in got.rows if table == "runs"}
    rows = [(t, r) for t, r in got.rows if t == "runs" or r.get("run_id") in run_ids]
    orphans = len(got.rows) - len(rows)
    if not got.complete:
        expected = got.expected if got.expected is not None else "?"
        result.warnings.append(
            f"trace {trace_id} is incomplete: {got.missing} of {expected} looptrace rows did not "
            f"arrive{' (no root span)' if got.expected is None else ''}"
            f"{f', {orphans} rows of runs that did not arrive left out' if orphans else ''}; "
            f"imported {len(rows)} rows")
    if not run_ids:
        result.skipped += len(ours)
        result.warnings.append(f"trace {trace_id}: no run row arrived, nothing imported")
        return result
    clash, same = stored_elsewhere(rows, run_ids, db_path, trace_id, owned)
    if clash:
        result.refused += len(ours)
        result.warnings.append(
            f"trace {trace_id}: refused, run {clash[0]} is already stored with other content "
            "(a trace never replaces a run it did not make: import it into another database)")
        return result
    if same:
        rows = [(t, r) for t, r in rows if (r["id"] if t == "runs" else r.get("run_id"))
                not in same]
        result.warnings.append(f"trace {trace_id}: run {', '.join(sorted(same))} already "
                               "stored with the same content, left as it is")
        if not rows:
            return result
    # a whole trace replaces its runs; a partial one only adds to what is stored
    # (a late or resent piece of a trace imported whole must not cut it down)
    result.run_ids.extend(import_rows(rows, db_path, keep_stored=not got.complete))
    return result


def stored_elsewhere(rows: list[tuple[str, dict[str, Any]]], run_ids: set[str],
                     db_path: str | Path, trace_id: str,
                     owned: Callable[[str, str], bool] | None) -> tuple[list[str], set[str]]:
    """Of ``run_ids``, those already stored and not made from this trace: (the ones
    stored with other content, the ones stored with exactly these rows)."""
    from tracer.read.loader import TraceDB

    if not Path(db_path).exists():
        return [], set()
    clash: list[str] = []
    same: set[str] = set()
    with TraceDB(db_path) as db:
        for rid in sorted(run_ids):
            if owned is not None and owned(rid, trace_id):
                continue
            stored = {t: db.raw_rows(t, rid) for t in ("runs", "events", "messages", "wire",
                                                       "state", "state_values")}
            if not stored["runs"]:
                continue
            mine = {t: [r for tt, r in rows if tt == t
                        and (r["id"] if t == "runs" else r.get("run_id")) == rid]
                    for t in stored}
            (same.add(rid) if _same_rows(stored, mine) else clash.append(rid))
    return clash, same


def _same_rows(a: dict[str, list[dict[str, Any]]], b: dict[str, list[dict[str, Any]]]) -> bool:
    def norm(table: str, rows: list[dict[str, Any]]) -> list[str]:
        # (a wire row's id is the receiving file's own: not exported)
        return sorted(json.dumps({k: v for k, v in r.items() if table != "wire" or k != "id"},
                                 sort_keys=True, default=str) for r in rows)
    return all(norm(t, a[t]) == norm(t, b[t]) for t in a)


def _import_foreign(spans: list[Span], db_path: str | Path,
                    importer: Importer | None = None) -> ImportResult:
    result = ImportResult()
    try:
        if importer is None:
            from .genai import runs_from_spans
        elif callable(importer):  # made when first needed
            importer = importer()
    except ImportError as exc:
        # genai.py is written separately: until it exists, such spans are skipped
        # (an ImportError raised inside it is a real bug and propagates).
        if exc.name != __package__ + ".genai":
            raise
        result.skipped += len(spans)
        result.warnings.append(f"{len(spans)} spans of other instrumentations skipped: "
                               "this looptrace cannot import foreign GenAI spans yet")
        return result
    if importer is not None:
        got = importer.add(spans)
        result.run_ids.extend(got.run_ids)
        result.skipped += got.skipped + got.unreadable
        result.warnings.extend(got.warnings)
        return result
    ids, skipped = runs_from_spans(spans, str(db_path))
    result.run_ids.extend(ids)
    result.skipped += skipped
    return result


def import_otlp_file(path: str | Path, db_path: str | Path) -> ImportResult:
    """``looptrace import`` of an OTLP JSON file (one request, or JSON Lines of them)."""
    return import_spans(read_otlp_file(path), db_path)
