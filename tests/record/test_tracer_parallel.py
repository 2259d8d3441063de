"""Parallel tool calls (threads under invoke, asyncio tasks under ainvoke): nothing lost."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from langchain_core.tools import tool
from tracer_kit import (
    assert_gapless,
    make_agent,
    no_tracer_warnings,  # noqa: F401
    parallel_model,
    rows,
    run_ids,
)

from tracer import TraceMiddleware

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")

LAPS, WIDTH = 4, 5
_barrier_lock = threading.Lock()


@tool
def slow_price(item: str) -> str:
    """Price of an item (takes a moment, so that calls overlap)."""
    time.sleep(0.01)
    return f"{item}: 10 EUR"


@tool
async def aslow_price(item: str) -> str:
    """Price of an item, async (yields so that calls interleave)."""
    for _ in range(3):
        await asyncio.sleep(0.002)
    return f"{item}: 10 EUR"


def check_run(db, run_id, result, attach):
    seqs = assert_gapless(db, run_id)
    evs = rows(db, "SELECT seq, hook, phase, tool_call_id, task FROM events WHERE run_id = ?"
                   " AND hook = 'wrap_tool_call' ORDER BY seq", [run_id])
    expected_ids = {f"c{lap}-{j}" for lap in range(LAPS) for j in range(WIDTH)}
    enters = [e for e in evs if e[2] == "enter"]
    exits = [e for e in evs if e[2] == "exit"]
    assert sorted(e[3] for e in enters) == sorted(expected_ids)  # none lost or doubled
    assert sorted(e[3] for e in exits) == sorted(expected_ids)
    enter_seq = {e[3]: e[0] for e in enters}
    for e in exits:
        assert enter_seq[e[3]] < e[0]
    # Within a lap, every tool event sits between the model exit and the next before_model.
    model_exits = [r[0] for r in rows(db, "SELECT seq FROM events WHERE run_id = ? AND"
                                          " hook = 'wrap_model_call' AND phase = 'exit'"
                                          " ORDER BY seq", [run_id])]
    for e in evs:
        lap = int(e[3].split("-")[0][1:])
        assert model_exits[lap] < e[0] < model_exits[lap + 1]
    # Each ToolMessage is stored once and paired with its call by tool_call_id.
    msgs = rows(db, "SELECT position, type, tool_call_id, data FROM messages WHERE run_id = ?"
                    " ORDER BY position", [run_id])
    assert [m[0] for m in msgs] == list(range(len(result["messages"])))
    tool_msgs = [m for m in msgs if m[1] == "tool"]
    assert sorted(m[2] for m in tool_msgs) == sorted(expected_ids)
    for m in tool_msgs:
        item = m[2].replace("c", "item-", 1)
        assert f'"{item}: 10 EUR"' in m[3]
    # And the stored positions match the agent's own final conversation.
    final = [(m.type, getattr(m, "tool_call_id", None)) for m in result["messages"]]
    assert [(m[1], m[2]) for m in msgs] == final
    return seqs


def overlapped(db, run_id) -> bool:
    """True if at least two tool calls were in flight at once (the test really ran parallel)."""
    active = 0
    for hook, phase in rows(db, "SELECT hook, phase FROM events WHERE run_id = ? AND"
                                " hook = 'wrap_tool_call' ORDER BY seq", [run_id]):
        active += 1 if phase == "enter" else -1
        if active > 1:
            return True
    return False


@pytest.mark.parametrize("attach", [False, True])
def test_parallel_tool_calls_threads(db_path, attach):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(parallel_model(LAPS, WIDTH, "slow_price"), [slow_price], [trace])
    if attach:
        agent = trace.attach(agent)
    result = agent.invoke({"messages": [("user", "price it all")]})
    trace.flush()
    (run_id,) = run_ids(db_path)
    check_run(db_path, run_id, result, attach)
    assert overlapped(db_path, run_id)
    tasks = {r[0] for r in rows(db_path, "SELECT task FROM events WHERE run_id = ? AND"
                                         " hook = 'wrap_tool_call'", [run_id])}
    assert len(tasks) > 1  # several worker threads


@pytest.mark.parametrize("attach", [False, True])
def test_parallel_tool_calls_asyncio(db_path, attach):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(parallel_model(LAPS, WIDTH, "aslow_price"), [aslow_price], [trace])
    if attach:
        agent = trace.attach(agent)
    result = asyncio.run(agent.ainvoke({"messages": [("user", "price it all")]}))
    trace.flush()
    (run_id,) = run_ids(db_path)
    check_run(db_path, run_id, result, attach)
    assert overlapped(db_path, run_id)


def test_concurrent_runs_from_threads_share_one_tracer(db_path):
    """Eight agents invoked at once from eight threads: eight separate, complete runs."""
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(parallel_model(2, 3, "slow_price"), [slow_price], [trace])
    results: list = [None] * 8

    def go(i: int) -> None:
        results[i] = agent.invoke({"messages": [("user", f"question {i}")]})

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    trace.flush()
    assert_separate_runs(db_path, {f"question {i}" for i in range(8)})


@pytest.mark.parametrize("attach", [False, True])
def test_concurrent_ainvokes_are_separate_runs(db_path, attach):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(parallel_model(2, 3, "aslow_price"), [aslow_price], [trace])
    if attach:
        agent = trace.attach(agent)

    async def main():
        return await asyncio.gather(*[agent.ainvoke({"messages": [("user", f"q{i}")]})
                                      for i in range(6)])

    asyncio.run(main())
    trace.flush()
    assert_separate_runs(db_path, {f"q{i}" for i in range(6)})


def assert_separate_runs(db_path, questions: set[str]) -> None:
    """One completed run per question (2 laps x 3 calls each), gapless, positions whole."""
    ids = run_ids(db_path)
    assert len(ids) == len(questions)
    firsts = set()
    for run_id in ids:
        assert_gapless(db_path, run_id)
        msgs = rows(db_path, "SELECT position, text FROM messages WHERE run_id = ?"
                             " ORDER BY position", [run_id])
        assert [m[0] for m in msgs] == list(range(1 + 2 * 4 + 1))
        firsts.add(msgs[0][1])
        status = rows(db_path, "SELECT status FROM runs WHERE id = ?", [run_id])[0][0]
        assert status == "completed"
    assert firsts == questions
