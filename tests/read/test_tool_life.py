"""A tool call's life, shown on the run: schema vs Python signature, and its paths.

Each fact on a recorded run: the demo scenarios ``tool-validation-error`` and
``tool-exception``, the shopping demo's error steps, and small agents for the
other paths (a Command without its ToolMessage, ToolErrorMiddleware).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from app_kit import app_test
from langchain.agents import create_agent
from langchain.agents.middleware import ToolErrorMiddleware
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langgraph.types import Command
from pg_kit import store_on
from pydantic import BaseModel, Field

from tracer import TraceMiddleware
from tracer.demo import scenarios
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.captions import captions
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, Step, build_replay
from tracer.read.tool_life import signature_text, tool_life


def replays(db: Path) -> dict[str, Replay]:
    with TraceDB(db) as t:
        return {r.name or r.id: build_replay(t.run(r.id)) for r in t.runs()}


def tool_steps(rp: Replay, tcid: str, phase: str) -> list[Step]:
    return [s for s in rp.steps if s.event.tool_call_id == tcid and s.event.phase == phase
            and s.event.hook in ("wrap_tool_call", "tool")]


@pytest.fixture(scope="module")
def demo_db(engine: str, tmp_path_factory: pytest.TempPathFactory, pg_url: str | None) -> str:
    db = store_on(engine, tmp_path_factory.mktemp("tl"), pg_url)
    for name in ("tool-validation-error", "tool-exception", "shopping"):
        scenarios.SCENARIOS[name](str(db))
    return db


# -- the validation-error demo -------------------------------------------------------
def test_arguments_that_fail_the_schema_come_back_as_an_error_message(demo_db: str) -> None:
    rp = replays(demo_db)["booking"]
    assert rp.run.summary.status == "completed"
    [exit_] = tool_steps(rp, "call_book_1", "exit")
    assert exit_.event.payload == {"status": "error", "error_path": "validation"}
    assert "its arguments failed the tool's schema, so it never ran" in captions(rp)[exit_.index]
    assert "ToolNode returned the validation error as an error ToolMessage" in captions(rp)[exit_.index]
    [msg] = [m for m in rp.run.messages if m.tool_call_id == "call_book_1"]
    assert msg.status == "error" and msg.text.startswith("Error invoking tool 'book_table'")
    assert "guests" in msg.text and "valid integer" in msg.text
    # the model gets it on the next lap and corrects its arguments
    nxt = next(s for s in rp.steps[exit_.index:] if s.event.hook == "wrap_model_call")
    assert "t:call_book_1" in {m.key for m in rp.messages_at(nxt.index)}
    [again] = tool_steps(rp, "call_book_2", "enter")
    assert again.event.payload["args"] == {"restaurant": "Fiskeriet", "guests": 6}


def test_the_schema_the_model_saw_beside_the_python_signature(demo_db: str) -> None:
    """ToolRuntime is in the Python signature and not in the schema the model saw."""
    rp = replays(demo_db)["booking"]
    [enter] = tool_steps(rp, "call_book_1", "enter")
    life = tool_life(rp, enter.index)
    assert life is not None and life.name == "book_table"
    params = life.schema["function"]["parameters"]
    assert params["required"] == ["restaurant", "guests"]
    assert params["properties"]["guests"] == {"maximum": 12, "minimum": 1, "type": "integer"}
    assert "runtime" not in params["properties"]
    assert life.signature == ("book_table(restaurant: str, guests: Annotated[int, "
                              "Field(ge=1, le=12)], runtime: ToolRuntime) -> Command")
    assert life.hidden == ("runtime",)
    assert life.args == {"restaurant": "Fiskeriet", "guests": "six"}
    assert life.outcome is None  # not ended at its enter step
    assert ("Its Python signature also takes runtime, which LangChain injects"
            in captions(rp)[enter.index])
    assert "the schema the model saw leaves it out" in captions(rp)[enter.index]
    # at its exit, the inspector says which path it took
    [exit_] = tool_steps(rp, "call_book_1", "exit")
    assert "failed the tool's schema" in tool_life(rp, exit_.index).outcome  # type: ignore[union-attr]


def test_a_command_must_carry_the_matching_tool_message(demo_db: str) -> None:
    rp = replays(demo_db)["booking"]
    [exit_] = tool_steps(rp, "call_book_2", "exit")
    assert exit_.event.payload["command"] is True
    assert ("its update carries the ToolMessage that answers this call (same tool_call_id), "
            "as ToolNode requires") in captions(rp)[exit_.index]
    assert tool_life(rp, exit_.index).outcome.startswith("Returned a Command")  # type: ignore[union-attr]
    [answer] = [m for m in rp.run.messages if m.tool_call_id == "call_book_2"]
    assert answer.text.startswith("Booked Fiskeriet for 6")


def test_a_command_without_its_tool_message_fails_the_run(store_db: str) -> None:
    @tool
    def forgetful(note: str, runtime: ToolRuntime) -> Command:  # type: ignore[type-arg]
        """Returns a Command that forgets the ToolMessage."""
        return Command(update={"messages": []})

    db = store_db
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("forgetful", {"note": "x"}, "call_f")]),
        AIMessage("done")]))
    tm = TraceMiddleware(db=db, run_name="forgetful")
    with pytest.raises(ValueError, match="matching ToolMessage"):
        tm.attach(create_agent(model, tools=[forgetful], middleware=[tm])).invoke(
            {"messages": [HumanMessage("go")]})
    tm.flush()
    rp = replays(db)["forgetful"]
    assert rp.run.summary.status == "error"
    [err] = tool_steps(rp, "call_f", "error")
    assert "whose update has no ToolMessage answering this call: every tool call must be " \
           "answered" in captions(rp)[err.index]
    assert captions(rp)[err.index].endswith("and the run failed with it.")


# -- the unhandled-exception demo ------------------------------------------------------
def test_an_unhandled_tool_exception_propagates_and_fails_the_run(demo_db: str) -> None:
    rp = replays(demo_db)["stock-check"]
    assert rp.run.summary.status == "error"
    assert "TimeoutError" in (rp.run.summary.error or "")
    [err] = tool_steps(rp, "call_stock_1", "error")
    assert err.event.payload["handle_tool_error"] is False
    assert "The tool sets no handle_tool_error (which would catch a ToolException only)." \
           in captions(rp)[err.index]
    assert "turns only argument-validation errors into messages: this exception " \
           "propagated up through every wrap_tool_call layer" in captions(rp)[err.index]
    assert captions(rp)[err.index].endswith("the run failed with it.")
    life = tool_life(rp, err.index)
    assert life is not None and life.outcome == captions(rp)[err.index]  # what became of it
    last = rp.steps[-1]
    assert (last.event.hook, last.event.phase) == ("run", "error")
    assert captions(rp)[last.index].startswith("The run failed: TimeoutError")
    # no ToolMessage ever answered the call, and no later model call happened
    assert not [m for m in rp.run.messages if m.tool_call_id == "call_stock_1"]
    assert not [s for s in rp.steps[err.index:] if s.event.hook == "wrap_model_call"]


# -- the shopping demo: why its errors are fed back ----------------------------------------
def test_shopping_feeds_errors_back_only_because_of_handle_tool_error(demo_db: str) -> None:
    assert scenarios.get_price.handle_tool_error is True  # what the demo sets
    rp = replays(demo_db)["shopping"]
    [unicorn] = tool_steps(rp, "call_price_unicorn", "exit")
    assert unicorn.event.payload["error_path"] == "handle_tool_error"
    assert ("the tool raised a ToolException and sets handle_tool_error=True, so LangChain "
            "turned it into this error ToolMessage") in captions(rp)[unicorn.index]
    assert "without that flag the exception would have propagated and failed the run" \
           in captions(rp)[unicorn.index]
    [stock] = tool_steps(rp, "call_stock", "exit")
    assert stock.event.payload["error_path"] == "unknown_tool"
    assert "asked for a tool the agent does not have" in captions(rp)[stock.index]


def test_a_middleware_that_turns_the_exception_into_a_message(store_db: str) -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise KeyError(key)

    db = store_db
    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("lookup", {"key": "x"}, "call_k")]),
        AIMessage("It is not there.")]))
    tm = TraceMiddleware(db=db, run_name="caught")
    agent = create_agent(model, tools=[lookup], middleware=[
        tm, ToolErrorMiddleware(on_error=lambda exc, request: f"lookup failed: {exc!r}")])
    tm.attach(agent).invoke({"messages": [HumanMessage("x?")]})
    tm.flush()
    rp = replays(db)["caught"]
    assert rp.run.summary.status == "completed"
    [exit_] = tool_steps(rp, "call_k", "exit")
    assert exit_.event.payload["error_path"] == "returned"
    assert "a wrap_tool_call layer inside TraceMiddleware (e.g. ToolErrorMiddleware" \
           in captions(rp)[exit_.index]


# -- signatures --------------------------------------------------------------------------
def test_signature_text_reads_the_function_or_the_args_schema() -> None:
    @tool
    def plain(city: str, days: int = 3) -> str:
        """Forecast."""
        return city

    class Args(BaseModel):
        query: str
        limit: Annotated[int, Field(ge=1)] = 5

    class Search(BaseTool):
        name: str = "search"
        description: str = "Search."
        args_schema: type[BaseModel] = Args

        def _run(self, query: str, limit: int = 5) -> str:
            return query

    assert signature_text(plain) == ("plain(city: str, days: int = 3) -> str", ["city", "days"])
    text, params = signature_text(Search())  # type: ignore[misc]
    assert text == "search(query: str, limit: int)" and params == ["query", "limit"]


def test_signatures_are_written_with_the_schemas_only(demo_db: str) -> None:
    rp = replays(demo_db)["shopping"]
    enters = [e for e in rp.run.events if e.hook == "wrap_model_call" and e.phase == "enter"]
    with_sigs = [e for e in enters if "signatures" in e.payload]
    assert with_sigs == [e for e in enters if "tools" in e.payload] == enters[:1]
    assert with_sigs[0].payload["signatures"]["get_price"] == {
        "signature": "get_price(product: str) -> str", "hidden": []}


# -- the inspector ---------------------------------------------------------------------------
@pytest.fixture
def samples(sample_store: str, monkeypatch: pytest.MonkeyPatch, app_pool: None) -> Any:
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_store))
    yield sample_store
    st.cache_data.clear()
    st.cache_resource.clear()


def test_the_inspector_shows_schema_beside_signature(samples: Path) -> None:
    with TraceDB(samples) as t:
        rid = next(r.id for r in t.runs() if r.name == "booking")
        rp = build_replay(t.run(rid))
    [exit_] = tool_steps(rp, "call_book_1", "exit")
    at = app_test("replay", run=rid, step=str(exit_.index + 1)).run()
    assert not at.exception, at.exception
    codes = [c.value for c in at.code]
    assert any(c.startswith("book_table(restaurant: str, guests: Annotated[int,") for c in codes)
    captions = [c.value for c in at.caption]
    assert "JSON schema the model saw (from the model call's request)" in captions
    texts = [t.value for t in at.text]
    assert any(t.startswith("Not in the schema, injected by LangChain: runtime") for t in texts)
    assert any("failed the tool's schema" in t for t in texts)
    schemas = [j.value for j in at.json]
    assert any('"minimum": 1' in str(v) or "'minimum': 1" in str(v) or "minimum" in str(v)
               for v in schemas)
