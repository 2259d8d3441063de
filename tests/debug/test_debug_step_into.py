"""Stepping into a Deep Agents subagent (``s`` at its ``task`` call) and out of it
(``out``), and out of a plain graph's subgraph: real agents driven by scripted models,
sync and async (blockbuster on), the parent's tracer alone (attached) or the
subagent's own, parallel task calls; the record shows each pause in its own run."""

from __future__ import annotations

import io
import time
from typing import TypedDict

import pytest
from debug_kit import Background, wait_paused
from langgraph.graph import END, START, StateGraph
from subagent_kit import Deep

from tracer import TraceMiddleware
from tracer.cli.debug import Prompt
from tracer.debug import Debugger, channel
from tracer.errors import UsageError
from tracer.read.loader import TraceDB

MODES = ["sync", "async"]


@pytest.mark.parametrize("mode", MODES)
def test_step_at_a_task_call_pauses_at_the_subagents_first_hook_and_out_comes_back_after_it(
        tmp_path, mode):
    d = Deep(tmp_path, mode=mode)
    top = d.next()[0]
    assert (top["hook"], top["at"], top["pending"]["tool_call"]["id"]) == (
        "wrap_tool_call", "before", "c_no")
    d.answer(top, "step")
    into = d.next()[0]
    # in the subagent's run, named as such: its name, its parent run, the call
    assert into["run"] != top["run"]
    assert (into["run_name"], into["parent_run"]) == ("researcher", top["run"])
    assert into["reason"] == f"step into researcher (from run {top['run'][:12]}'s task call c_no)"
    assert into["pending"]["into"] == {"subagent": "researcher", "parent_run": top["run"],
                                       "tool": "task", "tool_call": "c_no"}
    # its first hook: the first node of its graph (only the parent's tracer records it)
    assert (into["hook"], into["at"]) == ("node", "before")
    assert into["pending"]["node"] == "PatchToolCallsMiddleware.before_agent"
    assert into["pending"]["out"]["to"] == f"back in run {top['run'][:12]} after its task call c_no"
    d.answer(into, "step")
    on = d.next()[0]  # stepping on in the subagent: its next node
    assert (on["run"], on["reason"], on["pending"]["node"]) == (into["run"], "step", "model")
    d.answer(on, "out")
    back = d.next()[0]
    assert (back["run"], back["hook"], back["at"]) == (top["run"], "wrap_tool_call", "after")
    assert back["reason"] == "step out of researcher"
    assert back["pending"]["kind"] == "tool_result"  # the call's result, as tool:task:after
    assert back["pending"]["message"]["tool_call_id"] == "c_no"
    assert back["pending"]["message"]["text"] == "Found: Norway: the capital is Oslo."
    d.answer(back, "continue")
    out = d.finish()
    assert out["messages"][-1].content == "Researcher says: Found: Norway: the capital is Oslo."
    assert d.pauses() == {
        "coordinator": [("wrap_tool_call", "before", "tool:task"),
                        ("wrap_tool_call", "after", "step out of researcher")],
        "researcher": [("node", "before", into["reason"]), ("node", "before", "step")]}


@pytest.mark.parametrize("mode", MODES)
def test_a_subagent_with_its_own_tracer_is_stepped_into_at_its_before_agent(tmp_path, mode):
    # (the parent not attached: the subagent's run is a run of its own, not nested in
    # the record; the step into still names its parent and the call, and out goes back)
    d = Deep(tmp_path, mode=mode, sub="own")
    top = d.next()[0]
    d.answer(top, "step")
    into = d.next()[0]
    assert (into["run_name"], into["hook"], into["at"]) == ("researcher", "before_agent", "fire")
    assert into["parent_run"] is None
    assert into["pending"]["into"]["parent_run"] == top["run"]
    d.answer(into, "step")
    on = d.next()[0]  # its own tracer's next hook (its nodes are not its steps)
    assert (on["run"], on["hook"], on["reason"]) == (into["run"], "before_model", "step")
    d.answer(on, "out")
    back = d.next()[0]
    assert (back["run"], back["hook"], back["at"], back["reason"]) == (
        top["run"], "wrap_tool_call", "after", "step out of researcher")
    d.answer(back, "continue")
    d.finish()


