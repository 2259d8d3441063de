"""Retention: ``looptrace prune`` deletes what it says, subagent runs with their
parent, in one transaction (a prune killed half-way leaves every run whole), and
the file shrinks."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from scale_kit import STEP_S, T0, Spec, write_runs

from tracer.cli import main
from tracer.db.prune import parse_age, prune
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

ROOT = Path(__file__).resolve().parents[2]
N = 300


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Spec]]:
    path = tmp_path_factory.mktemp("prune") / "full.db"
    return path, write_runs(path, N)


@pytest.fixture
def copy(made, tmp_path: Path) -> tuple[Path, list[Spec]]:  # type: ignore[no-untyped-def]
    src, specs = made
    path = tmp_path / "p.db"
    conn = sqlite3.connect(src)
    conn.execute(f"VACUUM INTO '{path}'")  # (a copy with everything committed in it)
    conn.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return path, specs


def run_ids(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM runs")}
    finally:
        conn.close()


def assert_consistent(path: Path) -> None:
    """Every run replays; nothing is left of a run that is gone."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        for table, key in (("events", "run_id"), ("messages", "run_id"), ("wire", "run_id"),
                           ("run_stats", "run_id"), ("run_checks", "run_id"),
                           ("findings", "run_id"), ("search_runs", "run_id")):
            stray = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE {key} NOT IN"
                                 " (SELECT id FROM runs)").fetchone()[0]
            assert stray == 0, table
        assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == conn.execute(
            "SELECT COUNT(*) FROM messages").fetchone()
    finally:
        conn.close()
    with TraceDB(path) as db:
        for s in db.runs():
            run = db.run(s.id)
            assert len(build_replay(run)) == s.events == len(run.events) > 0
            assert run.messages


def family(specs: list[Spec], roots: set[str]) -> set[str]:
    return {s.id for s in specs if s.id in roots or s.parent_id in roots}


def test_keep_the_newest(copy) -> None:  # type: ignore[no-untyped-def]
    path, specs = copy
    roots = sorted((s for s in specs if s.parent_id is None), key=lambda s: s.started_at)
    kept = {s.id for s in roots[-40:]} | {s.id for s in roots if s.status == "running"}
    result = prune(path, keep=40)
    assert run_ids(path) == family(specs, kept)
    assert result.runs == len(specs) - len(family(specs, kept))
    assert result.top_level == len(roots) - len(kept)
    assert result.bytes_after < result.bytes_before / 2
    assert_consistent(path)


def test_older_than(copy) -> None:  # type: ignore[no-untyped-def]
    path, specs = copy
    now = T0 + N * STEP_S + 3600
    age = parse_age("3h")
    kept = {s.id for s in specs if s.parent_id is None and (
        s.started_at >= now - age or s.status == "running")}  # (still recording: kept)
    assert 0 < len(kept) < N
    prune(path, older_than=age, now=now)
    assert run_ids(path) == family(specs, kept)
    assert_consistent(path)
    # both limits: both hold after
    prune(path, older_than=age, keep=10, now=now)
    newest = sorted((s for s in specs if s.id in kept), key=lambda s: s.started_at)
    assert run_ids(path) == family(specs, {s.id for s in newest[-10:]} | {
        s.id for s in newest if s.status == "running"})
    assert_consistent(path)


