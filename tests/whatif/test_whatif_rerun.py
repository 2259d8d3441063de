"""The cassette's proof: a run replayed from its record, with no edit, is its record.

Every demo agent (``tracer.demo.scenarios.AGENTS``) and every agent of
``tests/record/test_truth.py`` (sync and async under blockbuster; the tracer first and with
``around``) is recorded, then replayed through its factory by ``rerun``: no
scripted model is called (their ``_generate`` is counted), and ``looptrace diff``'s
engine finds no difference between the run and its replay, subagent runs included.
The original run's rows are the same bytes after the replay.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain.agents.middleware import AgentMiddleware, ModelResponse
from langchain.tools import ToolRuntime
from truth.scenarios import SCENARIOS
from whatif_kit import TruthAgent, root_run, rows_of

from tracer.demo.models import ScriptedChatModel
from tracer.demo.scenarios import AGENTS
from tracer.read.diff import diff_tree, format_text
from tracer.read.loader import TraceDB
from tracer.whatif.rerun import arerun, rerun


@pytest.fixture
def scripted_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the scripted models whose ``_generate`` ran (the demo's models)."""
    calls: list[str] = []
    real = ScriptedChatModel._generate

    def counted(self: ScriptedChatModel, *a: Any, **kw: Any) -> Any:
        calls.append(self.model_name)
        return real(self, *a, **kw)

    monkeypatch.setattr(ScriptedChatModel, "_generate", counted)
    return calls


def _identical(db: Path, a: str, b: str) -> None:
    with TraceDB(db) as t:
        d = diff_tree(t, a, t, b)
        assert d.identical, format_text(d)
        meta = t.run(b).metadata
    assert meta["rerun_of"] == a


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_demo_agent_reruns_to_its_record(tmp_path: Path, name: str,
                                          scripted_calls: list[str]) -> None:
    db = tmp_path / "demo.db"
    demo = AGENTS[name](str(db))
    demo.record()
    run_id = root_run(db)
    recorded = len(scripted_calls)
    assert recorded > 0
    before = rows_of(db, run_id)
    res = rerun(run_id, agent=demo.factory, db=db)
    assert scripted_calls[recorded:] == [], "a scripted model was called during the replay"
    assert res.stats.live_model_calls == 0 and res.stats.live_from is None
    with TraceDB(db) as t:  # (counted by the read side: the run's and its subagents')
        record = [t.summary(run_id), *t.subagent_runs([run_id])]
    assert res.stats.model_calls == sum(r.model_calls for r in record)
    _identical(db, run_id, res.run_id)
    assert rows_of(db, run_id) == before


# (hitl_edit with ``around``: HumanInTheLoopMiddleware rewrites the edited call's result
# on its way out; the record holds the tool's own result too (the layer step's
# ``inner_messages``), so the replay serves that and the layer rewrites it again.)
TRUTH = [pytest.param(n, p, m, id=f"{n}-{p}-{m}")
         for n in sorted(SCENARIOS) for p in ("first", "around") for m in ("sync", "async")]


