"""The debugger on real agents (create_agent with scripted models, sync and async with
blockbuster on): a pause at each kind of hook firing, step, each kind of edit, abort,
and the record each leaves (its replay and its captions)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from debug_kit import Background, wait_paused
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from tracer_kit import get_price, get_weather, make_agent

from tracer import TraceMiddleware
from tracer.debug import DebugAborted, Debugger, channel
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.errors import InvalidOption
from tracer.read.captions import captions
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

QUESTION = {"messages": [("user", "Weather in Oslo?")]}


def _quote(messages: Any) -> AIMessage:
    tools = [m for m in messages if isinstance(m, ToolMessage)]
    return AIMessage(f"The tool said: {tools[-1].content}" if tools else "No tool answered.")


def model() -> ScriptedChatModel:
    """Lap 1 asks for the weather; lap 2 quotes what the tool said."""
    return ScriptedChatModel(script=turn_script([
        AIMessage("", id="ai-1", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        _quote,
    ]))


class Session:
    """An agent paused in the background, and the test as its debugger."""

    def __init__(self, tmp: Path, breaks: Any, *, mode: str = "sync", timeout: float | None = None,
                 tools: list[Any] | None = None, llm: Any = None, attach: bool = False) -> None:
        self.db = tmp / "dbg.db"
        self.trace = TraceMiddleware(db=self.db, debug=Debugger(breaks, timeout=timeout))
        agent = make_agent(llm or model(), tools or [get_weather, get_price], [self.trace])
        if attach:  # (the callbacks too, as ``looptrace debug`` records: "sent" events)
            agent = self.trace.attach(agent)
        if mode == "async":
            async def go() -> Any:
                with blockbuster_ctx():
                    return await agent.ainvoke(QUESTION)
            self.bg = Background(go, is_async=True)
        else:
            self.bg = Background(lambda: agent.invoke(QUESTION))

    def paused(self) -> dict[str, Any]:
        got = wait_paused(self.db, alive=self.bg.alive)
        assert len(got) == 1
        return got[0]

    def go(self, command: str = "continue", edit: dict[str, Any] | None = None) -> dict[str, Any]:
        p = self.paused()
        channel.answer(self.db, p["run"], command, edit)
        return p

    def finish(self) -> Any:
        try:
            return self.bg.result()
        finally:
            self.trace.flush()

    def record(self) -> list[tuple[str, str, dict[str, Any]]]:
        with sqlite3.connect(self.db) as c:
            return [(h, ph, json.loads(p) if p else {}) for h, ph, p in c.execute(
                "SELECT hook, phase, payload FROM events ORDER BY run_id, seq")]


MODES = ["sync", "async"]


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_result_given_at_the_tool_call_is_what_the_model_reads(tmp_path, mode):
    s = Session(tmp_path, ["tool:get_weather"], mode=mode)
    p = s.paused()
    assert (p["hook"], p["at"], p["reason"]) == ("wrap_tool_call", "before", "tool:get_weather")
    assert p["pending"]["tool_call"] == {"name": "get_weather", "args": {"city": "Oslo"},
                                         "id": "c1"}
    s.go(edit={"kind": "tool_result", "text": "Snowing, -5 C"})
    out = s.finish()
    assert out["messages"][-1].content == "The tool said: Snowing, -5 C"
    rec = s.record()
    debug = [p for h, ph, p in rec if ph == "debug"]
    assert debug[0]["outcome"] == "edited" and debug[0]["edit"]["text"] == "Snowing, -5 C"
    assert debug[0]["after"]["result"]["text"] == "Snowing, -5 C"
    # the record: the pause and the edit are steps of the replay, with their captions
    with TraceDB(s.db) as db:
        run = db.run(db.runs()[0].id)
    replay = build_replay(run)
    said = captions(replay)
    phases = [st.event.phase for st in replay.steps]
    assert said[phases.index("pause")].startswith("Paused in the debugger at wrap_tool_call")
    assert said[phases.index("debug")].startswith("Changed in the debugger: tool result given")
    assert run.summary.status == "completed"
    # and the recorded ToolMessage is the edited one
    tools = [m for m in run.messages if m.type == "tool"]
    assert [m.text for m in tools] == ["Snowing, -5 C"]


@pytest.mark.parametrize("mode", MODES)
def test_step_mode_pauses_at_every_hook_in_order(tmp_path, mode):
    s = Session(tmp_path, ["step"], mode=mode)
    seen = []
    for _ in range(40):
        if not s.bg.alive():
            break
        try:
            p = wait_paused(s.db, alive=s.bg.alive, timeout=10)
        except AssertionError:
            break
        seen.append((p[0]["hook"], p[0]["at"]))
        channel.answer(s.db, p[0]["run"], "step")
    s.finish()
    assert seen == [
        ("before_agent", "fire"), ("before_model", "fire"),
        ("wrap_model_call", "before"), ("wrap_model_call", "after"), ("after_model", "fire"),
        ("wrap_tool_call", "before"), ("wrap_tool_call", "after"),
        ("before_model", "fire"), ("wrap_model_call", "before"), ("wrap_model_call", "after"),
        ("after_model", "fire"), ("after_agent", "fire")]


def test_continue_goes_to_the_next_breakpoint_and_lap_to_the_next_lap(tmp_path):
    s = Session(tmp_path, ["hook:before_agent"])
    assert s.go("lap")["hook"] == "before_agent"
    p = s.go()  # the next lap's model call: lap 2 (lap 1 began before the pause ended)
    assert (p["hook"], p["at"], p["reason"]) == ("wrap_model_call", "before", "next lap")
    s.finish()


@pytest.mark.parametrize("mode", MODES)
def test_a_model_call_answered_in_the_debugger_never_reaches_the_model(tmp_path, mode):
    calls = []

    def script(messages):
        calls.append(len(messages))
        return model().script(messages)

    s = Session(tmp_path, ["model:2"], mode=mode, llm=ScriptedChatModel(script=script))
    p = s.paused()
    assert p["pending"]["kind"] == "model_request"
    assert [m["type"] for m in p["pending"]["messages"]] == ["human", "ai", "tool"]
    assert p["pending"]["tools"] == ["get_weather", "get_price"]
    s.go(edit={"kind": "reply", "text": "Answered by a person."})
    out = s.finish()
    assert out["messages"][-1].content == "Answered by a person."
    assert len(calls) == 1  # only the first model call reached the model


def test_a_dropped_message_changes_the_request_not_the_state(tmp_path):
    seen: list[list[str]] = []

    def script(messages):
        seen.append([m.type for m in messages])
        return model().script(messages)

    s = Session(tmp_path, ["model:2"], llm=ScriptedChatModel(script=script))
    s.go(edit={"kind": "drop", "position": 2})
    out = s.finish()
    assert seen[-1] == ["human", "ai"]  # the model got the request without the ToolMessage
    assert [m.type for m in out["messages"]] == ["human", "ai", "tool", "ai"]
    debug = [p for h, ph, p in s.record() if ph == "debug"][0]
    assert debug["before"]["message"]["type"] == "tool"


def test_the_system_prompt_and_the_tools_offered_can_change(tmp_path):
    got: list[Any] = []

    class Seeing(ScriptedChatModel):
        def bind_tools(self, tools, **kw):
            got.append([getattr(t, "name", t) for t in tools])
            return self

    s = Session(tmp_path, ["model:1"], llm=Seeing(script=model().script))
    s.go(edit={"kind": "tools", "names": ["get_weather"]})
    s.finish()
    assert ["get_weather"] in got


@pytest.mark.parametrize("mode", MODES)
def test_tool_args_changed_before_the_tool_runs(tmp_path, mode):
    s = Session(tmp_path, ["tool:get_weather"], mode=mode)
    s.go(edit={"kind": "tool_args", "args": {"city": "Bergen"}})
    out = s.finish()
    assert out["messages"][-1].content == "The tool said: Sunny in Bergen, 21 C"


def test_after_the_model_a_tool_call_is_dropped_from_the_reply(tmp_path):
    s = Session(tmp_path, ["hook:wrap_model_call:after"])
    p = s.paused()
    assert p["pending"]["message"]["tool_calls"][0]["name"] == "get_weather"
    s.go(edit={"kind": "reply", "text": "I will not look it up."})
    out = s.finish()
    assert [m.type for m in out["messages"]] == ["human", "ai"]
    assert out["messages"][-1].content == "I will not look it up."


def test_after_a_tool_its_result_is_edited(tmp_path):
    s = Session(tmp_path, ["hook:wrap_tool_call:after"])
    p = s.paused()
    assert p["pending"]["message"]["text"] == "Sunny in Oslo, 21 C"
    s.go(edit={"kind": "tool_result", "text": "Fog"})
    assert s.finish()["messages"][-1].content == "The tool said: Fog"


def test_a_tool_made_to_raise_fails_the_run_as_a_raising_tool_would(tmp_path):
    s = Session(tmp_path, ["tool:get_weather"])
    s.go(edit={"kind": "raise", "text": "the weather service is down"})
    with pytest.raises(Exception, match="the weather service is down"):
        s.finish()


@pytest.mark.parametrize("mode", MODES)
def test_abort_ends_the_run_as_an_error_aborted_in_the_debugger(tmp_path, mode):
    s = Session(tmp_path, ["model:1"], mode=mode)
    s.go("abort")
    with pytest.raises(DebugAborted):
        s.finish()
    with TraceDB(s.db) as db:
        run = db.runs()[0]
    assert run.status == "error" and "aborted in the debugger" in (run.error or "")
    assert [p["outcome"] for h, ph, p in s.record() if ph == "debug"] == ["aborted"]


def test_run_to_the_end_pauses_no_more(tmp_path):
    s = Session(tmp_path, ["step"])
    s.go("run")
    s.finish()
    assert [ph for h, ph, p in s.record()].count("pause") == 1


def test_an_error_breakpoint_pauses_where_the_tool_raised_and_a_result_recovers(tmp_path):
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:  # noqa: ARG001
        """Weather for a city."""
        raise TimeoutError("the weather service timed out")

    s = Session(tmp_path, ["error"], tools=[get_weather])
    p = s.paused()
    assert (p["hook"], p["at"], p["pending"]["where"]) == ("wrap_tool_call", "error", "tool")
    assert "timed out" in p["pending"]["error"]
    s.go(edit={"kind": "tool_result", "text": "Rain"})
    assert s.finish()["messages"][-1].content == "The tool said: Rain"


def test_a_pause_nobody_answers_continues_after_the_timeout_and_says_so(tmp_path):
    s = Session(tmp_path, ["tool:get_weather"], timeout=0.2)
    out = s.finish()
    assert out["messages"][-1].content == "The tool said: Sunny in Oslo, 21 C"
    debug = [p for h, ph, p in s.record() if ph == "debug"]
    assert debug[0]["outcome"] == "timeout" and debug[0]["timeout_s"] == 0.2


def test_the_finding_breakpoint_stops_at_the_third_identical_tool_call(tmp_path):
    stuck = ScriptedChatModel(script=lambda msgs: AIMessage(
        "", tool_calls=[call("get_weather", {"city": "Oslo"},
                             f"c{sum(isinstance(m, AIMessage) for m in msgs) + 1}")]))
    s = Session(tmp_path, ["finding:repeated-tool-call"], llm=stuck)
    p = s.paused()
    # the model's reply that asks for it the third time, before that call runs
    assert (p["hook"], p["at"]) == ("wrap_model_call", "after")
    assert [c["id"] for c in p["pending"]["message"]["tool_calls"]] == ["c3"]
    s.go("abort")
    with pytest.raises(DebugAborted):
        s.finish()


def test_a_breakpoint_armed_from_outside_pauses_a_listening_agent(tmp_path):
    db = tmp_path / "dbg.db"
    channel.arm(db, "tool:get_weather", source="test")
    s = Session(tmp_path, True)
    assert s.go()["reason"] == "tool:get_weather"
    s.finish()
    assert channel.clear(db) == 1


def test_bad_input_is_one_line_and_changes_nothing(tmp_path):
    s = Session(tmp_path, ["tool:get_weather"])
    p = s.paused()
    for edit, said in [
        ('{"kind": "tool_args", "args": ', "not valid JSON"),
        ({"kind": "tool_args", "args": [1]}, "args: an object"),
        ({"kind": "drop", "position": 0}, "does not apply to a pending tool call"),
        ({"text": "x"}, "an object with a kind"),
    ]:
        with pytest.raises(InvalidOption, match=said):
            channel.answer(s.db, p["run"], "continue", edit)
    with pytest.raises(channel.NotPaused):
        channel.answer(s.db, "no-such-run", "continue") if False else None  # noqa: SIM108
        channel.answer(s.db, p["run"], "continue")
        channel.answer(s.db, p["run"], "continue")
    s.finish()
    for spec, said in [("hook:nowhere", "no hook 'nowhere'"), ("model:zero", "whole number"),
                       ("finding:no-such-rule", "no rule"), ("pause", "no kind")]:
        with pytest.raises(InvalidOption, match=said):
            channel.arm(s.db, spec)


def test_a_paused_async_run_holds_up_no_other_run_on_the_same_loop(tmp_path):
    import asyncio

    db = tmp_path / "dbg.db"
    paused_trace = TraceMiddleware(db=db, debug=Debugger(["tool:get_weather"]))
    free_trace = TraceMiddleware(db=db)
    paused = make_agent(model(), [get_weather], [paused_trace])
    free = make_agent(model(), [get_weather], [free_trace])
    order: list[str] = []

    async def both() -> None:
        async def first() -> None:
            await paused.ainvoke(QUESTION)
            order.append("paused run done")

        async def second() -> None:
            await free.ainvoke(QUESTION)
            order.append("other run done")
            # only now is the paused run let go
            p = await asyncio.to_thread(wait_paused, db)
            await asyncio.to_thread(channel.answer, db, p[0]["run"], "continue")

        with blockbuster_ctx():
            await asyncio.gather(first(), second())

    asyncio.run(both())
    assert order == ["other run done", "paused run done"]


def test_looptrace_debug_in_the_environment_arms_a_server_that_continues_after_10_minutes(
        capsys):
    from tracer.debug.session import from_env

    assert from_env({}) is None and from_env({"LOOPTRACE_DEBUG": "0"}) is None
    dbg = from_env({"LOOPTRACE_DEBUG": "1"})
    assert dbg is not None and dbg.timeout == 600.0 and dbg.breaks == []
    dbg = from_env({"LOOPTRACE_DEBUG": "model:2,tool:search", "LOOPTRACE_DEBUG_TIMEOUT": "none"})
    assert dbg is not None and dbg.timeout is None
    assert [b.spec for b in dbg.breaks] == ["model:2", "tool:search"]
    # a bad spec is one line on stderr and is not armed (never raised in the user's
    # TraceMiddleware(): issue 44 item 15)
    dbg = from_env({"LOOPTRACE_DEBUG": "hook:nope"})
    assert dbg is not None and dbg.breaks == []
    assert "no hook 'nope'" in capsys.readouterr().err


def test_a_database_the_debugger_cannot_write_is_one_line(tmp_path):
    from tracer.errors import LooptraceError

    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE t(x)")
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    for db, said in ((foreign, "not a looptrace one"), (folder, "cannot be opened")):
        with pytest.raises(LooptraceError, match=said) as err:
            channel.arm(db, "model")
        assert "\n" not in str(err.value)
    with sqlite3.connect(foreign) as c:  # and nothing was written to it
        assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["t"]


class Shout:
    """A wrap_model_call layer that rewrites the user's question in capitals."""

    @staticmethod
    def make() -> Any:
        from langchain.agents.middleware import AgentMiddleware

        class ShoutMiddleware(AgentMiddleware):
            def wrap_model_call(self, request, handler):  # noqa: ANN001, ANN201
                msgs = [m.model_copy(update={"content": str(m.content).upper()})
                        if m.type == "human" else m for m in request.messages]
                return handler(request.override(messages=msgs))

        return ShoutMiddleware()