def test_stepping_past_the_subagents_end_pauses_back_in_the_parent_after_the_call(tmp_path):
    d = Deep(tmp_path, sub="own")
    top = d.next()[0]
    d.answer(top, "step")
    p = d.next()[0]
    hooks = []
    while p["run"] != top["run"]:  # step through the whole subagent
        hooks.append((p["hook"], p["at"]))
        d.answer(p, "step")
        p = d.next()[0]
    assert hooks[0] == ("before_agent", "fire") and hooks[-1] == ("after_agent", "fire")
    assert ("wrap_tool_call", "before") in hooks  # its lookup_fact call, stepped over
    assert (p["hook"], p["at"], p["reason"]) == (
        "wrap_tool_call", "after", "step (back from researcher)")
    d.answer(p, "run")
    d.finish()


@pytest.mark.parametrize("mode", MODES)
def test_of_parallel_task_calls_one_is_stepped_into_and_the_other_runs(tmp_path, mode):
    d = Deep(tmp_path, mode=mode, parallel=True)
    both = d.next(2)
    by_call = {p["pending"]["tool_call"]["id"]: p for p in both}
    d.answer(by_call["c_se"], "step")
    d.answer(by_call["c_no"], "continue")
    into = d.next()[0]
    assert into["run_name"] == "researcher"
    assert into["pending"]["into"]["tool_call"] == "c_se"
    assert "Sweden" in str(into["pending"]["state"]["messages"])
    d.answer(into, "out")
    back = d.next()[0]
    assert (back["hook"], back["at"], back["reason"]) == (
        "wrap_tool_call", "after", "step out of researcher")
    assert back["pending"]["message"]["text"] == "Found: Sweden: the capital is Stockholm."
    d.answer(back, "continue")
    out = d.finish()
    assert "Oslo" in out["messages"][-1].content and "Stockholm" in out["messages"][-1].content
    pauses = d.pauses()
    # one step into (the Sweden call's researcher); the Norway call's ran with no pause
    assert [r for _h, _a, r in pauses["researcher"]] == [into["reason"]]
    with TraceDB(d.db) as tdb:
        subs = [r for r in tdb.runs() if r.name == "researcher"]
    assert len(subs) == 2 and {r.parent_id for r in subs} == {both[0]["run"]}


def test_a_call_that_runs_no_recorded_subagent_is_stepped_over(tmp_path):
    # (nothing records the subagent: the parent's tracer is not attached, the subagent
    # has none; the step pauses after the call, as a step always did)
    d = Deep(tmp_path, sub="none")
    top = d.next()[0]
    d.answer(top, "step")
    p = d.next()[0]
    assert (p["run"], p["hook"], p["at"], p["reason"]) == (
        top["run"], "wrap_tool_call", "after", "step")
    assert "into" not in p["pending"]
    d.answer(p, "run")
    d.finish()


def test_out_with_nothing_to_step_out_of_is_one_line_and_the_run_stays_paused(tmp_path):
    d = Deep(tmp_path)
    top = d.next()[0]
    assert "out" not in top["pending"]
    with pytest.raises(UsageError, match=r"nothing to step out of \(run .* is no subagent"):
        d.answer(top, "out")
    assert [p["pause"] for p in channel.list_paused(d.db)] == [top["pause"]]
    d.answer(top, "run")
    d.finish()