def test_dry_run_and_the_cli(copy, capsys) -> None:  # type: ignore[no-untyped-def]
    path, specs = copy
    before = run_ids(path)
    assert main(["prune", "--db", str(path), "--keep", "0", "--dry-run"]) == 0
    out = capsys.readouterr().out
    running = {s.id for s in specs if s.status == "running" and not s.parent_id}
    assert out.startswith(f"would delete {len(specs) - len(family(specs, running))} runs (")
    # (issue 39: it said "0.7 MB -> 0.7 MB", a size the real prune does not leave)
    now_mb, after_mb = (float(x) for x in re.findall(r"([0-9.]+) MB", out.split(";")[-1]))
    assert out.rstrip().endswith(f"{now_mb:.1f} MB now, {after_mb:.1f} MB after")
    assert after_mb < now_mb / 2
    assert run_ids(path) == before
    assert main(["prune", "--db", str(path), "--older-than", "1d"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"deleted {len(specs) - len(family(specs, running))} runs (")
    assert out.rstrip().endswith(f"{now_mb:.1f} MB -> {after_mb:.1f} MB")
    assert run_ids(path) == family(specs, running)
    assert main(["prune", "--db", str(path), "--older-than", "1d", "--include-running"]) == 0
    assert capsys.readouterr().out.startswith(f"deleted {len(family(specs, running))} runs (")
    assert run_ids(path) == set()
    assert main(["prune", "--db", str(path)]) == 1
    assert "--older-than AGE and/or --keep N" in capsys.readouterr().err
    assert main(["prune", "--db", str(path), "--older-than", "soon"]) == 1
    assert "not an age" in capsys.readouterr().err


@pytest.mark.parametrize("vacuum", [True, False])
def test_a_dry_run_says_the_size_the_prune_leaves(copy, vacuum: bool) -> None:  # type: ignore[no-untyped-def]
    """Issue 39, item 10: the dry run said "0.7 MB -> 0.7 MB" where the prune went to
    0.3 MB. It makes the delete, measures the pages left and rolls back."""
    path, _ = copy
    before = run_ids(path)
    dry = prune(path, keep=40, dry_run=True, vacuum=vacuum)
    assert run_ids(path) == before
    real = prune(path, keep=40, vacuum=vacuum)
    assert (dry.runs, dry.top_level, dry.bytes_before) == (real.runs, real.top_level,
                                                           real.bytes_before)
    assert dry.bytes_after == real.bytes_after
    assert (real.bytes_after < real.bytes_before / 2) == vacuum
    nothing = prune(path, keep=10**6, dry_run=True)  # (nothing to delete: nothing changes)
    assert nothing.runs == 0 and nothing.bytes_after == nothing.bytes_before


def test_an_older_file_is_vacuumed_once_then_incrementally(copy) -> None:  # type: ignore[no-untyped-def]
    path, _ = copy
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("VACUUM")
    assert conn.execute("PRAGMA auto_vacuum").fetchone() == (0,)
    conn.close()
    result = prune(path, keep=100)
    assert result.bytes_after < result.bytes_before
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)
    conn.close()
    assert_consistent(path)


def _prune_in_a_child(path: Path, hold_in: str, extra: str = "") -> subprocess.Popen[str]:
    """``prune --keep 20`` in another process that says ``READY`` when it reaches
    ``hold_in`` (``delete_runs``: in the open transaction, deletes done; ``shrink``:
    about to vacuum) and then, for ``delete_runs``, waits there to be killed."""
    code = textwrap.dedent(f"""
        import sys, time
        import tracer.db.prune as p
        real = p.{hold_in}
        def held(*args, **kw):
            out = real(*args, **kw) if {hold_in == "delete_runs"!r} else None
            print("READY", flush=True)
            {"time.sleep(60)" if hold_in == "delete_runs" else "pass"}
            return out if {hold_in == "delete_runs"!r} else real(*args, **kw)
        p.{hold_in} = held
        {extra}
        p.prune({str(path)!r}, keep=20)
        print("DONE", flush=True)
    """)
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_killed_in_the_middle_nothing_is_half_deleted(copy) -> None:  # type: ignore[no-untyped-def]
    path, specs = copy
    before = run_ids(path)
    proc = _prune_in_a_child(path, "delete_runs")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    # the child has deleted 280 top-level runs and their rows, not committed yet
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert run_ids(path) == before
    assert_consistent(path)
    prune(path, keep=20)  # and the next prune does it all
    roots = sorted((s for s in specs if s.parent_id is None), key=lambda s: s.started_at)
    kept = {s.id for s in roots[-20:]} | {s.id for s in roots if s.status == "running"}
    assert run_ids(path) == family(specs, kept)
    assert_consistent(path)


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05, 0.1, 0.2])
def test_killed_while_shrinking_the_file_stays_whole(copy, delay: float) -> None:  # type: ignore[no-untyped-def]
    path, _ = copy
    conn = sqlite3.connect(path)  # an older file: the shrinking is a whole VACUUM
    conn.execute("PRAGMA auto_vacuum = NONE")
    conn.execute("VACUUM")
    conn.close()
    proc = _prune_in_a_child(path, "shrink")
    assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    assert_consistent(path)  # the deletion was committed before; the VACUUM is all or none
    with TraceDB(path) as db:
        assert db.count_runs() < N


def test_a_copy_shows_the_shrinking(copy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path, _ = copy
    spare = tmp_path / "spare.db"
    shutil.copyfile(path, spare)
    result = prune(path, keep=30, vacuum=False)
    assert result.bytes_after >= result.bytes_before * 0.9  # (no vacuum: pages kept for reuse)
    result = prune(spare, keep=30)
    assert result.bytes_after < result.bytes_before / 2