def test_a_layer_breakpoint_pauses_inside_that_middleware_with_its_rewrite(tmp_path):
    db = tmp_path / "dbg.db"
    seen: list[str] = []

    def script(messages):
        seen.append(str(messages[0].content))
        return model().script(messages)

    trace = TraceMiddleware(db=db, debug=Debugger(["layer:ShoutMiddleware"]))
    agent = make_agent(ScriptedChatModel(script=script), [get_weather],
                       trace.around(Shout.make()))
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    assert (p["hook"], p["at"], p["reason"]) == ("wrap_model_call", "layer",
                                                 "layer:ShoutMiddleware")
    # what the layer passed down: its rewrite
    assert p["pending"]["messages"][0]["text"] == "WEATHER IN OSLO?"
    channel.answer(db, p["run"], "continue",
                   {"kind": "message", "position": 0, "text": "weather in Bergen?"})
    p = wait_paused(db, alive=bg.alive)[0]  # the second model call
    channel.answer(db, p["run"], "run")
    bg.result()
    trace.flush()
    assert seen[0] == "weather in Bergen?"  # the model got the debugger's edit
    assert seen[1] == "WEATHER IN OSLO?"  # the next call: the layer's own rewrite again


def test_a_debugged_run_reruns_to_its_record_and_diffs_at_the_edit(tmp_path):
    """``looptrace rerun`` of a debugged run reproduces it (the edited result comes from
    the record), and a diff against the same agent undebugged finds the first divergence
    at the edit."""
    from tracer.read.diff import diff_runs
    from tracer.whatif.rerun import rerun

    s = Session(tmp_path, ["tool:get_weather"])
    s.go(edit={"kind": "tool_result", "text": "Snowing, -5 C"})
    assert s.finish()["messages"][-1].content == "The tool said: Snowing, -5 C"
    with TraceDB(s.db) as db:
        debugged = db.runs()[0].id

    own = [TraceMiddleware(db=s.db)]

    def factory(middleware: list[Any] = own) -> Any:  # noqa: B006 - the agent's own list
        return make_agent(model(), [get_weather, get_price], list(middleware))

    again = rerun(debugged, agent=factory, db=s.db)
    plain = TraceMiddleware(db=s.db)
    make_agent(model(), [get_weather, get_price], [plain]).invoke(QUESTION)
    plain.flush()
    with TraceDB(s.db) as db:
        runs = {r.id: r for r in db.runs()}
        replayed = db.run(again.run_id)
        assert runs[again.run_id].status == "completed"
        final = [m for m in replayed.messages if m.type == "ai"][-1]
        assert final.text == "The tool said: Snowing, -5 C"  # the debugged run, reproduced
        undebugged = next(i for i in runs if i not in (debugged, again.run_id))
        d = diff_runs(db.run(undebugged), db.run(debugged))
    first = d.first_divergence
    assert first is not None and "Snowing" in str(first) + str(d.message_diff)
    assert first.lap == 1  # at the tool result the debugger gave, in lap 1


