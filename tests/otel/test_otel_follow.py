"""``looptrace export --otlp URL --follow``: each run is sent once, when it ends."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from otel_kit import lines, wait_for

from tracer.interop.exchange import import_trace, read_trace, sample_files
from tracer.otel.collect import CollectServer
from tracer.otel.follow import follow, ledger_path

WEATHER = next(p for p in sample_files() if p.stem == "weather")
SHOPPING = next(p for p in sample_files() if p.stem == "shopping")


@pytest.fixture
def srv(tmp_path: Path) -> Iterator[CollectServer]:
    with CollectServer(tmp_path / "got.db", port=0, quiet=0.1) as s:
        yield s


class _Follower:
    """``follow`` in a thread, stopped like Ctrl-C stops the command."""

    def __init__(self, db: Path, url: str) -> None:
        self.stop = threading.Event()
        self.sent: list[str] = []
        self.thread = threading.Thread(target=follow, args=(db, url), kwargs={
            "interval": 0.05, "stop": self.stop, "timeout": 5,
            "on_sent": lambda run, n: self.sent.append(run.id)}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def _set_status(db: Path, run_id: str, status: str) -> None:
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET status = ? WHERE id = ?", [status, run_id])
    conn.close()


def test_follow_sends_a_run_once_when_it_ends(tmp_path: Path, srv: CollectServer) -> None:
    db = tmp_path / "live.db"
    running = str(read_trace(WEATHER)[0]["root"])
    done = str(read_trace(SHOPPING)[0]["root"])
    import_trace(WEATHER, db)
    import_trace(SHOPPING, db)
    _set_status(db, running, "running")  # still going

    f = _Follower(db, srv.url)
    try:
        assert wait_for(lambda: f.sent == [done])  # a finished run goes at once
        assert wait_for(lambda: srv.requests >= 1)
        before = srv.requests
        f.stop.wait(0.4)  # several polls: a running run is not sent
        assert f.sent == [done] and srv.requests == before
        _set_status(db, running, "completed")  # ... until it ends
        assert wait_for(lambda: f.sent == [done, running])
        f.stop.wait(0.4)
        assert f.sent == [done, running]  # once
    finally:
        f.close()
    sent_requests = srv.requests
    import_trace(WEATHER, tmp_path / "want.db")
    assert lines(srv.buffer.db, running) == lines(tmp_path / "want.db", running)
    assert lines(srv.buffer.db, done) == lines(db, done)

    # a restart does not send them again (the side file remembers) ...
    assert ledger_path(db).exists()
    f = _Follower(db, srv.url)
    try:
        f.stop.wait(0.4)
        assert f.sent == [] and srv.requests == sent_requests
        # ... but a run that changed since (resumed, ended again) goes again
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE runs SET ended_at = ended_at + 1 WHERE id = ?", [done])
        conn.close()
        assert wait_for(lambda: f.sent == [done])
    finally:
        f.close()


def test_follow_retries_an_endpoint_that_is_down(tmp_path: Path) -> None:
    """Nothing is marked sent until the endpoint takes it."""
    import socket

    db = tmp_path / "live.db"
    import_trace(WEATHER, db)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    errors: list[Exception] = []
    stop = threading.Event()
    t = threading.Thread(target=follow, args=(db, f"http://127.0.0.1:{port}"), kwargs={
        "interval": 0.05, "stop": stop, "timeout": 0.5,
        "on_error": lambda run, exc: errors.append(exc)}, daemon=True)
    t.start()
    assert wait_for(lambda: errors)
    stop.set()
    t.join(10)
    assert not ledger_path(db).exists() or ledger_path(db).read_text() == ""
    with CollectServer(tmp_path / "got.db", host="127.0.0.1", port=port) as srv:
        stop = threading.Event()
        sent: list[str] = []
        t = threading.Thread(target=follow, args=(db, srv.url), kwargs={
            "interval": 0.05, "stop": stop, "on_sent": lambda run, n: sent.append(run.id)},
            daemon=True)
        t.start()
        assert wait_for(lambda: sent)
        stop.set()
        t.join(10)
    root = str(read_trace(WEATHER)[0]["root"])
    assert lines(tmp_path / "got.db", root) == lines(db, root)
