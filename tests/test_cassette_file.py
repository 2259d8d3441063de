"""Record mode's writer (tracer/cassette_file.py): runs added to a cassette file by
several processes at once (xdist workers sharing one cassette) are all kept, and the
file stays one valid trace file."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from tracer.cassette_file import append_runs
from tracer.exchange import build_sample_db, read_trace
from tracer.loader import TraceDB


def _add(path: str, db: str, ids: list[str], start: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    for rid in ids:
        append_runs(Path(path), Path(db), [rid])


def test_two_processes_adding_to_one_cassette_lose_nothing(tmp_path: Path) -> None:
    db = build_sample_db(tmp_path / "samples.db")
    with TraceDB(db) as t:
        roots = [r.id for r in t.runs() if r.parent_id is None]
        every = {r.id for r in t.runs()}
    assert len(roots) >= 16
    path = tmp_path / "cassettes" / "shared.jsonl"
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    halves = [roots[0::2], roots[1::2]]
    procs = [ctx.Process(target=_add, args=(str(path), str(db), h, start)) for h in halves]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    header, rows = read_trace(path)
    held = [r["id"] for table, r in rows if table == "runs"]
    assert sorted(held) == sorted(every)  # every run once (read_trace refuses twice)
    assert header["runs"] == len(every)
    assert not list(path.parent.glob("*.writing"))
