"""The Runs page's table: a light HTML table in a ``st.components.v2`` component.

``st.dataframe`` made a first visit load its data grid: about 35 scripts (1.5 MB,
Arrow and the canvas grid) fetched after the page's first script run, then a canvas
drawn; on 110,000 runs that was most of the Runs page's first visit after
``looptrace ui`` printed its URL (issue 29, docs/dev/performance.md). This table is a
``<table>`` drawn by ``runs_grid.js`` from the page's rows (JSON): the same
columns, rows and formats, sortable by a click on a column's header (numbers as
numbers, empty cells last; a third click gives the page's own order back), a row
selected by a click (or Enter) that the "Open a run" picker follows, and a
"replay ↗" link per run.

``grid_data`` is a pure function (the tests read what the browser is given, as they
read the frame ``st.dataframe`` was given); only ``render_runs_grid`` touches
Streamlit. Every text is set with ``textContent`` in the browser: run names and
what-if edits are untrusted.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

import pandas as pd
import streamlit as st

from ...kit import state

SELECT = "select"  # the event a click on a row sends (its value: the run's id)


class Column(NamedTuple):
    key: str  # the frame's column (``app.screens.runs.runs_table.COLUMNS``, or "open")
    label: str
    kind: str  # how the browser shows it: text, run, int, seconds, tokens, cost, link, id
    help: str = ""


# What the table shows, in order (the frame's other columns, name, depth and parent,
# are sent too, as st.dataframe was sent the whole frame, and not shown).
SHOWN = (
    Column("run", "run", "run", "subagent runs, forks and reruns are nested (↳)"),
    # (second, so that it is in view on a laptop's screen, not behind the sideways
    # scroll; its first 12 characters, as the pickers show ids, the whole on hover)
    Column("id", "id", "id", "the run's id: its first 12 characters (a unique prefix is "
           "enough for looptrace show); the whole id on hover"),
    Column("status", "status", "text"),
    Column("health", "health", "text"),
    Column("cost", "cost", "cost", "USD, with its subagent runs (genai-prices, or your "
           "--prices file); unknown: no price known, never $0; ≥ $x (2/3): 2 of 3 model "
           "calls priced"),
    Column("agent", "agent", "text"),
    Column("started", "started", "text"),
    Column("duration_s", "duration", "seconds"),
    Column("laps", "laps", "int"),
    Column("model_calls", "model_calls", "int"),
    Column("tool_calls", "tool_calls", "int"),
    Column("errors", "errors", "int", "each once: a tool call that failed, a model call's "
           "exception, the run's own failure (not a person's rejection, not its "
           "findings: see health)"),
    Column("tokens", "tokens", "tokens", "not reported: no model call of the run reported usage"),
    Column("what_if", "what if", "text", "a fork's step and edit, or the run a replay replays"),
    Column("open", "open", "link"),
)


def _cell(value: Any) -> Any:
    """A frame's value as JSON: missing (None, NaN, NA, NaT) as null, a time as text
    (the table's format, local time as the frame holds it), numpy numbers as Python's."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (dt.datetime, pd.Timestamp)):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if hasattr(value, "item"):  # (numpy scalars)
        return _cell(value.item())
    return value


def grid_data(df: pd.DataFrame, selected: str | None) -> dict[str, Any]:
    """What the browser's table is given: the columns it shows and every row of ``df``
    (a ``runs_table.runs_frame`` with its ``open`` links), in order, and the run
    selected (highlighted)."""
    keys = list(df.columns)
    rows = [{k: _cell(v) for k, v in zip(keys, values, strict=True)}
            for values in df.itertuples(index=False, name=None)]
    return {"columns": [c._asdict() for c in SHOWN if c.key in keys], "rows": rows,
            "selected": selected}


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text("utf-8")


_component: Callable[..., Any] | None = None


def _get() -> Callable[..., Any]:
    global _component
    if _component is None:
        _component = st.components.v2.component(
            "looptrace_runs_grid", html="", css=_asset("runs_grid.css"),
            js=_asset("runs_grid.js"))
    return _component


def render_runs_grid(data: dict[str, Any], *, on_select: Callable[[], None]) -> Any:
    """Mount (or update) the table (key ``state.RUNS_TABLE``); ``on_select`` runs when a
    row is clicked (its run's id: ``selected()``)."""
    return _get()(key=state.RUNS_TABLE, data=data, on_select_change=on_select)


def selected() -> str | None:
    """In ``on_select``: the id of the run whose row was clicked."""
    value = (st.session_state.get(state.RUNS_TABLE) or {}).get(SELECT)
    return value if isinstance(value, str) else None


__all__ = ["SELECT", "SHOWN", "Column", "grid_data", "render_runs_grid", "selected"]
