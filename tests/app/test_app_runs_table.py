"""The Runs page's table (``app/screens/runs/runs_grid.py``: an HTML table in a component, which a
first visit loads instead of st.dataframe's data grid, issue 29) and the filters a first
visit does not load (in the "More filters" popover), in AppTest: what the browser's
table is given, a click on a row that the "Open a run" picker and its links follow,
and the filters in the popover. (Drawn, sorted and clicked in a real browser:
tests/browser/test_browser_runs_page.py.)"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from app_kit import app_test, click_run_row, runs_grid, runs_table
from scale_kit import Spec, write_runs
from streamlit.testing.v1 import AppTest

from app.screens.runs.runs_grid import grid_data

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Spec]]:
    path = tmp_path_factory.mktemp("table") / "table.db"
    return path, write_runs(path, 30)


@pytest.fixture
def page(made, monkeypatch: pytest.MonkeyPatch) -> AppTest:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LOOPTRACE_DB", str(made[0]))
    at = app_test("runs", timeout=60).run()
    assert not at.exception and not at.error, (at.exception, at.error)
    return at


def picked(at: AppTest) -> str:
    return str(at.selectbox(key="open_pick").value)


def captions(at: AppTest) -> list[str]:
    """The page's captions as read (markdown's backslash escapes removed)."""
    return [re.sub(r"\\(.)", r"\1", c.value) for c in at.caption]


def link_targets(at: AppTest) -> dict[str, str]:
    """The "Open in replay" and "Timeline" links: label -> query string."""
    return {p.proto.label: p.proto.query_string for p in at.get("page_link")}


def test_grid_data_is_json_as_the_table_shows_it() -> None:
    """Missing values (pandas' NA, NaN, None) go as null (an empty cell, not "<NA>" or
    "nan"), a start time as the text the table shows, numpy numbers as numbers; every
    column of the frame is sent, the shown ones are listed in the table's order."""
    df = pd.DataFrame({
        "run": ["a", "    ↳ b"], "name": ["a", "b"], "status": ["completed", "running"],
        "started": [dt.datetime(2024, 5, 6, 7, 8, 9), None],
        "duration_s": [1.25, float("nan")], "laps": np.array([2, 0]),
        "tokens": pd.array([77, None], dtype="Int64"), "id": ["r1", "r2"],
        "open": ["replay?run=r1", "replay?run=r2"]})
    data = grid_data(df, "r2")
    assert json.loads(json.dumps(data)) == data  # (plain JSON)
    assert data["rows"] == [
        {"run": "a", "name": "a", "status": "completed", "started": "2024-05-06 07:08:09",
         "duration_s": 1.25, "laps": 2, "tokens": 77, "id": "r1", "open": "replay?run=r1"},
        {"run": "    ↳ b", "name": "b", "status": "running", "started": None,
         "duration_s": None, "laps": 0, "tokens": None, "id": "r2",
         "open": "replay?run=r2"}]
    assert type(data["rows"][0]["laps"]) is int and type(data["rows"][0]["tokens"]) is int
    assert [c["key"] for c in data["columns"]] == ["run", "id", "status", "started",
                                                   "duration_s", "laps", "tokens", "open"]
    kinds = {c["key"]: c["kind"] for c in data["columns"]}
    assert (kinds["tokens"], kinds["duration_s"], kinds["laps"], kinds["open"]) == (
        "tokens", "seconds", "int", "link")
    assert data["selected"] == "r2"


def test_the_table_is_given_every_column_the_page_showed(page: AppTest) -> None:
    data = runs_grid(page)
    assert data is not None
    assert [c["key"] for c in data["columns"]] == [
        "run", "id", "status", "health", "cost", "agent", "started", "duration_s", "laps",
        "model_calls", "tool_calls", "errors", "tokens", "what_if", "open"]
    row = data["rows"][0]
    assert row["open"] == "replay?run=" + row["id"]
    assert not page.dataframe  # (the data grid's 35 scripts are not loaded on this page)


