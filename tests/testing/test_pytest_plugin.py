"""The pytest plugin (tracer/testing/plugin.py, tracer/testing/fixture.py), run with pytester:
each inner test session is a real pytest run of real create_agent agents driven by
scripted models, in this process (``run_inline``: the plugin uninstalls its recording at
unconfigure), or in a subprocess where a test needs a fresh interpreter (``run_inner``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_kit import cli
from pytester_kit import run_inline, run_inner

from tracer.db.schema import SCHEMA_VERSION

# (imported at collection: a module first imported inside a pytester test is dropped
# from sys.modules at its teardown)
from tracer.interop.exchange import read_trace

pytest_plugins = ["pytester"]

# The agent the inner tests run: a scripted model asks for the weather, then for two
# prices in parallel, then answers.
AGENT = '''
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer.demo.models import ScriptedChatModel, call, turn_script


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"Sunny in {city}"


@tool
def get_price(item: str) -> str:
    """Price of an item."""
    return f"{item}: 10 EUR"


def model(answer="Done."):
    return ScriptedChatModel(script=turn_script([
        AIMessage(content="", id="a1", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage(content="", id="a2", tool_calls=[call("get_price", {"item": "tea"}, "c2"),
                                                    call("get_weather", {"city": "Rome"}, "c3")]),
        AIMessage(content=answer, id="a3"),
    ]))


def agent(m=None):
    return create_agent(m or model(), tools=[get_weather, get_price])


def ask(a, text="Weather and prices?"):
    return a.invoke({"messages": [{"role": "user", "content": text}]})
'''


@pytest.fixture
def inner(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(agentkit=AGENT)
    return pytester


def _run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    return run_inline(p, *args)


def _runs(db: Path) -> list[tuple[str, str | None, dict]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT id, parent_id, metadata FROM runs ORDER BY started_at").fetchall()
    finally:
        con.close()
    return [(r[0], r[1], json.loads(r[2]) if r[2] else {}) for r in rows]


def test_every_run_is_recorded_and_tagged_with_its_test(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_a='''
import pytest
from agentkit import agent, ask

def test_one():
    ask(agent())

def test_two():
    ask(agent())
    ask(agent())

def test_none():
    assert 1 + 1 == 2

@pytest.fixture
def answered():
    return ask(agent())

def test_fixture_run(answered):
    assert answered["messages"][-1].content == "Done."
''')
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(passed=4)
    runs = [r for r in _runs(inner.path / "trace.db") if r[1] is None]
    tags = [r[2]["pytest"]["nodeid"] for r in runs]
    assert tags == ["test_a.py::test_one", "test_a.py::test_two", "test_a.py::test_two",
                    "test_a.py::test_fixture_run"]
    assert all(r[2]["looptrace"]["recorded_by"] == "pytest --looptrace" for r in runs)
    # each run is named after its test, not after its graph ("LangGraph": issue 39, item 20)
    con = sqlite3.connect(inner.path / "trace.db")
    names = [n for (n,) in con.execute(
        "SELECT name FROM runs WHERE parent_id IS NULL ORDER BY started_at")]
    con.close()
    assert names == ["test_one", "test_two", "test_two", "test_fixture_run"]


def test_off_unless_asked_and_a_suite_without_langchain_runs(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_b='''
from agentkit import agent, ask

def test_one():
    ask(agent())
''')
    _run(inner).assert_outcomes(passed=1)
    assert not list(inner.path.glob("*.db"))
    # without LangChain importable at all: the plugin is loaded, the suite runs
    inner.makepyfile(test_b='''
import pytest

def test_plain():
    with pytest.raises(ImportError):
        import langchain_core  # noqa: F401
''')
    inner.makeconftest('''
import sys
sys.modules["langchain_core"] = None  # (import langchain_core now fails)
''')
    # (in a subprocess: this process has LangChain imported already)
    res = run_inner(inner, "--looptrace=trace.db")
    res.assert_outcomes(passed=1)


def test_a_session_in_another_ones_process_records_apart_and_leaves_nothing(
        inner: pytest.Pytester, tmp_path: Path) -> None:
    """pytester's in-process sessions, and any session run inside another's process: the
    plugin's recording goes over the one recording now (here one standing for an outer
    ``pytest --looptrace``) and comes off at unconfigure. Before, the second session
    got the first one's handler ("installed once per process") and recorded into its
    database, tagged with both sessions' tests, and the hook stayed after the session."""
    import gc
    import importlib

    from tracer.record import autotrace
    from tracer.record.callbacks import _HANDLERS

    inner.makepyfile(test_i="""
from agentkit import agent, ask

def test_inside(looptrace):
    ask(agent())
    assert len(looptrace.run_ids) == 1
""")
    outer = autotrace.push(tmp_path / "outer.db", how="the outer session")
    try:
        _run(inner, "--looptrace=trace.db").assert_outcomes(passed=1)
        _run(inner).assert_outcomes(passed=1)  # (the fixture's temporary database)
        assert autotrace.active_handler() is outer
        gc.collect()  # (an exit hook left registered would keep its handler alive)
        assert [h for h in list(_HANDLERS) if isinstance(h, autotrace.AutoTraceHandler)
                and h is not outer] == []
        inner.syspathinsert()
        kit = importlib.import_module("agentkit")
        kit.ask(kit.agent())  # (the outer session's own run, after the inner ones)
    finally:
        autotrace.uninstall(outer)
    assert autotrace.active_handler() is None
    inside = [meta for _, parent, meta in _runs(inner.path / "trace.db") if parent is None]
    assert [meta["pytest"]["nodeid"] for meta in inside] == ["test_i.py::test_inside"]
    (mine,) = [meta for _, parent, meta in _runs(tmp_path / "outer.db") if parent is None]
    assert "pytest" not in mine
    assert mine["looptrace"]["recorded_by"] == "the outer session"


