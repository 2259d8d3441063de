"""Exact hook order of a 2-lap run with one middleware before and one after the tracer."""

from __future__ import annotations

import asyncio

import pytest
from tracer_kit import (
    Spy,
    events,
    get_weather,
    make_agent,
    no_tracer_warnings,  # noqa: F401
    rows,
    run_ids,
    two_lap_model,
)

from tracer import TraceMiddleware

T = "TraceMiddleware"

# What the tracer records for middleware=[A, TraceMiddleware, B] (node hooks of A and B come
# from the callback handler; their wrap hooks are not graph nodes and only they can see them).
LAP = [
    ("before_model", "fire", "A"),
    ("before_model", "fire", T),
    ("before_model", "fire", "B"),
    ("wrap_model_call", "enter", T),
    ("wrap_model_call", "exit", T),
    ("after_model", "fire", "B"),
    ("after_model", "fire", T),
    ("after_model", "fire", "A"),
]
EXPECTED_ATTACHED = [
    ("run", "start", None),
    ("before_agent", "fire", "A"),
    ("before_agent", "fire", T),
    ("before_agent", "fire", "B"),
    *LAP,
    ("wrap_tool_call", "enter", T),
    ("wrap_tool_call", "exit", T),
    *LAP,
    ("after_agent", "fire", "B"),
    ("after_agent", "fire", T),
    ("after_agent", "fire", "A"),
    ("run", "end", None),  # the replay's END node
]
EXPECTED_ALONE = [e for e in EXPECTED_ATTACHED if e[2] == T] + [("run", "end", None)]

# What A and B themselves saw, in firing order (A is the outer wrapper).
SPY_LAP = [
    ("A", "before_model", "fire"), ("B", "before_model", "fire"),
    ("A", "wrap_model_call", "enter"), ("B", "wrap_model_call", "enter"),
    ("B", "wrap_model_call", "exit"), ("A", "wrap_model_call", "exit"),
    ("B", "after_model", "fire"), ("A", "after_model", "fire"),
]
SPY_EXPECTED = [
    ("A", "before_agent", "fire"), ("B", "before_agent", "fire"),
    *SPY_LAP,
    ("A", "wrap_tool_call", "enter"), ("B", "wrap_tool_call", "enter"),
    ("B", "wrap_tool_call", "exit"), ("A", "wrap_tool_call", "exit"),
    *SPY_LAP,
    ("B", "after_agent", "fire"), ("A", "after_agent", "fire"),
]

MODES = ["invoke", "stream", "ainvoke", "astream"]
INPUT = {"messages": [("user", "What's the weather in Oslo?")]}

pytestmark = pytest.mark.usefixtures("no_tracer_warnings")


def drive(agent, mode: str) -> None:
    if mode == "invoke":
        agent.invoke(INPUT)
    elif mode == "stream":
        for _ in agent.stream(INPUT, stream_mode="updates"):
            pass
    elif mode == "ainvoke":
        asyncio.run(agent.ainvoke(INPUT))
    else:
        async def consume() -> None:
            async for _ in agent.astream(INPUT, stream_mode="updates"):
                pass

        asyncio.run(consume())


def record(db, mode: str, attach: bool):
    log: list[tuple[str, str, str]] = []
    trace = TraceMiddleware(db=db)
    agent = make_agent(two_lap_model(), [get_weather], [Spy("A", log), trace, Spy("B", log)])
    if attach:
        agent = trace.attach(agent)
    drive(agent, mode)
    trace.flush()
    ids = run_ids(db)
    assert len(ids) == 1
    return ids[0], log


@pytest.mark.parametrize("mode", MODES)
def test_hook_order_with_attach(db_path, mode):
    run_id, log = record(db_path, mode, attach=True)
    evs = events(db_path, run_id)
    assert [e[0] for e in evs] == list(range(len(evs)))
    assert [(e[1], e[2], e[3]) for e in evs] == EXPECTED_ATTACHED
    assert log == SPY_EXPECTED
    # The node hooks of A and B were recorded in the order they really fired.
    recorded_others = [(e[3], e[1], e[2]) for e in evs if e[3] in ("A", "B")]
    assert recorded_others == [x for x in log if x[1] not in ("wrap_model_call",
                                                               "wrap_tool_call")]
    # Laps: a lap opens at its first before_model (A's), whoever's hook that is.
    assert [e[4] for e in evs] == [0] * 4 + [1] * 10 + [2] * 8 + [2] * 4
    status = rows(db_path, "SELECT status FROM runs WHERE id = ?", [run_id])[0][0]
    assert status == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_hook_order_middleware_alone(db_path, mode):
    run_id, log = record(db_path, mode, attach=False)
    evs = events(db_path, run_id)
    assert [e[0] for e in evs] == list(range(len(evs)))
    assert [(e[1], e[2], e[3]) for e in evs] == [e for e in EXPECTED_ALONE]
    assert log == SPY_EXPECTED
    assert [e[4] for e in evs] == [0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2]
    assert [e[5] for e in evs if e[1] == "wrap_tool_call"] == ["c1", "c1"]
    status = rows(db_path, "SELECT status FROM runs WHERE id = ?", [run_id])[0][0]
    assert status == "completed"


