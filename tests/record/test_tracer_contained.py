"""Every failure of the tracer's own code is contained: with its recorder broken in each
of its entry points, every scenario of the differential test (sync, and async under
blockbuster, with callbacks and with probes in every layer) returns what it returns
without the tracer, and each kind of failure is warned about once."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from tracer_kit import whole_state
from truth.run import arun_truth, run_truth
from truth.scenarios import SCENARIOS

import tracer.record.recorder as recorder_mod
from tracer import TraceMiddleware

# The recorder's entry points: what every hook, callback and probe calls.
BROKEN = ("event", "sync_messages", "message", "tool_result", "request_view", "start_run")


@pytest.fixture(scope="module")
def untraced() -> dict[str, Any]:
    """Each scenario's whole final state without the tracer (every state channel,
    every field of every message)."""
    return {name: whole_state(run_truth(name).final_values) for name in SCENARIOS}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("broken", BROKEN)
def test_a_broken_recorder_never_reaches_the_agent(tmp_path, monkeypatch, untraced, broken,
                                                   mode):
    calls: list[int] = []

    def boom(*_a, **_k):
        calls.append(1)
        msg = f"looptrace bug in {broken} (injected)"
        raise RuntimeError(msg)

    monkeypatch.setattr(recorder_mod.Recorder, broken, boom)
    for name in sorted(SCENARIOS):
        calls.clear()
        trace = TraceMiddleware(db=tmp_path / f"{name}-{mode}.db")
        handler = [trace.callback_handler()]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if mode == "sync":
                truth = run_truth(name, [trace], position="around", callbacks=handler)
            else:
                async def go(name=name, trace=trace, handler=handler):
                    with blockbuster_ctx():
                        return await arun_truth(name, [trace], position="around",
                                                callbacks=handler)
                truth = asyncio.run(go())
        assert whole_state(truth.final_values) == untraced[name], name
        ours = [str(w.message) for w in caught if "looptrace" in str(w.message)]
        # reported if (and only if) the broken code ran in this scenario
        assert bool(ours) == bool(calls), (name, ours, len(calls))
        # once per kind of failure, not once per hook firing
        assert len(ours) == len(set(ours)) <= 9, ours  # (9: the end of an invocation too)