def test_assertions_pass(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_c='''
from agentkit import agent, ask

def test_ok(looptrace):
    ask(agent())
    assert len(looptrace.run_ids) == 1
    looptrace.assert_clean()
    looptrace.assert_tools(["get_weather", {"get_price", "get_weather"}])
    looptrace.assert_laps(max=3)
''')
    _run(inner, "--looptrace=trace.db").assert_outcomes(passed=1)


def test_assertions_fail_with_readable_messages(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_d='''
from langchain_core.messages import AIMessage
from tracer.demo.models import ScriptedChatModel, call, turn_script
from agentkit import agent, ask

def test_tools(looptrace):
    ask(agent())
    looptrace.assert_tools(["get_weather", "get_price"])

def test_laps(looptrace):
    ask(agent())
    looptrace.assert_laps(max=2)

def test_dirty(looptrace):
    # the model never stops asking for tools: LangGraph's recursion limit ends the run
    import pytest
    from langgraph.errors import GraphRecursionError
    m = ScriptedChatModel(script=turn_script([AIMessage(content="", id=f"x{i}", tool_calls=[
        call("get_weather", {"city": f"c{i}"}, f"z{i}")]) for i in range(20)]))
    with pytest.raises(GraphRecursionError):
        agent(m).invoke({"messages": [{"role": "user", "content": "go"}]},
                        {"recursion_limit": 5})
    looptrace.assert_clean()

def test_no_run(looptrace):
    looptrace.assert_laps(max=1)
''')
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(failed=4)
    out = res.stdout.str()
    assert "tool calls differ at turn 2:" in out
    assert "expected ['get_weather', 'get_price']" in out
    assert "recorded ['get_weather', {'get_price', 'get_weather'}]" in out
    assert "took 3 laps, more than the 2 allowed" in out
    assert "1 error finding in the recorded runs:" in out  # (issue 39: "finding(s)")
    assert "recursion-limit" in out
    assert "no LangChain run was recorded for test_d.py::test_no_run" in out


# A middleware with a key of its own (``visits``, counted before each model call), for
# assert_state: the recorded final state is what the graph returned.
COUNTED = '''
from typing import NotRequired

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, AgentState
from agentkit import get_price, get_weather, model


class Counted(AgentState):
    visits: NotRequired[int]


class Count(AgentMiddleware):
    state_schema = Counted

    def before_model(self, state, runtime):
        return {"visits": state.get("visits", 0) + 1}


def counted_agent():
    return create_agent(model(), tools=[get_weather, get_price], middleware=[Count()])
'''


def test_assert_state_passes_and_fails_with_what_the_record_holds(
        inner: pytest.Pytester) -> None:
    inner.makepyfile(counted=COUNTED, test_s='''
import pytest
from agentkit import ask
from counted import counted_agent

def test_state_ok(looptrace):
    out = ask(counted_agent())
    assert out["visits"] == 3  # (the graph's own final state)
    assert looptrace.state()["visits"] == 3
    looptrace.assert_state(visits=3)
    looptrace.assert_state({"visits": 3})
    looptrace.assert_state(visits=lambda n: n >= 2)

def test_state_wrong_value(looptrace):
    ask(counted_agent())
    looptrace.assert_state(visits=5)

def test_state_missing_key(looptrace):
    ask(counted_agent())
    looptrace.assert_state(todos=[])

def test_state_failing_predicate(looptrace):
    ask(counted_agent())
    def at_most_two(n):
        return n <= 2
    looptrace.assert_state(visits=at_most_two)

def test_state_messages_is_a_usage_error(looptrace):
    ask(counted_agent())
    looptrace.assert_state(messages=[])
''')
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(passed=1, failed=4)
    out = res.stdout.str()
    assert "visits: expected 5" in out
    assert "recorded 3" in out
    assert "todos: not in the state (its keys: visits)" in out
    assert "visits: 3 fails at_most_two" in out
    assert "assert_state reads the keys other than messages" in out


