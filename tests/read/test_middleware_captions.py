"""Replay captions that know the middleware: each fact asserted on a recorded run.

Real agents driven by scripted models, recorded into a temporary SQLite file;
the captions come from ``tracer.read.steps.build_replay`` and the roles from
``tracer.vocab.known_middleware``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# (imported whole before any test: Deep Agents' lazy Anthropic check reads
# sys.modules while an app test's background thread may be importing it)
import langchain_anthropic.chat_models  # noqa: F401
from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    HumanInTheLoopMiddleware,
    ModelFallbackMiddleware,
    SummarizationMiddleware,
)
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from tracer_kit import get_weather

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.captions import captions
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, Step, build_replay
from tracer.vocab.known_middleware import GENERIC


def replays(db: Path) -> dict[str, Replay]:
    with TraceDB(db) as t:
        return {r.name or r.id: build_replay(t.run(r.id)) for r in t.runs()}


def steps_of(rp: Replay, middleware: str, hook: str) -> list[Step]:
    return [s for s in rp.steps if s.event.middleware == middleware and s.event.hook == hook]


def record(db: Path, agent: Any, tm: TraceMiddleware, inputs: Any,
           config: dict[str, Any] | None = None) -> Replay:
    tm.attach(agent).invoke(inputs, config=config or {})
    tm.flush()
    return replays(db)[tm.run_name or "agent"]


def test_patch_tool_calls_before_agent_says_what_it_does(store_db: str) -> None:
    """Deep Agents' PatchToolCallsMiddleware answers a dangling tool call: the caption
    of its before_agent step says so, and what it did here (updated the messages)."""
    from deepagents import create_deep_agent

    db = store_db
    model = ScriptedChatModel(script=lambda ms: AIMessage("ok"))
    tm = TraceMiddleware(db=db, run_name="patched")
    history = [HumanMessage("list the files"),
               AIMessage("", tool_calls=[call("ls", {"path": "/"}, "call_dangling")]),
               HumanMessage("never mind")]
    rp = record(db, create_deep_agent(model=model, middleware=[tm]), tm,
                {"messages": history})
    [step] = steps_of(rp, "PatchToolCallsMiddleware", "before_agent")
    assert captions(rp)[step.index].startswith("before_agent of Deep Agents' PatchToolCallsMiddleware:")
    assert "without a ToolMessage" in captions(rp)[step.index] and "dangling" in captions(rp)[step.index]
    assert "Here it updated the state: messages." in captions(rp)[step.index]
    assert "load memory, validate input" not in captions(rp)[step.index]  # not the generic purpose
    # and it really did: the call is answered in the state with an error ToolMessage
    patched = [m for m in rp.messages_at(len(rp) - 1) if m.tool_call_id == "call_dangling"]
    assert patched and patched[0].status == "error"


def test_patch_tool_calls_with_nothing_to_patch(store_db: str) -> None:
    from deepagents import create_deep_agent

    db = store_db
    tm = TraceMiddleware(db=db, run_name="clean")
    rp = record(db, create_deep_agent(model=ScriptedChatModel(
        script=lambda ms: AIMessage("ok")), middleware=[tm]), tm,
        {"messages": [HumanMessage("hi")]})
    [step] = steps_of(rp, "PatchToolCallsMiddleware", "before_agent")
    assert "Here it returned nothing: no change." in captions(rp)[step.index]


def _summarising_agent(db: Path) -> tuple[Any, TraceMiddleware]:
    summary = "the user asked about the weather twice"
    summariser = ScriptedChatModel(script=lambda ms: AIMessage(summary))

    def main(ms: Any) -> AIMessage:
        if any(summary in str(m.content) for m in ms):
            return AIMessage("Sunny in Oslo.")
        n = sum(isinstance(m, AIMessage) for m in ms)
        return AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, f"w{n}")])

    tm = TraceMiddleware(db=db, run_name="summarised")
    agent = create_agent(ScriptedChatModel(script=main), tools=[get_weather], middleware=[
        tm, SummarizationMiddleware(summariser, trigger=("messages", 4), keep=("messages", 2))])
    return agent, tm


def test_langchain_summarisation_is_before_model_and_says_deep_agents_differs(
        store_db: str) -> None:
    db = store_db
    agent, tm = _summarising_agent(db)
    rp = record(db, agent, tm, {"messages": [HumanMessage("weather?")]},
                {"recursion_limit": 40})
    fired = steps_of(rp, "SummarizationMiddleware", "before_model")
    assert len(fired) == rp.run.summary.laps >= 3
    assert all(captions(rp)[s.index].startswith("before_model of LangChain's SummarizationMiddleware")
               for s in fired)
    assert "Here it returned nothing: no change." in captions(rp)[fired[0].index]
    assert "Here it updated the state: messages." in captions(rp)[fired[-1].index]  # it summarised
    assert "Deep Agents' SummarizationMiddleware works around the model call " \
           "(wrap_model_call) at 85% of the window" in captions(rp)[fired[0].index]
    # the history step names it as the one who changed the conversation
    hist = [s for s in rp.steps if s.event.hook == "history"]
    assert hist and "SummarizationMiddleware.before_model removed" in captions(rp)[hist[0].index]


def test_hitl_pause_caption_names_interrupt_on(store_db: str) -> None:
    db = store_db
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage("Sunny."),
    ]))
    tm = TraceMiddleware(db=db, run_name="paused")
    agent = tm.attach(create_agent(model, tools=[get_weather], checkpointer=InMemorySaver(),
                                   middleware=[tm, HumanInTheLoopMiddleware(
                                       interrupt_on={"get_weather": True})]))
    cfg = {"configurable": {"thread_id": "t-hitl"}}
    agent.invoke({"messages": [HumanMessage("weather?")]}, config=cfg)
    agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config=cfg)
    tm.flush()
    rp = replays(db)["paused"]
    [pause] = [s for s in steps_of(rp, "HumanInTheLoopMiddleware", "after_model")
               if s.event.phase == "interrupt"]
    assert "The run paused for a human" in captions(rp)[pause.index]
    assert "after_model of LangChain's HumanInTheLoopMiddleware" in captions(rp)[pause.index]
    assert "interrupt_on" in captions(rp)[pause.index]


def test_layer_caption_adds_the_layers_role(store_db: str) -> None:
    db = store_db
    calls = {"n": 0}

    def flaky(ms: Any) -> AIMessage:
        calls["n"] += 1
        if calls["n"] == 1:
            msg = "rate limited (scripted)"
            raise RuntimeError(msg)
        return AIMessage("ok")

    backup = ScriptedChatModel(model_name="backup", script=lambda ms: AIMessage("ok"))
    tm = TraceMiddleware(db=db, run_name="layers")
    agent = create_agent(ScriptedChatModel(script=flaky), tools=[get_weather],
                         middleware=tm.around(ModelFallbackMiddleware(backup)))
    rp = record(db, agent, tm, {"messages": [HumanMessage("hi")]})
    attempt = next(s for s in steps_of(rp, "ModelFallbackMiddleware", "wrap_model_call")
                   if s.event.payload.get("what") == "attempt")
    assert "called the rest of the onion again: attempt 2" in captions(rp)[attempt.index]
    assert "wrap_model_call of LangChain's ModelFallbackMiddleware: it calls the rest of the " \
           "onion again with the next fallback model when the model call raises" \
           in captions(rp)[attempt.index]


class Custom(AgentMiddleware):  # type: ignore[type-arg]
    """A middleware looptrace does not know."""

    def after_agent(self, state: Any, runtime: Any) -> None:
        return None


def test_unknown_middleware_gets_the_generic_caption(store_db: str) -> None:
    db = store_db
    tm = TraceMiddleware(db=db, run_name="custom")
    agent = create_agent(ScriptedChatModel(script=lambda ms: AIMessage("hi")), tools=[],
                         middleware=[tm, Custom()])
    rp = record(db, agent, tm, {"messages": [HumanMessage("hi")]})
    [step] = steps_of(rp, "Custom", "after_agent")
    assert captions(rp)[step.index].startswith(f"after_agent of Custom: it {GENERIC['after_agent']}.")
    assert "Here it returned nothing: no change." in captions(rp)[step.index]


def test_memory_and_skills_on_before_agent_and_around_the_model_call(store_db: str) -> None:
    """A Deep Agents run with memory and skills: their before_agent steps say what they
    load (and did here), and the floor plan puts them, the cache markers and the
    filesystem's eviction on the hooks the seed article names."""
    from deepagents import create_deep_agent
    from deepagents.backends.utils import create_file_data

    from tracer.read.floorplan import floor_plan

    db = store_db
    sent: list[str] = []

    def script(ms: Any) -> AIMessage:
        sent.extend(str(m.content) for m in ms if m.type == "system")
        return AIMessage("Hei!")

    tm = TraceMiddleware(db=db, run_name="remembering")
    agent = create_deep_agent(model=ScriptedChatModel(script=script), middleware=[tm],
                              memory=["/AGENTS.md"], skills=["/skills/"])
    files = {"/AGENTS.md": create_file_data("Always answer in Norwegian."),
             "/skills/weather/SKILL.md": create_file_data(
                 "---\nname: weather\ndescription: Look up the weather.\n---\nUse the API.")}
    rp = record(db, agent, tm, {"messages": [HumanMessage("hi")], "files": files})
    assert "Always answer in Norwegian." in " ".join(sent)  # the memory section was sent
    [mem] = steps_of(rp, "MemoryMiddleware", "before_agent")
    assert captions(rp)[mem.index].startswith("before_agent of Deep Agents' MemoryMiddleware: it loads the "
                                  "memory files (AGENTS.md) into the state, once.")
    assert "Here it updated the state: memory_contents." in captions(rp)[mem.index]
    [skills] = steps_of(rp, "SkillsMiddleware", "before_agent")
    assert "loads the skills' metadata into the state, once per thread" in captions(rp)[skills.index]
    assert "Here it updated the state: skills_load_errors, skills_metadata." in captions(rp)[skills.index]
    rows = {r.hook: r for r in floor_plan(rp, len(rp) - 1)}
    assert [c.middleware for c in rows["before_agent"].cells] == [
        "PatchToolCallsMiddleware", "TraceMiddleware", "SkillsMiddleware", "MemoryMiddleware"]
    around = {c.middleware: c.role for c in rows["wrap_model_call"].cells}
    assert "memory section into the system prompt" in around["MemoryMiddleware"]
    assert "skills section to the system prompt" in around["SkillsMiddleware"]
    assert "cache_control markers" in around["AnthropicPromptCachingMiddleware"]
    assert "85% of the model's context window" in around["SummarizationMiddleware"]
    tools = {c.middleware: c.role for c in rows["wrap_tool_call"].cells}
    assert "evicts a tool result over 20,000 tokens to a file" in tools["FilesystemMiddleware"]
