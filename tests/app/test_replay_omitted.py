"""A hand-rolled loop that runs a tool but never sends its result: the replay
marks that recorded message as not received by the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_kit import app_test, replayer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import chain
from langchain_core.tools import tool
from test_replayer_data import messages_at as views_at  # (the browser's messagesAt)

from tracer import TraceCallbackHandler
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay


@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 12 degrees"


def record_forgetful_loop(db: Path) -> str:
    llm = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("lookup", {"city": "Oslo"}, "call_forgotten")]),
        AIMessage("I never saw the result."),
    ]))
    handler = TraceCallbackHandler(db=db)

    @chain
    def forgetful(question: str) -> list[BaseMessage]:
        messages: list[BaseMessage] = [HumanMessage(question)]
        ai = llm.invoke(messages)
        messages.append(ai)
        for tc in ai.tool_calls:
            lookup.invoke(tc)  # the bug: the ToolMessage is never appended
        messages.append(llm.invoke(messages))
        return messages

    forgetful.invoke("Weather in Oslo?", config={"callbacks": [handler]})
    handler.close()
    with TraceDB(db) as t:
        return t.runs()[0].id


def test_replay_marks_the_result_the_model_never_got(db_path: Path) -> None:
    run_id = record_forgetful_loop(db_path)
    with TraceDB(db_path) as t:
        replay = build_replay(t.run(run_id))
    tool_exit = next(s.index for s in replay.steps
                     if s.event.hook == "tool" and s.event.phase == "exit")
    assert replay.omitted_at(tool_exit) == frozenset()  # not yet: no model call since
    second_call = next(s.index for s in replay.steps[tool_exit:]
                       if s.event.hook == "model" and s.event.phase == "enter")
    assert replay.omitted_at(second_call) == {"t:call_forgotten"}
    # the message is still recorded and shown: nothing recorded is lost
    assert "t:call_forgotten" in {m.key for m in replay.messages_at(second_call)}


@pytest.mark.usefixtures("clean_streamlit_caches")
def test_message_pane_shows_the_omission(db_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The replayer's message list marks it ("not sent to the model") from the model
    call that did not get it: each step's ``om`` in the run's JSON."""
    run_id = record_forgetful_loop(db_path)
    with TraceDB(db_path) as t:
        replay = build_replay(t.run(run_id))
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    at = app_test("replay", run=run_id, step=str(len(replay))).run()  # its last step
    assert not at.exception
    data = replayer(at)["run"]
    assert replayer(at)["step"] == len(replay) - 1
    rows = data["messages"]
    shown = [rows[x]["key"] for x in views_at(data)[-1]]
    assert "t:call_forgotten" in shown
    marked = [i for i, s in enumerate(data["steps"]) if s.get("om")]
    assert marked and all(data["steps"][i]["om"] == ["t:call_forgotten"] for i in marked)
    assert marked == [i for i in range(len(replay)) if replay.omitted_at(i)]
    assert marked[-1] == len(replay) - 1