def test_a_clicked_row_is_picked_and_its_links_follow(made, page: AppTest) -> None:  # type: ignore[no-untyped-def]
    _, specs = made
    rows = list(runs_table(page)["id"])
    assert picked(page) == rows[0] and runs_grid(page)["selected"] == rows[0]  # type: ignore[index]
    # a subagent run (nested under its parent), as a user would click it
    child = next(s for s in specs if s.parent_id)
    click_run_row(page, child.id)
    assert not page.exception
    assert picked(page) == child.id
    assert runs_grid(page)["selected"] == child.id  # type: ignore[index]  # (highlighted)
    assert link_targets(page) == {"Open in replay": f"run={child.id}",
                                  "Timeline": f"run={child.id}"}
    # the picker moved by hand: the table's highlight follows it
    page.selectbox(key="open_pick").set_value(rows[2]).run()
    assert runs_grid(page)["selected"] == rows[2]  # type: ignore[index]
    # the same row clicked again (after the picker moved away) is picked again
    click_run_row(page, child.id)
    assert picked(page) == child.id


def test_the_popover_filters_filter_and_are_named(made, page: AppTest) -> None:  # type: ignore[no-untyped-def]
    """The day and parent filters wait in the "More filters" popover (closed, its
    widgets are not drawn): set, they filter, and a caption under the filters says so."""
    _, specs = made
    parent = next(s for s in specs if any(c.parent_id == s.id for c in specs))
    page.text_input(key="parent_filter").input(parent.id).run()
    assert list(runs_table(page)["id"]) == [s.id for s in specs if s.parent_id == parent.id]
    assert f"More filters: subagent runs of {parent.id}" in captions(page)
    page.text_input(key="parent_filter").input("").run()
    assert not any(c.startswith("More filters") for c in captions(page))
    # a day: the runs started that (local) day, newest first, with their subagent runs
    day = dt.datetime.fromtimestamp(specs[0].started_at).date()
    page.date_input(key="started_filter").set_value((day, day)).run()
    roots = sorted((s for s in specs if s.parent_id is None
                    and dt.datetime.fromtimestamp(s.started_at).date() == day),
                   key=lambda s: s.started_at, reverse=True)
    ids = list(runs_table(page)["id"])
    assert [i for i in ids if i in {s.id for s in roots}] == [s.id for s in roots]
    assert f"More filters: started {day.isoformat()}" in captions(page)


def test_a_runs_id_is_one_query_value_in_its_replay_link(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # an imported run's id is whatever text its file held: it stays the run's, and
    # cannot add parameters or a fragment to its link
    import time

    from tracer.db.schema import connect

    odd = "x y&step=9#frag/..?"
    path = tmp_path / "odd.db"
    conn = connect(path)
    with conn:
        conn.execute("INSERT INTO runs(id, name, status, started_at) VALUES (?, ?, ?, ?)",
                     [odd, "odd", "completed", time.time()])
    conn.close()
    monkeypatch.setenv("LOOPTRACE_DB", str(path))
    at = app_test("runs", timeout=60).run()
    assert not at.exception and not at.error, (at.exception, at.error)
    data = runs_grid(at)
    assert data is not None
    [row] = data["rows"]
    assert row["id"] == odd
    assert row["open"] == "replay?run=x%20y%26step%3D9%23frag%2F..%3F"


def test_the_picked_run_says_why_its_tokens_are_not_reported(
        sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 47, untrue 12: openai-shopping's tokens read "not reported" and the Runs page
    said no more; ``looptrace show`` says why (streamed without include_usage). Picked,
    the run says it under the picker; openai-weather (usage reported) says nothing."""
    from tracer.read.loader import TraceDB

    with TraceDB(sample_db) as db:
        ids = {r.name: r.id for r in db.runs()}
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    at = app_test("runs", timeout=60).run()
    assert not at.exception
    at.selectbox(key="open_pick").set_value(ids["openai-shopping"]).run()
    said = [c for c in captions(at) if c.startswith("Tokens not reported")]
    assert said == [("Tokens not reported: streamed without stream_options.include_usage: "
                    "OpenAI sends no usage then (ChatOpenAI(stream_usage=True) asks for it).")]
    at.selectbox(key="open_pick").set_value(ids["openai-weather"]).run()
    assert not [c for c in captions(at) if c.startswith("Tokens not reported")]
