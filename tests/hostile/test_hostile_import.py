"""``looptrace import`` and ``export`` against hostile and careless files: a file whose
rows name another run, a run id already stored with other content, a line separator
inside a message, a full disk, a damaged page. Each test failed on the main branch
before issue 21 (the hijack exited 0 having overwritten the victim; the U+2028 export
could not be read back; the full disk and the damaged page gave tracebacks)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest
from hostile_kit import cli, damage, fill, tmpfs
from hostile_kit import trace_file as kit_trace_file

from tracer.db.schema import SCHEMA_VERSION
from tracer.interop.exchange import import_rows, read_trace, sample_files

HEADER = {"format": "looptrace-trace", "version": 1, "schema_version": SCHEMA_VERSION,
          "root": "mine", "runs": 1}


def run_row(rid: str, **kw: object) -> dict:
    return {"id": rid, "name": f"run {rid}", "status": "completed", "started_at": 1.0,
            "ended_at": 2.0, "source": "import", **kw}


def event(rid: str, seq: int, hook: str = "run", phase: str = "start") -> dict:
    return {"run_id": rid, "seq": seq, "ts": 1.0 + seq, "hook": hook, "phase": phase, "lap": 0}


def message(rid: str, text: str) -> dict:
    return {"run_id": rid, "position": 0, "seq": 0, "msg_id": f"{rid}-m0", "type": "human",
            "text": text, "data": json.dumps({"type": "human", "data": {"content": text}}),
            "version": 0, "key": f"{rid}-m0"}


def trace_file(path: Path, rows: list[tuple[str, dict]]) -> Path:
    return kit_trace_file(path, rows, HEADER)


def dump(db: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(db)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("runs", "events", "messages")}
    finally:
        conn.close()


@pytest.fixture
def victim_db(tmp_path: Path) -> Path:
    db = tmp_path / "v.db"
    import_rows([("runs", run_row("victim")), ("events", event("victim", 0)),
                 ("events", event("victim", 1, "wrap_model_call", "enter")),
                 ("messages", message("victim", "the victim's question"))], db)
    return db


# -- a file never writes into a run it does not hold ---------------------------------------
def test_a_row_naming_another_run_refuses_the_whole_file(victim_db: Path, tmp_path: Path,
                                                         capsys) -> None:  # type: ignore[no-untyped-def]
    before = dump(victim_db)
    evil = trace_file(tmp_path / "evil.jsonl", [
        ("runs", run_row("mine")), ("events", event("mine", 0)),
        ("messages", {**message("victim", "overwritten!"), "run_id": "victim"}),
    ])
    code, out, err = cli(capsys, "import", "--db", str(victim_db), str(evil))
    assert code == 1 and out == ""
    assert err == (f"looptrace import: {evil}:4: a messages row of run 'victim', which the "
                   "file does not hold; nothing imported\n")
    assert dump(victim_db) == before  # the victim as it was, and nothing of "mine" either


def test_a_run_held_twice_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    twice = trace_file(tmp_path / "twice.jsonl", [("runs", run_row("mine")),
                                                 ("runs", run_row("mine", status="error"))])
    code, _out, err = cli(capsys, "import", "--db", str(tmp_path / "x.db"), str(twice))
    assert code == 1 and f"{twice}:3: run 'mine' is held twice" in err
    assert not (tmp_path / "x.db").exists() or dump(tmp_path / "x.db")["runs"] == []


# -- a run id already stored -----------------------------------------------------------------
def other_victim(tmp_path: Path) -> Path:
    """A file that holds a run called "victim" with other content than the stored one."""
    return trace_file(tmp_path / "same-id.jsonl", [
        ("runs", run_row("victim", name="someone else's run")),
        ("events", event("victim", 0)),
        ("messages", message("victim", "another conversation"))])


def test_a_stored_run_with_other_content_is_refused(victim_db: Path, tmp_path: Path,
                                                    capsys) -> None:  # type: ignore[no-untyped-def]
    before = dump(victim_db)
    code, out, err = cli(capsys, "import", "--db", str(victim_db), str(other_victim(tmp_path)))
    assert (code, out) == (1, "")
    assert err.startswith("looptrace import: run victim is already stored with other "
                          "content: nothing imported (--rename ")
    assert dump(victim_db) == before


def test_rename_imports_it_under_a_new_id(victim_db: Path, tmp_path: Path,
                                          capsys) -> None:  # type: ignore[no-untyped-def]
    before = dump(victim_db)
    code, out, err = cli(capsys, "import", "--rename", "--db", str(victim_db),
                         str(other_victim(tmp_path)))
    assert (code, out) == (0, f"imported 1 run into {victim_db}\n")
    new_id = err.rsplit(" ", 1)[1].strip()
    assert err.startswith(f"{tmp_path / 'same-id.jsonl'}: run victim is stored with other "
                          "content: imported as ")
    assert str(uuid.UUID(new_id)) == new_id
    after = dump(victim_db)
    assert [r for r in after["runs"] if r[0] == "victim"] == before["runs"]
    assert [m for m in after["messages"] if m[0] == "victim"] == before["messages"]
    conn = sqlite3.connect(victim_db)
    name, meta = conn.execute("SELECT name, metadata FROM runs WHERE id = ?", [new_id]).fetchone()
    (text,) = conn.execute("SELECT text FROM messages WHERE run_id = ?", [new_id]).fetchone()
    conn.close()
    assert (name, json.loads(meta), text) == ("someone else's run", {"imported_from": "victim"},
                                              "another conversation")


def test_replace_overwrites_it_when_asked(victim_db: Path, tmp_path: Path,
                                          capsys) -> None:  # type: ignore[no-untyped-def]
    code, _, _ = cli(capsys, "import", "--replace", "--db", str(victim_db),
                     str(other_victim(tmp_path)))
    assert code == 0
    after = dump(victim_db)
    assert [r[3] for r in after["runs"]] == ["someone else's run"]
    assert [m[6] for m in after["messages"]] == ["another conversation"]
    assert len(after["events"]) == 1


def test_the_same_file_twice_changes_nothing(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "x.db"
    sample = sample_files()[0]
    assert cli(capsys, "import", "--db", str(db), str(sample))[0] == 0
    first = dump(db)
    code, out, err = cli(capsys, "import", "--db", str(db), str(sample))
    assert (code, err) == (0, "") and out.startswith("imported ")
    assert dump(db) == first


# -- full disk, damaged file ----------------------------------------------------------------
def test_a_full_disk_is_one_line_and_nothing_half_written(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A real full disk: a 4 MB tmpfs filled to the last byte by another file."""
    with tmpfs(tmp_path / "mnt", "4m") as where:
        db = where / "x.db"
        import_rows([("runs", run_row("victim")), ("events", event("victim", 0))], db)
        before = dump(db)
        fill(where)
        big = trace_file(tmp_path / "big.jsonl", [
            ("runs", run_row("mine")),
            *(("messages", {**message("mine", "x" * 20_000), "position": i,
                            "key": f"k{i}", "msg_id": f"m{i}"}) for i in range(40))])
        code, out, err = cli(capsys, "import", "--db", str(db), str(big))
        assert (code, out) == (1, "")
        assert err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(f"looptrace import: {db}: the disk is full (")
        assert "nothing was written" in err
        (where / "ballast").unlink()
        assert dump(db) == before  # nothing of "mine", the victim whole
        again = cli(capsys, "import", "--db", str(db), str(big))
        assert again[0] == 0, again  # room again: it goes in


