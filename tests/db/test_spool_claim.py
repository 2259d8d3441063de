"""A dead process's spool (``tracer.db.spool``) is claimed by rename: of two processes
draining at once, each batch goes to one of them and is sent once; a killed writer's
half-written file is removed, never sent; its runs arrive whole, and the run it was
recording when it was killed reads ``error`` (it has no end), not ``running``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_kit import OwnCluster, own_cluster_for
from tracer_kit import rows

from tracer.db.spool import Spool

TESTS = Path(__file__).resolve().parents[1]
URL = "postgresql://looptrace@127.0.0.1:1/looptrace"  # (a spool's name: no server needed)


def _dead_pid() -> int:
    """The id of a process that has exited."""
    out = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


def _race(code: str, env: dict[str, str], go: Path, n: int = 2) -> list[str]:
    """Start ``n`` processes running ``code`` once ``go`` exists; their outputs."""
    wait = (f"import time, pathlib\nwhile not pathlib.Path({str(go)!r}).exists():"
            " time.sleep(0.005)\n")
    before, after = code.split("#GO")
    procs = [subprocess.Popen([sys.executable, "-c", f"{before}\n{wait}{after}"],
                              env={**os.environ, **env}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    time.sleep(0.5)  # (no assertion waits on it: the race is only made likelier)
    go.touch()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        outs.append(out)
    return outs


def test_two_processes_never_take_the_same_batch_of_a_dead_one(tmp_path: Path) -> None:
    """The bug: both processes listed the dead process's batches as theirs to send
    (``mine`` only asked whether the writer was alive), so each was sent twice."""
    root = tmp_path / "spool"
    spool = Spool(URL, root=root)
    spool.folder.mkdir(parents=True)
    dead = _dead_pid()
    t = time.time_ns()
    names = [f"{t + i:020d}-{dead}-{i:08d}.json" for i in range(300)]
    for name in names:
        (spool.folder / name).write_text('{"events": []}')
    half = spool.folder / f".{t + 300:020d}-{dead}-00000300.json.tmp"
    half.write_text('{"events": [[')  # (killed while writing it)
    code = (f"import json, sys\nsys.path.insert(0, {str(TESTS)!r})\n"
            "from pathlib import Path\nfrom tracer.db.spool import Spool\n#GO\n"
            f"got = Spool({URL!r}, root=Path({str(root)!r})).mine()\n"
            "for p in got:\n    Spool.done(p)\n"  # (sent: a claimer that exits
            "print(json.dumps([p.name for p in got]))")  # holding some leaves them)
    a, b = (json.loads(out) for out in _race(code, {}, tmp_path / "go"))
    assert not set(a) & set(b), "a batch taken by both"
    taken = sorted(a + b)
    # each keeps its place (time, number) and says whom it came from
    assert sorted(f"{n.split('-')[0]}-{n.split('-')[2].removesuffix('.json')}-{dead}"
                  for n in names) == sorted(
        f"{n.split('-')[0]}-{n.split('-')[2]}-{n.split('-')[3].removesuffix('.json')}"
        for n in taken)
    assert not half.exists(), "the dead writer's half-written file is removed"
    assert list(spool.folder.iterdir()) == []


def test_a_live_process_keeps_its_batches(tmp_path: Path) -> None:
    spool = Spool(URL, root=tmp_path)
    spool.folder.mkdir(parents=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        name = f"{time.time_ns():020d}-{live.pid}-00000001.json"
        (spool.folder / name).write_text("{}")
        tmp = spool.folder / f".{time.time_ns():020d}-{live.pid}-00000002.json.tmp"
        tmp.write_text("{")
        assert spool.mine() == []
        assert (spool.folder / name).exists() and tmp.exists()
    finally:
        live.kill()
        live.wait()
    assert [p.name for p in spool.mine()] == [
        f"{name.split('-')[0]}-{os.getpid()}-00000001-{live.pid}.json"]
    assert not tmp.exists()


@pytest.fixture
def own_cluster() -> Iterator[OwnCluster]:
    with own_cluster_for("claim") as c:
        yield c


_KILLED = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from langchain_core.tools import tool
from tracer_kit import get_weather, make_agent, two_lap_model
from tracer import TraceMiddleware

trace = TraceMiddleware(db={url!r})
for i in range(4):
    trace.run_name = f"done-{{i}}"
    make_agent(two_lap_model(), [get_weather], [trace]).invoke(
        {{"messages": [("user", "Weather in Oslo?")]}})
    trace.flush()

@tool("get_weather")
def killed(city: str) -> str:
    '''Weather for a city.'''
    trace.flush()
    print(trace.recorder.writer.spooled, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    return ""

trace.run_name = "killed"
make_agent(two_lap_model(), [killed], [trace]).invoke({{"messages": [("user", "Oslo?")]}})
"""

_DRAINER = """
import sys
sys.path.insert(0, {tests!r})
from tracer_kit import get_weather, make_agent, two_lap_model
from tracer import TraceMiddleware

trace = TraceMiddleware(db={url!r}, run_name="drainer")
agent = make_agent(two_lap_model(), [get_weather], [trace])
#GO
agent.invoke({{"messages": [("user", "Weather in Oslo?")]}})
trace.flush()
print(trace.recorder.writer.unspooled)
"""


def test_a_killed_writers_spool_is_sent_once_by_two_racing_drainers(
        own_cluster: OwnCluster, tmp_path: Path) -> None:
    url = own_cluster.start()
    own_cluster.stop()  # (the store made at the first write, after the outage)
    env = {"LOOPTRACE_SPOOL_DIR": str(tmp_path / "spool")}
    child = subprocess.run([sys.executable, "-c", _KILLED.format(tests=str(TESTS), url=url)],
                           env={**os.environ, **env}, capture_output=True, text=True,
                           timeout=240, check=False)
    assert child.returncode == -9, child.stderr  # (SIGKILL)
    spooled = int(child.stdout.split()[-1])
    spool = Spool(url, root=tmp_path / "spool")
    files = list(spool.folder.glob("*.json"))
    assert len(files) == spooled > 4

    own_cluster.start()
    sent = [int(out.split()[-1]) for out in _race(
        _DRAINER.format(tests=str(TESTS), url=url), env, tmp_path / "go")]
    assert sum(sent) == spooled, f"each batch sent once: {sent} of {spooled}"
    assert list(spool.folder.glob("*.json")) == []
    assert list(spool.folder.glob(".*.tmp")) == []
    got = sorted(rows(url, "SELECT name, status FROM runs"))
    assert got == sorted([*((f"done-{i}", "completed") for i in range(4)),
                          ("drainer", "completed"), ("drainer", "completed"),
                          ("killed", "error")])
    (error,) = rows(url, "SELECT error FROM runs WHERE name = 'killed'")[0]
    assert "exited or was killed while it was still running" in error
    for (rid,) in rows(url, "SELECT id FROM runs"):
        seqs = [r[0] for r in rows(url, "SELECT seq FROM events WHERE run_id = ?"
                                        " ORDER BY seq", [rid])]
        assert seqs == list(range(len(seqs))) and len(seqs) >= 5