def test_at_the_prompt_s_steps_in_o_steps_out_and_the_pause_names_the_subagent(tmp_path):
    d = Deep(tmp_path)
    top = d.next()[0]
    said = io.StringIO()
    Prompt(str(d.db), io.StringIO("o\ns\n"), said).handle(top)
    lines = said.getvalue().splitlines()
    assert any("nothing to step out of" in ln for ln in lines)  # (one line, still paused)
    into = d.next()[0]
    said = io.StringIO()
    Prompt(str(d.db), io.StringIO("out\n"), said).handle(into)
    shown = said.getvalue()
    assert (f"paused researcher {into['run'][:12]} (a subagent of {top['run'][:12]})" in shown)
    assert (f"  stepped into subagent researcher, from run {top['run'][:12]}'s task call c_no"
            in shown)
    assert (f"  o (out): run researcher to its end, then pause back in run {top['run'][:12]} "
            "after its task call c_no") in shown
    back = d.next()[0]
    assert (back["run"], back["reason"]) == (top["run"], "step out of researcher")
    Prompt(str(d.db), io.StringIO("c\n"), io.StringIO()).handle(back)
    d.finish()


def test_step_mode_in_a_deep_agent_pauses_at_its_hooks_not_also_at_its_nodes(tmp_path):
    # (a Deep Agents graph is create_agent's under ls_integration "deepagents": its
    # nodes were taken for a plain graph's, and step paused before each as well)
    d = Deep(tmp_path, sub="none", breaks=("step",))
    hooks = []
    for _ in range(4):
        p = d.next()[0]
        hooks.append((p["hook"], p["at"]))
        d.answer(p, "step")
    assert hooks == [("before_agent", "fire"), ("before_model", "fire"),
                     ("wrap_model_call", "before"), ("wrap_model_call", "after")]
    p = d.next()[0]
    d.answer(p, "run")
    d.finish()


def test_out_of_a_subagent_whose_parent_has_no_debugger_pauses_after_the_parents_tools_node(
        tmp_path):
    d = Deep(tmp_path, sub="own+attach", breaks=(), sub_breaks=("tool:lookup_fact",))
    p = d.next()[0]
    assert (p["run_name"], p["hook"]) == ("researcher", "wrap_tool_call")
    parent = p["parent_run"]
    assert p["pending"]["out"]["to"] == f"back in run {parent[:12]} after its call c_no"
    d.answer(p, "out")
    back = d.next()[0]
    # (the parent's own hooks ask no debugger: its graph node that made the call does)
    assert (back["run"], back["hook"], back["at"], back["reason"]) == (
        parent, "node", "after", "step out of researcher")
    assert back["pending"]["node"] == "tools"
    assert "Found: Norway" in str(back["pending"]["state"])
    d.answer(back, "continue")
    d.finish()


class Count(TypedDict):
    x: int


def test_out_at_a_node_of_a_subgraph_pauses_after_the_parent_graphs_node(tmp_path):
    db = tmp_path / "graph.db"
    sub = StateGraph(Count)
    sub.add_node("inner", lambda s: {"x": s["x"] + 1})
    sub.add_node("inner2", lambda s: {"x": s["x"] + 10})
    sub.add_edge(START, "inner")
    sub.add_edge("inner", "inner2")
    sub.add_edge("inner2", END)
    g = StateGraph(Count)
    g.add_node("outer", sub.compile())
    g.add_node("last", lambda s: {"x": s["x"] * 2})
    g.add_edge(START, "outer")
    g.add_edge("outer", "last")
    g.add_edge("last", END)
    trace = TraceMiddleware(db=db, debug=Debugger(["node:inner"]))
    graph = trace.attach(g.compile())
    bg = Background(lambda: graph.invoke({"x": 1}))
    p = wait_paused(db, alive=bg.alive)[0]
    assert p["pending"]["out"]["to"] == "after the parent graph's node outer"
    channel.answer(db, p["run"], "out")
    while True:
        q = wait_paused(db, alive=bg.alive)[0]
        if q["pause"] != p["pause"]:
            break
        time.sleep(0.02)
    # inner2 ran with no pause; the pause is after the subgraph's node, with its update
    assert (q["hook"], q["at"], q["reason"]) == ("node", "after", "step out of outer's subgraph")
    assert (q["pending"]["node"], q["pending"]["state"]) == ("outer", {"x": 12})
    channel.answer(db, q["run"], "continue")
    assert bg.result() == {"x": 24}
    trace.flush()
