"""The floor plan: the six hooks against the run's real middleware stack.

Each fact on a recorded run (real ``create_agent`` / Deep Agents agents, scripted
models, a temporary SQLite file): the stack ``TraceMiddleware.attach`` records,
the execution order of each hook, what every cell says at a step, what the
events alone can and cannot tell, the graph's labels in the app and in the HTML
export, and the pane in the app.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

# (imported whole before any test: Deep Agents' lazy Anthropic check reads
# sys.modules while an app test's background thread may be importing it)
import langchain_anthropic.chat_models  # noqa: F401
import pytest
from app_kit import app_test, replayer, report_step
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from streamlit.testing.v1 import AppTest
from tracer_kit import Spy, get_weather, two_lap_model

from tracer import TraceCallbackHandler, TraceMiddleware
from tracer.demo.models import ScriptedChatModel
from tracer.demo.scenarios import deep_agent
from tracer.interop.html_export import render_html, replay_data
from tracer.read.floorplan import ACTIVE, FIRED, LATER, NOW, UNSEEN, Row, floor_plan, run_stack
from tracer.read.graph_layout import middleware_labels
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay


def replays(db: Path) -> dict[str, Replay]:
    with TraceDB(db) as t:
        return {r.name or r.id: build_replay(t.run(r.id)) for r in t.runs()}


def row(rows: list[Row], hook: str) -> Row:
    return next(r for r in rows if r.hook == hook)


def names(r: Row) -> list[str]:
    return [c.middleware for c in r.cells]


def states(r: Row) -> dict[str, str]:
    return {c.middleware: c.state for c in r.cells}


def spied_run(db: Path, *, attach: bool = True) -> tuple[Replay, list[Any]]:
    """``middleware=[trace, A, B]`` with A and B on all six hooks, two laps."""
    log: list[Any] = []
    tm = TraceMiddleware(db=db, run_name="spied")
    agent = create_agent(two_lap_model(), tools=[get_weather],
                         middleware=[tm, Spy("A", log), Spy("B", log)])
    (tm.attach(agent) if attach else agent).invoke({"messages": [HumanMessage("weather?")]})
    tm.flush()
    return replays(db)["spied"], log


def step_of(rp: Replay, middleware: str, hook: str, nth: int = 0) -> int:
    return [s.index for s in rp.steps
            if s.event.middleware == middleware and s.event.hook == hook][nth]


# -- the stack -------------------------------------------------------------------------
def test_attach_records_the_deep_agent_stack_once_at_the_start(store_db: str) -> None:
    """Deep Agents' own stack, in list order, with the user's TraceMiddleware in it
    (read from the compiled graph by ``trace.attach``)."""
    db = store_db
    deep_agent(str(db))
    rp = replays(db)["deep-research"]
    starts = [e for e in rp.run.events if e.hook == "run" and e.phase == "start"]
    assert [bool(e.payload.get("stack")) for e in starts] == [True]
    assert run_stack(rp).recorded
    assert [e.name for e in run_stack(rp).entries] == [
        "FilesystemMiddleware", "SubAgentMiddleware", "_ParentNotifierMiddleware",
        "SummarizationMiddleware", "PatchToolCallsMiddleware", "TraceMiddleware",
        "AnthropicPromptCachingMiddleware", "UnsupportedContentMiddleware"]
    summ = next(e for e in run_stack(rp).entries if e.name == "SummarizationMiddleware")
    assert (summ.cls, summ.hooks) == ("_DeepAgentsSummarizationMiddleware", ("wrap_model_call",))
    # the subagent's run records no stack (its graph is built inside the task tool)
    sub = replays(db)["researcher"]
    assert not run_stack(sub).recorded
    assert [e.name for e in run_stack(sub).entries] == ["PatchToolCallsMiddleware"]


def test_summarisation_sits_on_another_hook_in_langchain_and_deep_agents(
        store_db: str) -> None:
    from langchain.agents.middleware import SummarizationMiddleware

    db = store_db
    deep_agent(str(db))
    tm = TraceMiddleware(db=db, run_name="lc")
    summariser = ScriptedChatModel(script=lambda ms: AIMessage("summary"))
    agent = create_agent(two_lap_model(), tools=[get_weather], middleware=[
        tm, SummarizationMiddleware(summariser, trigger=("messages", 50))])
    tm.attach(agent).invoke({"messages": [HumanMessage("weather?")]})
    tm.flush()
    got = replays(db)
    da = floor_plan(got["deep-research"], 0)
    lc = floor_plan(got["lc"], 0)
    assert "SummarizationMiddleware" in names(row(da, "wrap_model_call"))
    assert "SummarizationMiddleware" not in names(row(da, "before_model"))
    assert "SummarizationMiddleware" in names(row(lc, "before_model"))
    assert "SummarizationMiddleware" not in names(row(lc, "wrap_model_call"))
    da_cell = next(c for c in row(da, "wrap_model_call").cells
                   if c.middleware == "SummarizationMiddleware")
    lc_cell = next(c for c in row(lc, "before_model").cells
                   if c.middleware == "SummarizationMiddleware")
    assert "85% of the model's context window" in da_cell.role
    assert "replaces the older messages in the state by one summary" in lc_cell.role


# -- execution order -------------------------------------------------------------------
def test_rows_are_in_execution_order_as_the_events_show(store_db: str) -> None:
    """before_* in list order, after_* in reverse, wraps outermost first: the same order
    the hooks really fired in (the Spies' own log)."""
    rp, log = spied_run(store_db)
    rows = floor_plan(rp, len(rp) - 1)
    stack = ["TraceMiddleware", "A", "B"]
    assert names(row(rows, "before_agent")) == stack
    assert names(row(rows, "before_model")) == stack
    assert names(row(rows, "wrap_model_call")) == stack
    assert names(row(rows, "wrap_tool_call")) == stack
    assert names(row(rows, "after_model")) == stack[::-1]
    assert names(row(rows, "after_agent")) == stack[::-1]
    assert [(r.hook, r.order) for r in rows] == [
        ("before_agent", "list order"), ("before_model", "list order"),
        ("wrap_model_call", "outermost first"), ("after_model", "reverse list order"),
        ("wrap_tool_call", "outermost first"), ("after_agent", "reverse list order")]
    # the Spies fired in that order (A before B on the way in, B before A on the way out)
    fired = [(n, h) for n, h, p in log if p in ("fire", "enter")]
    assert fired.index(("A", "before_model")) < fired.index(("B", "before_model"))
    assert fired.index(("B", "after_model")) < fired.index(("A", "after_model"))
    assert fired.index(("A", "wrap_model_call")) < fired.index(("B", "wrap_model_call"))
    # and the recorded node-hook events agree with the rows
    for hook in ("before_model", "after_model"):
        seen = [s.event.middleware for s in rp.steps if s.event.hook == hook and s.event.lap == 1]
        assert seen == names(row(rows, hook)), hook
    # positions are places in the middleware list
    assert [c.position for c in row(rows, "after_agent").cells] == [3, 2, 1]


def test_cells_say_who_fires_at_this_step(store_db: str) -> None:
    rp, _ = spied_run(store_db)
    at = step_of(rp, "A", "before_model")  # lap 1: trace fired, A fires now, B next
    rows = floor_plan(rp, at)
    assert row(rows, "before_model").active
    assert states(row(rows, "before_model")) == {"TraceMiddleware": FIRED, "A": NOW,
                                                 "B": LATER}
    assert states(row(rows, "after_agent")) == {"B": LATER, "A": LATER,
                                                "TraceMiddleware": LATER}
    cell = next(c for c in row(rows, "before_model").cells if c.middleware == "A")
    assert cell.did == "returned nothing: no change" and not cell.known
    assert cell.role.startswith("runs before every model call")  # the generic role
    # at the end every node hook fired, before_model once per lap
    end = floor_plan(rp, len(rp) - 1)
    assert {c.middleware: c.fired for c in row(end, "before_model").cells} == {
        "TraceMiddleware": 2, "A": 2, "B": 2}
    assert all(c.state == FIRED for r in end for c in r.cells)


def test_wrap_layers_are_active_during_a_call(store_db: str) -> None:
    rp, _ = spied_run(store_db)
    enter = next(s.index for s in rp.steps if s.event.hook == "wrap_model_call")
    rows = floor_plan(rp, enter)
    wrap = row(rows, "wrap_model_call")
    assert wrap.active
    assert states(wrap) == {"TraceMiddleware": NOW, "A": ACTIVE, "B": ACTIVE}
    a = next(c for c in wrap.cells if c.middleware == "A")
    assert "trace.around" in a.note  # a wrap hook is no graph node: not recorded here
    assert states(row(rows, "wrap_tool_call")) == dict.fromkeys(["TraceMiddleware", "A", "B"],
                                                                LATER)
    after = floor_plan(rp, step_of(rp, "TraceMiddleware", "after_model"))
    assert {c.middleware: (c.state, c.fired) for c in row(after, "wrap_model_call").cells} == {
        "TraceMiddleware": (FIRED, 1), "A": (FIRED, 1), "B": (FIRED, 1)}


def test_without_attach_a_middleware_that_never_showed_is_unknown(store_db: str) -> None:
    """No recorded stack: only what the events show. The middleware alone records its
    own hooks, so A and B (node hooks only seen by the callback handler) are unknown."""
    rp, _ = spied_run(store_db, attach=False)
    assert not run_stack(rp).recorded
    assert [e.name for e in run_stack(rp).entries] == ["TraceMiddleware"]


def test_callbacks_alone_show_other_node_hooks_in_order(store_db: str) -> None:
    """The callback handler sees every middleware's node hooks: the order is inferred
    from the firings (wrap hooks are not graph nodes: they are not known)."""
    db = store_db
    log: list[Any] = []
    handler = TraceCallbackHandler(db=db)
    agent = create_agent(two_lap_model(), tools=[get_weather],
                         middleware=[Spy("A", log), Spy("B", log)])
    agent.invoke({"messages": [HumanMessage("weather?")]}, config={"callbacks": [handler]})
    handler.close()
    [rp] = replays(db).values()
    assert not run_stack(rp).recorded and run_stack(rp).callbacks
    rows = floor_plan(rp, len(rp) - 1)
    assert names(row(rows, "before_model")) == ["A", "B"]
    assert names(row(rows, "after_model")) == ["B", "A"]
    assert names(row(rows, "wrap_model_call")) == []


def test_middleware_alone_cannot_see_other_node_hooks(store_db: str) -> None:
    """A recorded stack but no callback events for the others: their node hooks are
    'not recorded', with the way to record them."""
    from langchain.agents.middleware import ModelCallLimitMiddleware

    from tracer.record.agent_stack import agent_stack

    db = store_db
    tm = TraceMiddleware(db=db, run_name="lean")
    limit = ModelCallLimitMiddleware(run_limit=5)
    agent = create_agent(two_lap_model(), tools=[get_weather], middleware=[tm, limit])
    assert [e["name"] for e in agent_stack(agent)] == ["TraceMiddleware",
                                                      "ModelCallLimitMiddleware"]
    agent.invoke({"messages": [HumanMessage("weather?")]})  # no callback handler
    tm.flush()
    rp = replays(db)["lean"]
    # (inferred: the limit middleware never showed up)
    assert [e.name for e in run_stack(rp).entries] == ["TraceMiddleware"]


def test_layers_of_trace_around_say_what_each_did(sample_store: str) -> None:
    """The middleware-stack sample (``trace.around``): each layer's cell says what it
    did, from its layer events; the stack marks the probed layers."""
    with TraceDB(sample_store) as t:
        run = next(t.run(r.id) for r in t.runs() if r.name == "support-desk")
    rp = build_replay(run)
    assert run_stack(rp).recorded and run_stack(rp).layered
    # the list trace.around returned (its order decides what the graph cannot show)
    assert [e.name for e in run_stack(rp).entries] == [
        "TraceMiddleware", "PIIMiddleware[email]", "ContextEditingMiddleware",
        "ModelFallbackMiddleware", "ToolRetryMiddleware"]
    attempt = next(s.index for s in rp.steps if s.event.middleware == "ModelFallbackMiddleware"
                   and s.event.payload.get("what") == "attempt")
    rows = floor_plan(rp, attempt)
    cell = {c.middleware: c for c in row(rows, "wrap_model_call").cells}
    assert list(cell) == ["TraceMiddleware", "ContextEditingMiddleware",
                          "ModelFallbackMiddleware"]
    assert cell["ModelFallbackMiddleware"].state == NOW
    assert cell["ModelFallbackMiddleware"].did == "called the layers inside again (attempt 2)"
    assert cell["ContextEditingMiddleware"].state == ACTIVE
    assert "changed nothing looptrace saw" in cell["ContextEditingMiddleware"].note
    end = floor_plan(rp, len(rp) - 1)
    ce = next(c for c in row(end, "wrap_model_call").cells
              if c.middleware == "ContextEditingMiddleware")
    assert ce.did == "changed the request (messages)"
    pii = next(c for c in row(end, "after_model").cells if c.middleware == "PIIMiddleware[email]")
    assert pii.did == "replaced 1 message(s) by a new version" and pii.known
    assert "PII" in pii.role
    tr = next(c for c in row(end, "wrap_tool_call").cells if c.middleware == "ToolRetryMiddleware")
    assert "called the layers inside again" in tr.did


def test_a_run_seen_from_outside_has_no_floor_plan(sample_store: str) -> None:
    with TraceDB(sample_store) as t:
        run = next(t.run(r.id) for r in t.runs() if t.run(r.id).observed)
    rp = build_replay(run)
    assert all(not r.cells for r in floor_plan(rp, 0))
    assert middleware_labels(rp) == {}


def test_unseen_node_hooks_say_how_to_record_them(store_db: str) -> None:
    """A stack that lists middleware whose node hooks no callback recorded: their cells
    are 'not recorded' and say how to record them. (Built from an attached run with the
    callback events of A and B taken out.)"""
    from dataclasses import replace

    from tracer.read.floorplan import NODE_HOOKS
    from tracer.read.loader import Run

    rp, _ = spied_run(store_db)
    run = rp.run
    kept = [e for e in run.events if not (e.middleware in ("A", "B") and e.hook in NODE_HOOKS)]
    alone = Run(replace(run.summary, source="middleware"), kept, run.messages,
                metadata=run.metadata, revisions=run.revisions)
    rp2 = build_replay(alone)
    assert run_stack(rp2).recorded and not run_stack(rp2).callbacks
    rows = floor_plan(rp2, len(rp2) - 1)
    a = next(c for c in row(rows, "before_model").cells if c.middleware == "A")
    assert a.state == UNSEEN and "trace.attach(agent)" in a.note
    assert next(c for c in row(rows, "before_model").cells
                if c.middleware == "TraceMiddleware").state == FIRED


# -- the graph's labels -------------------------------------------------------------------
def test_graph_labels_list_each_hooks_middleware_in_both_front_ends(store_db: str) -> None:
    from tracer.read.graph_layout import drawing
    from tracer.replayer import replay_json

    db = store_db
    deep_agent(str(db))
    rp = replays(db)["deep-research"]
    labels = middleware_labels(rp)
    assert labels["before_agent"] == {
        "text": "PatchToolCalls · Trace",
        "title": "before_agent (list order): 1. PatchToolCallsMiddleware, 2. TraceMiddleware"}
    assert labels["after_agent"]["text"] == "Trace · ParentNotifier"
    assert labels["after_agent"]["title"].startswith("after_agent (reverse list order): ")
    wmc = labels["wrap_model_call"]
    assert wmc["text"].startswith("Filesystem · SubAgent") and "+" in wmc["text"]
    assert len(wmc["text"]) <= 40
    assert wmc["title"].count(". ") == 7  # all seven, outermost first
    # one definition for both front ends (one replayer: the app's component and the export)
    assert replay_json(rp, payloads=False)["mw"] == labels
    data = replay_data(rp)
    assert data["mw"] == labels
    page = render_html(rp)
    embedded = json.loads(re.search(
        r'<script type="application/json" id="looptrace-data">(.*?)</script>', page,
        re.DOTALL).group(1))
    assert embedded["mw"] == labels
    # the drawing has a place for every hook's labels
    assert set(labels) <= set(embedded["layout"]["mw"]) == set(drawing()["mw"])


def test_graph_labels_are_data_never_markup(store_db: str) -> None:
    """A middleware's name is trace text: in the export it travels as escaped JSON."""
    from langchain.agents.middleware import AgentMiddleware

    class Evil(AgentMiddleware):  # type: ignore[type-arg]
        name = "<img src=x onerror=alert(1)>"  # type: ignore[assignment]

        def before_model(self, state: Any, runtime: Any) -> None:
            return None

    db = store_db
    tm = TraceMiddleware(db=db, run_name="evil")
    agent = create_agent(two_lap_model(), tools=[get_weather], middleware=[tm, Evil()])
    tm.attach(agent).invoke({"messages": [HumanMessage("weather?")]})
    tm.flush()
    rp = replays(db)["evil"]
    assert "<img" in middleware_labels(rp)["before_model"]["title"]
    page = render_html(rp)
    assert "<img src=x" not in page


# -- the pane in the app -------------------------------------------------------------------
@pytest.fixture
def samples(sample_store: str, monkeypatch: pytest.MonkeyPatch, app_pool: None) -> Path:
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_store))
    yield sample_store
    st.cache_data.clear()
    st.cache_resource.clear()