@pytest.mark.parametrize("mode", MODES)
def test_lean_mode_records_wrap_hooks_only(db_path, mode):
    trace = TraceMiddleware(db=db_path, lean=True)
    agent = make_agent(two_lap_model(), [get_weather], [trace])
    drive(agent, mode)
    trace.flush()
    (run_id,) = run_ids(db_path)
    evs = events(db_path, run_id)
    assert [(e[1], e[2], e[4], e[5]) for e in evs] == [
        ("wrap_model_call", "enter", 1, None), ("wrap_model_call", "exit", 1, None),
        ("wrap_tool_call", "enter", 1, "c1"), ("wrap_tool_call", "exit", 1, "c1"),
        ("wrap_model_call", "enter", 2, None), ("wrap_model_call", "exit", 2, None),
        ("run", "end", 2, None),
    ]
    assert [r[0] for r in rows(db_path, "SELECT type FROM messages WHERE run_id = ?"
                                        " ORDER BY position", [run_id])] == [
        "human", "ai", "tool", "ai"]
    assert rows(db_path, "SELECT status FROM runs")[0][0] == "completed"


def test_recording_again_after_close(db_path):
    trace = TraceMiddleware(db=db_path)
    agent = make_agent(two_lap_model(), [get_weather], [trace])
    drive(agent, "invoke")
    trace.close()
    drive(agent, "invoke")
    trace.close()
    assert len(run_ids(db_path)) == 2
    assert [r[0] for r in rows(db_path, "SELECT status FROM runs")] == ["completed"] * 2


CB_LAP = [("before_model", "fire", "A"), ("before_model", "fire", "B"),
          ("model", "enter", None), ("model", "exit", None),
          ("after_model", "fire", "B"), ("after_model", "fire", "A")]
EXPECTED_CALLBACKS_ONLY = [
    ("run", "start", None), ("before_agent", "fire", "A"), ("before_agent", "fire", "B"),
    *CB_LAP, ("tool", "enter", None), ("tool", "exit", None), *CB_LAP,
    ("after_agent", "fire", "B"), ("after_agent", "fire", "A"), ("run", "end", None),
]


@pytest.mark.parametrize("mode", MODES)
def test_callback_handler_alone_sees_every_node_hook(db_path, mode):
    from tracer import TraceCallbackHandler

    log: list[tuple[str, str, str]] = []
    handler = TraceCallbackHandler(db=db_path)
    agent = make_agent(two_lap_model(), [get_weather], [Spy("A", log), Spy("B", log)])
    drive(agent.with_config(callbacks=[handler]), mode)
    handler.close()
    (run_id,) = run_ids(db_path)
    evs = events(db_path, run_id)
    assert [(e[1], e[2], e[3]) for e in evs] == EXPECTED_CALLBACKS_ONLY
    assert [e[0] for e in evs] == list(range(len(evs)))
    assert [e[5] for e in evs if e[1] == "tool"] == ["c1", "c1"]
    assert [e[4] for e in evs] == [0, 0, 0] + [1] * 8 + [2] * 6 + [2] * 3
    assert log == SPY_EXPECTED
    assert [r[0] for r in rows(db_path, "SELECT type FROM messages WHERE run_id = ?"
                                        " ORDER BY position", [run_id])] == [
        "human", "ai", "tool", "ai"]
    assert rows(db_path, "SELECT status FROM runs")[0][0] == "completed"


def test_run_name_holds_with_attach(db_path):
    """``TraceMiddleware(run_name=...)`` names the run whether or not the callback
    handler is attached (attached, the handler starts the run)."""
    from tracer.read.loader import TraceDB

    for attach in (False, True):
        trace = TraceMiddleware(db=db_path, run_name=f"my-run-{attach}")
        agent = make_agent(two_lap_model(), [get_weather], [trace])
        (trace.attach(agent) if attach else agent).invoke({"messages": [("user", "hi")]})
        trace.flush()
    with TraceDB(db_path) as tdb:
        assert sorted(r.name for r in tdb.runs()) == ["my-run-False", "my-run-True"]
