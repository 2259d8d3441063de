"""The pytest plugin (tracer/pytest_plugin.py, tracer/testing.py), run with pytester:
each inner test session is a real pytest run (in a subprocess: the configure hook is
installed once per process) of real create_agent agents driven by scripted models."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

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
    return p.runpytest_subprocess("-p", "no:cacheprovider", *args)


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
from agentkit import agent, ask

def test_one():
    ask(agent())

def test_two():
    ask(agent())
    ask(agent())

def test_none():
    assert 1 + 1 == 2
''')
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(passed=3)
    runs = [r for r in _runs(inner.path / "trace.db") if r[1] is None]
    tags = [r[2]["pytest"]["nodeid"] for r in runs]
    assert tags == ["test_a.py::test_one", "test_a.py::test_two", "test_a.py::test_two"]
    assert all(r[2]["looptrace"]["recorded_by"] == "pytest --looptrace" for r in runs)


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
    res = _run(inner, "--looptrace=trace.db")
    res.assert_outcomes(passed=1)


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
    assert "error finding(s) in the recorded runs:" in out
    assert "recursion-limit" in out
    assert "no LangChain run was recorded for test_d.py::test_no_run" in out


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