def test_a_failed_test_names_its_runs_and_writes_their_html(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_e='''
from agentkit import agent, ask

def test_fails():
    ask(agent())
    assert False, "boom"

def test_passes():
    ask(agent())
''')
    res = _run(inner, "--looptrace=trace.db", "--looptrace-html=replays")
    res.assert_outcomes(failed=1, passed=1)
    runs = [r for r in _runs(inner.path / "trace.db") if r[1] is None]
    failed = [r[0] for r in runs if r[2]["pytest"]["nodeid"] == "test_e.py::test_fails"]
    assert len(failed) == 1
    out = res.stdout.str()
    assert "looptrace runs" in out and f"run {failed[0]}:" in out
    pages = list((inner.path / "replays").glob("*.html"))
    assert [p.name for p in pages] == [f"test_e.py_test_fails-{failed[0][:12]}.html"]
    assert "get_weather" in pages[0].read_text(encoding="utf-8")


# -- cassettes ---------------------------------------------------------------------

CASSETTE_TESTS = '''
from langchain_core.messages import AIMessage
from tracer.demo.models import ScriptedChatModel, turn_script
from agentkit import agent, ask, model


def silent():
    """A model with nothing to say: any call that reaches it fails the test."""
    return ScriptedChatModel(script=turn_script([]))


def test_agent(looptrace):
    record = looptrace._state.record
    with looptrace.cassette("cassettes/weather.jsonl"):
        out = ask(agent(model() if record else silent()), QUESTION)
    assert out["messages"][-1].content == "Done."
    looptrace.assert_tools(["get_weather", {"get_price", "get_weather"}])
    looptrace.assert_clean()
'''


def _first_questions(path: Path) -> list[str]:
    """The first human message of each run in the trace file ``path``, in file order.
    (Read as JSON, not through the loader: a pytester test that imports numpy in this
    process would drop it from sys.modules at its teardown.)"""
    _header, rows = read_trace(path)
    firsts: dict[str, str] = {}
    for table, row in rows:
        if table == "messages" and row["type"] == "human":
            firsts.setdefault(row["run_id"], row["text"])
    return list(firsts.values())


def _imports(p: pytest.Pytester, capsys: pytest.CaptureFixture[str], path: Path) -> None:
    """``looptrace import`` takes the file."""
    code, _out, err = cli(capsys, "import", str(path), "--db", str(p.path / "imported.db"))
    assert code == 0, err


def _cassette_test(p: pytest.Pytester, question: str = "Weather and prices?") -> None:
    p.makepyfile(test_cass=f"QUESTION = {question!r}\n" + CASSETTE_TESTS)


def test_cassette_record_then_rerun_offline(inner: pytest.Pytester) -> None:
    _cassette_test(inner)
    # no cassette yet, not in record mode: one clear error
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(failed=1)
    assert "no such cassette (run the test with --looptrace-record to record it)" in (
        res.stdout.str())
    # record mode: the (scripted) model answers and the cassette is written
    _run(inner, "--looptrace=trace.db", "--looptrace-record").assert_outcomes(passed=1)
    cassette = inner.path / "cassettes" / "weather.jsonl"
    lines = cassette.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["format"] == "looptrace-trace"
    assert sum(1 for ln in lines if '"table": "runs"' in ln) == 1
    # replay: every model call served from the cassette (the model itself has nothing)
    _run(inner, "--looptrace=trace2.db").assert_outcomes(passed=1)
    # and without --looptrace: the fixture records into a temporary database
    _run(inner).assert_outcomes(passed=1)


