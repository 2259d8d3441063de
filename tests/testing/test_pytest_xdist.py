"""The pytest plugin under pytest-xdist (``-n 2``), run with pytester: each inner session
is a real ``pytest -n 2`` subprocess whose two workers run real create_agent agents
driven by scripted models (tests/test_pytest_plugin.py's agent)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from pytester_kit import run_inline
from test_pytest_plugin import AGENT

pytest_plugins = ["pytester"]

# Eight tests, spread by xdist over two workers: each runs the agent once, a few fail.
SUITE = '''
import os
import pytest
from agentkit import agent, ask


@pytest.mark.parametrize("n", range(6))
def test_runs(n, looptrace):
    ask(agent(), f"question {n}")
    assert looptrace.run_ids and len(looptrace.run_ids) == 1
    looptrace.assert_tools(["get_weather", {"get_price", "get_weather"}])
    print("WORKER", os.environ.get("PYTEST_XDIST_WORKER"))


@pytest.mark.parametrize("n", range(2))
def test_fails(n):
    ask(agent(), f"failing {n}")
    assert False, "boom"
'''


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agentkit=AGENT)
    return pytester


def _run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return run_inline(p, "-n", "2", *args)


def _roots(db: Path) -> list[tuple[str, dict]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT id, metadata FROM runs WHERE parent_id IS NULL "
                           "ORDER BY started_at").fetchall()
    finally:
        con.close()
    return [(r[0], json.loads(r[1]) if r[1] else {}) for r in rows]


def test_two_workers_record_into_one_database(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_x=SUITE)
    res = _run(inner, "--looptrace=trace.db", "--looptrace-html=replays")
    res.assert_outcomes(passed=6, failed=2)
    roots = _roots(inner.path / "trace.db")
    tags = sorted(m["pytest"]["nodeid"] for _, m in roots)
    assert tags == sorted([f"test_x.py::test_runs[{n}]" for n in range(6)]
                          + [f"test_x.py::test_fails[{n}]" for n in range(2)])
    workers = {m["pytest"].get("worker") for _, m in roots}
    assert workers == {"gw0", "gw1"}
    # one session (the controller's id, handed to the workers): "this session's runs"
    assert len({m["pytest"]["session"] for _, m in roots}) == 1
    # the failed tests' reports name their runs and their replays were written
    out = res.stdout.str()
    failed = {m["pytest"]["nodeid"]: rid for rid, m in roots if "test_fails" in
              m["pytest"]["nodeid"]}
    pages = sorted(p.name for p in (inner.path / "replays").glob("*.html"))
    assert pages == sorted(f"test_x.py_test_fails_{n}-{failed[f'test_x.py::test_fails[{n}]'][:12]}"
                           ".html" for n in range(2))
    for rid in failed.values():
        assert f"run {rid}:" in out


def test_per_worker_databases(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_x=SUITE)
    res = _run(inner, "--looptrace=trace-{worker}.db")
    res.assert_outcomes(passed=6, failed=2)
    dbs = sorted(p.name for p in inner.path.glob("*.db"))
    assert dbs == ["trace-gw0.db", "trace-gw1.db"]
    tags = [m["pytest"]["nodeid"] for db in dbs for _, m in _roots(inner.path / db)]
    assert len(tags) == 8 and len(set(tags)) == 8
    for db in dbs:
        assert {m["pytest"]["worker"] for _, m in _roots(inner.path / db)} == {db[6:9]}


def test_the_fixture_without_looptrace_records_per_worker(inner: pytest.Pytester) -> None:
    """Without --looptrace the fixture records into each worker's own temporary
    directory: the assertions of test_runs see their run; nothing lands in the folder."""
    inner.makepyfile(test_x=SUITE)
    res = _run(inner)
    res.assert_outcomes(passed=6, failed=2)
    assert not list(inner.path.glob("*.db"))

