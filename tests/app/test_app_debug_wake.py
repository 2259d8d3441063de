"""The debugger's panel after an answer, on both engines (``store_db``): it waits for the
agent's next pause and shows it in the same script run. On PostgreSQL the pause's
NOTIFY ends that wait (``app.data.debugger.next_pause_waiter``): the test gives it 20 s
and checks that the NOTIFY, not the time, ended it (the agent's own fallbacks are set
to an hour). A SQLite file's wait is a sleep: the test gives it 5 s."""

from __future__ import annotations

import pytest
from app_kit import app_test
from debug_kit import Background, quoting_model, wait_paused
from tracer_kit import get_weather, make_agent

from app.data.debugger import stop_listening
from app.screens.replay import debug_pane
from tracer import TraceMiddleware
from tracer.debug import channel, session

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")

HOUR = 3600.0


def test_after_continue_the_panel_shows_the_next_pause_on_each_engine(
        store_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pg = store_db.startswith("postgresql://")
    monkeypatch.setattr(debug_pane, "WAIT_S", 20.0 if pg else 5.0)
    woke: list[object] = []  # what each wait returned (True: a pause's NOTIFY ended it)
    real = debug_pane.next_pause_waiter

    def recording(path: str) -> object:
        wait = real(path)

        def waited(seconds: float) -> object:
            woke.append(wait(seconds))
            return woke[-1]
        return waited

    monkeypatch.setattr(debug_pane, "next_pause_waiter", recording)
    monkeypatch.setattr(session, "PG_WAIT_S", HOUR)
    monkeypatch.setattr(session, "PG_REREAD_S", HOUR)
    monkeypatch.setenv("LOOPTRACE_DB", store_db)
    trace = TraceMiddleware(db=store_db, debug=["tool:get_weather", "model:2"])
    agent = make_agent(quoting_model(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))
    try:
        (p,) = wait_paused(store_db, alive=bg.alive)
        at = app_test("replay", run=p["run"]).run()
        assert not at.exception, at.exception
        assert any("A tool call waits to run: get_weather" in str(t.value) for t in at.text)
        at.button(key="debug_continue").click().run()
        assert not at.exception, at.exception
        shown = "\n".join(str(t.value) for t in at.text)
        assert "A model call waits" in shown, shown
        assert woke == ([True] if pg else [None])
        (q,) = channel.list_paused(store_db)
        assert q["breakpoint"] == "model:2"
        channel.answer(store_db, q["run"], "continue")
        out = bg.result(60)
        assert out["messages"][-1].content == "It says: Sunny in Oslo, 21 C"
    finally:
        stop_listening()  # (a wait of an hour, had no NOTIFY come, ends)
        for left in channel.list_paused(store_db) if bg.alive() else []:
            channel.answer(store_db, left["run"], "run")
        trace.close()