class _DropToolResults(AgentMiddleware):
    """A buggy middleware: drops every ToolMessage from the model's request."""

    def wrap_model_call(self, request, handler):
        return handler(request.override(messages=[
            m for m in request.messages if not isinstance(m, ToolMessage)]))

    async def awrap_model_call(self, request, handler):
        return await handler(request.override(messages=[
            m for m in request.messages if not isinstance(m, ToolMessage)]))


@pytest.mark.parametrize("mode", MODES)
def test_looptrace_debug_pauses_a_model_call_as_the_model_receives_it_past_the_users_tracer(
        tmp_path, mode):
    # (issue 44, item 2: the user's TraceMiddleware first, a middleware after it dropping
    # the ToolMessage; the pause showed the 4 messages the model never got)
    import types

    from langchain.agents import create_agent

    from tracer.record.autohook import _debug_every_agent

    factory = types.SimpleNamespace(create_agent=create_agent)
    _debug_every_agent(factory)  # (what looptrace debug's sitecustomize does)
    db = tmp_path / "inner.db"
    trace = TraceMiddleware(db=db, debug=Debugger(["model:2"]))
    agent = factory.create_agent(model(), tools=[get_weather],
                                 middleware=[trace, _DropToolResults()])
    if mode == "async":
        async def go() -> Any:
            with blockbuster_ctx():
                return await agent.ainvoke(QUESTION)
        bg = Background(go, is_async=True)
    else:
        bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    pend = p["pending"]
    assert [m["type"] for m in pend["messages"]] == ["human", "ai"]  # the ToolMessage dropped
    assert pend["seen_at"].startswith("innermost: the request as the model receives it")
    # an edit made there is what the model receives: the result put back by hand
    channel.answer(db, p["run"], "continue", {"kind": "insert", "position": 2, "role": "tool",
                                              "tool_call_id": "c1", "text": "Rain"})
    out = bg.result()
    trace.flush()
    assert out["messages"][-1].content == "The tool said: Rain"


