"""``tracer.read.diff``: two real recorded runs, aligned, with the first divergence pinned down.

Every run here is a real ``create_agent`` loop driven by a scripted model and
recorded by ``TraceMiddleware`` into a temporary SQLite file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from pg_kit import store_on
from tracer_kit import get_weather

from tracer import TraceMiddleware
from tracer.cli import main
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.read.diff import diff_runs, message_text
from tracer.read.loader import Run, TraceDB


@tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@tool
def forecast(city: str) -> str:
    """Tomorrow's forecast; fails for places that do not exist."""
    if city == "Atlantis":
        msg = "no such city"
        raise ValueError(msg)
    return f"Rain in {city}"


def lap(city: str, cid: str, name: str = "get_weather") -> AIMessage:
    return AIMessage(content="", tool_calls=[call(name, {"city": city}, cid)])


BASE = [lap("Paris", "c1"), lap("Rome", "c2"), AIMessage(content="Paris and Rome: sunny.")]


def record(db: str, turns: Sequence[AIMessage], name: str, *,
           system_prompt: str = "You are a weather bot.") -> str:
    """Run one scripted agent to completion and return its run id."""
    mw = TraceMiddleware(db=db, run_name=name)
    agent = create_agent(ScriptedChatModel(script=turn_script(list(turns))),
                         tools=[get_weather, get_time, forecast], middleware=[mw],
                         system_prompt=system_prompt)
    try:
        agent.invoke({"messages": [("user", "Weather in Paris and Rome?")]})
    except ValueError:
        pass  # a tool error aborts the run: recorded as an error run
    mw.flush()
    with TraceDB(db) as tdb:
        return next(r.id for r in tdb.runs() if r.name == name)


def load(db: str, *ids: str) -> list[Run]:
    with TraceDB(db) as tdb:
        return [tdb.run(i) for i in ids]


def step_of(run: Run, lap_no: int, hook: str, phase: str) -> int:
    """The replay step index of the first event with this lap, hook and phase."""
    return next(i for i, e in enumerate(run.events)
                if e.lap == lap_no and e.hook == hook and e.phase == phase)


@pytest.fixture(scope="module")
def runs(engine: str, tmp_path_factory: pytest.TempPathFactory,
         pg_url: str | None) -> tuple[str, dict[str, str]]:
    db = store_on(engine, tmp_path_factory.mktemp("diff"), pg_url)
    ids = {
        "base": record(db, BASE, "base"),
        "same": record(db, BASE, "same"),
        "args": record(db, [BASE[0], lap("Berlin", "c2"), BASE[2]], "args"),
        "tool": record(db, [BASE[0], lap("Rome", "c2", "get_time"), BASE[2]], "tool"),
        "answer": record(db, [*BASE[:2], AIMessage(content="Both cloudy.")], "answer"),
        "extra": record(db, [*BASE[:2], lap("Oslo", "c3"), BASE[2]], "extra"),
        "prompt": record(db, BASE, "prompt", system_prompt="You are a pirate weather bot."),
        "fc": record(db, [BASE[0], lap("Rome", "c2", "forecast"), BASE[2]], "fc"),
        "fc_err": record(db, [BASE[0], lap("Atlantis", "c2", "forecast"), BASE[2]], "fc_err"),
    }
    return db, ids


def test_identical_scenarios_have_no_divergence(runs: tuple[str, dict[str, str]]) -> None:
    db, ids = runs
    a, b = load(db, ids["base"], ids["same"])
    d = diff_runs(a, b)
    assert d.identical
    assert d.first_divergence is None
    assert d.differences == []
    assert d.message_diff == ""
    assert [(r.index_a, r.index_b) for r in d.rows] == [(i, i) for i in range(len(a.events))]
    assert all(r.same for r in d.rows)
    assert [ld.segment for ld in d.laps] == ["lap 0", "lap 1", "lap 2", "lap 3", "end"]


