"""The runs of the database as lists: a page of them (filtered), one by id, the
newest, and their health and cost; each cached until the file changes."""

from __future__ import annotations

from typing import Any

import streamlit as st

from tracer.checks.run import findings_for
from tracer.checks.saved import health_badge, stored_health
from tracer.errors import LooptraceError
from tracer.read.cost import RunCost, prices_stamp, run_costs
from tracer.read.loader import RunSummary, TraceDB
from tracer.read.run_list import HEALTH_CLASSES, RunFilter

from .store import db_stamp

__all__ = ["HEALTH_CLASSES", "RunCost", "RunFilter", "RunSummary", "costs", "find_run",
           "health", "health_badge", "newest_top_level", "recent_runs", "runs", "runs_page"]


@st.cache_data(show_spinner=False, max_entries=64)
def load_runs(path: str, stamp: Any, search: str | None = None) -> list[RunSummary]:
    with TraceDB(path) as db:
        return db.runs(search=search or None)


def runs(path: str, search: str | None = None) -> list[RunSummary]:
    """Every run (or every run with ``search`` in its messages): for small files and
    tests; the pages list ``runs_page`` or ``recent_runs``."""
    return load_runs(path, db_stamp(path), search)


@st.cache_data(show_spinner=False, max_entries=64)
def _load_page(path: str, stamp: Any, f: RunFilter, limit: int,
               offset: int) -> tuple[list[RunSummary], list[RunSummary], int]:
    with TraceDB(path) as db:
        page = db.runs(f, limit=limit, offset=offset)
        # (a search counts no further than the next page: the runs list says "more than")
        total = db.count_runs(f, at_most=offset + limit + 1 if f.search else None)
        below = db.subagent_runs([r.id for r in page]) if f.top_level else []
    return page, below, total


def runs_page(path: str, f: RunFilter, limit: int,
              offset: int) -> tuple[list[RunSummary], list[RunSummary], int]:
    """One page of the runs ``f`` selects (newest first), the subagent runs below them
    (with ``f.top_level``), and how many runs ``f`` selects in all: with ``f.search``,
    counted no further than ``offset + limit + 1`` (that many: "more than")."""
    return _load_page(path, db_stamp(path), f, limit, offset)


def recent_runs(path: str, limit: int = 200) -> list[RunSummary]:
    """The newest ``limit`` runs (for a run picker: not every run of a large file)."""
    return _load_page(path, db_stamp(path), RunFilter(), limit, 0)[0]


def newest_top_level(path: str) -> RunSummary | None:
    """The newest top-level run (one row: not every run of the file)."""
    page = _load_page(path, db_stamp(path), RunFilter(top_level=True), 1, 0)[0]
    return page[0] if page else None


@st.cache_data(show_spinner=False, max_entries=256)
def _find_run(path: str, stamp: Any, prefix: str) -> RunSummary:
    with TraceDB(path) as db:
        return db.summary(db.resolve(prefix))


def find_run(path: str, prefix: str) -> RunSummary:
    """The run ``prefix`` names (its id, or a unique prefix of one); ``RunNotFound``
    for none (or for an ambiguous prefix)."""
    return _find_run(path, db_stamp(path), prefix)


@st.cache_data(show_spinner=False, max_entries=64)
def _health(path: str, stamp: Any, run_ids: tuple[str, ...]) -> dict[str, str]:
    with TraceDB(path) as db:
        out = stored_health(db, run_ids)
        rest = [r for r in run_ids if r not in out]
        if rest:  # found now (and kept, for the runs that have ended)
            for rid, found in findings_for(db, rest).items():
                out[rid] = health_badge(found)  # (the one health function)
    return out


def health(path: str, run_ids: list[str]) -> dict[str, str]:
    """The health badge of each of ``run_ids``: kept by an earlier check, or found now
    (``tracer.checks.saved``); "check failed" for a run the checks cannot read."""
    try:
        return _health(path, db_stamp(path), tuple(run_ids))
    except Exception:  # noqa: BLE001 - a broken checker must not break the runs list
        return {r: "check failed" for r in run_ids}


@st.cache_data(show_spinner=False, max_entries=64)
def _costs(path: str, stamp: Any, run_ids: tuple[str, ...],
           prices: Any) -> dict[str, RunCost]:
    with TraceDB(path) as db:
        return run_costs(db, run_ids)


def costs(path: str, run_ids: list[str]) -> tuple[dict[str, RunCost], str | None]:
    """The cost of each of ``run_ids``, with its subagent runs (``tracer.read.cost``),
    cached until the file or the prices file changes; and what went wrong, if the costs
    cannot be had (a prices file that does not fit: the runs list shows no cost)."""
    try:
        return _costs(path, db_stamp(path), tuple(run_ids), prices_stamp()), None
    except LooptraceError as exc:
        return {}, str(exc)