def test_cassette_miss_fails_with_the_diff(inner: pytest.Pytester,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _cassette_test(inner)
    _run(inner, "--looptrace=trace.db", "--looptrace-record").assert_outcomes(passed=1)
    _cassette_test(inner, "What is the weather in Paris?")
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(failed=1)
    out = res.stdout.str()
    assert "CassetteMiss: model call 1: not in the cassette" in out
    assert "-  Weather and prices?" in out and "+  What is the weather in Paris?" in out
    assert "1 run(s) recorded" in out  # (this session's runs only: trace.db is kept)
    # record mode: the new question is sent to the model and its run ADDED to the
    # cassette: every line it held is kept (the header's run count aside)
    path = inner.path / "cassettes" / "weather.jsonl"
    before = path.read_text(encoding="utf-8").splitlines()
    _run(inner, "--looptrace=trace.db", "--looptrace-record").assert_outcomes(passed=1)
    after = path.read_text(encoding="utf-8").splitlines()
    assert after[1:len(before)] == before[1:]
    assert json.loads(before[0])["runs"] == 1 and json.loads(after[0])["runs"] == 2
    assert json.loads(after[0])["root"] == json.loads(before[0])["root"]
    assert not any("What is the weather in Paris?" in ln for ln in before)
    assert any("What is the weather in Paris?" in ln for ln in after[len(before):])
    # still a trace file of our format: two runs, one per question, and it imports
    assert _first_questions(path) == ["Weather and prices?", "What is the weather in Paris?"]
    _imports(inner, capsys, path)
    # and both questions now replay offline from it, the old one included
    _run(inner, "--looptrace=trace.db").assert_outcomes(passed=1)
    _cassette_test(inner, "Weather and prices?")
    _run(inner, "--looptrace=trace.db").assert_outcomes(passed=1)
    # a record-mode session that misses nothing leaves the file alone
    _run(inner, "--looptrace=trace.db", "--looptrace-record").assert_outcomes(passed=1)
    assert path.read_text(encoding="utf-8").splitlines() == after


@pytest.mark.parametrize(("content", "said"), [
    ('{"hello": "world"}\n', "not a looptrace trace file"),
    (None, "malformed JSON"),  # truncated in the middle of a line
])
def test_a_cassette_not_ours_or_truncated_is_one_clear_error(
        inner: pytest.Pytester, content: str | None, said: str) -> None:
    _cassette_test(inner)
    _run(inner, "--looptrace=trace.db", "--looptrace-record").assert_outcomes(passed=1)
    path = inner.path / "cassettes" / "weather.jsonl"
    text = path.read_text(encoding="utf-8")
    path.write_text(content if content is not None else text[: len(text) * 2 // 3],
                    encoding="utf-8")
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(failed=1)
    assert "TraceFileError" in res.stdout.str() and said in res.stdout.str()


# -- a real provider adapter, offline from a bundled cassette -----------------------

SAMPLE = Path(__file__).resolve().parents[2] / "sample_traces" / "provider-openai-weather.jsonl"


def _openai_weather_agent(system: str) -> object:
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    from tracer.demo.scenarios import get_weather

    # (nothing listens on port 9: a call that reached the provider would fail)
    model = ChatOpenAI(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1",
                       api_key="sk-none", max_retries=0)  # type: ignore[arg-type]
    return create_agent(model, tools=[get_weather], system_prompt=system)


def test_a_chatopenai_agent_runs_offline_from_the_bundled_cassette() -> None:
    """The sample was recorded through the emulator with the real ChatOpenAI adapter
    (TraceMiddleware: its wrap_model_call view is matched)."""
    from tracer.testing.fixture import play
    from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM

    agent = _openai_weather_agent(WEATHER_SYSTEM)
    with play(SAMPLE) as served:
        out = agent.invoke({"messages": [{"role": "user", "content": WEATHER_PROMPT}]})
    assert served.served == 2 and served.misses == 0
    assert "Oslo: Light snow" in out["messages"][-1].content
    tools = [m.name for m in out["messages"] if m.type == "tool"]
    assert sorted(tools) == ["get_weather", "get_weather"]


def test_another_system_prompt_is_a_miss_with_the_diff() -> None:
    from tracer.testing.fixture import CassetteMiss, play
    from tracer.wire.scenarios import WEATHER_PROMPT

    agent = _openai_weather_agent("You are a terse assistant.")
    with pytest.raises(CassetteMiss) as info, play(SAMPLE):
        agent.invoke({"messages": [{"role": "user", "content": WEATHER_PROMPT}]})
    text = str(info.value)
    assert "-[system] You are a helpful weather assistant. Use the tools." in text
    assert "+[system] You are a terse assistant." in text


def _export_of_schema2(out: Path) -> Path:
    """One run of the schema-2 fixture database as an export of that schema (its rows
    as that version stored them)."""
    src = Path(__file__).resolve().parents[1] / "fixtures" / "schema2.db"
    con = sqlite3.connect(src)
    con.row_factory = sqlite3.Row
    try:
        (root,) = con.execute("SELECT id FROM runs WHERE parent_id IS NULL "
                              "ORDER BY started_at LIMIT 1").fetchone()
        lines = [json.dumps({"format": "looptrace-trace", "version": 1, "schema_version": 2,
                             "root": root, "runs": 1})]
        for table, key in (("runs", "id"), ("events", "run_id"), ("messages", "run_id")):
            for row in con.execute(f"SELECT * FROM {table} WHERE {key} = ?", (root,)):
                lines.append(json.dumps({"table": table, "row": dict(row)}))
    finally:
        con.close()
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_an_older_schema_cassette_is_migrated_when_read(tmp_path: Path) -> None:
    from tracer.testing.fixture import load_cassettes

    path = _export_of_schema2(tmp_path / "old.jsonl")
    work = tmp_path / "work"
    work.mkdir()
    (cassette,) = load_cassettes(path, work)
    calls = [c for cs in cassette.model_calls.values() for c in cs]
    assert calls and all(c.request.messages and c.outcomes for c in calls)


def test_record_mode_on_an_older_schema_cassette_writes_it_whole_in_ours(
        inner: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """Rows of two schemas never share a file: the schema-2 run is written again as the
    import migrated it, the new run after it, under one header of our schema."""
    _cassette_test(inner)
    (inner.path / "cassettes").mkdir()
    path = _export_of_schema2(inner.path / "cassettes" / "weather.jsonl")
    old_root = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])["root"]
    _run(inner, "--looptrace=trace.db", "--looptrace-record").assert_outcomes(passed=1)
    header, rows = read_trace(path)
    assert header["schema_version"] == SCHEMA_VERSION and header["runs"] == 2
    runs = [r["id"] for t, r in rows if t == "runs"]
    assert runs[0] == old_root and len(runs) == 2
    assert _first_questions(path)[-1] == "Weather and prices?"
    assert any(t == "events" and r["run_id"] == old_root for t, r in rows)  # (migrated)
    _imports(inner, capsys, path)


def test_a_newer_schema_cassette_is_one_clear_error(tmp_path: Path) -> None:
    from tracer.errors import TraceFileError
    from tracer.testing.fixture import play

    text = SAMPLE.read_text(encoding="utf-8").split("\n", 1)
    header = json.loads(text[0])
    header["schema_version"] = 99
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps(header) + "\n" + text[1], encoding="utf-8")
    with pytest.raises(TraceFileError, match="written by a newer looptrace"), play(path):
        pass


