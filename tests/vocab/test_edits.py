"""The one Edit (tracer.vocab.edits): every kind made, checked, described and read back
from the JSON records of every looptrace version hold; bad input is one line."""

from __future__ import annotations

import pytest

from tracer.errors import BadEdit, InvalidOption, RerunError
from tracer.vocab.edits import KINDS, Edit, describe_json, what_json

# one valid edit of each kind, as JSON (written by hand)
ONE_OF_EACH = {
    "message": {"kind": "message", "position": 1, "text": "And in Bergen?"},
    "drop": {"kind": "drop", "position": 2},
    "insert": {"kind": "insert", "position": 0, "text": "Use Celsius.", "role": "system"},
    "system": {"kind": "system", "text": "Answer in one word."},
    "model": {"kind": "model", "model": "offline"},
    "tools": {"kind": "tools", "names": ["get_weather"]},
    "settings": {"kind": "settings", "settings": {"temperature": 0}},
    "reply": {"kind": "reply", "text": "No.", "tool_calls": [
        {"name": "get_weather", "args": {"city": "Oslo"}, "id": "c9"}]},
    "tool_result": {"kind": "tool_result", "text": "Fog"},
    "tool_args": {"kind": "tool_args", "args": {"city": "Bergen"}},
    "raise": {"kind": "raise", "text": "boom"},
    "state": {"kind": "state", "values": {"count": 3, "items": ["typed"]}},
    "drop_middleware": {"kind": "drop_middleware", "middleware": "PIIMiddleware[email]"},
    "move_middleware": {"kind": "move_middleware", "middleware": "Summarization", "index": 0},
}


def test_every_kind_has_an_example_here() -> None:
    # (a new kind of edit is one entry of KINDS plus its tests: this list names it)
    assert set(ONE_OF_EACH) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(ONE_OF_EACH))
def test_each_kind_round_trips_through_its_recorded_json(kind: str) -> None:
    e = Edit.of(ONE_OF_EACH[kind])
    assert e.to_json() == ONE_OF_EACH[kind]
    assert Edit.of(e.to_json()) == e


@pytest.mark.parametrize(("edit", "short", "long"), [
    # a fork's forked_from.edit as looptrace wrote it before this module
    ({"kind": "message", "position": 0, "text": "And in Bergen?"},
     "message 0 of the request replaced",
     "the message at position 0 of the request replaced by “And in Bergen?”"),
    ({"kind": "insert", "position": 1, "text": "Use Celsius.", "role": "human"},
     "a human message inserted at 1",
     "a human message “Use Celsius.” inserted at position 1 of the request"),
    ({"kind": "tool_args", "args": {"city": "Bergen"}}, "tool arguments changed",
     "the tool call's arguments changed to {'city': 'Bergen'}"),
    ({"kind": "model", "model": "scripted-echo"}, "model swapped for scripted-echo",
     "the model swapped for scripted-echo"),
    # a debugger answer's edit, as the debug event recorded it (with a tool call's id)
    ({"kind": "reply", "text": "", "tool_calls": [{"name": "x", "args": {}, "id": "c1"}]},
     "the model's answer given in the debugger", "the model's answer given by hand: “”"),
    ({"kind": "tools", "names": ["a", "b"]}, "tools offered: a, b",
     "the tools offered cut to a, b"),
    # damaged, or of a kind this looptrace does not know: its kind, never an error
    ({"kind": "message"}, "message", "message"),
    ({"kind": "rewind_to", "step": 3}, "rewind to", "rewind to"),
    ("not an edit", "edit", "edit"),
])
def test_recorded_edits_are_described(edit: object, short: str, long: str) -> None:
    assert describe_json(edit) == short
    assert what_json(edit) == long


@pytest.mark.parametrize(("edit", "error"), [
    ("{bad json", "the edit is not valid JSON (Expecting property name enclosed in double "
                  "quotes at column 2)"),
    ([1, 2], 'an edit is an object with a kind, e.g. {"kind": "tool_result", "text": "..."}'),
    ({"kind": "rewind"}, "unknown edit 'rewind' (one of: message, drop, insert, system, "
                         "model, tools, settings, reply, tool_result, tool_args, raise, "
                         "state, drop_middleware, move_middleware)"),
    ({"kind": "message", "text": "x"}, "the message edit needs position"),
    ({"kind": "drop", "position": True}, "the drop edit needs a whole-number position from "
                                          "0, not True"),
    ({"kind": "drop", "position": -1}, "the drop edit needs a whole-number position from "
                                        "0, not -1"),
    ({"kind": "system", "text": 3}, "the system edit's text must be text, not int"),
    ({"kind": "tool_args", "args": [1]}, "the tool_args edit needs args: an object"),
    ({"kind": "tools", "names": "a"}, "the tools edit's names must be a list"),
    ({"kind": "insert", "position": 0, "text": "x", "role": "robot"},
     "insert: role must be human, ai, system or tool, not 'robot'"),
    ({"kind": "insert", "position": 0, "text": "x", "role": "tool"},
     "insert: a tool message needs the tool_call_id it answers"),
    ({"kind": "model", "model": "  "}, "the model edit needs a model: an init_chat_model "
                                       "name or offline"),
    ({"kind": "reply"}, "the reply edit needs text or tool_calls"),
    ({"kind": "reply", "tool_calls": [{"args": {}}]}, "each tool call needs a name"),
    ({"kind": "system", "text": "x", "colour": "red"}, "the system edit has no field 'colour'"),
    ({"kind": "system", "text": "x", "from_now_on": "yes"},
     "the system edit's from_now_on must be true or false"),
    ({"kind": "state", "text": "{bad"}, "the state edit is not valid JSON (Expecting "
                                        "property name enclosed in double quotes at column 2)"),
    ({"kind": "state", "values": {}}, 'the state edit is a JSON object of state keys and '
                                      'their new values, e.g. {"count": 3}'),
    ({"kind": "state", "text": "[1]"}, 'the state edit is a JSON object of state keys and '
                                       'their new values, e.g. {"count": 3}'),
])
def test_bad_edits_are_one_line(edit: object, error: str) -> None:
    with pytest.raises(BadEdit) as info:
        Edit.of(edit)
    assert str(info.value) == error
    # (caught as the CLI's and the fork API's errors both)
    assert isinstance(info.value, InvalidOption) and isinstance(info.value, RerunError)


