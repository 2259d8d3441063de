"""``looptrace prune`` against careless arguments, a run still recording, a full disk
and a damaged file. Each test failed on the main branch before issue 21 (``--keep -1``
deleted every run; ``--older-than 1s`` deleted a running run; a full disk and a
damaged page gave tracebacks, and prune could not free the full disk)."""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from pathlib import Path

import pytest
from hostile_kit import damage, fill, tmpfs

from tracer.cli import main
from tracer.interop.exchange import import_rows, read_trace, sample_files


def run_row(rid: str, status: str = "completed", started: float = 1.0, **kw: object) -> dict:
    return {"id": rid, "name": rid, "status": status, "started_at": started,
            "ended_at": None if status == "running" else started + 1, **kw}


def ids(db: Path) -> set[str]:
    conn = sqlite3.connect(db)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM runs")}
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "p.db"
    import_rows([("runs", run_row("old-done")), ("runs", run_row("old-running", "running")),
                 ("runs", run_row("parent-done", started=2.0)),
                 ("runs", run_row("child-running", "running", 2.5, parent_id="parent-done")),
                 ("runs", run_row("new-done", started=3.0))], path)
    return path


@pytest.mark.parametrize("argv,said", [
    (["--older-than", "garbage"], "not an age: 'garbage'"),
    (["--older-than=-3d"], "not an age: '-3d'"),
    (["--older-than", "3"], "not an age: '3'"),
    ([], "say what to prune"),
])
def test_bad_arguments_are_one_error_and_delete_nothing(db: Path, argv: list[str], said: str,
                                                        capsys) -> None:  # type: ignore[no-untyped-def]
    before = ids(db)
    assert main(["prune", "--db", str(db), *argv]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("looptrace prune: ") and said in err, err
    assert err.count("\n") == 1
    assert ids(db) == before


def test_a_negative_keep_is_refused_by_the_parser(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """(issue 36: every integer option is range-checked by the parser, exit 2)"""
    before = ids(db)
    with pytest.raises(SystemExit) as info:
        main(["prune", "--db", str(db), "--keep", "-1"])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "looptrace prune: error: argument --keep: -1 is out of range (0 to 2**63-1)")
    assert ids(db) == before


def test_a_run_still_recording_stays_unless_asked(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["prune", "--db", str(db), "--older-than", "1s"]) == 0
    # the running run, and the finished parent of a running subagent run, stay
    assert ids(db) == {"old-running", "parent-done", "child-running"}
    assert main(["prune", "--db", str(db), "--keep", "0"]) == 0
    assert ids(db) == {"old-running", "parent-done", "child-running"}
    capsys.readouterr()
    assert main(["prune", "--db", str(db), "--keep", "0", "--include-running"]) == 0
    assert capsys.readouterr().out.startswith("deleted 3 runs (2 top-level, 1 subagent run)")
    assert ids(db) == set()


def test_a_damaged_page_is_one_line(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    conn = sqlite3.connect(db)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()
    conn.execute("INSERT INTO events(run_id, seq, ts, hook, phase) VALUES ('old-done', 0, 1, 'run', 'start')")
    conn.commit()
    conn.close()
    damage(db, root)
    assert main(["prune", "--db", str(db), "--keep", "0"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("looptrace prune: ") and "nothing was deleted" in err, err


def test_prune_frees_a_full_disk(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A real full disk: a 6 MB tmpfs holding the database, written while a recorder
    keeps the file open (its log last emptied), then filled by another file to 256 KB
    free: a run of 400 KB no longer goes in, nor does the delete of all old runs in one
    transaction (its log would need more than the disk has). Prune deletes a run at a
    time in the log's room, empties the log, shrinks the file, and the disk takes the
    run."""
    _, rows = read_trace(sample_files()[0])

    def copy() -> list[tuple[str, dict]]:
        new = {r["id"]: str(uuid.uuid4()) for t, r in rows if t == "runs"}
        out = []
        for t, r in rows:
            r = dict(r)
            if t == "runs":
                r["id"] = new[r["id"]]
                r["parent_id"] = new.get(r.get("parent_id"), r.get("parent_id"))
            else:
                r["run_id"] = new[r["run_id"]]
            out.append((t, r))
        return out

    with tmpfs(tmp_path / "mnt", "6m") as where:
        db = where / "x.db"
        import_rows(copy(), db)
        recorder = sqlite3.connect(db)  # (a process recording: the log is not removed)
        recorder.execute("SELECT 1 FROM runs").close()
        while shutil.disk_usage(where).free > 2_000_000:
            import_rows(copy(), db)
        n = len(ids(db))
        recorder.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        fill(where, leave=256 * 1024)
        big = [("runs", run_row("big")), *(
            ("messages", {"run_id": "big", "position": i, "seq": 0, "msg_id": f"m{i}",
                          "type": "human", "text": "x" * 20_000, "key": f"m{i}"})
            for i in range(20))]
        with pytest.raises(sqlite3.OperationalError, match="full"):
            import_rows(big, db)
        code = main(["prune", "--db", str(db), "--keep", "2"])
        out, err = capsys.readouterr()
        assert (code, err) == (0, ""), err
        assert out.startswith(f"deleted {n - 4} runs (")
        assert len(ids(db)) == 4
        assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
        assert shutil.disk_usage(where).free > 1_000_000  # (256 KB before) the space is back
        import_rows(big, db)  # (raises if the disk is still full)
        recorder.close()
