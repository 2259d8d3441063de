"""Linking captured exchanges to model calls by time, on a real database file."""

from __future__ import annotations

import time
from pathlib import Path

from tracer.read.loader import TraceDB
from tracer.record.recorder import Recorder
from tracer.wire.capture import Exchange, WireRecorder, link_wire


def test_exchanges_link_to_the_model_call_in_progress(db_path: Path) -> None:
    rec = Recorder(db_path)
    a = rec.start_run(name="a", source="middleware")
    b = rec.start_run(name="b", source="callbacks")
    t0 = time.time() + 1
    first = rec.event(a, "wrap_model_call", "enter", ts=t0 + 1)
    rec.event(a, "wrap_model_call", "exit", ts=t0 + 2)
    second = rec.event(a, "wrap_model_call", "enter", ts=t0 + 3)
    rec.event(a, "wrap_model_call", "error", ts=t0 + 4)
    other = rec.event(b, "model", "enter", ts=t0 + 3.5)  # a callback-only run, still open
    rec.writer.flush()

    wr = WireRecorder(db_path, link=False)
    sent = {1.5: (a.id, first), 2.5: None, 3.2: (a.id, second), 3.7: (b.id, other),
            4.5: (b.id, other)}
    for dt in sent:
        wr.record(Exchange("openai", "POST", "/v1/chat/completions", {}, "{}", ts=t0 + dt))
    assert wr.link() == 4
    got = {round(ex.ts - t0, 1): ((ex.run_id, ex.seq) if ex.run_id else None)
           for ex in wr.exchanges}
    assert got == sent
    with TraceDB(db_path) as tdb:
        assert [w["seq"] for w in tdb.wire(a.id)] == [first, second]
        assert [w["seq"] for w in tdb.wire(b.id)] == [other, other]
    # The one sent between two calls stays unlinked, and linking again changes nothing.
    assert link_wire(db_path) == []
    wr.close()


def test_rows_older_than_since_are_left_alone(db_path: Path) -> None:
    rec = Recorder(db_path)
    run = rec.start_run(name="r", source="middleware")
    t0 = time.time()
    seq = rec.event(run, "wrap_model_call", "enter", ts=t0)
    rec.writer.flush()
    wr = WireRecorder(db_path, link=False)
    wr.record(Exchange("ollama", "POST", "/api/chat", {}, "{}", ts=t0 + 0.5))
    wr.writer.flush()
    assert link_wire(db_path, since=t0 + 1) == []
    assert [(r, s) for _ts, r, s in link_wire(db_path, since=t0)] == [(run.id, seq)]
    wr.close()
