""""errors" counts errors, each once, and "Next error" visits exactly those (issue 39,
item 9).

An error is a tool call that failed (an error result, or the tool raised), an exception
raised by a model call, or the run's own failure when it is not one of those come up to
the top (``tracer.read.errors``). The counts below are written by hand from what each
bundled sample did (``tracer/demo``); the kept count (SQL, ``run_stats.errors``) and the
steps the replayer marks (Python) are two computations held to the same numbers.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelFallbackMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from tracer import TraceMiddleware
from tracer.db.schema import connect
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.interop.copy import copy_store
from tracer.read.errors import error_steps
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.replayer import replay_json

FIXTURE5 = Path(__file__).parents[1] / "fixtures" / "schema5.db"

# name -> the steps (from 1) where each error is first seen, by hand from the demo's runs
EXPECTED = {
    # one TimeoutError raised by check_stock, seen at the tool (step 8), at the tools
    # node (9) and as the run's failure (10): one error
    "stock-check": [8],
    # one rate-limit error raised by the model (step 35), and the run's failure (36)
    "footgun-no-bound": [35],
    # two error ToolMessages: the unknown product (step 16), the unknown tool (22)
    "shopping": [16, 22],
    "openai-shopping": [16, 22],
    "anthropic-shopping": [16, 22],
    "ollama-shopping": [16, 22],
    # wrong tool_call_ids: the providers would reject it (the health's findings), but
    # nothing failed in the run
    "footgun-wrong-id": [],
    # get_forecast raised ValueError, the agent went on
    "footgun-swallowed-error": [7],
    # the arguments failed validation: an error ToolMessage
    "booking": [8],
    # the person rejected delete_file: an error ToolMessage, but a decision, not a
    # failure (the Runs page counted it as 1 error; issue 47 untrue 7)
    "approvals": [],
    # the primary model raised (the fallback took over: step 7); the carrier API raised
    # in track_order (ToolRetryMiddleware retried it: one tool call, step 22)
    "support-desk": [7, 22],
    "weather": [],
    "deep-research": [],
}


@pytest.fixture(scope="module")
def samples(sample_store: str) -> dict[str, Any]:
    with TraceDB(sample_store) as db:
        return {s.name: (s, build_replay(db.run(s.id))) for s in db.runs()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_error_is_counted_once(samples: dict[str, Any], name: str) -> None:
    summary, rp = samples[name]
    want = EXPECTED[name]
    assert [i + 1 for i in error_steps(rp)] == want
    assert summary.errors == len(want)  # the kept count (SQL) says the same
    # the replayer marks exactly those steps; "Next error" goes through them in order
    data = replay_json(rp, payloads=False)
    assert [i + 1 for i, s in enumerate(data["steps"]) if s.get("x")] == want
    kinds = "".join("e" if s.get("x") else "h" if s["k"] == "error" else s["k"][0]
                    for s in data["steps"])
    assert [i + 1 for i, k in enumerate(kinds) if k == "e"] == want


def test_the_kept_count_and_the_marked_steps_agree_on_every_sample(
        samples: dict[str, Any]) -> None:
    for name, (summary, rp) in samples.items():
        assert summary.errors == len(error_steps(rp)), name


def test_stock_check_error_steps_are_still_shown_as_errors(samples: dict[str, Any]) -> None:
    """The node and run steps of the TimeoutError are still error steps (kind), only
    not errors of their own: no stop of "Next error"."""
    _, rp = samples["stock-check"]
    assert [st.index + 1 for st in rp.steps if st.kind == "error"] == [8, 9, 10]


# -- a fallback: the primary model raises twice, the backup answers (docs/guide/tracing.md)
@tool
def track_order(order_id: str) -> str:
    """Track a shipped order."""
    return f"{order_id}: in transit"


def _rate_limited(messages: Any) -> AIMessage:
    raise RuntimeError("429 Too Many Requests")


def test_a_model_that_raised_twice_behind_a_fallback_is_two_errors(store_db: str) -> None:
    backup = ScriptedChatModel(model_name="backup", script=turn_script([
        AIMessage("", tool_calls=[call("track_order", {"order_id": "A-2"}, "call_1")]),
        AIMessage("Order A-2 is in transit."),
    ]))
    trace = TraceMiddleware(db=store_db)
    agent = create_agent(ScriptedChatModel(model_name="primary", script=_rate_limited),
                         [track_order],
                         middleware=trace.around(ModelFallbackMiddleware(backup)))
    agent.invoke({"messages": [("user", "Where is order A-2?")]})
    trace.close()
    with TraceDB(store_db) as db:
        (s,) = db.runs()
        rp = build_replay(db.run(s.id))
    assert s.status == "completed"
    layer_errors = [st.index for st in rp.steps if st.event.phase == "layer"
                    and st.event.payload.get("what") == "error"]
    assert len(layer_errors) == 2
    assert error_steps(rp) == layer_errors and s.errors == 2


def test_a_failed_model_call_behind_an_exhausted_fallback(store_db: str) -> None:
    """The primary raises, then the backup: two errors; the backup's exception comes up
    through the fallback and the tracer and fails the run: still two."""
    def down(messages: Any) -> AIMessage:
        raise RuntimeError("backup is down")

    trace = TraceMiddleware(db=store_db)
    agent = create_agent(
        ScriptedChatModel(model_name="primary", script=_rate_limited), [track_order],
        middleware=trace.around(ModelFallbackMiddleware(
            ScriptedChatModel(model_name="backup", script=down))))
    with pytest.raises(RuntimeError, match="backup is down"):
        agent.invoke({"messages": [("user", "Where is order A-2?")]})
    trace.close()
    with TraceDB(store_db) as db:
        (s,) = db.runs()
        rp = build_replay(db.run(s.id))
    assert s.status == "error"
    assert len([st for st in rp.steps if st.kind == "error"]) >= 4  # layers, tracer, run
    assert s.errors == len(error_steps(rp)) == 2


# -- a file of schema 5 kept its errors as error events: counted again when migrated
def _with_a_timeout(path: Path) -> str:
    """The fixture's no-usage run, made to fail the way stock-check does: a tool raises,
    seen at the tool, the tools node and the run (schema 5 kept 3 errors)."""
    conn = sqlite3.connect(path)
    (rid,) = conn.execute("SELECT id FROM runs WHERE name = 'no-usage'").fetchone()
    err = "TimeoutError: inventory service did not answer"
    conn.execute("DELETE FROM events WHERE run_id = ? AND seq >= 7", [rid])
    for seq, hook, tcid, payload in (
            (7, "wrap_tool_call", "call_1", f'{{"error":"{err}","type":"TimeoutError"}}'),
            (8, "node", None, f'{{"node":"tools","error":"{err}"}}'),
            (9, "run", None, f'{{"error":"{err}"}}')):
        conn.execute("INSERT INTO events(run_id, seq, ts, hook, phase, lap, tool_call_id,"
                     " payload) VALUES (?, ?, 0, ?, 'error', 1, ?, ?)",
                     [rid, seq, hook, tcid, payload])
    conn.execute("UPDATE runs SET status = 'error', error = ? WHERE id = ?", [err, rid])
    conn.execute("UPDATE run_stats SET errors = 3, events = 10 WHERE run_id = ?", [rid])
    conn.commit()
    conn.close()
    return str(rid)


def test_a_schema_5_file_has_its_errors_counted_again(tmp_path: Path) -> None:
    """SQLite only: a file of schema 5 (the fixture), migrated in place. (PostgreSQL
    stores began at schema 8's predecessor: ``tests/db/test_engines.py`` opens one.)"""
    path = tmp_path / "v5.db"
    shutil.copyfile(FIXTURE5, path)
    rid = _with_a_timeout(path)
    gen = sqlite3.connect(path).execute("SELECT gen FROM run_stats WHERE run_id = ?",
                                        [rid]).fetchone()
    with TraceDB(path) as db:  # read-only, as it is: counted anew from its events
        assert db.summary(rid).errors == 1
    connect(path).close()  # migrated
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT errors, gen FROM run_stats WHERE run_id = ?",
                        [rid]).fetchone() == (1, gen[0])  # (the rows are the same: same gen)
    assert conn.execute("SELECT r.name, s.errors FROM runs r JOIN run_stats s"
                        " ON s.run_id = r.id WHERE r.name = 'weather'").fetchone() == (
        "weather", 0)
    conn.close()
    with TraceDB(path) as db:
        assert db.summary(rid).errors == 1


def test_a_file_of_schema_7_counts_its_rejection_again_as_no_error(
        sample_store: str, store_db: str) -> None:
    """Schema 7 kept the approvals run's rejection as 1 error in ``run_stats``; opened,
    the store is brought to schema 8 and the kept count is 0 (issue 47 untrue 7). On
    each engine: the samples copied (``looptrace copy``'s code), then made schema 7."""
    path = store_db
    copy_store(sample_store, path)
    conn = connect(path)
    conn.execute("UPDATE run_stats SET errors = 1 WHERE run_id IN"
                 " (SELECT id FROM runs WHERE name = 'approvals')")
    conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    connect(path).close()
    with TraceDB(path) as db:
        by_name = {s.name: s.errors for s in db.runs()}
    assert by_name["approvals"] == 0
    assert by_name["shopping"] == 2  # a failed tool call still counts
