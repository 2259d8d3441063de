"""Spans into runs: looptrace's own traces exactly, anyone else's through ``genai``.

A trace written by ``looptrace export --otlp`` carries every stored row of its
runs (``rows.py``): those rows are written back through the same function as
``looptrace import`` (``tracer.exchange.import_rows``), so the database ends
up holding exactly what was exported. Importing the same trace again replaces
its runs and touches no other.

Any other trace is handed to ``tracer.otel.genai.runs_from_spans``, which reads
the GenAI / OpenInference conventions other instrumentations write. Traces with
no GenAI span at all (HTTP servers, databases ...) are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..exchange import import_rows
from ..schema import SCHEMA_VERSION
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

    def merge(self, other: ImportResult) -> None:
        self.run_ids.extend(other.run_ids)
        self.skipped += other.skipped
        self.warnings.extend(other.warnings)


def is_genai(span: Span) -> bool:
    return any(k.startswith(_GENAI_PREFIXES) for k in span.attributes)


def by_trace(spans: Iterable[Span]) -> dict[str, list[Span]]:
    out: dict[str, list[Span]] = {}
    for s in spans:
        out.setdefault(s.trace_id, []).append(s)
    return out


def import_spans(spans: list[Span], db_path: str | Path, *,
                 importer: Importer | None = None) -> ImportResult:
    """Write the runs ``spans`` describe into ``db_path``; say what was skipped and why.

    Foreign traces go to ``importer`` when given (a ``genai.SpanImporter`` writing
    into ``db_path``, or a function making one when first needed): a receiver keeps
    one for its lifetime, so that a loop sending one trace per model call makes one
    run and a trace given again replaces its runs. Without it, each call converts
    its spans on their own (``genai.runs_from_spans``).
    """
    result = ImportResult()
    foreign: list[Span] = []
    for trace_id, group in by_trace(spans).items():
        if any(is_looptrace(s) for s in group):
            result.merge(import_looptrace(trace_id, group, db_path))
        elif any(is_genai(s) for s in group):
            foreign.extend(group)
        else:
            result.skipped += len(group)
    if foreign:
        result.merge(_import_foreign(foreign, db_path, importer))
    return result


def import_looptrace(trace_id: str, spans: list[Span], db_path: str | Path) -> ImportResult:
    """One trace exported by looptrace: its rows back into the database."""
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
    # a whole trace replaces its runs; a partial one only adds to what is stored
    # (a late or resent piece of a trace imported whole must not cut it down)
    result.run_ids.extend(import_rows(rows, db_path, keep_stored=not got.complete))
    return result


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
