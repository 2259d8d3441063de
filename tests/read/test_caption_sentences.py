"""Each caption sentence kind of issue 39 item 10, on a run where it is true and on one
where it is not: the sentence is said from facts of *this* run's record.

Real agents (``create_agent``, a hand-rolled loop) driven by scripted models, recorded
into a store, and the bundled samples (``sample_store``), on each engine (``tests/conftest.py``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import chain
from langchain_core.tools import tool
from test_caption_facts import check_replay

from tracer import LeanTraceMiddleware, TraceCallbackHandler
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.demo.scenarios import AGENTS
from tracer.read.captions import captions
from tracer.read.graph_layout import shape, step_edges
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay
from tracer.replayer.data import replay_json
from tracer.whatif.rerun import Edit, rerun


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"Sunny in {city}"


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "call_1")]),
        AIMessage("It is sunny in Oslo."),
    ]))


def _replay(db: str, name: str | None = None) -> Replay:
    with TraceDB(db) as t:
        runs = [r for r in t.runs() if name is None or r.name == name]
        assert runs, name
        return build_replay(t.run(runs[0].id))


def _said(rp: Replay, hook: str, phase: str) -> list[str]:
    said = captions(rp)
    return [said[s.index] for s in rp.steps if (s.event.hook, s.event.phase) == (hook, phase)]


# -- a create_agent without middleware, recorded by the callback handler alone --------
def _plain_agent(db: str) -> Replay:
    handler = TraceCallbackHandler(db=db)
    agent = create_agent(_model(), tools=[get_weather])
    agent.invoke({"messages": [("user", "Weather in Oslo?")]}, config={"callbacks": [handler]})
    handler.close()
    return _replay(db)


def _hand_rolled(db: str) -> Replay:
    handler = TraceCallbackHandler(db=db)
    llm = _model()

    @chain
    def weather_loop(question: str) -> list[Any]:
        messages: list[Any] = [HumanMessage(question)]
        for _ in range(4):
            ai = llm.bind_tools([get_weather]).invoke(messages)
            messages.append(ai)
            if not ai.tool_calls:
                break
            for tc in ai.tool_calls:
                messages.append(ToolMessage(get_weather.invoke(tc["args"]),
                                            tool_call_id=tc["id"]))
        return messages

    weather_loop.invoke("Weather in Oslo?", config={"callbacks": [handler]})
    handler.close()
    return _replay(db)


def test_a_create_agent_without_middleware_is_an_agent_graph(store_db: str) -> None:
    rp = _plain_agent(store_db)
    assert not rp.used_hooks  # no middleware hook fired: only the callback handler saw it
    assert shape(rp) == "agent"
    first = captions(rp)[0]
    assert "the agent's graph is invoked" in first and "create_agent" in first
    assert not any("the loop's code" in c for c in captions(rp))
    # drawn through the graph's hook points: START, before_agent, before_model, model
    assert step_edges(rp, 1) == ["START>before_agent", "before_agent>before_model",
                                 "before_model>model"]
    assert step_edges(rp, len(rp.steps) - 1)[-1] == "after_agent>END"
    seen: dict[str, int] = {}
    assert check_replay(rp, seen) == []  # every statement, against the record
    assert seen.get(r"a create_agent graph with no middleware hook")


def test_a_hand_rolled_loop_is_still_a_loop(store_db: str) -> None:
    rp = _hand_rolled(store_db)
    assert shape(rp) == "loop"
    assert "the loop's code is called" in captions(rp)[0]
    assert not any("create_agent" in c for c in captions(rp))
    seen: dict[str, int] = {}
    assert check_replay(rp, seen) == []
    assert seen.get(r"the loop's code is called")


# -- a loop's tool result: in the conversation only with the next model call -----------
def test_a_loops_tool_exit_says_where_its_result_arrives(store_db: str) -> None:
    rp = _hand_rolled(store_db)
    said = captions(rp)
    (exit_,) = [s for s in rp.steps if (s.event.hook, s.event.phase) == ("tool", "exit")]
    tcid = exit_.event.tool_call_id
    assert "not in the conversation yet" in said[exit_.index]
    # the message pane at that step agrees: the call is pending there
    assert tcid in rp.pending_calls(exit_.index)
    later = int(said[exit_.index].split("at step ")[1].split(",")[0]) - 1
    assert tcid not in rp.pending_calls(later)
    assert rp.steps[later].event.hook == "model" and rp.steps[later].event.phase == "enter"


def test_an_agents_tool_exit_answers_the_call_at_once(store_db: str) -> None:
    rp = _plain_agent(store_db)
    said = captions(rp)
    (exit_,) = [s for s in rp.steps if (s.event.hook, s.event.phase) == ("tool", "exit")]
    assert "not in the conversation yet" not in said[exit_.index]
    assert "its ToolMessage answers the call" in said[exit_.index]
    assert exit_.event.tool_call_id not in rp.pending_calls(exit_.index)


# -- an agent with no after_agent hook: the conditional edge goes to END ----------------
def test_the_exit_edge_goes_to_end_without_an_after_agent_hook(store_db: str) -> None:
    db = store_db
    trace = LeanTraceMiddleware(db=db)
    agent = create_agent(_model(), tools=[get_weather],
                         middleware=[trace, ModelCallLimitMiddleware(run_limit=5)])
    agent.invoke({"messages": [("user", "Weather in Oslo?")]},
                 config={"callbacks": [trace.callback_handler()]})
    trace.flush()
    trace.close()
    rp = _replay(db)
    assert not any(s.event.hook == "after_agent" for s in rp.steps)
    after = _said(rp, "after_model", "fire")
    assert after[-1].endswith("Next, the conditional edge goes to END (this agent has no "
                              "after_agent hook).")
    assert not any("goes to after_agent" in c for c in captions(rp))
    assert check_replay(rp, {}) == []


def test_the_exit_edge_goes_to_after_agent_with_one(sample_store: str) -> None:
    rp = _replay(sample_store, "weather")
    assert any(s.event.hook == "after_agent" for s in rp.steps)
    assert _said(rp, "after_model", "fire")[-1].endswith(
        "Next, the conditional edge goes to after_agent.")


# -- the conditional edge: after the lap's last after_model firing, not after each -------
def test_the_edge_is_said_at_the_laps_last_after_model_only(sample_store: str) -> None:
    rp = _replay(sample_store, "support-desk")  # (middleware-stack: two after_model hooks)
    said = captions(rp)
    firings = [s for s in rp.steps if (s.event.hook, s.event.phase) == ("after_model", "fire")]
    laps = sorted({s.event.lap for s in firings})
    assert len(firings) == 2 * len(laps)  # PIIMiddleware's, then TraceMiddleware's, each lap
    for lap in laps:
        first, last = [s for s in firings if s.event.lap == lap]
        assert first.event.middleware == "PIIMiddleware[email]", lap
        assert "conditional edge goes to" not in said[first.index], lap
        assert "Next, TraceMiddleware.after_model runs" in said[first.index], lap
        assert "Next, the conditional edge goes to" in said[last.index], lap
        assert ".after_model runs" not in said[last.index], lap
        assert rp.steps[last.index + 1].event.hook in ("wrap_tool_call", "after_agent")


def test_one_after_model_a_lap_goes_straight_to_the_edge(sample_store: str) -> None:
    rp = _replay(sample_store, "shopping")
    firings = _said(rp, "after_model", "fire")
    assert len(firings) == len({s.event.lap for s in rp.steps if s.event.hook == "after_model"})
    assert all("Next, the conditional edge goes to" in c for c in firings)
    assert not any(".after_model runs" in c for c in captions(rp))


# -- what a reply's tool calls became ----------------------------------------------------
def test_a_reply_paused_for_a_human_says_which_call_ran(sample_store: str) -> None:
    rp = _replay(sample_store, "approvals")
    first = _said(rp, "wrap_model_call", "exit")[0]
    assert "in parallel" not in first
    ran = [s.event.tool_call_id for s in rp.steps
           if (s.event.hook, s.event.phase) == ("wrap_tool_call", "enter")]
    assert ran == ["call_email"]  # the record: one of the two ran, after the resume
    assert ("Before any tool runs, the run pauses for a human (an interrupt at after_model); "
            "after the resume, only 1 of the 2 ran (send_email): the other was answered "
            "without running.") in first


def test_a_reply_whose_calls_all_ran_says_they_run_in_parallel(sample_store: str) -> None:
    rp = _replay(sample_store, "shopping")
    first = _said(rp, "wrap_model_call", "exit")[0]
    assert first.endswith("routes to tools, which run them in parallel.")
    assert "pauses" not in first


# -- a Command's update: a subagent's result only where a subagent ran ------------------
def test_the_subagent_sentence_where_a_subagent_ran(sample_store: str) -> None:
    rp = _replay(sample_store, "deep-research")
    said = [c for c in _said(rp, "wrap_tool_call", "exit") if "Command" in c]
    assert said and all("the subagent that ran inside this call" in c for c in said)
    assert rp.run.children and rp.run.children[0].parent_tool_call_id


def test_no_subagent_sentence_where_none_ran(sample_store: str) -> None:
    rp = _replay(sample_store, "release-notes")
    assert not rp.run.children
    said = [c for c in _said(rp, "wrap_tool_call", "exit") if "Command" in c]
    assert said and not any("subagent" in c for c in said)


# -- _ParentNotifierMiddleware: a parent to tell only in a run that has one -------------
def _notifier(rp: Replay) -> str:
    said = captions(rp)
    (c,) = [said[s.index] for s in rp.steps if s.event.hook == "after_agent"
            and s.event.middleware == "_ParentNotifierMiddleware"]
    return c


def test_the_parent_notifier_on_a_top_level_run_tells_nobody(sample_store: str) -> None:
    rp = _replay(sample_store, "deep-research")
    assert rp.run.summary.parent_id is None
    c = _notifier(rp)
    assert "No parent run is recorded for this run" in c
    assert "tells the parent agent" not in c


def test_the_parent_notifier_in_a_run_with_a_parent(sample_store: str) -> None:
    """The same record, read as a run that another run started (the samples' subagent,
    ``researcher``, has no _ParentNotifierMiddleware: Deep Agents gives it none)."""
    run = _replay(sample_store, "deep-research").run
    child = replace(run, summary=replace(run.summary, parent_id="the-parent-run"))
    c = _notifier(build_replay(child))
    assert "No parent run is recorded" not in c
    assert "tells the agent that started this run in the background" in c


# -- "Lap N begins": once a lap, at its first before_model -------------------------------
@pytest.mark.parametrize("name", ["support-desk", "stuck-search"])
def test_lap_begins_once_a_lap(sample_store: str, name: str) -> None:
    rp = _replay(sample_store, name)
    said = captions(rp)
    firings = [s for s in rp.steps if s.event.hook == "before_model"]
    laps = {s.event.lap for s in firings}
    assert len(firings) > len(laps)  # more than one before_model a lap: the true-and-false run
    begins = [s.event.lap for s in firings if f"Lap {s.event.lap} begins" in said[s.index]]
    assert sorted(begins) == sorted(laps)


# -- a fork's --message edit: the fork's, at its step, and the edited message from there -
def _forked(db: str, edit: Edit | None = None) -> tuple[Replay, Replay]:
    demo = AGENTS["weather"](str(db))
    demo.record()
    original = _replay(db)
    at = [s.index + 1 for s in original.steps
          if (s.event.hook, s.event.phase) == ("wrap_model_call", "enter")][1]
    res = rerun(original.run.id, agent=demo.factory, db=db, at=at,
                     edit=edit or Edit("message", position=0, text="And in Bergen?"))
    with TraceDB(db) as t:
        return original, build_replay(t.run(res.run_id))


def test_a_forks_message_edit_is_the_forks(store_db: str) -> None:
    original, fork = _forked(store_db)
    f = fork.fork_edit
    assert f is not None and f.written is not None
    said = captions(fork)
    assert "This is where the fork made its edit" in said[f.index]
    assert "“And in Bergen?”" in said[f.index]
    written = next(s.index for s in fork.steps if s.event.seq == f.written)
    assert said[written].startswith(f"The fork's edit, made at step {f.index + 1}")
    assert not any("Deep Agents' summarisation" in c for c in said)
    # the edited message shows from the fork's step on, each step saying whose it is
    for i in range(f.index, len(fork.steps)):
        (first,) = [m for m in fork.messages_at(i) if m.type == "human"]
        assert first.text == "And in Bergen?", i
        assert "the fork's edit" in str(fork.version_note(first)), i
    before = [m for m in fork.messages_at(f.index - 1) if m.type == "human"]
    assert [m.text for m in before] == ["What's the weather in Oslo?"]
    seen: dict[str, int] = {}
    assert check_replay(fork, seen) == []
    assert seen.get(r"This is where the fork made its edit")
    assert seen.get(r"The fork's edit, made at step (\d+)")
    # the run it forks: no edit, no fork sentence, its own message throughout
    assert original.fork_edit is None
    assert not any("fork" in c for c in captions(original))
    assert all(m.text == "What's the weather in Oslo?" for i in range(len(original.steps))
               for m in original.messages_at(i) if m.type == "human")


def test_a_forks_drop_edit_is_the_forks(store_db: str) -> None:
    _, fork = _forked(store_db, Edit("drop", position=2))
    f = fork.fork_edit
    assert f is not None and f.written is not None
    said = captions(fork)
    assert "the message at position 2 of the request dropped" in said[f.index]
    written = next(s.index for s in fork.steps if s.event.seq == f.written)
    assert "The fork's edit" in said[written] and "outside TraceMiddleware" not in said[written]
    assert check_replay(fork, {}) == []


# -- a fork's --drop and --insert edits: the edited conversation from the fork's step on -
def _keys(msgs: list[Any]) -> list[str]:
    return [m.key for m in msgs]


def _replayer_keys(rp: Replay) -> list[list[str]]:
    """The message keys each step of the replayer's JSON shows (its ``mv`` edits applied
    forward, as replayer.js's messagesAt does)."""
    data = replay_json(rp, payloads=False)
    out: list[list[str]] = []
    view: list[int] = []
    for st in data["steps"]:
        op = st.get("mv")
        if op:
            view = list(op["f"]) if "f" in op else view[:op["b"]]
            for at, x in ([] if "f" in op else op.get("x", [])):
                view[at] = x
            view += [] if "f" in op else list(op.get("a", []))
        out.append([data["messages"][r]["key"] for r in view])
    return out


