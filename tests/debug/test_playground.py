"""The playground: a recorded model call re-sent, edited, to a chosen model (offline, the
agent's own, or the real OpenAI adapter against the emulator), beside the recorded answer."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap

import pytest
from cli_kit import cli

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
    # offline, unedited: the record holds this very request, so its answer is served
    assert res.answer["text"] == res.recorded["text"]
    assert res.served.startswith("offline: the recorded answer of the same request")
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


def test_the_command_prints_both_answers_and_json(sample_db, capsys):
    # (in this process, through tracer.cli.main: the command's output and exit code are
    # what a shell gets; three `python -m tracer` processes took most of this file's time)
    step = _second_call_step(sample_db)
    base = ["playground", "openai-weather", "--db", str(sample_db), "--at", str(step)]
    code, out, err = cli(capsys, *base, "--edit", '{"kind": "system", "text": "Be brief."}')
    assert code == 0, err
    assert "system: Be brief." in out and "recorded answer:" in out
    assert "offline answers (offline: no recorded call" in out
    code, out, err = cli(capsys, *base, "--json")
    assert code == 0, err
    assert set(json.loads(out)["wire"]) == {"openai", "anthropic", "ollama"}
    code, out, err = cli(capsys, *base, "--edit", "{bad")
    assert code != 0 and "--edit is not valid JSON" in err


# -- offline: the record's answer to the same request, else what would have been sent ----
def test_offline_with_an_edit_no_record_holds_says_what_the_model_would_be_sent(sample_db):
    # (before: a bare echo, "(offline: no model was asked)", whatever the request)
    res = playground(sample_db, "openai-weather", _second_call_step(sample_db),
                     edit={"kind": "system", "text": "Be brief."})
    assert res.answer["text"] == (
        "[offline] No model was asked, and no recorded call had this request. The model "
        "would have been sent 4 messages, the last a tool get_weather message: "
        "'Sunny, 21°C in Bergen.'; a system prompt of 9 characters; the tools get_weather.")
    assert res.served == ("offline: no recorded call of this run or its forks had this "
                          "request; no model was asked")


def test_offline_serves_a_forks_recorded_answer_to_the_same_edit(sample_db, tmp_path):
    """A fork recorded with an edit is a cassette for that edit: the playground offline,
    with the same edit at the same call, answers what the fork's model answered."""
    from tracer.read.loader import TraceDB
    from tracer.vocab.edits import Edit
    from tracer.whatif.rerun import rerun

    db = tmp_path / "samples.db"
    shutil.copy(sample_db, db)
    first = playground(db, "weather", 1)  # (the first model call)
    run, step = first.run, first.step
    edit = {"kind": "system", "text": "Answer like a pirate."}
    before = playground(db, run, step, edit=edit)
    assert before.served.startswith("offline: no recorded call")
    fork = rerun(run, agent="tracer.demo.factories:weather", db=db, at=step,
                      edit=Edit.of(edit))
    after = playground(db, run, step, edit=edit)
    assert after.served.startswith("offline: the recorded answer of the same request")
    assert fork.run_id[:12] in after.served
    with TraceDB(db) as tdb:
        ai = next(m for m in tdb.run(fork.run_id).messages if m.type == "ai")
    assert after.answer["tool_calls"] == [{"name": "get_weather", "args": {"city": "Oslo"},
                                          "id": ai.data["data"]["tool_calls"][0]["id"]}]


# -- the agent's own model ---------------------------------------------------------------
AGENT_MODULE = """
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from tracer.testing import ScriptedChatModel


def said(messages):
    return AIMessage(f"my agent's model read {len(messages)} messages; the last: "
                     f"{messages[-1].content}")


def make_agent(middleware=()):
    return create_agent(ScriptedChatModel(model_name="my-model", script=said), [],
                        middleware=list(middleware))


def make_graph(middleware=()):
    from typing_extensions import TypedDict
    from langgraph.graph import END, START, StateGraph

    class S(TypedDict):
        x: int

    g = StateGraph(S)
    g.add_node("inc", lambda s: {"x": s["x"] + 1})
    g.add_edge(START, "inc")
    g.add_edge("inc", END)
    return g.compile()
"""


@pytest.fixture
def my_agent(tmp_path, monkeypatch) -> str:
    (tmp_path / "pg_my_agent.py").write_text(textwrap.dedent(AGENT_MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "pg_my_agent", raising=False)
    return "pg_my_agent"


def test_agent_asks_the_factorys_own_model(sample_db, my_agent, capsys):
    from cli_kit import cli

    code, out, err = cli(capsys, "playground", "openai-weather", "--db", str(sample_db),
                         "--at", "1", "--agent", f"{my_agent}:make_agent",
                         "--edit", '{"kind": "message", "position": 0, "text": "And Rome?"}')
    assert code == 0, err
    assert f"agent {my_agent}:make_agent (my-model) answers" in out
    # the system prompt and the edited question: two messages, the model's own reply
    assert "my agent's model read 2 messages; the last: And Rome?" in out
    with pytest.raises(LooptraceError, match="names no model|asks the agent's own model"):
        playground(sample_db, "openai-weather", 1, model="agent")


def test_agent_that_is_no_create_agent_or_cannot_be_imported_is_one_line(sample_db, my_agent,
                                                                          capsys):
    from cli_kit import cli

    code, _, err = cli(capsys, "playground", "openai-weather", "--db", str(sample_db),
                       "--at", "1", "--agent", f"{my_agent}:make_graph")
    assert code == 1
    assert err.strip().endswith("built no create_agent agent: its graph has no model node "
                                "to take the model from")
    assert len(err.strip().splitlines()) == 1
    code, _, err = cli(capsys, "playground", "openai-weather", "--db", str(sample_db),
                       "--at", "1", "--agent", "no_such_module_here:make")
    assert code == 1 and "cannot import the agent factory" in err
    assert len(err.strip().splitlines()) == 1