def test_a_model_edit_takes_a_chat_model_object_or_a_name_and_refuses_anything_else() -> None:
    class Model:
        model_name = "m1"

        def invoke(self, _: object) -> None:
            return None

    assert Edit("model", model=Model()).to_json() == {"kind": "model", "model": "m1"}
    with pytest.raises(BadEdit) as info:
        Edit("model", model=3)
    assert str(info.value) == "the model edit needs a chat model: int 3 is not a BaseChatModel"


REQUEST = {"kind": "model_request", "messages": [{"position": 0}, {"position": 1}],
           "tools": ["get_weather", "get_price"]}


@pytest.mark.parametrize(("edit", "pending", "error"), [
    ({"kind": "message", "position": 2, "text": "x"}, REQUEST,
     "position 2 is outside the request's messages (0..1)"),
    ({"kind": "tools", "names": ["search"]}, REQUEST,
     "the request offers no tool 'search' (it offers: get_weather, get_price)"),
    ({"kind": "tool_args", "args": {}}, REQUEST,
     "a 'tool_args' edit does not apply to a pending model request (here: message, drop, "
     "insert, system, model, tools, settings, reply)"),
    ({"kind": "reply", "text": "x"}, {"kind": "error", "where": "tool"},
     "at a tool error the edit is tool_result"),
    ({"kind": "tool_result", "text": "x"}, {"kind": "state"},
     "a 'tool_result' edit does not apply to a pending state (here: no edit (continue, "
     "step, lap, run or abort))"),
    ({"kind": "state", "values": {"colour": "red"}}, {"kind": "node", "keys": ["count"]},
     "the state has no key 'colour' (its keys: count)"),
    ({"kind": "reply", "text": "x"}, {"kind": "error", "where": "node"},
     "at a node error the edit is state"),
    ({"kind": "state", "values": {"count": 1}}, {"kind": "error", "where": "model"},
     "at a model error the edit is reply"),
    ({"kind": "state", "values": {"count": 1}}, {"kind": "tool_call"},
     "a 'state' edit does not apply to a pending tool call (here: tool_result, "
     "tool_args, raise)"),
    ({"kind": "drop_middleware", "middleware": "X"}, {"kind": "tool_call"},
     "a 'drop_middleware' edit does not apply to a pending tool call (here: tool_result, "
     "tool_args, raise)"),
])
def test_an_edit_that_does_not_fit_what_is_pending_is_one_line(edit: object, pending: dict,
                                                                error: str) -> None:
    with pytest.raises(BadEdit) as info:
        Edit.of(edit).check(pending)
    assert str(info.value) == error


def test_an_insert_may_append_after_the_last_message_and_a_tools_edit_keeps_what_is_offered(
        ) -> None:
    assert Edit.of({"kind": "insert", "position": 2, "text": "x"}).check(REQUEST).position == 2
    assert Edit("tools", names=("get_price",)).check(REQUEST).names == ("get_price",)


def test_from_now_on_is_recorded_only_when_set() -> None:
    e = Edit.of({"kind": "system", "text": "x", "from_now_on": True})
    assert e.to_json() == {"kind": "system", "text": "x", "from_now_on": True}
    assert e.describe() == "system prompt changed (from now on)"
    assert Edit.of({"kind": "system", "text": "x", "from_now_on": False}).to_json() == {
        "kind": "system", "text": "x"}


def test_where_each_kind_is_made_by_a_fork() -> None:
    assert {k for k in KINDS if Edit.of(ONE_OF_EACH[k]).on_model} == {
        "message", "drop", "insert", "system", "model"}
    assert {k for k in KINDS if Edit.of(ONE_OF_EACH[k]).on_tool} == {"tool_result",
                                                                     "tool_args"}
    assert {k for k in KINDS if Edit.of(ONE_OF_EACH[k]).everywhere} == {
        "drop_middleware", "move_middleware"}


def test_a_state_edit_takes_its_values_as_an_object_as_json_text_or_parsed_text() -> None:
    # (the prompt's ``state JSON``, MCP's resume(edit_kind="state", text=JSON), the app)
    want = {"kind": "state", "values": {"count": 41}}
    assert Edit.of({"kind": "state", "text": '{"count": 41}'}).to_json() == want
    assert Edit.of({"kind": "state", "text": {"count": 41}}).to_json() == want
    assert Edit.of({"kind": "state", "state": {"count": 41}}).to_json() == want
    assert Edit("state", text='{"count": 41}').to_json() == want
    e = Edit.of(want)
    assert e.check({"kind": "node", "keys": ["count", "items"]}) is e
    assert e.check({"kind": "error", "where": "node"}) is e
    assert e.describe() == "state changed: count"
    assert e.what() == 'the state\'s count set to {"count": 41}'
    assert describe_json(want) == "state changed: count"