@pytest.mark.parametrize(("name", "position", "mode"), TRUTH)
def test_truth_agent_reruns_to_its_record(tmp_path: Path, name: str, position: str,
                                           mode: str) -> None:
    agent = TruthAgent(tmp_path, name, position, mode)
    before = rows_of(agent.db, agent.run_id)
    factory = agent.make_factory()
    if mode == "async":
        async def go() -> Any:
            with blockbuster_ctx():
                return await arerun(agent.run_id, agent=factory, db=agent.db)
        res = asyncio.run(go())
    else:
        res = rerun(agent.run_id, agent=factory, db=agent.db)
    # No model call of the agent, of its subagents or of a hook (LangChain's summariser's
    # own, in before_model) reached a scripted model: the record answered them all. Deep
    # Agents' summariser calls its model inside the model node, outside the rerun layer
    # (Deep Agents puts the user's middleware inside its own): not recorded, it runs.
    kinds = [c.kind for c in agent.calls.calls]
    unrecorded = ["summary"] if name == "deep_agent" else []
    assert kinds == unrecorded, kinds
    assert res.stats.unrecorded_model_calls == len(unrecorded)
    assert res.stats.live_from is None
    # No tool ran either, a subagent's included: every tool call the record holds
    # (the run's and its subagents', counted by the read side) was served from it, and
    # each subagent's own call ran to replay it.
    assert res.stats.live_tool_calls == 0, res.summary()
    with TraceDB(agent.db) as t:
        record = [t.summary(agent.run_id), *t.subagent_runs([agent.run_id])]
    assert res.stats.subagent_calls == len(record) - 1
    assert res.stats.tool_calls + res.stats.subagent_calls == sum(r.tool_calls for r in record)
    _identical(agent.db, agent.run_id, res.run_id)
    assert rows_of(agent.db, agent.run_id) == before


