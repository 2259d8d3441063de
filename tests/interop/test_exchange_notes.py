"""Notes through export and import (``tracer.interop.exchange``): a run's notes travel
in its trace file and come back on the same steps; a file imported twice adds nothing
twice; notes written here since stay when the file is imported again; a file's notes on
a run stored with other notes are not "other content"; a notes row with bad tags is
refused with its line number, nothing imported."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tracer_kit import record_weather_run, rows

from tracer.db.notes import add_note
from tracer.errors import TraceFileError
from tracer.interop.exchange import export_run, import_trace
from tracer.read.loader import TraceDB


def notes(db: Path, rid: str) -> list[tuple[int | None, str, tuple[str, ...], str | None]]:
    with TraceDB(db) as t:
        return [(n.step, n.text, n.tags, n.author) for n in t.notes(rid)]


@pytest.fixture
def noted(new_store: Callable[..., str]) -> tuple[str, str]:
    db = new_store("a.db")
    rid = record_weather_run(db)
    add_note(db, rid, "the tool call goes out here", step=3, tags=["workshop"], author="ann")
    add_note(db, rid, "line one\nline two \u2028 \x1b[2J", step=9, tags=["bug"])
    add_note(db, rid, "answers in two laps", tags=["good-example"])
    return db, rid


def test_notes_round_trip_through_a_trace_file(noted: tuple[str, str], tmp_path: Path,
        new_store: Callable[..., str]) -> None:
    db, rid = noted
    out = export_run(db, rid, tmp_path / "run.jsonl")
    lines = out.read_text(encoding="utf-8").splitlines()
    kept = [json.loads(ln) for ln in lines if '"table": "notes"' in ln]
    assert [r["row"]["text"] for r in kept] == [
        "the tool call goes out here", "line one\nline two \u2028 \x1b[2J", "answers in two laps"]
    assert all("id" not in r["row"] for r in kept)  # (the file's ids are its own)
    other = new_store("b.db")
    assert import_trace(out, other) == [rid]
    assert notes(other, rid) == notes(db, rid) == [
        (None, "answers in two laps", ("good-example",), None),
        (3, "the tool call goes out here", ("workshop",), "ann"),
        (9, "line one\nline two \u2028 \x1b[2J", ("bug",), None)]
    # and exported again from there: the same file, byte for byte
    again = export_run(other, rid, tmp_path / "again.jsonl")
    assert again.read_bytes() == out.read_bytes()


def test_a_second_import_adds_nothing_and_keeps_notes_written_since(
        noted: tuple[str, str], tmp_path: Path,
        new_store: Callable[..., str]) -> None:
    db, rid = noted
    out = export_run(db, rid, tmp_path / "run.jsonl")
    other = new_store("b.db")
    import_trace(out, other)
    import_trace(out, other)
    assert rows(other, "SELECT COUNT(*) FROM notes") == [(3,)]
    add_note(other, rid, "mine, written after the import", step=2)
    import_trace(out, other)  # (the same run: not "other content", nothing refused)
    assert rows(other, "SELECT COUNT(*) FROM notes") == [(4,)]
    assert (2, "mine, written after the import", (), None) in notes(other, rid)
    # a colleague's file with one more note: added, the others kept once
    add_note(db, rid, "a colleague's", step=5)
    import_trace(export_run(db, rid, tmp_path / "more.jsonl"), other)
    assert rows(other, "SELECT COUNT(*) FROM notes") == [(5,)]


def test_a_notes_row_with_bad_tags_is_refused_by_line(noted: tuple[Path, str],
                                                      tmp_path: Path) -> None:
    db, rid = noted
    out = export_run(db, rid, tmp_path / "run.jsonl")
    text = out.read_text(encoding="utf-8").replace('"[\\"bug\\"]"', '"[\\"two words\\"]"')
    assert "two words" in text
    out.write_text(text, encoding="utf-8")
    n = next(i for i, ln in enumerate(text.splitlines(), start=1) if "two words" in ln)
    with pytest.raises(TraceFileError, match=rf":{n}: notes.tags .*expected a JSON list of tags"):
        import_trace(out, tmp_path / "b.db")
    assert not (tmp_path / "b.db").exists() or rows(tmp_path / "b.db", "SELECT COUNT(*) FROM runs") == [(0,)]


@pytest.mark.parametrize("change, problem", [
    ({"text": ""}, "notes: a note needs text (it is empty)"),
    ({"text": " \n\t "}, "notes: a note needs text (it is empty)"),
    ({"text": "x" * 2_000_000}, "notes: a note is at most 10,000 characters (this one has "
                                "2,000,000)"),
    ({"author": "a\x1b[2Jb"}, "notes: author 'a\\x1b[2Jb': a name of 1 to 100 printable"),
    ({"seq": 10_000}, "a note on event 10000 of run "),
])
def test_an_imported_note_goes_through_add_notes_checks(
        noted: tuple[Path, str], tmp_path: Path, change: dict[str, object], problem: str) -> None:
    """A trace file's note is held to what ``add_note`` holds a note to: an empty note,
    a 2 MB note, an author with terminal escapes, or a note on an event the run does not
    have (shown as "step 8" of a run of 7 steps) was imported as it was. Now the line is
    named and nothing is imported."""
    db, rid = noted
    out = export_run(db, rid, tmp_path / "run.jsonl")
    lines = out.read_text(encoding="utf-8").splitlines()
    n = next(i for i, ln in enumerate(lines) if '"table": "notes"' in ln)
    rec = json.loads(lines[n])
    rec["row"].update(change)
    lines[n] = json.dumps(rec)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TraceFileError) as err:
        import_trace(out, tmp_path / "b.db")
    assert str(err.value).startswith(f"{out}:{n + 1}: {problem}")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "b.db").exists() or rows(tmp_path / "b.db",
                                                    "SELECT COUNT(*) FROM runs") == [(0,)]
