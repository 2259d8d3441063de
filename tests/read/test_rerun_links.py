"""A rerun's metadata names the run it reruns: ``rerun_of`` since issue 43 (one word, one
meaning: a replay plays a record back, a rerun runs the agent again), replay_of
before. Runs recorded then are users' data: the read side finds them under either key
(the Runs page's nesting, the Replay page's list of reruns and forks, MCP's ``rerun``,
``looptrace show``)."""

from __future__ import annotations

import json

from tracer_kit import record_weather_run

from tracer.db.schema import connect
from tracer.read.fork_links import forks_among, forks_of, origin_of
from tracer.read.loader import TraceDB


def _set_metadata(db: str, run_id: str, meta: dict[str, object]) -> None:
    conn = connect(db)
    conn.execute("UPDATE runs SET metadata = ? WHERE id = ?", [json.dumps(meta), run_id])
    conn.commit()
    conn.close()


def test_a_rerun_recorded_under_the_old_key_is_still_found(store_db: str) -> None:
    db = store_db
    src = record_weather_run(db, "source")
    old = record_weather_run(db, "old-rerun")
    new = record_weather_run(db, "new-fork")
    _set_metadata(db, old, {"replay_of": src})  # words: keep (a run recorded before issue 43)
    _set_metadata(db, new, {"rerun_of": src, "forked_from": {
        "run": src, "step": 4, "edit": {"kind": "drop", "position": 1}}})
    with TraceDB(db) as t:
        assert [(f.run_id, f.of, f.step) for f in forks_of(t, src)] == [
            (old, src, None), (new, src, 4)]
        assert [f.label for f in forks_of(t, src)] == [
            f"rerun {old[:12]}", f"fork {new[:12]} at step 4 (drop)"]
        assert sorted(forks_among(t, [src])) == sorted([old, new])
    assert origin_of(json.dumps({"replay_of": src})) == (src, None)  # words: keep
    assert origin_of({"rerun_of": src, "forked_from": {"step": 4}}) == (src, 4)
    assert origin_of({"of": src}) is None
