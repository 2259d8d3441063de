"""The playground: a recorded model call re-sent, edited, to a chosen model (offline, or
the real OpenAI adapter against the emulator), beside the recorded answer."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tracer.errors import InvalidOption, LooptraceError, StepOutOfRange
from tracer.wire.playground import playground
from tracer.wire.proxy import WireServer


def _second_call_step(db) -> int:  # noqa: ANN001
    first = playground(db, "openai-weather", 1)
    return first.step + 1


def test_the_second_call_is_re_sent_whole_beside_its_recorded_answer(sample_db):
    res = playground(sample_db, "openai-weather", _second_call_step(sample_db))
    assert res.call == 2 and res.model == "offline"
    types = [m["type"] for m in res.request["messages"]]
    assert types == ["human", "ai", "tool", "tool"]  # multi-turn, with the tool results
    assert len(res.request["messages"][1]["tool_calls"]) == 2
    assert res.recorded is not None and res.recorded["text"].startswith("Here is the weather")
    assert res.answer["text"] == "(offline: no model was asked)"
    # the request in each provider's wire format, by the adapters' own builders
    assert [m["role"] for m in res.wire["openai"]["messages"]][:2] == ["system", "user"]
    assert res.wire["anthropic"]["messages"][0]["role"] == "user"
    assert "tools" in res.wire["ollama"]


def test_an_edited_request_reaches_a_real_adapter_and_its_400(sample_db, monkeypatch):
    step = _second_call_step(sample_db)
    with WireServer(mode="emulate", script="weather") as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-emulator-key-0001")
        ok = playground(sample_db, "openai-weather", step, model="openai:gpt-4o-mini")
        assert ok.answer["text"] and ok.model == "openai:gpt-4o-mini"
        with pytest.raises(LooptraceError, match="400"):
            playground(sample_db, "openai-weather", step, model="openai:gpt-4o-mini",
                       edit={"kind": "drop", "position": 3})


def test_bad_input_is_one_line(sample_db):
    with pytest.raises(InvalidOption, match="outside the request's messages"):
        playground(sample_db, "openai-weather", 1, edit={"kind": "drop", "position": 5})
    with pytest.raises(StepOutOfRange):
        playground(sample_db, "openai-weather", 10_000)
    with pytest.raises(LooptraceError, match="takes the edits"):
        playground(sample_db, "openai-weather", 1, edit={"kind": "reply", "text": "x"})
    with pytest.raises(LooptraceError, match="cannot build the model"):
        playground(sample_db, "openai-weather", 1, model="no-such-provider:nothing")


def test_the_command_prints_both_answers_and_json(sample_db):
    step = _second_call_step(sample_db)
    base = [sys.executable, "-m", "tracer", "playground", "openai-weather", "--db",
            str(sample_db), "--at", str(step)]
    r = subprocess.run([*base, "--edit", '{"kind": "system", "text": "Be brief."}'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "system: Be brief." in r.stdout and "recorded answer:" in r.stdout
    assert "offline answers:" in r.stdout
    r = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=120)
    out = json.loads(r.stdout)
    assert set(out["wire"]) == {"openai", "anthropic", "ollama"}
    r = subprocess.run([*base, "--edit", "{bad"], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "--edit is not valid JSON" in r.stderr