def test_without_the_innermost_probe_the_pause_says_where_it_stands(tmp_path):
    db = tmp_path / "outer.db"
    trace = TraceMiddleware(db=db, debug=Debugger(["model:2"]))
    agent = make_agent(model(), [get_weather], [trace, _DropToolResults()])
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    assert [m["type"] for m in p["pending"]["messages"]] == ["human", "ai", "tool"]
    assert p["pending"]["seen_at"] == (
        "at TraceMiddleware: the middleware listed after it may still change it (looptrace "
        "debug, or trace.innermost() last in the list, pauses where the model receives it)")
    channel.answer(db, p["run"], "run")
    bg.result()
    trace.flush()


def test_a_dangling_tool_call_breakpoint_fires_on_the_request_the_model_receives(tmp_path):
    # (issue 44, item 2: the record holds the ToolMessage; the model does not get it)
    import types

    from langchain.agents import create_agent

    from tracer.record.autohook import _debug_every_agent

    factory = types.SimpleNamespace(create_agent=create_agent)
    _debug_every_agent(factory)
    db = tmp_path / "dangling.db"
    trace = TraceMiddleware(db=db, debug=Debugger(["finding:dangling-tool-call"]))
    agent = factory.create_agent(model(), tools=[get_weather],
                                 middleware=[trace, _DropToolResults()])
    bg = Background(lambda: agent.invoke(QUESTION))
    p = wait_paused(db, alive=bg.alive)[0]
    assert (p["hook"], p["at"], p["reason"]) == ("wrap_model_call", "before",
                                                 "finding:dangling-tool-call")
    assert [m["type"] for m in p["pending"]["messages"]] == ["human", "ai"]
    channel.answer(db, p["run"], "run")
    assert bg.result()["messages"][-1].content == "No tool answered."
    trace.flush()


