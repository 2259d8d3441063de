"""A Deep Agents coordinator with a ``researcher`` subagent (scripted models), paused in
the background for a test to step into and out of (``tests/debug/test_debug_step_into.py``,
MCP, the app)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import deepagents
from blockbuster import blockbuster_ctx
from debug_kit import Background, wait_paused
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.tools import tool

from tracer import TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.demo.models import ScriptedChatModel, call, last_tool_results
from tracer.read.loader import TraceDB

__all__ = ["QUESTION", "Deep", "lookup_fact"]

QUESTION = {"messages": [("user", "Capitals of Norway and Sweden?")]}


@tool
def lookup_fact(topic: str) -> str:
    """Look a fact up."""
    return f"{topic}: the capital is {'Oslo' if topic == 'Norway' else 'Stockholm'}."


def _task(country: str, tcid: str) -> dict[str, Any]:
    return call("task", {"description": f"Find the capital of {country}.",
                         "subagent_type": "researcher"}, tcid)


def _script(parallel: bool) -> Any:
    def script(messages: list[BaseMessage]) -> AIMessage:
        system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        n_ai = sum(isinstance(m, AIMessage) for m in messages)
        if "RESEARCHER" in system:
            if n_ai == 0:
                asked = "Sweden" if "Sweden" in str(messages[-1].content) else "Norway"
                return AIMessage("", tool_calls=[call("lookup_fact", {"topic": asked},
                                                      f"c_look_{asked}")])
            return AIMessage(f"Found: {last_tool_results(messages)[-1].content}")
        if n_ai == 0:
            calls = [_task("Norway", "c_no")] + ([_task("Sweden", "c_se")] if parallel else [])
            return AIMessage("Delegating.", tool_calls=calls)
        return AIMessage("Researcher says: " + " / ".join(
            str(m.content) for m in last_tool_results(messages)))
    return script


class Deep:
    """A Deep Agents coordinator with a ``researcher`` subagent, paused in the
    background (the test answers its pauses through the database)."""

    def __init__(self, tmp: Path, *, mode: str = "sync", sub: str = "attach",
                 parallel: bool = False, breaks: tuple[str, ...] = ("tool:task",),
                 sub_breaks: tuple[str, ...] = ()) -> None:
        self.db = tmp / "deep.db"
        model = ScriptedChatModel(script=_script(parallel), model_name="scripted-deep")
        # (no breakpoint for the parent: its tracer has no debugger)
        self.trace = TraceMiddleware(db=self.db, debug=Debugger(list(breaks)) if breaks else False)
        # sub: "attach": the parent's tracer alone, attached (the subagent nested through
        # its callbacks); "own": the subagent's own TraceMiddleware with a debugger, the
        # parent not attached; "own+attach": both; "none": nothing records the subagent
        own = ([TraceMiddleware(db=self.db, debug=Debugger(list(sub_breaks)))]
               if sub.startswith("own") else [])
        researcher = {"name": "researcher", "description": "Looks facts up.",
                      "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact],
                      "model": model, "middleware": own}
        agent = deepagents.create_deep_agent(
            model=model, tools=[lookup_fact], middleware=[self.trace], subagents=[researcher],
            name="coordinator", system_prompt="Delegate with task.")
        if sub.endswith("attach"):
            agent = self.trace.attach(agent)
        if mode == "async":
            async def go() -> Any:
                with blockbuster_ctx():
                    return await agent.ainvoke(QUESTION)
            self.bg = Background(go, is_async=True)
        else:
            self.bg = Background(lambda: agent.invoke(QUESTION))
        self.seen: set[int] = set()

    def next(self, n: int = 1) -> list[dict[str, Any]]:
        """The next ``n`` pauses not seen yet (waited for)."""
        end = time.monotonic() + 30
        while time.monotonic() < end:
            got = [p for p in wait_paused(self.db, alive=self.bg.alive)
                   if p["pause"] not in self.seen]
            if len(got) >= n:
                self.seen.update(p["pause"] for p in got)
                return got
            time.sleep(0.02)
        msg = "no new pause"
        raise AssertionError(msg)

    def answer(self, p: dict[str, Any], command: str) -> None:
        channel.answer(self.db, p["run"], command, pause=p["pause"])

    def finish(self) -> Any:
        try:
            return self.bg.result()
        finally:
            self.trace.flush()

    def pauses(self) -> dict[str, list[tuple[str, str, str]]]:
        """Each run's name -> its pause events: (hook, at, reason)."""
        out: dict[str, list[tuple[str, str, str]]] = {}
        with TraceDB(self.db) as tdb:
            for r in tdb.runs():
                for e in tdb.run(r.id).events:
                    if e.phase == "pause":
                        out.setdefault(str(r.name), []).append(
                            (e.hook, e.payload["at"], e.payload["reason"]))
        return out
