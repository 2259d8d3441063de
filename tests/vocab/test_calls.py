"""The one decoder of a model call's record (``tracer.vocab.calls``): the request rule
(``system_same`` / ``tool_names``) and the usage rule, on payloads written by hand.

The bugs: each reader had its own rule, and they disagreed (a system prompt of content
blocks kept, turned into text, or lost; a call that names its tools given the schemas
of the last call that wrote them all; a total of 0 for usage without ``total_tokens``
in the captions, input + output in the loop checks)."""

from __future__ import annotations

from typing import Any

import pytest

from tracer.vocab.calls import Requests, Usage, tool_names

W = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
T = {"type": "function", "function": {"name": "get_time", "parameters": {}}}
FLAT = {"name": "search", "input_schema": {}}  # (Anthropic's format)
BLOCKS = [{"type": "text", "text": "You are B."},
          {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]


def test_each_call_gets_what_the_run_last_wrote() -> None:
    calls = [
        {"system": "You are A.", "tools": [W, T, FLAT], "model": "m1"},
        {"system_same": True, "tool_names": ["get_time", "search"]},
        {"system": BLOCKS, "tool_names": ["get_weather"], "model_settings": {"t": 0}},
        {"system_same": True, "tools": [T]},
        {},  # no system prompt, the tools not said
        {"system_same": True, "tool_names": []},
    ]
    r = Requests()
    got = [r.read(p) for p in calls]
    assert [g.system for g in got] == ["You are A.", "You are A.", "You are B.\nBe brief.",
                                       "You are B.\nBe brief.", None, "You are B.\nBe brief."]
    assert got[2].system_recorded == BLOCKS and got[3].system_recorded == BLOCKS
    assert got[0].system_recorded == "You are A."
    assert [g.tool_names for g in got] == [["get_weather", "get_time", "search"],
                                           ["get_time", "search"], ["get_weather"],
                                           ["get_time"], None, []]
    assert [g.tools for g in got] == [[W, T, FLAT], [T, FLAT], [W], [T], [], []]
    assert [g.model for g in got] == ["m1", None, None, None, None, None]
    assert got[2].settings == {"t": 0} and got[3].settings == {}


def test_the_request_as_json_keeps_the_blocks_beside_the_text() -> None:
    req = Requests().read({"system": BLOCKS, "tools": [W], "tool_choice": "auto"})
    assert req.to_dict() == {"system": "You are B.\nBe brief.", "system_blocks": BLOCKS,
                             "tools": [W], "tool_choice": "auto"}
    assert Requests().read({"system": "S"}).to_dict() == {"system": "S", "tools": []}


@pytest.mark.parametrize("payload", [None, "text", 3, [], {"system_same": True},
                                     {"tool_names": "get_weather"}, {"tools": "x"},
                                     {"system": None, "model": 5}])
def test_a_damaged_payload_reads_as_a_call_without_a_request(payload: Any) -> None:
    req = Requests().read(payload)
    assert (req.system, req.system_recorded, req.tools, req.tool_names, req.model) == (
        None, None, [], None, None)


def test_tool_names_prefer_the_schemas() -> None:
    assert tool_names({"tools": [W, {"x": 1}], "tool_names": ["other"]}) == ["get_weather", "?"]
    assert tool_names({"tool_names": ["a", 2]}) == ["a", "2"]
    assert tool_names({}) is None


def test_usage_total_falls_back_to_input_plus_output() -> None:
    assert Usage.of({"usage": {"input_tokens": 100, "output_tokens": 10}}).total == 110
    assert Usage.of({"usage": {"input_tokens": 7}}).total == 7
    reported = Usage.of({"usage": {"input_tokens": 100, "output_tokens": 10,
                                   "total_tokens": 115}})
    assert (reported.input, reported.output, reported.total) == (100, 10, 115)


def test_usage_reads_cache_and_reasoning_counts() -> None:
    u = Usage.of({"usage": {
        "input_tokens": 900, "output_tokens": 50, "total_tokens": 950,
        "input_token_details": {"cache_read": 300, "ephemeral_5m_input_tokens": 100,
                                "ephemeral_1h_input_tokens": 20, "audio": 4},
        "output_token_details": {"priority_reasoning": 30}}})
    assert (u.cache_read, u.cache_write, u.cache_write_5m, u.cache_write_1h, u.reasoning,
            u.audio_in, u.audio_out) == (300, 120, 100, 20, 30, 4, None)
    openai = Usage.of({"usage": {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11,
                                 "input_token_details": {"cache_creation": 6}}})
    assert (openai.cache_write, openai.cache_write_5m) == (6, None)


@pytest.mark.parametrize("usage", [None, {}, "12", [1, 2], {"input_tokens": True},
                                   {"input_tokens": -3, "output_tokens": "4"},
                                   {"total_tokens": 1.5}])
def test_usage_not_reported_is_none_never_zero(usage: Any) -> None:
    u = Usage.of({"usage": usage})
    assert (u.input, u.output, u.total) == (None, None, None)
    assert u.reported == (isinstance(usage, dict) and bool(usage))
