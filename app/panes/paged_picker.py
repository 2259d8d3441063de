"""A run picker that lists a page of runs at a time (the Compare and Wire pages).

A file of a hundred thousand runs cannot be one selectbox: the picker offers one
page of ``PAGE_SIZE`` runs (newest first, as the Runs page, read in SQL by
``runs_page``), with Previous / Next and "runs 101–200 of 110,000", plus
the run already picked (from a link, or picked on another page of the list),
first, so that turning pages never changes what is picked.

Its page numbers are kept in one plain key (``state.PICKER_PAGES``: picker key ->
page), so a page survives the reruns that picking causes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from ..data.runs import RunFilter, RunSummary, find_run, runs_page
from ..data.store import LooptraceError
from ..kit import state

PAGE_SIZE = 100


def _pages() -> dict[str, int]:
    pages = st.session_state.get(state.PICKER_PAGES)
    if not isinstance(pages, dict):
        pages = st.session_state[state.PICKER_PAGES] = {}
    return pages


def _turn(key: str, delta: int) -> None:
    pages = _pages()
    pages[key] = max(0, pages.get(key, 0) + delta)


def page_of_runs(path: str, key: str,
                 flt: RunFilter | None = None) -> tuple[list[RunSummary], int, int]:
    """The page of runs picker ``key`` shows now, its number (0-based) and how many runs
    there are in all (a page past the end, after runs went, is brought back)."""
    flt = flt or RunFilter()
    pages = _pages()
    page_no = pages.get(key, 0)
    runs, _, total = runs_page(path, flt, PAGE_SIZE, page_no * PAGE_SIZE)
    if not runs and page_no and total:
        pages[key] = page_no = (total - 1) // PAGE_SIZE
        runs, _, total = runs_page(path, flt, PAGE_SIZE, page_no * PAGE_SIZE)
    return runs, page_no, total


def paged_run_picker(path: str, label: str, *, key: str, current: str | None,
                     format_func: Callable[[RunSummary], str],
                     flt: RunFilter | None = None, placeholder: str = "Pick a run",
                     on_change: Callable[..., None] | None = None,
                     args: tuple[Any, ...] = ()) -> str | None:
    """A selectbox (widget ``key``) of one page of runs and ``current`` (the run picked,
    or to preselect: a full id; None for nothing), with buttons to turn the page.
    Returns the picked run id (None: nothing picked)."""
    runs, page_no, total = page_of_runs(path, key, flt)
    by_id = {r.id: r for r in runs}
    if current is not None and current not in by_id:
        try:
            by_id = {current: find_run(path, current), **by_id}
        except LooptraceError:  # (gone since it was picked: not offered)
            current = None
    ids = list(by_id)
    picked = st.selectbox(label, ids, index=ids.index(current) if current in by_id else None,
                          format_func=lambda i: format_func(by_id[i]) if i in by_id else i,
                          key=key, placeholder=placeholder, on_change=on_change, args=args)
    first = page_no * PAGE_SIZE + 1
    nav = st.columns([1, 1, 3], vertical_alignment="center")
    nav[0].button("Previous", key=f"{key}_prev", icon=":material/chevron_left:",
                  disabled=page_no == 0, on_click=_turn, args=(key, -1))
    nav[1].button("Next", key=f"{key}_next", icon=":material/chevron_right:",
                  disabled=first + len(runs) > total, on_click=_turn, args=(key, 1))
    nav[2].caption(f"runs {first:,}–{first + len(runs) - 1:,} of {total:,}" if runs
                   else "no runs")
    return None if picked is None else str(picked)