def test_tools_are_answered_from_the_record(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay does not run the tools again (no email sent twice): the shopping run's
    four catalogue look-ups and its discount come from the record."""
    from tracer.demo import scenarios

    ran: list[str] = []
    for t in (scenarios.get_price, scenarios.apply_discount):
        real = t.func

        def counted(*a: Any, _real: Any = real, _name: str = t.name, **kw: Any) -> Any:
            ran.append(_name)
            return _real(*a, **kw)

        monkeypatch.setattr(t, "func", counted)
    db = tmp_path / "demo.db"
    demo = AGENTS["shopping"](str(db))
    demo.record()
    assert sorted(ran) == ["apply_discount", "get_price", "get_price", "get_price"]
    run_id = root_run(db)
    res = rerun(run_id, agent=demo.factory, db=db)
    assert sorted(ran) == ["apply_discount", "get_price", "get_price", "get_price"]
    assert res.stats.tool_calls == 4  # (and check_stock, a tool it lacks, is LangChain's error)
    _identical(db, run_id, res.run_id)


def test_the_record_holds_a_tools_own_result_under_a_layer_that_rewrote_it(
        tmp_path: Path) -> None:
    """hitl_edit with ``around``: the conversation holds the result with the reviewer's
    notice; the cassette serves the tool's own result (which the layer was given)."""
    from langchain_core.messages import messages_from_dict

    from tracer.whatif.cassette import Cassette

    agent = TruthAgent(tmp_path, "hitl_edit", "around", "sync")
    with TraceDB(agent.db) as t:
        cassette = Cassette.load(t, agent.run_id)
        (final,) = [m.text for m in t.run(agent.run_id).messages if m.type == "tool"]
    own = "sent to boss@corp.test: Q3 / Edited by a human."
    assert final != own and final.endswith("Tool response:\n" + own)
    (call,) = cassette.tool_calls[agent.run_id]
    assert call.own is not None
    assert [m.content for m in messages_from_dict(call.own)] == [own]
    assert [m.content for o in call.outcomes for m in messages_from_dict(o.messages)] == [own]


def test_a_subagents_tools_are_answered_from_its_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The deep-agent run's researcher (a subagent, started by the ``task`` tool) looks
    a fact up once; the replay serves that look-up from the researcher's own record:
    the tool does not run again, and the replay is its record."""
    from tracer.demo import scenarios

    ran: list[dict[str, Any]] = []
    real = scenarios.lookup_fact.func

    def counted(*a: Any, **kw: Any) -> Any:
        ran.append(kw)
        return real(*a, **kw)

    monkeypatch.setattr(scenarios.lookup_fact, "func", counted)
    db = tmp_path / "demo.db"
    demo = AGENTS["deep-agent"](str(db))
    demo.record()
    assert ran == [{"topic": "capital of Norway"}]
    run_id = root_run(db)
    res = rerun(run_id, agent=demo.factory, db=db)
    assert ran == [{"topic": "capital of Norway"}], "the subagent's tool ran again"
    assert (res.stats.tool_calls, res.stats.subagent_calls, res.stats.live_tool_calls) == (
        1, 1, 0)
    assert "1 subagent call ran" in res.summary()  # (issue 39 item 10: "1 subagent calls")
    _identical(db, run_id, res.run_id)


class _Signs(AgentMiddleware):  # type: ignore[type-arg]
    """Rewrites the model's reply on its way out: appends a signature."""

    def _sign(self, response: Any) -> Any:
        from langchain_core.messages import AIMessage

        msgs = [m.model_copy(update={"content": f"{m.content} -- signed"})
                if isinstance(m, AIMessage) and not m.tool_calls else m
                for m in response.result]
        return ModelResponse(result=msgs, structured_response=response.structured_response)

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._sign(handler(request))

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return self._sign(await handler(request))


def test_a_layer_that_rewrites_the_models_reply_under_around_rewrites_it_once(
        tmp_path: Path, scripted_calls: list[str]) -> None:
    """``trace.around(layer)``: the layer signs the model's reply on its way out. The
    record keeps the model's own reply (what the layer was given); the replay serves
    that, the layer signs it again, once, and the replay's every layer step is its
    record's (a doubled signature was a difference at the layer and in the messages)."""
    from langchain.agents import create_agent
    from tracer_kit import get_weather, two_lap_model

    from tracer import TraceMiddleware

    db = tmp_path / "signed.db"
    trace = TraceMiddleware(db=db)
    signs = _Signs()

    def make_agent(middleware: Any = tuple(trace.around(signs))) -> Any:
        return trace.attach(create_agent(two_lap_model(), tools=[get_weather],
                                         middleware=list(middleware)))

    make_agent().invoke({"messages": [("user", "Weather in Oslo?")]})
    trace.flush()
    run_id = root_run(db)
    recorded = len(scripted_calls)
    res = rerun(run_id, agent=make_agent, db=db)
    assert scripted_calls[recorded:] == []
    with TraceDB(db) as t:
        final = [m.text for m in t.run(res.run_id).messages if m.type == "ai"][-1]
        layers = [e.payload for e in t.run(res.run_id).events if e.phase == "layer"]
    assert final.endswith(" -- signed") and not final.endswith("-- signed -- signed")
    assert [p["what"] for p in layers] == ["response"]
    _identical(db, run_id, res.run_id)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_tools_writes_to_the_store_are_made_again(tmp_path: Path, mode: str) -> None:
    """A tool that writes to the LangGraph store (and deletes from it) is served from the
    record: it does not run again, and the replay's own store, a new one, gets the same
    writes, so the replay is its record, store items included (``diff`` compares them)."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.store.memory import InMemoryStore

    from tracer import TraceMiddleware
    from tracer.demo.models import call, turn_script

    ran: list[str] = []
    stores: list[InMemoryStore] = []

    @tool
    def pin(place: str, runtime: ToolRuntime) -> str:
        """Pin a place."""
        ran.append(place)
        assert runtime.store is not None
        runtime.store.put(("pins",), place, {"note": f"view of {place}"})
        runtime.store.delete(("pins",), "draft")
        return "pinned"

    db = tmp_path / "store.db"
    trace = TraceMiddleware(db=db, run_name="pins")

    def factory(middleware: Any = (trace,)) -> Any:
        model = ScriptedChatModel(script=turn_script([
            AIMessage("", id="a1", tool_calls=[call("pin", {"place": "oslo"}, "c1")]),
            AIMessage("Pinned.", id="a2")]))
        store = InMemoryStore()
        store.put(("pins",), "draft", {"note": "to go"})
        stores.append(store)
        return create_agent(model, [pin], middleware=list(middleware), store=store)

    factory().invoke({"messages": [("user", "Pin Oslo.")]})
    trace.flush()
    assert ran == ["oslo"]
    run_id = root_run(db)
    if mode == "async":
        async def go() -> Any:
            with blockbuster_ctx():
                return await arerun(run_id, agent=factory, db=db)
        res = asyncio.run(go())
    else:
        res = rerun(run_id, agent=factory, db=db)
    assert ran == ["oslo"], "the tool ran again"
    assert (res.stats.tool_calls, res.stats.live_tool_calls) == (1, 0)
    replayed = stores[-1]
    item = replayed.get(("pins",), "oslo")
    assert item is not None and item.value == {"note": "view of oslo"}
    assert replayed.get(("pins",), "draft") is None  # (deleted again)
    _identical(db, run_id, res.run_id)


def test_a_deep_agent_with_its_files_in_the_store_reruns_to_its_record(tmp_path: Path) -> None:
    """Deep Agents' ``StoreBackend`` keeps the files in the store: served from the record,
    its file tools do not run, and the replay's new store ends holding what the
    original's did (a file written, edited, a scratch file written and deleted)."""
    from store_kit import FS, store_agent, store_seeded

    from tracer import TraceMiddleware

    db = tmp_path / "deep-store.db"
    trace = TraceMiddleware(db=db, run_name="deep-store")
    stores: list[Any] = []

    def factory(middleware: Any = (trace,)) -> Any:
        store = store_seeded()
        stores.append(store)
        return trace.attach(store_agent(store, list(middleware)))

    factory().invoke({"messages": [("user", "Keep notes.")]})
    trace.flush()
    run_id = root_run(db)
    res = rerun(run_id, agent=factory, db=db)
    assert (res.stats.tool_calls, res.stats.live_tool_calls) == (4, 0), res.summary()
    _identical(db, run_id, res.run_id)

    def held(store: Any) -> list[tuple[Any, ...]]:
        return sorted((tuple(i.namespace), i.key, repr(i.value)) for i in store.search(FS))

    assert held(stores[-1]) == held(stores[0])
    assert [i.key for i in stores[-1].search(FS)] and stores[-1].get(FS, "/scratch.md") is None


def test_a_factory_without_a_tracer_gets_one_writing_to_the_database(
        tmp_path: Path, scripted_calls: list[str]) -> None:
    """Issue 39, item 16: ``replay --agent mod:factory`` failed ("the agent recorded no
    run into ...") when the factory's middleware list held no TraceMiddleware."""
    db = tmp_path / "demo.db"
    demo = AGENTS["weather"](str(db))
    demo.record()
    run_id = root_run(db)

    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage

    from tracer.demo.models import call, turn_script
    from tracer.demo.tools import get_weather

    model = ScriptedChatModel(model_name="scripted-weather", script=turn_script([
        AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "call_weather_1")]),
        AIMessage("Snow.")]))

    def bare(middleware: Any = ()) -> Any:  # (the weather agent, no tracer, no attach)
        return create_agent(model, tools=[get_weather], middleware=list(middleware),
                            name="weather",
                            system_prompt="You are a helpful weather assistant. Use the tools.")

    res = rerun(run_id, agent=bare, db=db)
    assert res.error is None and res.run_id != run_id
    with TraceDB(db) as t:
        assert t.run(res.run_id).metadata["rerun_of"] == run_id
        assert len(t.run(res.run_id).events) > 5  # (hook by hook, as TraceMiddleware records)