def test_a_damaged_page_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "x.db"
    rows = [("runs", run_row(f"r{i}")) for i in range(50)] + [
        ("messages", {**message(f"r{i}", "y" * 3000)}) for i in range(50)]
    import_rows(rows, db)
    conn = sqlite3.connect(db)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()
    conn.close()
    damage(db, root)  # (the runs table's first page: every import writes there)
    sample = sample_files()[0]
    code, out, err = cli(capsys, "import", "--db", str(db), str(sample))
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("looptrace import: ") and "nothing was written" in err, err


def test_a_trace_file_round_trips_line_separators(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Every character ``str.splitlines`` splits at, inside a message: exported, the file
    is still one record per line, and imports back to the same text."""
    text = "a\u2028b\u2029c\x85d\x1ce\x1df\x1eg\x0bh\x0ci\rj\r\nk\nl"
    db = tmp_path / "x.db"
    import_rows([("runs", run_row("sep")), ("messages", message("sep", text))], db)
    out = tmp_path / "sep.jsonl"
    assert cli(capsys, "export", "sep", "--db", str(db), "-o", str(out))[0] == 0
    raw = out.read_text(encoding="utf-8")
    assert len(raw.splitlines()) == 3  # header, run, message: nothing split a record
    back = tmp_path / "back.db"
    assert cli(capsys, "import", "--db", str(back), str(out))[0] == 0
    assert dump(back)["messages"] == dump(db)["messages"]
    assert read_trace(out)[1][1][1]["text"] == text


def test_an_old_export_with_raw_separators_still_reads(tmp_path: Path) -> None:
    """Files written before the escape (U+2028 raw inside a string) are read at newlines."""
    path = tmp_path / "old.jsonl"
    rows = [("runs", run_row("old")), ("messages", message("old", "x\u2028y"))]
    lines = [json.dumps(HEADER)] + [json.dumps({"table": t, "row": r}, ensure_ascii=False)
                                    for t, r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert read_trace(path)[1][1][1]["text"] == "x\u2028y"