def test_different_arguments_at_lap_2_is_found_at_that_step(
        runs: tuple[str, dict[str, str]]) -> None:
    db, ids = runs
    a, b = load(db, ids["base"], ids["args"])
    d = diff_runs(a, b)
    first = d.first_divergence
    assert first is not None
    expected = step_of(a, 2, "wrap_model_call", "exit")  # the reply that asked for Berlin
    assert (first.lap, first.index_a, first.index_b, first.kind) == (
        2, expected, step_of(b, 2, "wrap_model_call", "exit"), "different_arguments")
    assert '{"city": "Rome"}' in first.description
    assert '{"city": "Berlin"}' in first.description
    assert '-  -> get_weather({"city": "Rome"})' in first.detail
    assert '+  -> get_weather({"city": "Berlin"})' in first.detail
    # Every difference, per lap: only lap 2 differs (the call, the tool run, its result).
    by_lap = {ld.segment: [x.kind for x in ld.differences] for ld in d.laps}
    assert by_lap == {"lap 0": [], "lap 1": [], "end": [], "lap 3": [],
                      "lap 2": ["different_arguments", "different_arguments", "tool_result"]}
    assert "+  Sunny in Berlin, 21 C" in d.message_diff.splitlines()


def test_different_tool(runs: tuple[str, dict[str, str]]) -> None:
    db, ids = runs
    a, b = load(db, ids["base"], ids["tool"])
    first = diff_runs(a, b).first_divergence
    assert first is not None
    assert (first.kind, first.lap, first.index_a) == (
        "different_tool", 2, step_of(a, 2, "wrap_model_call", "exit"))
    assert "get_weather in A but get_time in B" in first.description


def test_different_answer(runs: tuple[str, dict[str, str]]) -> None:
    db, ids = runs
    a, b = load(db, ids["base"], ids["answer"])
    d = diff_runs(a, b)
    assert d.first_divergence is not None
    assert (d.first_divergence.kind, d.first_divergence.lap, d.first_divergence.index_b) == (
        "different_answer", 3, step_of(b, 3, "wrap_model_call", "exit"))
    assert [x.kind for x in d.differences] == ["different_answer"]


def test_extra_lap(runs: tuple[str, dict[str, str]]) -> None:
    db, ids = runs
    a, b = load(db, ids["base"], ids["extra"])
    d = diff_runs(a, b)
    first = d.first_divergence
    assert first is not None
    # The runs part where lap 3's model asked for one more tool call instead of answering.
    assert (first.kind, first.lap, first.index_a, first.index_b) == (
        "tool_calls", 3, step_of(a, 3, "wrap_model_call", "exit"),
        step_of(b, 3, "wrap_model_call", "exit"))
    assert "answered in plain text in A but asked for 1 tool call (get_weather) in B" in (
        first.description)
    kinds = [x.kind for x in d.differences]
    assert kinds.count("extra_lap") == 1
    extra = next(x for x in d.differences if x.kind == "extra_lap")
    assert (extra.lap, extra.index_a, extra.index_b) == (4, None, step_of(b, 4, "before_model",
                                                                         "fire"))
    lap4 = next(ld for ld in d.laps if ld.segment == "lap 4")
    assert all(r.index_a is None and r.index_b is not None for r in lap4.rows)
    # The end of both runs (after_agent) still lines up.
    end = next(ld for ld in d.laps if ld.segment == "end")
    assert end.identical and end.rows[0].index_a is not None and end.rows[0].index_b is not None


