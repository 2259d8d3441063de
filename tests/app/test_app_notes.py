"""Notes in the app (AppTest): the step inspector's box writes a note through the
tracer's ``add_note`` (a real SQLite file, a run recorded by a real agent), the note is
listed as text and marked on the replayer's tick strip; bad input is one error and
writes nothing; the Runs page filters by a note's tag; the Presenter page shows the
current step's notes; a fork shows the notes of the run it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_kit import app_test, replayer, runs_table
from streamlit.testing.v1 import AppTest
from tracer_kit import record_weather_run, rows

from tracer.db.notes import add_note

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")

HOSTILE = "**bold** <b>x</b> ![i](http://evil.example/x.png) :material/warning:"


@pytest.fixture
def two_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, str]:
    db = tmp_path / "t.db"
    a = record_weather_run(db, "noted")
    b = record_weather_run(db, "plain")
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    return db, a, b


def problems(at: AppTest) -> list[str]:
    return [str(e.value) for e in at.exception] + [str(e.value) for e in at.error]


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def add(at: AppTest, text: str, tags: str = "", on_run: bool = False) -> AppTest:
    at.text_area(key="note_text").set_value(text)
    at.text_input(key="note_tags").set_value(tags)
    at.radio(key="note_on").set_value("the whole run" if on_run else "this step")
    (button,) = [b for b in at.button if b.label == "Add note"]
    return button.click().run()


def test_the_inspector_box_writes_a_note_on_the_step(two_runs: tuple[Path, str, str]) -> None:
    db, a, _b = two_runs
    at = app_test("replay", run=a, step="3").run()
    assert not problems(at)
    assert replayer(at)["markers"] == []
    at = add(at, HOSTILE, "Bug, workshop")
    assert not at.exception
    assert rows(db, "SELECT run_id, seq, text, tags FROM notes") == [
        (a, 2, HOSTILE, '["bug", "workshop"]')]
    # listed as text (never markdown), and marked on the tick strip at its step
    assert f"step 3 [bug, workshop]:\n{HOSTILE}" in texts(at)
    assert not any(HOSTILE in m.value for m in at.markdown)
    assert {"step": 2, "kind": "note"} in replayer(at)["markers"]
    at = add(at, "answers in two laps", on_run=True)
    assert rows(db, "SELECT seq, text FROM notes ORDER BY id")[1] == (None, "answers in two laps")
    assert "the run:\nanswers in two laps" in texts(at)


def test_bad_input_is_one_error_and_writes_nothing(two_runs: tuple[Path, str, str]) -> None:
    db, a, _b = two_runs
    at = app_test("replay", run=a, step="3").run()
    at = add(at, "   ")
    assert [e.value for e in at.error] == ["a note needs text \\(it is empty\\)"]
    at = add(at, "x", "two words!")
    assert len(at.error) == 1 and "a tag is one short word" in at.error[0].value
    assert rows(db, "SELECT COUNT(*) FROM notes") == [(0,)]


def test_the_runs_page_filters_by_tag_and_search_finds_notes(
        two_runs: tuple[Path, str, str]) -> None:
    db, a, b = two_runs
    at = app_test("runs").run()
    assert not [p for p in at.get("button_group") if "Note tags" in str(p.proto)]  # no tags yet
    add_note(db, a, "look at the second lap", step=5, tags=["workshop"])
    add_note(db, b, "fine", tags=["good-example"])
    at = app_test("runs").run()
    assert sorted(runs_table(at)["name"]) == ["noted", "plain"]
    at.pills(key="tag_filter").set_value(["workshop"]).run()
    assert list(runs_table(at)["name"]) == ["noted"]
    at.pills(key="tag_filter").set_value([]).run()
    at.text_input(key="search").set_value("SECOND LAP").run()
    assert list(runs_table(at)["name"]) == ["noted"]


def test_the_presenter_shows_the_steps_notes(two_runs: tuple[Path, str, str]) -> None:
    db, a, _b = two_runs
    add_note(db, a, "the model asks for the weather here", step=3, tags=["workshop"])
    at = app_test("presenter", run=a, step="3").run()
    assert not problems(at)
    assert "the model asks for the weather here" in texts(at)
    assert {"step": 2, "kind": "note"} in replayer(at)["markers"]
    at = app_test("presenter", run=a, step="4").run()
    assert "the model asks for the weather here" not in texts(at)


def test_a_fork_shows_the_notes_of_its_source_run(two_runs: tuple[Path, str, str]) -> None:
    db, a, b = two_runs
    add_note(db, a, "where it went wrong", step=3)
    import sqlite3

    conn = sqlite3.connect(db)  # b, as a fork of a records itself (tracer.whatif)
    conn.execute("UPDATE runs SET metadata = ? WHERE id = ?",
                 [json.dumps({"rerun_of": a, "forked_from": {"run": a, "step": 3}}), b])
    conn.commit()
    conn.close()
    at = app_test("replay", run=b, step="1").run()
    assert not problems(at)
    assert f"Notes on the source run {a[:12]}: 1" in texts(at)
    assert "step 3:\nwhere it went wrong" in texts(at)


def test_the_timeline_has_a_lane_of_notes(two_runs: tuple[Path, str, str]) -> None:
    db, a, _b = two_runs
    add_note(db, a, "<b>here</b> it asks", step=3, tags=["workshop"])
    at = app_test("timeline", run=a).run()
    assert not problems(at)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    (notes,) = [t for t in spec["data"] if t.get("name") == "note"]
    assert notes["y"] == ["notes"]
    assert notes["customdata"] == [[3, "&lt;b&gt;here&lt;/b&gt; it asks [workshop]"]]