def _open(page: str, **query: str) -> AppTest:
    at = app_test(page, **query).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("page", ["replay", "presenter"])
def test_the_app_draws_the_floor_plan_at_the_step(samples: Path, page: str) -> None:
    with TraceDB(samples) as t:
        rid = next(r.id for r in t.runs() if r.name == "deep-research")
        rp = build_replay(t.run(rid))
    step = step_of(rp, "PatchToolCallsMiddleware", "before_agent")
    at = _open(page, run=rid, step=str(step + 1), floorplan="1")
    assert at.toggle(key="show_floorplan").value
    texts = [t.value for t in at.text]
    pos = [e.name for e in run_stack(rp).entries].index("PatchToolCallsMiddleware") + 1
    assert f"{pos}. PatchToolCallsMiddleware" in texts
    assert any("without a ToolMessage" in t for t in texts)
    assert "last: returned nothing: no change" in texts
    assert any("-badge[fires here]" in m.value for m in at.markdown)  # (st.badge)
    # the replayer component carries the labels
    assert replayer(at)["run"]["mw"]["before_agent"]["text"] == "PatchToolCalls · Trace"
    assert replayer(at)["step"] == step
    # the browser steps on: the plan follows the step it reports
    def fires_here() -> int:
        return sum("-badge[fires here]" in m.value for m in at.markdown)

    assert fires_here() == sum(c.state == NOW for r in floor_plan(rp, step) for c in r.cells)
    later = len(rp) - 1
    report_step(at, later)
    assert not at.exception
    assert fires_here() == sum(c.state == NOW for r in floor_plan(rp, later) for c in r.cells)
    assert fires_here() == 0  # (the end: nothing fires)
    # switched off, it is gone
    at.toggle(key="show_floorplan").set_value(False).run()
    assert f"{pos}. PatchToolCallsMiddleware" not in [t.value for t in at.text]
