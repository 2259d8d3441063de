"""Group commit under SIGKILL: what a killed process can lose, and what it never leaves.

The writer commits whatever has queued on its own timer (``tracer.db.writer.LINGER_S``): a
run that ended is committed at most that long after its end (plus the commit itself).
Here processes record 1,000 two-lap runs into one file (``LOOPTRACE_KILL_RUNS`` to
change it) and each is killed with SIGKILL at a random moment (about
``LOOPTRACE_KILLS`` of them, 5 by default); after every kill:

- the file opens and passes ``PRAGMA integrity_check``;
- every run that ended more than the bound before the kill is there, whole;
- no run is half written: each run in the file is either ``completed`` with every row a
  whole run has, or still ``running`` with a gapless prefix of its events (the run the
  kill interrupted, or one that ended within the bound; ``error`` once a later process
  has written to the file: the killed pid is gone).

The bound the test allows is ``LINGER_S`` plus ``LOOPTRACE_KILL_SLACK`` seconds (0.5
by default: on a loaded machine the writer thread, or the child's own ``print``, can
wait that long for a CPU; the figure it saw is printed).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tracer.db.writer import LINGER_S

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
RUNS = int(os.environ.get("LOOPTRACE_KILL_RUNS", "1000"))
SLACK = float(os.environ.get("LOOPTRACE_KILL_SLACK", "0.5"))
KILLS = int(os.environ.get("LOOPTRACE_KILLS", "5"))  # about this many kills

# Runs thread ids t<start> .. t<total-1>, one run each; prints the end of each run
# (its index and the wall clock) once ``invoke`` has returned.
CHILD = textwrap.dedent("""
    import sys, time
    from langchain_core.tools import tool
    from tracer import TraceMiddleware
    from tracer_kit import make_agent, parallel_model

    @tool
    def get_price(item: str) -> str:
        \"\"\"Price.\"\"\"
        return "10 EUR"

    db, start, total = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    trace = TraceMiddleware(db=db)
    agent = make_agent(parallel_model(1, 1), [get_price], [trace])
    print("READY", flush=True)
    for i in range(start, total):
        agent.invoke({"messages": [("user", f"question {i}")]},
                     config={"configurable": {"thread_id": f"t{i}"}})
        print("END", i, repr(time.time()), flush=True)
""")


def _whole_run(tmp_path: Path) -> tuple[int, int]:
    """(events, messages) of one whole run, recorded by a process that was not killed."""
    db = tmp_path / "reference.db"
    done = subprocess.run([sys.executable, "-c", CHILD, str(db), "0", "1"], env=ENV, check=False,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    conn = sqlite3.connect(db)
    try:
        (run_id,) = conn.execute("SELECT id FROM runs").fetchone()
        ev = conn.execute("SELECT COUNT(*) FROM events WHERE run_id = ?", [run_id]).fetchone()
        ms = conn.execute("SELECT COUNT(*) FROM messages WHERE run_id = ?", [run_id]).fetchone()
    finally:
        conn.close()
    assert ev[0] > 0 and ms[0] > 0
    return ev[0], ms[0]


def _check(db: Path, ended: dict[int, float], killed_at: float, whole: tuple[int, int],
           ) -> list[float]:
    """Check the file after a kill; the ages at the kill of the runs in ``ended`` (the
    killed process's: index -> when it ended) that it lost."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        runs = {int(t[1:]): (rid, status) for rid, t, status in conn.execute(
            "SELECT id, thread_id, status FROM runs")}
        for i, (rid, status) in runs.items():
            seqs = [r[0] for r in conn.execute(
                "SELECT seq FROM events WHERE run_id = ? ORDER BY seq", [rid])]
            assert seqs == list(range(len(seqs))), f"run t{i} has gaps in its events: {seqs}"
            if status == "completed":
                msgs = conn.execute("SELECT COUNT(*) FROM messages WHERE run_id = ?",
                                    [rid]).fetchone()[0]
                assert (len(seqs), msgs) == whole, f"run t{i} is completed but half written"
                end = conn.execute("SELECT COUNT(*) FROM events WHERE run_id = ? AND "
                                   "hook = 'run' AND phase = 'end'", [rid]).fetchone()[0]
                assert end == 1
            else:  # the run the kill interrupted, or one that ended within the bound
                # (``error`` once the next process has written: its pid is gone)
                assert status in ("running", "error"), f"run t{i}: {status}"
                assert len(seqs) <= whole[0]  # (its end not committed yet)
    finally:
        conn.close()
    lost = [killed_at - t for i, t in ended.items() if runs.get(i, ("", ""))[1] != "completed"]
    bound = LINGER_S + SLACK
    too_old = [round(age, 3) for age in lost if age > bound]
    assert not too_old, (f"runs that ended {too_old} s before the kill are not in the file "
                         f"(bound {bound} s)")
    return lost


def test_sigkill_at_random_moments_loses_at_most_the_bound(tmp_path):
    whole = _whole_run(tmp_path)
    db = tmp_path / "killed.db"
    rng = random.Random(29)
    ended: dict[int, float] = {}
    start, kills, lost_ages = 0, 0, []
    t0 = time.perf_counter()
    while start < RUNS:
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(start), str(RUNS)],
                                env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.strip() == "READY", proc.stderr.read() if proc.stderr else ""
            # a random moment: after a random number of runs have ended, and a random
            # part of a run (or of a commit) later
            lines, want = [], rng.randint(1, 2 * RUNS // KILLS)
            while len(lines) < want:
                ln = proc.stdout.readline()
                if not ln:
                    break
                lines.append(ln)
            time.sleep(rng.uniform(0.0, 0.03))
            killed_at = time.time()
            proc.send_signal(signal.SIGKILL)
            out, _err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        mine: dict[int, float] = {}
        for ln in [*lines, *out.splitlines()]:
            parts = ln.split()
            if len(parts) == 3 and parts[0] == "END":
                mine[int(parts[1])] = float(parts[2])
        if proc.returncode == -signal.SIGKILL:
            kills += 1
            lost_ages += _check(db, mine, killed_at, whole)
        ended.update(mine)
        # the next process goes on after the last run this one said it ended (a run it
        # was in the middle of stays ``running``: its thread is never continued)
        start = max(mine, default=start - 1) + 2
    # a last check, after a process that exited normally if the last one was not killed
    final = _check(db, mine, time.time(), whole) if proc.returncode == 0 else []
    assert not final, "a process that exited normally lost runs"
    assert kills >= 1
    print(f"\n{RUNS} runs, {kills} kills in {time.perf_counter() - t0:.1f} s; ended runs lost "
          f"to a kill: {len(lost_ages)}, the oldest "
          f"{max(lost_ages, default=0.0) * 1000:.0f} ms before it (bound "
          f"{(LINGER_S + SLACK) * 1000:.0f} ms); load {os.getloadavg()[0]:.1f}")
