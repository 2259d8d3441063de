"""Every kind of Edit made on the LangChain objects it applies to (tracer.record.edit_apply):
a model request, a tool call, a tool's result (a ToolMessage or a Deep Agents Command),
the middleware list. A kind added to tracer.vocab.edits.KINDS without its application
fails here."""

from __future__ import annotations

import pytest
from langchain.agents.middleware import ModelRequest, ToolCallRequest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Command
from tracer_kit import get_price, get_weather

from tracer.demo.models import echo_model
from tracer.errors import BadEdit, DebugRaised
from tracer.record.edit_apply import (
    apply_request,
    apply_stack,
    apply_tool_call,
    apply_tool_result,
)
from tracer.vocab.edits import KINDS, MODEL_REQUEST, TOOL_CALL, Edit

MSGS = [HumanMessage("Weather in Oslo?", id="h1"),
        AIMessage("", id="a1", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"},
                                             "id": "c1", "type": "tool_call"}])]


def _request() -> ModelRequest:
    return ModelRequest(model=echo_model(), messages=list(MSGS),
                        system_message=SystemMessage("Be brief."),
                        tools=[get_weather, get_price], model_settings={"temperature": 1})


ON_REQUEST = {
    "message": (Edit("message", position=0, text="In Bergen?"),
                lambda r: [m.content for m in r.messages] == ["In Bergen?", ""]),
    "drop": (Edit("drop", position=1), lambda r: [m.id for m in r.messages] == ["h1"]),
    "insert": (Edit("insert", position=2, text="Sunny", role="tool", tool_call_id="c1"),
               lambda r: isinstance(r.messages[2], ToolMessage)
               and r.messages[2].tool_call_id == "c1" and r.messages[2].content == "Sunny"),
    "system": (Edit("system", text="Be long."), lambda r: r.system_prompt == "Be long."),
    "model": (Edit("model", model="offline"),
              lambda r: r.model.invoke("hi").content == "(offline: no model was asked)"),
    "tools": (Edit("tools", names=("get_price",)),
              lambda r: [t.name for t in r.tools] == ["get_price"]),
    "settings": (Edit("settings", settings={"max_tokens": 5}),
                 lambda r: r.model_settings == {"temperature": 1, "max_tokens": 5}),
}


def test_every_kind_a_model_request_takes_is_made_on_one() -> None:
    assert set(ON_REQUEST) | {"reply"} == {k for k, v in KINDS.items() if MODEL_REQUEST in v.at}


@pytest.mark.parametrize("kind", sorted(ON_REQUEST))
def test_a_model_request_edit(kind: str) -> None:
    edit, holds = ON_REQUEST[kind]
    before = _request()
    after, answer = apply_request(before, edit)
    assert answer is None
    assert holds(after)
    assert [m.id for m in before.messages] == ["h1", "a1"]  # (the request is not changed)


def test_a_reply_answers_instead_of_the_model() -> None:
    edit = Edit.of({"kind": "reply", "text": "No.", "tool_calls": [
        {"name": "get_price", "args": {"item": "tea"}, "id": "c7"}]})
    request, answer = apply_request(_request(), edit)
    assert answer is not None and answer.content == "No."
    assert answer.tool_calls == [{"name": "get_price", "args": {"item": "tea"}, "id": "c7",
                                  "type": "tool_call"}]


def _tool_call() -> ToolCallRequest:
    return ToolCallRequest(tool_call={"name": "get_weather", "args": {"city": "Oslo"},
                                      "id": "c1", "type": "tool_call"},
                           tool=get_weather, state={}, runtime=None)


def test_every_kind_a_tool_call_takes_is_made_on_one() -> None:
    assert {k for k, v in KINDS.items() if TOOL_CALL in v.at} == {"tool_args", "tool_result",
                                                                   "raise"}
    req, given = apply_tool_call(_tool_call(), Edit("tool_args", args={"city": "Bergen"}))
    assert (req.tool_call["args"], given) == ({"city": "Bergen"}, None)
    req, given = apply_tool_call(_tool_call(), Edit("tool_result", text="Fog"))
    assert given is not None and (given.content, given.tool_call_id) == ("Fog", "c1")
    with pytest.raises(DebugRaised, match="^boom$"):
        apply_tool_call(_tool_call(), Edit("raise", text="boom"))


def test_a_tool_result_edit_replaces_the_toolmessage_inside_a_command() -> None:
    # (a Deep Agents task returns a Command: "cannot unpack non-iterable Command object")
    files = {"notes.md": "kept"}
    result = Command(update={"files": files, "messages": [
        ToolMessage("Found: Oslo.", tool_call_id="c_task", id="t1")]})
    new = apply_tool_result(result, Edit("tool_result", text="Bergen."), "c_task")
    assert isinstance(new, Command)
    assert new.update["files"] is files
    [msg] = new.update["messages"]
    assert (msg.content, msg.tool_call_id, msg.id) == ("Bergen.", "c_task", "t1")
    assert result.update["messages"][0].content == "Found: Oslo."  # (not changed in place)


def test_a_result_with_no_toolmessage_is_one_line() -> None:
    with pytest.raises(BadEdit, match="^the tool returned Command, with no ToolMessage to "
                                      "change$"):
        apply_tool_result(Command(update={"files": {}}), Edit("tool_result", text="x"), "c1")


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_middleware_edits_change_the_list() -> None:
    stack = [_Named("A"), _Named("B"), _Named("C")]
    assert [m.name for m in apply_stack(stack, Edit("drop_middleware", middleware="B"))] == [
        "A", "C"]
    assert [m.name for m in apply_stack(
        stack, Edit("move_middleware", middleware="C", index=0))] == ["C", "A", "B"]
    with pytest.raises(BadEdit, match=r"^the agent has no middleware 'D' \(its list: A, B, C\)$"):
        apply_stack(stack, Edit("drop_middleware", middleware="D"))
