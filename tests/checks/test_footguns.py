"""The hand-rolled loop's footguns: each shipped as a sample run that ``looptrace check``
catches (exit 1), the correct loop passing (exit 0); the seed's loop with every guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracer.checks.run import check_run
from tracer.cli import main
from tracer.demo.scenarios import SCENARIOS
from tracer.interop.exchange import SAMPLES_DIR, import_trace
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

# sample -> the error-level rule that names its footgun
FOOTGUNS = {
    "footgun-no-bound": "runaway-loop",
    "footgun-wrong-id": "orphan-tool-result",
    "footgun-swallowed-error": "swallowed-tool-error",
    "sdk-loop-missing-result": "dangling-tool-call",
}


@pytest.mark.parametrize("name", sorted(FOOTGUNS))
def test_check_catches_each_footgun(name: str, store_db: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    db = store_db
    (rid,) = import_trace(SAMPLES_DIR / f"{name}.jsonl", db)[:1]
    assert main(["check", "--db", str(db), rid]) == 1
    out = capsys.readouterr().out
    assert f"ERROR   {FOOTGUNS[name]}" in out


def test_check_passes_the_correct_loop(store_db: str) -> None:
    db = store_db
    (rid,) = import_trace(SAMPLES_DIR / "sdk-loop.jsonl", db)[:1]
    assert main(["check", "--db", str(db), rid]) == 0


def _recorded(db: Path, name: str):  # type: ignore[no-untyped-def]
    SCENARIOS[name](str(db))
    with TraceDB(db) as t:
        (summary,) = t.runs()
        return t.run(summary.id)


def test_swallowed_error_is_what_the_model_got(store_db: str) -> None:
    run = _recorded(store_db, "footgun-swallowed-error")
    rp = build_replay(run)
    second = [s for s in rp.steps if s.event.hook == "model" and s.event.phase == "enter"][1]
    got = rp.messages_at(second.index)
    # the empty result the loop sent is there, at the call that received it
    assert [(m.type, m.tool_call_id, m.text) for m in got][-2:] == [
        ("tool", "call_fc_oslo", "Oslo: rain, 6°C."), ("tool", "call_fc_atlantis", "")]
    (f,) = [f for f in check_run(run) if f.severity == "error"]
    assert f.rule == "swallowed-tool-error"
    assert "ValueError: no forecast for 'Atlantis'" in f.message
    assert "the result sent back was empty" in f.message


def test_the_seeds_loop_has_every_guard(store_db: str) -> None:
    """The hand-rolled demo: results built by the loop with the call's own id, the tool
    runs linked to their calls although the loop invokes tools with arguments alone,
    and a message when the bound stops it."""
    run = _recorded(store_db, "hand-rolled-loop")
    asked = [c["id"] for m in run.messages if m.type == "ai" for c in m.tool_calls]
    answered = [m.tool_call_id for m in run.messages if m.type == "tool"]
    assert asked == answered == [f"call_loop_{i}" for i in range(1, 5)]
    tool_events = [(e.phase, e.tool_call_id) for e in run.events if e.hook == "tool"]
    assert tool_events == [(p, f"call_loop_{i}") for i in range(1, 5)
                           for p in ("enter", "exit")]
    assert run.messages[-1].type == "ai" and run.messages[-1].text == (
        "Stopped after 4 iterations without a final answer.")
    assert [f.rule for f in check_run(run) if f.severity == "error"] == ["loop-bound-hit"]


def test_a_tool_invoked_with_its_arguments_is_linked_to_its_call(store_db: str) -> None:
    """Two parallel calls of one tool, invoked in the reverse order with their arguments
    alone: each run is linked to the call with the same arguments."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.runnables import chain

    from tracer import TraceCallbackHandler
    from tracer.demo.footguns import get_forecast
    from tracer.demo.models import ScriptedChatModel, call

    def script(messages):  # type: ignore[no-untyped-def]
        if len(messages) == 1:
            return AIMessage("", tool_calls=[call("get_forecast", {"city": "Oslo"}, "a"),
                                             call("get_forecast", {"city": "Bergen"}, "b")])
        return AIMessage("Rain.")

    llm = ScriptedChatModel(model_name="m", script=script)
    handler = TraceCallbackHandler(db=store_db)

    @chain
    def loop(q: str) -> list:
        messages = [HumanMessage(q)]
        ai = llm.invoke(messages)
        messages.append(ai)
        for tc in reversed(ai.tool_calls):
            messages.append(ToolMessage(get_forecast.invoke(tc["args"]), tool_call_id=tc["id"]))
        messages.append(llm.invoke(messages))
        return messages

    loop.invoke("Rain?", config={"callbacks": [handler]})
    handler.close()
    with TraceDB(store_db) as t:
        run = t.run(t.runs()[0].id)
    starts = [(e.tool_call_id, e.payload["args"]) for e in run.events
              if e.hook == "tool" and e.phase == "enter"]
    assert starts == [("b", {"city": "Bergen"}), ("a", {"city": "Oslo"})]
