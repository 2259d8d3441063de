"""A damaged page in the middle of a database (issue 36, item 16).

Each test names the defect it catches: with one page of garbage in the middle of the
file, reads went on, ``check`` and ``prune`` said "malformed", and ``import`` (and the
tracer's writer, and ``collect``) still wrote into the file, spreading the damage.
Every way of opening a file for writing that looptrace's commands take now runs
SQLite's ``quick_check`` first and refuses a file that fails it, in one line saying
how to recover what still reads. Real files, damaged by ``hostile_kit.damage``.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_kit import damage
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracer import TraceMiddleware
from tracer.cli import main
from tracer.errors import NotALooptraceDatabase
from tracer.interop.exchange import import_rows, read_trace, sample_files

FIRST, SECOND = sample_files()[:2]


def _fingerprint(db: Path) -> tuple[str, ...]:
    """The bytes of the file and of its -wal (what a write would change; an empty -wal
    is as good as none: the last connection to close removes it)."""
    out = []
    for p in (db, Path(f"{db}-wal")):
        data = p.read_bytes() if p.exists() else b""
        out.append(hashlib.sha256(data).hexdigest() if data else "-")
    return tuple(out)


def _page_of(db: Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                                [table]).fetchone()[0])
    finally:
        conn.close()


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("clean") / "clean.db"
    import_rows(read_trace(FIRST)[1], db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db


@pytest.fixture
def damaged(clean: Path, tmp_path: Path) -> Path:
    """The file with the root page of ``events`` (in its middle) made garbage: the runs
    list still reads."""
    db = tmp_path / "d.db"
    shutil.copyfile(clean, db)
    damage(db, _page_of(db, "events"))
    return db


def _one_line(err: str, command: str) -> None:
    assert err.startswith(f"looptrace {command}: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert "is damaged (quick_check: " in err
    assert ".recover | sqlite3 recovered.db" in err


def test_import_refuses_a_damaged_file_and_writes_nothing(damaged: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Was: exit 0, the new run written into the damaged file."""
    assert main(["runs", "--db", str(damaged)]) == 0  # (reads go on)
    capsys.readouterr()
    before = _fingerprint(damaged)
    assert main(["import", "--db", str(damaged), str(SECOND)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    _one_line(err, "import")
    assert "nothing was written" in err
    assert _fingerprint(damaged) == before


def test_prune_says_how_to_recover(damaged: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Was: "malformed", and no word of what to do."""
    before = _fingerprint(damaged)
    assert main(["prune", "--db", str(damaged), "--keep", "0"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    _one_line(err, "prune")
    assert "nothing was deleted" in err
    assert _fingerprint(damaged) == before


def test_the_tracer_refuses_to_record_into_it(damaged: Path) -> None:
    """Was: a ``TraceMiddleware`` on the file recorded into it."""
    before = _fingerprint(damaged)
    with pytest.raises(NotALooptraceDatabase, match=r"is damaged \(quick_check: .*"
                                                    r"looptrace records nothing into it"):
        TraceMiddleware(db=damaged)
    assert _fingerprint(damaged) == before


def test_collect_refuses_it_at_start(damaged: Path) -> None:
    from tracer.otel.collect import CollectServer

    with pytest.raises(NotALooptraceDatabase, match="is damaged"):
        CollectServer(damaged, port=0)


def test_a_clean_file_still_takes_an_import(clean: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "c.db"
    shutil.copyfile(clean, db)
    assert main(["import", "--db", str(db), str(SECOND)]) == 0


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(min_value=0.0, max_value=1.0))
def test_import_never_writes_into_a_file_that_fails_integrity_check(
        clean: Path, tmp_path: Path, where: float) -> None:
    """Any one page made garbage: if SQLite's full ``integrity_check`` (the oracle: not
    the check the code runs) finds the file damaged, ``import`` refuses and the file's
    bytes are as they were; otherwise (a free page) it imports."""
    db = tmp_path / "h.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(clean, db)
    conn = sqlite3.connect(db)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    page = 1 + round(where * (pages - 1))
    damage(db, page)
    conn = sqlite3.connect(db)
    try:
        verdict = conn.execute("PRAGMA integrity_check(1)").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        verdict = str(exc)
    finally:
        conn.close()
    before = _fingerprint(db)
    code = main(["import", "--db", str(db), str(SECOND)])
    if verdict == "ok":
        assert code == 0, page
    else:
        assert code == 1, (page, verdict)
        assert _fingerprint(db) == before, page
