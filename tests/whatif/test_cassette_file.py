"""Record mode's writer (tracer/whatif/cassette_file.py): runs added to a cassette file by
several processes at once (xdist workers sharing one cassette) are all kept, and the
file stays one valid trace file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tracer.interop.exchange import build_sample_db, read_trace
from tracer.read.loader import TraceDB

# Each process adds its runs one at a time (its own interpreter: not multiprocessing,
# whose spawn re-runs ``__main__``, which an earlier AppTest in the session replaced).
ADD = ("import sys; from pathlib import Path; from tracer.whatif.cassette_file import append_runs\n"
       "for rid in sys.argv[3:]:\n    append_runs(Path(sys.argv[1]), Path(sys.argv[2]), [rid])")


def test_two_processes_adding_to_one_cassette_lose_nothing(tmp_path: Path) -> None:
    db = build_sample_db(tmp_path / "samples.db")
    with TraceDB(db) as t:
        roots = [r.id for r in t.runs() if r.parent_id is None]
        every = {r.id for r in t.runs()}
    assert len(roots) >= 16
    path = tmp_path / "cassettes" / "shared.jsonl"
    halves = [roots[0::2], roots[1::2]]
    procs = [subprocess.Popen([sys.executable, "-c", ADD, str(path), str(db), *h])
             for h in halves]
    for p in procs:
        assert p.wait(120) == 0
    header, rows = read_trace(path)
    held = [r["id"] for table, r in rows if table == "runs"]
    assert sorted(held) == sorted(every)  # every run once (read_trace refuses twice)
    assert header["runs"] == len(every)
    assert not list(path.parent.glob("*.writing"))
