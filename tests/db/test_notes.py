"""``tracer.db.notes``: a note on a run or a step of it, in a real SQLite file with a
run recorded by a real agent (a scripted model). Steps are counted from 1 (the step-th
event, ``TraceDB.step_numbers``' rule read back); bad input is one line and no row; a
run's notes go with the run; the runs list searches their text and filters by tag; a
file of an older schema reads as having none, and takes one once migrated."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from tracer_kit import record_weather_run, rows

from tracer.db.notes import add_note, delete_note
from tracer.db.prune import prune
from tracer.errors import InvalidOption, LooptraceError, RunNotFound, StepOutOfRange
from tracer.read.loader import TraceDB
from tracer.read.run_list import RunFilter
from tracer.read.steps import build_replay

FIXTURES = Path(__file__).parents[1] / "fixtures"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    db = tmp_path_factory.mktemp("notes") / "t.db"
    return db, record_weather_run(db, "first"), record_weather_run(db, "second")


@pytest.fixture
def db(recorded: tuple[Path, str, str], tmp_path: Path) -> tuple[Path, str, str]:
    path, a, b = recorded
    out = tmp_path / "t.db"
    src, dst = sqlite3.connect(path), sqlite3.connect(out)  # (the write-ahead log with it)
    src.backup(dst)
    src.close()
    dst.close()
    return out, a, b


def test_a_step_note_is_stored_at_the_steps_event_and_read_back_at_its_step(db) -> None:
    path, a, _b = db
    note = add_note(path, a, "  the tool call goes out  ", step=4, tags=["Bug", "bug", "workshop"],
                    author="ann", now=1000.0)
    with TraceDB(path) as t:
        replay = build_replay(t.run(a))
        # the step a person reads is the replay's: the 4th step's event
        assert note.seq == replay.steps[3].event.seq
        assert (note.step, note.text, note.tags) == (4, "the tool call goes out", ("bug", "workshop"))
        run_note = add_note(path, a, "answers in two laps")
        assert run_note.seq is None and run_note.step is None
        got = t.notes(a)
        assert [(n.step, n.text, n.tags, n.author) for n in got] == [
            (None, "answers in two laps", (), None),
            (4, "the tool call goes out", ("bug", "workshop"), "ann")]
        assert t.notes(_b) == []
        assert t.note_tags() == [("bug", 1), ("workshop", 1)]
        assert t.note_counts([a, _b]) == {a: 2}
    assert rows(path, "SELECT text, tags, created_at FROM notes WHERE seq IS NOT NULL") == [
        ("the tool call goes out", '["bug", "workshop"]', 1000.0)]


@pytest.mark.parametrize(("kwargs", "error", "said"), [
    ({"text": "   "}, InvalidOption, "a note needs text (it is empty)"),
    ({"text": "x" * 10_001}, InvalidOption, "a note is at most 10,000 characters (this one has 10,001)"),
    ({"text": "x", "step": 0}, StepOutOfRange, "has steps 1 to 13, not 0"),
    ({"text": "x", "step": 14}, StepOutOfRange, "has steps 1 to 13, not 14"),
    ({"text": "x", "step": True}, InvalidOption, "step True: a step number, counted from 1"),
    ({"text": "x", "tags": ["two words"]}, InvalidOption, "tag 'two words': a tag is one short word"),
    ({"text": "x", "tags": ["-x"]}, InvalidOption, "a tag is one short word"),
    ({"text": "x", "tags": ["a" * 33]}, InvalidOption, "a tag is one short word"),
    ({"text": "x", "tags": [f"t{i}" for i in range(11)]}, InvalidOption, "at most 10 tags, not 11"),
    ({"text": "\ud800"}, InvalidOption, "not valid Unicode"),
    ({"text": "x", "author": "a\nb"}, InvalidOption, "printable characters"),
])
def test_bad_input_is_one_line_and_nothing_written(db, kwargs, error, said) -> None:
    path, a, _b = db
    with pytest.raises(error) as exc:
        add_note(path, a, **kwargs)
    assert said in str(exc.value) and "\n" not in str(exc.value)
    assert rows(path, "SELECT COUNT(*) FROM notes") == [(0,)]


def test_an_unknown_run_or_file_is_one_line(db, tmp_path: Path) -> None:
    path, _a, _b = db
    with pytest.raises(RunNotFound, match="no run 'nope' in"):
        add_note(path, "nope", "x")
    with pytest.raises(LooptraceError, match="no such database"):
        add_note(tmp_path / "missing.db", "nope", "x")
    assert not (tmp_path / "missing.db").exists()
    assert rows(path, "SELECT COUNT(*) FROM notes") == [(0,)]


def test_delete_a_note_and_a_run_takes_its_notes_along(db) -> None:
    path, a, b = db
    n1 = add_note(path, a, "one", step=2)
    add_note(path, b, "other run")
    with pytest.raises(LooptraceError, match=f"run {b[:12]} has no note {n1.id}"):
        delete_note(path, b, n1.id)
    delete_note(path, a, n1.id)
    assert rows(path, "SELECT text FROM notes") == [("other run",)]
    prune(path, keep=0)
    assert rows(path, "SELECT COUNT(*) FROM notes") == [(0,)]


def test_the_runs_list_searches_note_text_and_filters_by_tag(db) -> None:
    path, a, b = db
    add_note(path, a, "Look at 100% of the SECOND lap", step=9, tags=["workshop"])
    add_note(path, b, "fine", tags=["good-example", "workshop"])
    with TraceDB(path) as t:
        def names(f: RunFilter) -> list[str]:
            return sorted(r.name or "" for r in t.runs(f))

        assert names(RunFilter(search="second LAP")) == ["first"]
        assert names(RunFilter(search="100%")) == ["first"]
        assert names(RunFilter(search="Oslo")) == ["first", "second"]  # (messages still)
        assert names(RunFilter(tags=("workshop",))) == ["first", "second"]
        assert names(RunFilter(tags=("good-example",), top_level=True)) == ["second"]
        assert names(RunFilter(tags=("nope",))) == []
        assert t.count_runs(RunFilter(tags=("good-example", "nope"))) == 1


def test_an_older_file_has_no_notes_until_written_then_takes_one(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    shutil.copyfile(FIXTURES / "schema4.db", path)
    with TraceDB(path) as t:  # read-only: read as it is
        rid = t.runs()[0].id
        assert t.notes(rid) == [] and t.note_tags() == []
        assert t.runs(RunFilter(tags=("bug",))) == []
        assert t.runs(search="zzz-nothing") == []
    note = add_note(path, rid, "migrated, then written", step=1, tags=["bug"])
    with TraceDB(path) as t:
        assert t.schema_version == 9
        assert [n.text for n in t.notes(rid)] == ["migrated, then written"]
        assert [r.id for r in t.runs(RunFilter(tags=("bug",)))] == [rid]
    assert note.step == 1