def test_one_answer_carries_several_edits_made_in_order(tmp_path):
    # (issue 45, item 5: a list of edits; an inserted ToolMessage answers a tool call)
    s = Session(tmp_path, ["model:2"])
    p = s.paused()
    assert [m["type"] for m in p["pending"]["messages"]] == ["human", "ai", "tool"]
    s.go(edit=[{"kind": "drop", "position": 2},
               {"kind": "insert", "position": 2, "role": "tool", "tool_call_id": "c1",
                "text": "Hail"},
               {"kind": "system", "text": "Be brief."}])
    assert s.finish()["messages"][-1].content == "The tool said: Hail"
    debug = [p for h, ph, p in s.record() if ph == "debug"]
    assert [d["change"] for d in debug] == [
        "message 2 dropped from the request; a tool message inserted at 2; "
        "system prompt changed"]
    assert debug[0]["before"]["system"] is None and debug[0]["after"]["system"] == "Be brief."


def test_a_bad_edit_in_a_list_is_one_line_and_nothing_is_written(tmp_path):
    s = Session(tmp_path, ["model:2"])
    p = s.paused()
    with pytest.raises(InvalidOption, match=r"^position 9 is outside the request's messages "
                                            r"\(0\.\.2\)$"):
        channel.answer(s.db, p["run"], "continue", [{"kind": "system", "text": "x"},
                                                    {"kind": "drop", "position": 9}])
    assert channel.list_paused(s.db)[0]["run"] == p["run"]  # (still paused, unanswered)
    channel.answer(s.db, p["run"], "run")
    s.finish()


