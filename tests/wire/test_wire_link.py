"""Exchanges recorded by the proxy are linked to their model call by content, not by
time: with several runs calling models at once, an exchange goes to the run whose
request it carried, not to whichever call started last."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage

from tracer import TraceMiddleware
from tracer.demo.providers import SCENARIO_INPUT, chat_model, scenario_tools
from tracer.read.loader import TraceDB
from tracer.wire import WireServer
from tracer.wire.scenarios import auto

B_CALLING = threading.Event()


def slow(request: Any) -> Any:
    """The emulated provider takes 0.3 s to answer: calls overlap."""
    time.sleep(0.3)
    return auto(request)


class WaitForB(AgentMiddleware):  # type: ignore[type-arg]
    """Inside run A's tracer: A's request leaves only while a call of B is in progress,
    so at that moment the latest call to have started is B's."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        B_CALLING.wait(10)
        time.sleep(0.1)  # (B's enter event is on its way to the file)
        return handler(request)


class SignalB(AgentMiddleware):  # type: ignore[type-arg]
    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        B_CALLING.set()
        return handler(request)


def _run(db: str, url: str, scenario: str, inner: AgentMiddleware, out: dict) -> None:
    prompt, system = SCENARIO_INPUT[scenario]
    tm = TraceMiddleware(db=db, run_name=scenario)
    agent = create_agent(chat_model("openai", url), tools=scenario_tools(scenario),
                         middleware=[tm, inner], system_prompt=system)
    out[scenario] = agent.invoke({"messages": [HumanMessage(prompt)]})
    tm.flush()


def test_concurrent_runs_get_their_own_exchanges(tmp_path: Path) -> None:
    db = str(tmp_path / "two.db")
    B_CALLING.clear()
    out: dict[str, Any] = {}
    with WireServer(mode="emulate", script=slow, db=db) as srv:
        a = threading.Thread(target=_run, args=(db, srv.url, "weather", WaitForB(), out))
        b = threading.Thread(target=_run, args=(db, srv.url, "shopping", SignalB(), out))
        a.start()
        b.start()
        a.join(120)
        b.join(120)
    assert set(out) == {"weather", "shopping"}
    with TraceDB(db) as tdb:
        runs = {r.name: r for r in tdb.runs()}
        for name in ("weather", "shopping"):
            prompt = SCENARIO_INPUT[name][0]
            rows = tdb.wire(runs[name].id)
            assert len(rows) == runs[name].model_calls, name
            # every exchange linked to this run carried this run's question
            assert all(prompt in (r["request_body"] or "") for r in rows), name
        assert not [r for r in tdb.wire(runs["weather"].id) if
                    SCENARIO_INPUT["shopping"][0] in (r["request_body"] or "")]