DEEP = '''
from deepagents import create_deep_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer.demo.models import ScriptedChatModel, call


@tool
def lookup_fact(topic: str) -> str:
    """Look a fact up in the encyclopedia."""
    return "Oslo, about 720,000 people"


def script(messages):
    researcher = any("RESEARCHER" in str(m.content) for m in messages if m.type == "system")
    if any(m.type == "ai" for m in messages):
        return AIMessage(str(messages[-1].content))
    if researcher:
        return AIMessage("", tool_calls=[call("lookup_fact", {"topic": "Norway"}, "call_2")])
    return AIMessage("", tool_calls=[call("task", {"description": "The capital of Norway?",
                                                    "subagent_type": "researcher"}, "call_1")])


def silent(messages):
    raise AssertionError("the model was called: not served from the cassette")


def test_deep_agent(looptrace):
    researcher = {"name": "researcher", "description": "Looks facts up.",
                  "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact]}
    model = ScriptedChatModel(script=script if looptrace._state.record else silent)
    agent = create_deep_agent(model=model, tools=[lookup_fact], subagents=[researcher])
    with looptrace.cassette("deep.jsonl") as served:
        out = agent.invoke({"messages": [("user", "What is the capital of Norway?")]})
    assert out["messages"][-1].content == "Oslo, about 720,000 people"
    assert served.served == (0 if looptrace._state.record else 4)
    looptrace.assert_tools(["task"])
    looptrace.assert_clean()
'''


def test_a_deep_agent_runs_offline_from_its_cassette(pytester: pytest.Pytester) -> None:
    """The subagent's model calls are answered from the subagent's run in the cassette."""
    pytester.makepyfile(test_deep=DEEP)
    _run(pytester, "--looptrace=t.db", "--looptrace-record").assert_outcomes(passed=1)
    text = (pytester.path / "deep.jsonl").read_text(encoding="utf-8")
    assert sum(1 for ln in text.splitlines() if '"table": "runs"' in ln) == 2  # and subagent
    _run(pytester, "--looptrace=t.db").assert_outcomes(passed=1)
