"""Rewind in the debugger's panel (``app/screens/replay/rewind_pane.py``, issue 45, item 6) in AppTest:
a real agent paused in a background thread (built as ``looptrace debug``'s wrapper of
``create_agent`` builds a script's), a step picked, an edit typed, the button: the fork
pauses at the same breakpoint after the step, the paused run stays paused. Bad input is
one error line and nothing is written; an agent that cannot be built again says why."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from app_kit import app_test
from debug_kit import Background, quoting_model, wait_paused
from langchain.agents import create_agent
from streamlit.testing.v1 import AppTest
from tracer_kit import get_weather

from tracer import TraceMiddleware
from tracer.debug import channel
from tracer.record.autohook import capturing

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


def _start(db: Path, *, captured: bool = True) -> tuple[Background, TraceMiddleware]:
    trace = TraceMiddleware(db=db, debug=["tool:get_weather"])
    make = capturing(create_agent) if captured else create_agent
    agent = make(quoting_model(), tools=[get_weather], middleware=[trace])
    return Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]})), trace


def _finish(db: Path, bg: Background, trace: TraceMiddleware) -> Any:
    end = time.monotonic() + 60
    while bg.alive() and time.monotonic() < end:
        for p in channel.list_paused(db):
            try:
                channel.answer(db, p["run"], "run", pause=p["pause"])
            except channel.NotPaused:
                pass
        time.sleep(0.05)
    out = bg.result()
    trace.close()
    return out


def _page(run: str) -> AppTest:
    return app_test("replay", run=run).run()


def test_a_step_an_edit_and_the_button_fork_the_paused_run(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    db = tmp_path / "debug.db"
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    bg, trace = _start(db)
    try:
        p = wait_paused(db, alive=bg.alive)[0]
        at = _page(p["run"])
        assert not at.exception, at.exception
        assert at.number_input(key="dbg_rewind_step").max == p["step"]
        # bad JSON: one line, nothing written
        at.text_area(key="dbg_rewind_edit").input('{"kind": "message"')
        at.button(key="debug_rewind").click().run()
        assert [e.value for e in at.error] == [  # (as markdown: its brackets escaped)
            "the edit is not valid JSON \\(Expecting ',' delimiter at column 19\\)"]
        assert [q["pause"] for q in channel.list_paused(db)] == [p["pause"]]
        # model call 1 is step 3: its first message changed
        at.number_input(key="dbg_rewind_step").set_value(3)
        at.text_area(key="dbg_rewind_edit").input(
            '{"kind": "message", "position": 0, "text": "Weather in Bergen?"}')
        at.button(key="debug_rewind").click().run()
        assert not at.error, [e.value for e in at.error]
        end = time.monotonic() + 60
        fork: list[dict[str, Any]] = []
        while not fork and time.monotonic() < end:
            fork = [q for q in channel.list_paused(db, with_pending=True)
                    if q["run"] != p["run"]]
            time.sleep(0.05)
        assert fork and fork[0]["reason"] == "tool:get_weather"
        sent = channel.pending(db, fork[0]["run"])
        assert sent["hook"] == "wrap_tool_call"
        with_msgs = [q for q in channel.list_paused(db, with_pending=True)
                     if q["run"] == p["run"]]
        assert with_msgs and with_msgs[0]["reason"].startswith("rewound to step 3 as run ")
    finally:
        _finish(db, bg, trace)
    import sqlite3

    with sqlite3.connect(db) as c:  # (the input, then its version the edit made)
        said = c.execute("SELECT text FROM messages WHERE run_id = ? AND type = 'human'"
                         " ORDER BY position, seq", [fork[0]["run"]]).fetchall()
    assert said == [("Weather in Oslo?",), ("Weather in Bergen?",)]


def test_an_agent_that_cannot_be_built_again_says_why(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "debug.db"
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    bg, trace = _start(db, captured=False)
    try:
        p = wait_paused(db, alive=bg.alive)[0]
        at = _page(p["run"])
        assert not at.exception, at.exception
        said = [str(c.value) for c in at.caption]
        assert any(s.startswith("Cannot rewind\\: this agent was not built by "  # (markdown)
                                "create\\_agent under looptrace debug") for s in said), said
        assert not [b for b in at.button if b.key == "debug_rewind"]
    finally:
        _finish(db, bg, trace)
