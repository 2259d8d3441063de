"""PostgreSQL away while agents record: the agent never fails, its runs wait in the
local spool (``tracer.db.spool``), and arrive whole, each run completed, once the server
is back. A cluster of this test's own is stopped (its connections cut) and started
again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_kit import OwnCluster, own_cluster_for
from tracer_kit import get_weather, make_agent, rows, two_lap_model

from tracer import TraceMiddleware
from tracer.db.spool import Spool


@pytest.fixture
def own_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OwnCluster]:
    monkeypatch.setenv("LOOPTRACE_SPOOL_DIR", str(tmp_path / "spool"))
    with own_cluster_for("outage") as c:
        yield c


def _run(trace: TraceMiddleware, q: str) -> None:
    agent = make_agent(two_lap_model(), [get_weather], [trace])
    out = agent.invoke({"messages": [("user", q)]})
    assert out["messages"][-1].type == "ai"  # the agent ran to its end


def test_runs_recorded_during_an_outage_arrive_when_the_server_is_back(
        own_cluster: OwnCluster) -> None:
    url = own_cluster.start()
    trace = TraceMiddleware(db=url, run_name="before")
    _run(trace, "Weather in Oslo?")
    trace.flush()
    assert rows(url, "SELECT name, status FROM runs") == [("before", "completed")]

    own_cluster.stop()
    names = [f"during-{i}" for i in range(3)]
    for name in names:
        trace.run_name = name
        _run(trace, "Weather in Oslo?")
    trace.flush()
    spool = Spool(url)
    assert spool.mine(), "the outage's runs are waiting on local disk"

    own_cluster.start()
    trace.flush()  # (a flush sends what waits: otherwise the writer's next try does)
    got = rows(url, "SELECT name, status FROM runs ORDER BY started_at")
    assert got == [("before", "completed")] + [(n, "completed") for n in names]
    for (rid,) in rows(url, "SELECT id FROM runs"):
        seqs = [r[0] for r in rows(url, "SELECT seq FROM events WHERE run_id = ?"
                                        " ORDER BY seq", [rid])]
        assert seqs == list(range(len(seqs))) and len(seqs) > 10
    assert spool.mine() == []


def test_a_full_spool_is_said_once_and_the_agent_goes_on(
        own_cluster: OwnCluster, monkeypatch: pytest.MonkeyPatch,
        recwarn: pytest.WarningsRecorder) -> None:
    url = own_cluster.start()
    trace = TraceMiddleware(db=url, run_name="first")
    _run(trace, "Weather in Oslo?")
    trace.flush()
    own_cluster.stop()
    monkeypatch.setenv("LOOPTRACE_SPOOL_MB", "0.001")  # one kilobyte: full at once
    trace.recorder.writer._spool = Spool(url)  # (the bound is read when it is made)
    for i in range(2):
        trace.run_name = f"lost-{i}"
        _run(trace, "Weather in Oslo?")
    trace.flush()
    full = [str(w.message) for w in recwarn.list if "spool" in str(w.message)
            and "is full" in str(w.message)]
    assert len(full) == 1, full
    assert "postgres@" in full[0] or "****" in full[0]
