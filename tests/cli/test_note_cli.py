"""``looptrace note``: a note on a run or a step written from the command line (RUN as
every command takes it: an id, a prefix, a name), listed, deleted; ``show`` prints the
notes at their steps, and a fork's the number of notes on the run it came from; ``runs
--tag`` and ``--search``; bad input one line, exit 1, nothing written."""

from __future__ import annotations

import json

import pytest
from cli_kit import cli
from tracer_kit import record_weather_run, rows


@pytest.fixture
def db(store_db: str) -> tuple[str, str]:
    path = store_db
    return path, record_weather_run(path, "weather")


def test_write_list_and_delete(db, capsys) -> None:
    path, rid = db
    code, out, err = cli(capsys, "note", "weather", "--db", str(path), "--step", "3",
                         "the tool call goes out here", "--tag", "Workshop", "--tag", "bug",
                         "--author", "ann")
    assert (code, err) == (0, "")
    assert out == f"note 1 on step 3 of run {rid[:12]} [workshop, bug]\n"
    code, out, _ = cli(capsys, "note", rid[:8], "the whole run answers in two laps",
                       "--db", str(path))
    # (issue 47, in the way 5: it said "note 2 on the run of run ...")
    assert out == f"note 2 on run {rid[:12]}\n"
    code, out, _ = cli(capsys, "note", "weather", "--db", str(path))
    assert code == 0
    assert out.splitlines() == [
        f"run {rid}: 2 notes",
        "  the run (note 2):",
        "      the whole run answers in two laps",
        "  step 3 [workshop, bug] by ann (note 1):",
        "      the tool call goes out here"]
    code, out, _ = cli(capsys, "note", "weather", "--db", str(path), "--json")
    assert [(n["id"], n["step"], n["tags"]) for n in json.loads(out)] == [
        (2, None, []), (1, 3, ["workshop", "bug"])]
    code, out, _ = cli(capsys, "note", "weather", "--db", str(path), "--delete", "2")
    assert (code, out) == (0, f"deleted note 2 of run {rid[:12]}\n")
    assert rows(path, "SELECT id FROM notes") == [(1,)]


@pytest.mark.parametrize(("args", "said"), [
    (["--step", "14", "x"], "run {rid12} has steps 1 to 13, not 14"),
    (["   "], "a note needs text (it is empty)"),
    (["x", "--tag", "two words"], ("tag 'two words': a tag is one short word (letters, "
                                  "digits, - and _; up to 32 characters), e.g. bug, "
                                  "good-example, workshop")),
    (["--step", "3"], "--step, --tag and --author go with a TEXT to write (none given)"),
    (["--delete", "9"], "run {rid12} has no note 9"),
])
def test_bad_input_is_one_line_and_nothing_written(db, capsys, args, said) -> None:
    path, rid = db
    code, out, err = cli(capsys, "note", "weather", "--db", str(path), *args)
    assert code == 1 and out == ""
    assert err == f"looptrace note: {said.format(rid12=rid[:12])}\n"
    assert rows(path, "SELECT COUNT(*) FROM notes") == [(0,)]


def test_an_unknown_run_writes_nothing(db, capsys) -> None:
    path, _rid = db
    code, _out, err = cli(capsys, "note", "nope", "x", "--db", str(path))
    assert code == 1 and err.startswith("looptrace note: no run 'nope' in ")
    assert rows(path, "SELECT COUNT(*) FROM notes") == [(0,)]


def test_show_prints_the_notes_at_their_steps(db, capsys) -> None:
    path, _rid = db
    cli(capsys, "note", "weather", "--db", str(path), "--step", "5",
        "two lines\n\x1b[2Jcleared?", "--tag", "bug")
    code, out, _ = cli(capsys, "show", "weather", "--db", str(path))
    assert code == 0
    lines = out.splitlines()
    at = lines.index("notes (1):")
    assert lines[at + 1:at + 4] == ["  step 5 [bug] (note 1):", "      two lines",
                                    "      \\x1b[2Jcleared?"]
    code, out, _ = cli(capsys, "show", "weather", "--db", str(path), "--step", "5")
    assert "notes at this step (1):" in out.splitlines()
    code, out, _ = cli(capsys, "show", "weather", "--db", str(path), "--step", "6")
    assert "notes at this step" not in out
    code, out, _ = cli(capsys, "show", "weather", "--db", str(path), "--json")
    assert [n["text"] for n in json.loads(out)["notes"]] == ["two lines\n\x1b[2Jcleared?"]


def test_a_fork_shows_how_many_notes_its_source_run_has(store_db: str, capsys) -> None:
    path = store_db
    src = record_weather_run(path, "source")
    fork = record_weather_run(path, "fork")
    from tracer.db.schema import connect

    conn = connect(path)  # (the metadata a fork records: tracer.whatif)
    conn.execute("UPDATE runs SET metadata = ? WHERE id = ?",
                 [json.dumps({"rerun_of": src, "forked_from": {"run": src, "step": 4}}), fork])
    conn.commit()
    conn.close()
    cli(capsys, "note", "source", "--db", str(path), "--step", "4", "why fork here")
    _code, out, _ = cli(capsys, "show", "fork", "--db", str(path))
    assert (f"this run forks run {src[:12]} at step 4; notes on the source run: 1 "
            f"(looptrace note {src[:12]})") in out.splitlines()


def test_runs_finds_notes_by_tag_and_text(store_db: str, capsys) -> None:
    path = store_db
    record_weather_run(path, "noted")
    record_weather_run(path, "plain")
    cli(capsys, "note", "noted", "--db", str(path), "look at the second lap", "--tag", "workshop")

    def names(*args: str) -> list[str]:
        code, out, _ = cli(capsys, "runs", "--db", str(path), "--json", *args)
        assert code == 0
        return sorted(r["name"] for r in json.loads(out))

    assert names("--tag", "WORKSHOP") == ["noted"]
    assert names("--tag", "other") == []
    assert names("--search", "second lap") == ["noted"]
    assert names() == ["noted", "plain"]