@pytest.mark.parametrize("edit", [Edit("drop", position=2),
                                  Edit("insert", position=1, text="Also in Bergen?")],
                         ids=["drop", "insert"])
def test_a_forks_drop_or_insert_shows_from_its_step_on(store_db: str, edit: Edit) -> None:
    original, fork = _forked(store_db, edit)
    f = fork.fork_edit
    assert f is not None and f.written is not None
    written = next(s.index for s in fork.steps if s.event.seq == f.written)
    assert written > f.index + 1  # steps between the call and the write: the true-and-false
    before = _keys(fork.messages_at(f.index - 1))
    assert before == _keys(original.messages_at(f.index - 1))  # (from the record)
    if edit.kind == "drop":
        edited = before[:2] + before[3:]
        assert len(before) == 3 and before[2] != edited[-1]
    else:
        (added,) = [m.key for m in fork.messages_at(len(fork.steps) - 1)
                    if m.key not in before and m.type == "human"]
        edited = [*before[:1], added, *before[1:]]
    replayer = _replayer_keys(fork)
    for i in range(f.index, len(fork.steps)):
        shown = fork.messages_at(i)
        later = [m.key for m in fork.run.messages
                 if f.seq < m.seq <= fork.steps[i].event.seq and m.key not in edited]
        assert _keys(shown) == edited + later, i  # (the model's reply after the edit)
        assert replayer[i] == _keys(shown), i
        if edit.kind == "insert":
            (new,) = [m for m in shown if m.key == added]
            assert new.type == "human" and new.text == "Also in Bergen?", i
            note = str(fork.version_note(new))
            assert "the fork's edit" in note, i
            assert i == f.index or f"the fork's edit at step {f.index + 1}" in note, i
            assert "“Also in Bergen?” inserted at position 1" in note, i
    assert replayer[f.index - 1] == before
    # the run it forks shows its own conversation at the same steps
    assert _keys(original.messages_at(f.index + 1))[:len(before)] == before
    assert check_replay(fork, {}) == []
