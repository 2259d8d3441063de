"""Conditional breakpoints (``SPEC if EXPR``), hit counts and ``tool:NAME:after`` on a
real agent, each form; a bad expression or number is one line when armed (``--break``,
``b`` at the prompt, MCP ``set_breakpoint``, ``LOOPTRACE_DEBUG``)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from debug_kit import Background, wait_paused
from langchain_core.messages import AIMessage
from langchain_core.tools import ToolException, tool
from tracer_kit import get_weather, make_agent

from tracer import TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.debug.breakpoints import Moment, parse, parse_all
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.errors import InvalidOption, LooptraceError


@tool
def fetch_quote(symbol: str) -> str:
    """A stock quote."""
    if symbol == "SLOW":
        msg = "timeout talking to the exchange"
        raise ToolException(msg)
    if symbol == "BAD":
        msg = "no such symbol"
        raise ToolException(msg)
    return f"{symbol}: 101.5"


fetch_quote.handle_tool_error = True  # (its error comes back as a tool result)


def _laps(*turns: Any) -> ScriptedChatModel:
    return ScriptedChatModel(script=turn_script([*turns, AIMessage("Done.")]))


def _ask(name: str, args: dict[str, Any], cid: str) -> AIMessage:
    return AIMessage("", tool_calls=[call(name, args, cid)])


def _pauses(tmp: Path, spec: str, llm: Any, tools: list[Any]) -> list[dict[str, Any]]:
    """Run the agent with ``spec`` armed; every pause (continued at once), in order."""
    db = tmp / "cond.db"
    trace = TraceMiddleware(db=db, debug=Debugger([spec]))
    agent = make_agent(llm, tools, [trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "go")]}))
    seen = []
    while True:
        try:
            p = wait_paused(db, alive=bg.alive)[0]
        except AssertionError:
            break
        seen.append(p)
        channel.answer(db, p["run"], "continue")
    bg.result()
    trace.flush()
    return seen


def test_tool_if_args_pauses_only_at_the_call_whose_arguments_match(tmp_path: Path) -> None:
    llm = _laps(_ask("get_weather", {"city": "Paris"}, "c1"),
                _ask("get_weather", {"city": "Oslo"}, "c2"))
    got = _pauses(tmp_path, 'tool:get_weather if args.city == "Oslo"', llm, [get_weather])
    assert [p["pending"]["tool_call"]["id"] for p in got] == ["c2"]


def test_model_if_lap_pauses_from_that_lap_on(tmp_path: Path) -> None:
    llm = _laps(_ask("get_weather", {"city": "Paris"}, "c1"),
                _ask("get_weather", {"city": "Oslo"}, "c2"))
    got = _pauses(tmp_path, "model if lap > 1", llm, [get_weather])
    assert len(got) == 2  # laps 2 and 3 of three
    assert all(p["pending"]["kind"] == "model_request" for p in got)
    assert [len(p["pending"]["messages"]) for p in got] == [3, 5]


def test_hits_counts_every_time_the_place_is_reached(tmp_path: Path) -> None:
    llm = _laps(*(_ask("get_weather", {"city": c}, f"c{i}")
                  for i, c in enumerate(["A", "B", "C", "D"])))
    got = _pauses(tmp_path, "tool:get_weather if hits >= 3", llm, [get_weather])
    assert [p["pending"]["tool_call"]["args"]["city"] for p in got] == ["C", "D"]


def test_error_if_text_pauses_only_at_the_error_that_says_it(tmp_path: Path) -> None:
    llm = _laps(_ask("fetch_quote", {"symbol": "BAD"}, "c1"),
                _ask("fetch_quote", {"symbol": "SLOW"}, "c2"))
    got = _pauses(tmp_path, 'error if "timeout" in text', llm, [fetch_quote])
    # (each call's error comes back as a tool result with status error)
    assert [p["pending"]["tool_call"]["id"] for p in got] == ["c2"]
    assert got[0]["pending"]["message"]["text"] == "timeout talking to the exchange"


def test_model_if_tokens_pauses_once_the_run_has_used_that_many(tmp_path: Path) -> None:
    # (the scripted model counts words: lap 1 uses 1 + 10 in, 5 + 1 out, i.e. 17 tokens)
    llm = _laps(_ask("get_weather", {"city": "Paris"}, "c1"))
    got = _pauses(tmp_path, "model if tokens > 16", llm, [get_weather])
    assert [len(p["pending"]["messages"]) for p in got] == [3]  # lap 2 only


def test_tool_after_pauses_after_the_tool_with_its_result(tmp_path: Path) -> None:
    llm = _laps(_ask("get_weather", {"city": "Oslo"}, "c1"))
    got = _pauses(tmp_path, "tool:get_weather:after", llm, [get_weather])
    assert [(p["at"], p["pending"]["message"]["text"]) for p in got] == [
        ("after", "Sunny in Oslo, 21 C")]


def test_result_names_the_tool_s_result_after_it(tmp_path: Path) -> None:
    llm = _laps(_ask("get_weather", {"city": "Paris"}, "c1"),
                _ask("get_weather", {"city": "Oslo"}, "c2"))
    got = _pauses(tmp_path, 'tool:get_weather:after if "Oslo" in result', llm, [get_weather])
    assert [p["pending"]["tool_call"]["id"] for p in got] == ["c2"]


def test_cost_is_the_run_s_cost_so_far() -> None:
    bp = parse("model if cost > 0.5")
    m = Moment("wrap_model_call", "before")
    m.cost = lambda: 0.75
    assert bp.hits(m)
    m.cost = lambda: None  # (cannot be priced: 0)
    assert not bp.hits(m)


@pytest.mark.parametrize(("spec", "said"), [
    ("model if lap >", "the condition is not an expression"),
    ("model if laps > 3", "names 'laps', which is not one of: args, result, text"),
    ("model if", "nothing after 'if'"),
    ("tool:x if args.__class__", "no name starting with '_'"),
    ('tool:x if __import__("os")', "names '__import__'"),
    ("model:²", "model:N needs a whole number from 1, not '²'"),
    ("lap:²", "lap:N needs a whole number from 1"),
    ("tool:x:before", "tool:NAME takes :after, not :before"),
    ("node:x:during", "node:NAME takes :before or :after"),
])
def test_a_bad_spec_is_one_line_when_armed(tmp_path: Path, spec: str, said: str) -> None:
    with pytest.raises(InvalidOption, match=said) as err:
        parse(spec)
    assert "\n" not in str(err.value)
    db = tmp_path / "arm.db"
    channel.arm(db, "step")  # (makes the file)
    channel.clear(db)
    with pytest.raises(InvalidOption, match=said):  # (MCP's set_breakpoint, `b SPEC`)
        channel.arm(db, spec)
    from tracer.debug.channel import armed_breaks
    from tracer.db.schema import connect

    conn = connect(db)
    try:
        assert armed_breaks(conn) == []  # nothing written
    finally:
        conn.close()


def test_b_with_a_superscript_number_at_the_prompt_is_one_line_and_the_prompt_stays(
        tmp_path: Path) -> None:
    from tracer.cli.debug import Prompt

    db = tmp_path / "p.db"
    channel.arm(db, "step")
    out = io.StringIO()
    prompt = Prompt(str(db), io.StringIO(), out)
    # (the prompt says a LooptraceError in one line and reads the next command)
    with pytest.raises(LooptraceError, match="lap:N needs a whole number from 1") as err:
        prompt.command({"run": "r", "pause": 1, "pending": {}}, "b lap:²")
    assert "\n" not in str(err.value)


def test_looptrace_debug_with_a_bad_spec_says_it_and_arms_the_good_ones(capsys: Any) -> None:
    from tracer.debug.session import from_env

    dbg = from_env({"LOOPTRACE_DEBUG": "model:²,tool:get_weather if args.city == 'Oslo'"})
    assert dbg is not None
    assert [b.spec for b in dbg.breaks] == ["tool:get_weather if args.city == 'Oslo'"]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "model:N needs a whole number from 1" in err[0]


def test_trace_middleware_under_a_bad_looptrace_debug_does_not_raise(
        tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("LOOPTRACE_DEBUG", "model:²")
    trace = TraceMiddleware(db=tmp_path / "t.db")  # (the user's own: never raises for it)
    (proc,) = trace.processors  # (the debugger, tracer.record.processors)
    assert proc.debugger.breaks == []  # type: ignore[attr-defined]


def test_a_comma_inside_a_condition_stays_in_it() -> None:
    got = parse_all("tool:x if tool in ['a', 'b'],model:2")
    assert [b.spec for b in got] == ["tool:x if tool in ['a', 'b']", "model:2"]


def test_a_layer_breakpoint_on_a_middleware_not_wrapped_is_said_when_the_agent_starts(
        tmp_path: Path, capsys: Any) -> None:
    from test_debug_agents import Shout

    llm = _laps(_ask("get_weather", {"city": "Oslo"}, "c1"))
    trace = TraceMiddleware(db=tmp_path / "l.db", debug=Debugger(["layer:NoSuchMiddleware"]))
    make_agent(llm, [get_weather], trace.around(Shout.make())).invoke(
        {"messages": [("user", "go")]})
    err = [x for x in capsys.readouterr().err.splitlines() if "layer:NoSuchMiddleware" in x]
    assert err == ["looptrace debug: breakpoint layer:NoSuchMiddleware cannot hit in this "
                   "agent: 'NoSuchMiddleware' is not a middleware wrapped with trace.around "
                   "(wrapped: ShoutMiddleware)"]


def test_set_breakpoint_on_a_layer_no_recorded_agent_has_says_so(tmp_path: Path) -> None:
    from test_debug_agents import Shout

    from tracer.mcp.debug_tools import Debug

    db = tmp_path / "m.db"
    trace = TraceMiddleware(db=db)
    agent = trace.attach(make_agent(_laps(_ask("get_weather", {"city": "Oslo"}, "c1")),
                                    [get_weather], trace.around(Shout.make())))
    agent.invoke({"messages": [("user", "go")]})
    trace.flush()
    got = Debug(db).set_breakpoint("layer:NoSuchMiddleware")
    assert got["warning"] == (
        "breakpoint layer:NoSuchMiddleware: 'NoSuchMiddleware' is no middleware of the "
        "agents recorded here (layers: ShoutMiddleware); it hits only inside a layer "
        "trace.around made")
    assert "warning" not in Debug(db).set_breakpoint("layer:ShoutMiddleware")
