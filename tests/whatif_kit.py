"""Helpers of the what-if tests: record a truth-kit scenario, build its factory, and read
a run's stored rows (to show that a replay never changes them)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from blockbuster import blockbuster_ctx
from truth.model import RECORDER, Recorder
from truth.run import arun_truth, run_truth
from truth.scenarios import SCENARIOS

from tracer import TraceMiddleware
from tracer.read.loader import TraceDB


def root_run(db: Path | str) -> str:
    with TraceDB(db) as t:
        roots = [r.id for r in t.runs() if r.parent_id is None]
    assert len(roots) == 1, roots
    return roots[0]


def rows_of(db: Path | str, run_id: str) -> list[tuple[Any, ...]]:
    """Every stored row of ``run_id`` and of its subagent runs, byte for byte (a SQLite
    file, or a PostgreSQL store: ``tracer_kit.rows``)."""
    from tracer_kit import rows

    ids = [run_id] + [r[0] for r in rows(db, "SELECT id FROM runs WHERE parent_id = ?",
                                         [run_id])]
    out: list[tuple[Any, ...]] = []
    for rid in ids:
        for table, key in (("runs", "id"), ("events", "run_id"), ("messages", "run_id"),
                           ("wire", "run_id"), ("run_stats", "run_id")):
            out += [(table, *r) for r in rows(
                db, f"SELECT * FROM {table} WHERE {key} = ? ORDER BY 1, 2", [rid])]
    return out


class TruthAgent:
    """A truth-kit scenario recorded with the tracer at ``position`` (callbacks in the
    config, as tests/record/test_truth.py records), and its factory for the replay: the
    scenario built again with the given middleware in the tracer's place, its scripted
    models counting their calls in ``calls``."""

    def __init__(self, tmp: Path, name: str, position: str, mode: str) -> None:
        self.name, self.position, self.mode = name, position, mode
        self.db = tmp / f"{name}-{position}-{mode}.db"
        self.trace = TraceMiddleware(db=self.db)
        self.callbacks = [self.trace.callback_handler()]
        if mode == "async":
            async def go() -> None:
                with blockbuster_ctx():
                    await arun_truth(name, [self.trace], position=position,
                                     callbacks=self.callbacks)
            asyncio.run(go())
        else:
            run_truth(name, [self.trace], position=position, callbacks=self.callbacks)
        self.trace.flush()
        self.run_id = root_run(self.db)
        self.calls = Recorder()

    def factory(self, middleware: Any = None) -> Any:
        stack = list(middleware) if middleware is not None else [self.trace]
        token = RECORDER.set(self.calls)
        try:
            agent = SCENARIOS[self.name].build(stack, position=self.position)
        finally:
            RECORDER.reset(token)
        return agent.with_config(callbacks=self.callbacks)

    def make_factory(self) -> Any:
        trace = self.trace

        def factory(middleware: Any = (trace,)) -> Any:
            return self.factory(middleware)

        return factory


# A module a rerun loads its agent from (``--agent MODULE:make_agent``): the weather demo.
AGENT_MODULE = '''
import os
from tracer.demo.scenarios import weather_agent

demo = weather_agent(os.environ["LOOPTRACE_TEST_DB"])
make_agent = demo.factory
'''

# The same agent, changed since the run was recorded: another system prompt.
CHANGED_MODULE = '''
import os
from collections.abc import Sequence
from typing import Any
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.demo.scenarios import get_weather

trace = TraceMiddleware(db=os.environ["LOOPTRACE_TEST_DB"])
model = ScriptedChatModel(model_name="scripted-weather", script=turn_script([
    AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "call_weather_1")]),
    AIMessage("Snow."),
]))


def make_agent(middleware: Sequence[Any] = (trace,)) -> Any:
    return trace.attach(create_agent(model, tools=[get_weather], middleware=list(middleware),
                                     name="weather", system_prompt="You are terse."))
'''
