"""Stopping the server while a handler is still recording: a streaming client has its
whole answer (the stream's last event) before the handler records the exchange, so a
server stopped at once must wait for that recording, or the run built from the traffic
holds every exchange but the last."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tracer.read.loader import TraceDB
from tracer.wire import WireServer
from tracer.wire.capture import Exchange, WireRecorder
from tracer.wire.loops import openai_loop
from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM


class LateRecorder(WireRecorder):
    """Records the second exchange late, as a loaded machine's handler thread does."""

    def __init__(self, db: Path) -> None:
        super().__init__(db)
        self.calls = 0
        self.late = threading.Event()

    def record(self, ex: Exchange) -> None:
        self.calls += 1
        if self.calls == 2:
            self.late.wait(0.5)  # (nobody sets it: a pause of half a second)
        super().record(ex)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_a_server_stopped_at_once_keeps_the_last_exchange(tmp_path: Path, stream: bool) -> None:
    db = tmp_path / "wire.db"
    rec = LateRecorder(db)
    with WireServer(mode="emulate", script="weather", recorder=rec) as srv:
        openai_loop(srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM, stream=stream)
    with TraceDB(db) as tdb:
        runs = tdb.runs()
        assert len(runs) == 1, [r.name for r in runs]
        run = tdb.run(runs[0].id)
    assert [m.type for m in run.messages] == ["human", "ai", "tool", "tool", "ai"]
    assert run.summary.laps == 2