def test_a_different_system_prompt_is_setup_not_behaviour(
        runs: tuple[str, dict[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = runs
    a, b = load(db, ids["base"], ids["prompt"])
    d = diff_runs(a, b)
    # The scripted model behaves the same with either prompt: no divergence, one setup note.
    assert not d.identical
    assert d.first_divergence is None
    assert [(x.kind, x.lap, x.index_a) for x in d.setup] == [
        ("system_prompt", 1, step_of(a, 1, "wrap_model_call", "enter"))]
    assert "+You are a pirate weather bot." in d.setup[0].detail
    assert d.same_behaviour
    # the verdict and the exit status agree: same behaviour, exit 0 (set-up listed)
    assert main(["diff", ids["base"], ids["prompt"], "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "setup (system_prompt): lap 1, step 3 (A) / 3 (B)" in out
    assert "same behaviour" in out
    assert main(["diff", ids["base"], ids["prompt"], "--db", str(db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["identical"], data["same_behaviour"]) == (False, True)


def test_the_same_conversation_through_two_providers_behaves_the_same(
        sample_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    """openai-weather and anthropic-weather: another model and wire format, the same
    hooks, calls, arguments, answers and status: "same behaviour", and exit 0."""
    with TraceDB(sample_store) as tdb:
        ids = {r.name: r.id for r in tdb.runs()}
    assert main(["diff", ids["openai-weather"], ids["anthropic-weather"],
                 "--db", str(sample_store)]) == 0
    out = capsys.readouterr().out
    assert "setup (model)" in out and "same behaviour" in out
    assert "first divergence" not in out
    # a run that behaves differently: exit 1, and the text says where
    assert main(["diff", ids["openai-weather"], ids["openai-shopping"],
                 "--db", str(sample_store)]) == 1
    out = capsys.readouterr().out
    assert "first divergence" in out and "same behaviour" not in out


def test_every_difference_is_in_one_lap_or_the_run_level_list(sample_store: str) -> None:
    """The Compare page counts the differences once and lists each once: the laps'
    differences plus the run-level ones are exactly ``differences``."""
    with TraceDB(sample_store) as tdb:
        top = [tdb.run(r.id) for r in tdb.runs() if not r.parent_id]
    checked = 0
    for a, b in zip(top, top[1:], strict=False):
        d = diff_runs(a, b)
        listed = [x for ld in d.laps for x in ld.differences] + d.run_level
        assert sorted(map(id, listed)) == sorted(map(id, d.differences))
        # (a status difference is counted once: in the lap where the run ended, or
        # at the run level when no lap holds it)
        checked += a.summary.status != b.summary.status
        assert [x.kind for x in d.differences].count("status") == (
            a.summary.status != b.summary.status)
    assert checked, "a pair whose status differs"


def test_a_prompt_change_that_changes_behaviour(store_db: str) -> None:
    db = store_db
    a_id = record(db, BASE, "before")
    b_id = record(db, [BASE[0], lap("Berlin", "c2"), BASE[2]], "after",
                  system_prompt="You are a pirate weather bot.")
    a, b = load(db, a_id, b_id)
    d = diff_runs(a, b)
    assert [x.kind for x in d.setup] == ["system_prompt"]  # reported once, not per lap
    assert d.first_divergence is not None
    assert (d.first_divergence.kind, d.first_divergence.lap) == ("different_arguments", 2)


def test_tool_error_and_status(runs: tuple[str, dict[str, str]]) -> None:
    db, ids = runs
    a, b = load(db, ids["fc"], ids["fc_err"])
    assert (a.summary.status, b.summary.status) == ("completed", "error")
    d = diff_runs(a, b)
    kinds = [(x.kind, x.lap) for x in d.differences]
    assert kinds == [("different_arguments", 2), ("different_arguments", 2), ("error", 2),
                     ("extra_lap", 3), ("status", 3)]
    err = d.differences[2]
    assert err.index_b == step_of(b, 2, "wrap_tool_call", "error")
    assert err.index_a == step_of(a, 2, "wrap_tool_call", "exit")
    assert "tool call forecast raised 'ValueError: no such city' in B" in err.description
    assert "B ended error" in d.differences[-1].description


def record_approval(db: str, name: str, decision: dict[str, str]) -> str:
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    mw = TraceMiddleware(db=db, run_name=name)
    agent = create_agent(
        ScriptedChatModel(script=turn_script([lap("Oslo", "c1", "forecast"),
                                              AIMessage(content="Done.")])),
        tools=[forecast], checkpointer=InMemorySaver(),
        middleware=[mw, HumanInTheLoopMiddleware(interrupt_on={"forecast": True})])
    config = {"configurable": {"thread_id": name}}
    bound = mw.attach(agent)  # the callback handler sees the interrupt and the decision
    bound.invoke({"messages": [("user", "Forecast for Oslo?")]}, config=config)
    bound.invoke(Command(resume={"decisions": [decision]}), config=config)
    mw.flush()
    with TraceDB(db) as tdb:
        return next(r.id for r in tdb.runs() if r.thread_id == name)


def test_a_different_human_decision(store_db: str) -> None:
    db = store_db
    a_id = record_approval(db, "approve", {"type": "approve"})
    b_id = record_approval(db, "reject", {"type": "reject", "message": "Not now."})
    a, b = load(db, a_id, b_id)
    assert [e.hook for e in a.events if e.hook == "resume"] == ["resume"]
    first = diff_runs(a, b).first_divergence
    assert first is not None
    assert (first.kind, first.lap) == ("human_decision", 1)
    assert first.index_a == next(i for i, e in enumerate(a.events) if e.hook == "resume")
    assert '"type": "reject"' in first.description
    assert diff_runs(a, load(db, record_approval(db, "again", {"type": "approve"}))[0]).identical


def test_parallel_calls_align_in_call_order_not_completion_order(store_db: str) -> None:
    db = store_db
    turns = [AIMessage(content="", tool_calls=[
        call("get_weather", {"city": c}, f"c{i}") for i, c in enumerate(
            ["Paris", "Rome", "Oslo", "Lima", "Pune", "Kyiv"])]),
        AIMessage(content="All sunny.")]
    a_id, b_id = record(db, turns, "p1"), record(db, turns, "p2")
    a, b = load(db, a_id, b_id)
    d = diff_runs(a, b)
    assert d.identical, [x.description for x in d.differences]
    paired = [(r.index_a, r.index_b) for r in d.rows if r.index_a is not None]
    for ia, ib in paired:
        ea, eb = a.events[ia], b.events[ib]
        assert (ea.hook, ea.phase, ea.tool_call_id) == (eb.hook, eb.phase, eb.tool_call_id)


def test_different_tool_call_ids_are_not_a_difference(store_db: str) -> None:
    """Real providers invent new call ids on every run: only behaviour counts."""
    db = store_db
    a_id = record(db, BASE, "ids-a")
    b_id = record(db, [lap("Paris", "call_Xy7"), lap("Rome", "toolu_01Q"), BASE[2]], "ids-b")
    a, b = load(db, a_id, b_id)
    assert [c["id"] for m in b.messages for c in m.tool_calls] == ["call_Xy7", "toolu_01Q"]
    assert diff_runs(a, b).identical


def test_message_text_is_readable_and_id_free(runs: tuple[str, dict[str, str]]) -> None:
    db, ids = runs
    (a,) = load(db, ids["base"])
    texts = [message_text(m) for m in a.messages]
    assert texts[0] == "[human]\n  Weather in Paris and Rome?"
    assert texts[1] == '[ai]\n  -> get_weather({"city": "Paris"})'
    assert texts[2] == "[tool get_weather]\n  Sunny in Paris, 21 C"
    assert not any("c1" in t for t in texts)


def test_cli_exit_codes(runs: tuple[str, dict[str, str]], tmp_path: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = runs
    assert main(["diff", ids["base"], ids["same"], "--db", str(db)]) == 0
    assert "identical" in capsys.readouterr().out
    # (prefixes as `looptrace runs` shows them; ids start with their second, so
    # runs of one second share the first 8 characters)
    assert main(["diff", ids["base"][:12], ids["args"][:12], "--db", str(db)]) == 1
    out = capsys.readouterr().out
    assert "first divergence (different_arguments): lap 2" in out
    assert '+  -> get_weather({"city": "Berlin"})' in out
    assert main(["diff", ids["base"], "nope", "--db", str(db)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("looptrace diff: no run 'nope'") and "\n" not in err
    assert main(["diff", ids["base"], ids["same"], "--db", str(tmp_path / "missing.db")]) == 2


def test_cli_json_and_second_database(runs: tuple[str, dict[str, str]], store_db: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = runs
    other = store_db
    b_id = record(other, [*BASE[:2], lap("Oslo", "c3"), BASE[2]], "elsewhere")
    assert main(["diff", ids["base"], b_id, "--db", str(db), "--db-b", str(other),
                 "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["identical"] is False
    assert data["first_divergence"]["kind"] == "tool_calls"
    assert data["first_divergence"]["lap"] == 3
    assert data["b"]["id"] == b_id and data["b"]["laps"] == 4
    assert "extra_lap" in [x["kind"] for ld in data["laps"] for x in ld["differences"]]


def test_a_fresh_recording_of_every_demo_scenario_matches_its_sample_trace(
        sample_store: str, store_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    from tracer.demo.record import record_all

    fresh_db = store_db
    record_all(str(fresh_db), providers=False)
    with TraceDB(fresh_db) as fresh, TraceDB(sample_store) as samples:
        fresh_ids = {r.name: r.id for r in fresh.runs() if not r.parent_id}
        pairs = [(samples.run(r.id), fresh.run(fresh_ids[r.name]))
                 for r in samples.runs() if not r.parent_id and r.name in fresh_ids]
    assert len(pairs) >= 5
    for sample, again in pairs:
        d = diff_runs(sample, again)
        assert d.identical, (sample.summary.name, [x.description for x in d.differences])
        assert d.message_diff == ""
    # Subagent runs are compared too (the CLI diffs the whole run tree).
    parents = [(a.id, b.id) for a, b in pairs if a.children]
    assert parents, "a sample with a subagent run"
    a_id, b_id = parents[0]
    assert main(["diff", a_id, b_id, "--db", str(sample_store), "--db-b", str(fresh_db)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"subagent #1 \S+: identical", out)
    lone = next(a.id for a, _ in pairs if not a.children)
    assert main(["diff", a_id, lone, "--db", str(sample_store), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["subagents"][0]["b"] is None and data["subagents"][0]["diff"] is None


def test_cli_json_counts_steps_from_1_like_the_text(runs: tuple[str, dict[str, str]],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Both forms of ``looptrace diff`` name the same step. The two runs differ in the
    arguments of lap 2's tool call: the model's reply in lap 2 is step 10 (the
    middleware alone records no run start: before_agent, before_model, model
    enter/exit, after_model, tool enter/exit = steps 1-7; lap 2's before_model 8,
    model enter 9, model exit 10)."""
    db, ids = runs
    assert main(["diff", ids["base"], ids["args"], "--db", str(db)]) == 1
    text = capsys.readouterr().out
    assert main(["diff", ids["base"], ids["args"], "--db", str(db), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    first = data["first_divergence"]
    assert (first["kind"], first["lap"], first["step_a"], first["step_b"]) == (
        "different_arguments", 2, 10, 10)
    # (the 0-based index_a / index_b of the Python API are not in the JSON: one number each)
    assert sorted(first) == ["description", "detail", "kind", "lap", "step_a", "step_b"]
    assert f"step {first['step_a']} (A) / {first['step_b']} (B)" in text
    # the alignment counts from 1 too, and has a row for every step of each run
    assert data["alignment"][0] == [1, 1]
    assert sorted(a for a, _ in data["alignment"] if a) == list(range(1, data["a"]["steps"] + 1))
    lap2 = next(ld for ld in data["laps"] if ld["lap"] == 2)
    assert all(d["step_a"] >= 1 for d in lap2["differences"] if d["step_a"] is not None)