def _says_its_system_prompt(messages: Any) -> AIMessage:
    system = [str(m.content) for m in messages if m.type == "system"]
    return AIMessage(f"system: {system[0] if system else None}")


def test_an_edit_marked_from_now_on_is_made_at_every_later_model_call_and_recorded_there(
        tmp_path):
    # (issue 45, item 5: "from now on", and the record says where it applied)
    llm = ScriptedChatModel(script=turn_script([
        AIMessage("", id="ai-1", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        _says_its_system_prompt,
    ]))
    s = Session(tmp_path, ["model:1"], llm=llm)
    s.go(edit={"kind": "system", "text": "Be brief.", "from_now_on": True})
    assert s.finish()["messages"][-1].content == "system: Be brief."
    debug = [p for h, ph, p in s.record() if ph == "debug"]
    assert [(d["command"], d["change"]) for d in debug] == [
        ("continue", "system prompt changed (from now on)"),
        ("from now on", "system prompt changed (from now on)")]


def test_only_a_request_setting_may_be_made_from_now_on(tmp_path):
    s = Session(tmp_path, ["model:1"])
    p = s.paused()
    with pytest.raises(InvalidOption, match=r"^a drop edit is made once \(from now on: model, "
                                            r"settings, system, tools\)$"):
        channel.answer(s.db, p["run"], "continue",
                       {"kind": "drop", "position": 0, "from_now_on": True})
    channel.answer(s.db, p["run"], "run")
    s.finish()


def test_a_tool_result_dropped_in_the_debugger_is_a_finding_where_the_request_was_sent(
        tmp_path):
    """After a ``drop`` of the ToolMessage at model call 2, ``dangling-tool-call`` points
    at the event that shows the request sent without it, not at the model call's
    ``enter``, where the request still held the result (issue 47 untrue 4: "at step
    12", the enter; the drop was at 14, the request sent at 15)."""
    from tracer.checks.run import check_replay

    s = Session(tmp_path, ["model:2"], attach=True)
    s.go(edit={"kind": "drop", "position": 2})
    s.finish()
    with TraceDB(s.db) as db:
        run = db.run(db.runs()[0].id)
    rp = build_replay(run)
    dangling = [f for f in check_replay(rp) if f.rule == "dangling-tool-call"]
    enters = [e.seq for e in run.events if e.hook == "wrap_model_call" and e.phase == "enter"]
    debug = [e.seq for e in run.events if e.phase == "debug"]
    sent = [e.seq for e in run.events if e.phase == "sent"]
    assert len(enters) == 2 and len(debug) == 1 and len(sent) == 1
    assert enters[1] < debug[0] < sent[0]
    assert dangling and {f.seq for f in dangling} == {sent[0]}  # (one per provider)