def test_a_tool_that_runs_again_is_said_with_its_reason(tmp_path: Path) -> None:
    """Issue 39, item 10: the summary gave every live tool call the same two guesses ("a
    tool the agent lacks, a result the record holds only as a repr"). Here the weather
    tool is a ``BaseTool`` subclass, which the rerun cannot stand in for: it runs again
    (its result is the recorded one, so the model calls still come from the record), and
    the summary says why, and only that."""
    from langchain.agents import create_agent
    from langchain_core.tools import BaseTool

    from tracer.demo.tools import get_weather

    db = tmp_path / "w.db"
    demo = AGENTS["weather"](str(db))
    demo.record()
    run_id = root_run(db)

    class WeatherTool(BaseTool):
        name: str = "get_weather"
        description: str = "The weather in a city."

        def _run(self, city: str) -> str:
            return str(get_weather.invoke({"city": city}))

    def factory(middleware: Any = ()) -> Any:
        model = ScriptedChatModel(model_name="scripted-weather", script=lambda messages: None)
        return create_agent(model, tools=[WeatherTool()], middleware=list(middleware),
                            name="weather",
                            system_prompt="You are a helpful weather assistant. Use the tools.")

    res = rerun(run_id, agent=factory, db=db)
    assert res.stats.live_from is None and res.stats.model_calls == 2
    assert res.stats.live_why == {
        "a tool of a kind the rerun cannot stand in for (WeatherTool)": 1}
    assert res.summary().splitlines()[2] == (
        "  0 model calls, 1 tool call live (a tool of a kind the rerun cannot stand in "
        "for (WeatherTool))")
    assert res.to_dict()["live"]["why"] == res.stats.live_why


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_callbacks_only_record_of_a_retried_tool_reruns(tmp_path: Path, mode: str) -> None:
    """Issue 44, item 12: a run recorded from callbacks alone (``looptrace run``: no
    middleware, the handler in the config) whose ``get_order`` failed once and was
    retried by ``ToolRetryMiddleware`` holds two starts of one call (same id). They were
    read as two calls: the rerun layer served only the first (the error), the retry
    inside it got the error again, and the rerun diverged at the next model call ("Tool
    'get_order' failed after 2 attempts")."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolRetryMiddleware
    from langchain.tools import tool
    from langchain_core.messages import AIMessage

    from tracer import TraceMiddleware
    from tracer.demo.models import call, turn_script

    attempts: list[str] = []

    @tool
    def get_order(order_id: str) -> str:
        """Look up an order."""
        attempts.append(order_id)
        if attempts.count("A-1") == 1 and order_id == "A-1":  # (A-1's first attempt)
            raise ConnectionError("carrier API timed out")
        return f"{order_id}: shipped"

    def factory(middleware: Any = ()) -> Any:
        model = ScriptedChatModel(script=turn_script([
            AIMessage("", tool_calls=[call("get_order", {"order_id": "A-1"}, "c1"),
                                      call("get_order", {"order_id": "A-2"}, "c2")]),
            AIMessage("Both shipped.")]))
        return create_agent(model, tools=[get_order], middleware=[
            *middleware, ToolRetryMiddleware(max_retries=1, initial_delay=0.0,
                                             backoff_factor=0.0, jitter=False)],
            name="desk")

    db = tmp_path / "cb.db"
    trace = TraceMiddleware(db=db)
    config = {"callbacks": [trace.callback_handler()]}
    question = {"messages": [("user", "Where are my orders?")]}
    if mode == "async":
        asyncio.run(factory().ainvoke(question, config=config))
    else:
        factory().invoke(question, config=config)
    trace.flush()
    run_id = root_run(db)
    with TraceDB(db) as t:  # (the record: c1 started twice, the first start raised)
        starts = [e.tool_call_id for e in t.run(run_id).events
                  if e.hook == "tool" and e.phase == "enter"]
    assert sorted(starts) == ["c1", "c1", "c2"]
    assert sorted(attempts) == ["A-1", "A-1", "A-2"]
    attempts.clear()
    if mode == "async":
        res = asyncio.run(arerun(run_id, agent=factory, db=db))
    else:
        res = rerun(run_id, agent=factory, db=db)
    assert res.error is None, res.error
    assert res.stats.live_from is None and res.stats.model_calls == 2
    assert attempts == []  # (every attempt answered from the record)
    with TraceDB(db) as t:
        last = t.run(res.run_id).messages[-1]
    assert last.text == "Both shipped."
