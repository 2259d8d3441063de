"""The record around a debugger pause is true (issue 44 item 9), on real paused runs:
pause time is never tool time (the caption, the Timeline, the replay's JSON that the
HTML export and the app draw, ``looptrace show``); a result given in the debugger is
said to be the debugger's, not "returned in 9170.1 ms" nor "a layer outside
TraceMiddleware"; "waits to run" is said only before the call."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from debug_kit import Background, quoting_model, wait_paused
from langchain_core.tools import tool
from tracer_kit import get_weather, make_agent

from app.screens.timeline.timeline import spans
from tracer import TraceMiddleware
from tracer.debug import Debugger, channel
from tracer.read.captions import captions
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

HELD = 1.0  # seconds the test holds the pause before it answers (a person typing)


def _debugged(db: Path, breaks: list[str], edit: dict[str, Any],
              tools: list[Any] | None = None) -> str:
    trace = TraceMiddleware(db=db, debug=Debugger(breaks))
    agent = make_agent(quoting_model(), tools or [get_weather], [trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))
    (p,) = wait_paused(db, alive=bg.alive)
    time.sleep(HELD)
    channel.answer(db, p["run"], "continue", edit)
    bg.result()
    trace.flush()
    return str(p["run"])


def _raw(db: Path, run: str, phase: str) -> list[tuple[int, float | None, dict[str, Any]]]:
    with sqlite3.connect(db) as c:
        return [(s, d, json.loads(p) if p else {}) for s, d, p in c.execute(
            "SELECT seq, duration_ms, payload FROM events WHERE run_id = ? AND phase = ?"
            " AND hook = 'wrap_tool_call' ORDER BY seq", [run, phase])]


def test_a_result_given_at_the_tool_call_takes_no_tool_time(tmp_path: Path) -> None:
    db = tmp_path / "dbg.db"
    run = _debugged(db, ["tool:get_weather"], {"kind": "tool_result", "text": "Snowing"})
    ((exit_seq, recorded, _),) = _raw(db, run, "exit")
    ((_, _, debug),) = _raw(db, run, "debug")
    assert recorded is not None and recorded >= HELD * 1000  # (the record: enter to exit)
    with TraceDB(db) as t:
        loaded = t.run(run)
    replay = build_replay(loaded)
    (ev,) = [e for e in loaded.events if e.seq == exit_seq]
    assert ev.duration_ms is not None
    assert abs(ev.duration_ms - (recorded - debug["waited_s"] * 1000)) < 1e-6
    assert ev.duration_ms < HELD * 1000
    said = dict(zip([e.seq for e in loaded.events], captions(replay), strict=True))
    assert said[exit_seq].startswith("The debugger gave the result of tool call c1 (typed in "
                                     "by hand at the pause: the tool never ran)")
    assert "returned in" not in said[exit_seq]
    (bar,) = [s for s in spans(replay) if s["kind"] == "tool"]
    assert bar["duration"] < HELD * 1000  # (a 73 s bar for a tool that never ran)
    (pause_seq, _, _), = _raw(db, run, "pause")
    assert said[pause_seq].endswith("The tool call get_weather waits to run.")


def test_a_result_given_at_an_error_is_the_debuggers(tmp_path: Path) -> None:
    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        raise RuntimeError(f"no weather for {city}")

    db = tmp_path / "dbg.db"
    run = _debugged(db, ["error"], {"kind": "tool_result", "text": "Fog"}, [get_weather])
    with TraceDB(db) as t:
        loaded = t.run(run)
    said = dict(zip([e.seq for e in loaded.events], captions(build_replay(loaded)),
                    strict=True))
    ((err_seq, _, _),) = _raw(db, run, "error")
    ((pause_seq, _, _),) = _raw(db, run, "pause")
    ((exit_seq, recorded, _),) = _raw(db, run, "exit")
    assert said[err_seq].endswith("The debugger gave this call's result instead (typed in "
                                  "by hand at the pause), so the run went on.")
    assert "waits to run" not in said[pause_seq]
    assert said[pause_seq].endswith("The tool call get_weather raised; the exception waits "
                                    "to go on (or a result given in the debugger instead).")
    assert "the debugger gave its result instead" in said[exit_seq]
    (ev,) = [e for e in loaded.events if e.seq == exit_seq]
    assert recorded is not None and recorded >= HELD * 1000
    assert ev.duration_ms is not None and ev.duration_ms < HELD * 1000


def test_diff_of_a_debugged_run_and_its_rerun_counts_no_pause_as_behaviour(
        tmp_path: Path, capsys: Any) -> None:
    """``looptrace diff ORIGINAL RERUN`` of a debugged run exited 1: its pause and debug
    steps, which the rerun (answered from the record, edit included) does not have,
    were counted as hooks fired on one side only."""
    from tracer.cli import main
    from tracer.whatif.rerun import rerun

    db = tmp_path / "dbg.db"
    run = _debugged(db, ["tool:get_weather"], {"kind": "tool_result", "text": "Snowing"})
    own = [TraceMiddleware(db=db)]

    def factory(middleware: list[Any] = own) -> Any:
        return make_agent(quoting_model(), [get_weather], list(middleware))

    again = rerun(run, agent=factory, db=db)
    capsys.readouterr()
    code = main(["diff", run, again.run_id, "--db", str(db)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "hook_sequence" not in out and "pause" not in out


def test_show_says_a_result_was_typed_in_and_the_edit_step_shows_before_and_after(
        tmp_path: Path, capsys: Any) -> None:
    """``show`` said "health: ok" with no word of the tool result typed in by hand, and
    ``show --step`` at the edit did not print what it changed."""
    from tracer.cli import main

    db = tmp_path / "dbg.db"
    run = _debugged(db, ["tool:get_weather"], {"kind": "tool_result", "text": "Snowing"})
    ((debug_seq, _, _),) = _raw(db, run, "debug")
    with TraceDB(db) as t:
        step = [e.seq for e in t.run(run).events].index(debug_seq) + 1
    capsys.readouterr()
    assert main(["show", run, "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("health: "))
    assert lines[at + 1].startswith(f"  changed in the debugger at step {step}, wrap_tool_call "
                                    "(tool call c1): ")
    assert lines[at + 1].endswith(
        "tool result given in the debugger (not what the agent did by itself)")
    assert main(["show", run, "--db", str(db), "--step", str(step)]) == 0
    out = capsys.readouterr().out
    before, _, after = out.partition("\n  after:\n")
    assert "\n  before:\n" in before and '"get_weather"' in before.split("\n  before:\n")[1]
    assert '"Snowing"' in after.split("\nmessages (")[0]
