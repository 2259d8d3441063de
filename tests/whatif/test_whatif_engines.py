"""A fork written into each engine's store (``store_db``: a SQLite file, then a
PostgreSQL store): the weather demo recorded, forked at its tool call with another
result, read back and compared with ``diff`` (the API and ``looptrace diff``)."""

from __future__ import annotations

import pytest
from cli_kit import cli
from whatif_kit import root_run, rows_of

from tracer.demo.scenarios import AGENTS
from tracer.read.diff import diff_tree
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.vocab.records import TOOL_HOOKS
from tracer.whatif.rerun import Edit, rerun


def test_a_fork_is_written_and_diffed_on_each_engine(
        store_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    demo = AGENTS["weather"](store_db)
    demo.record()
    rid = root_run(store_db)
    before = rows_of(store_db, rid)
    with TraceDB(store_db) as t:
        rp = build_replay(t.run(rid))
    (at,) = [s.index + 1 for s in rp.steps
             if s.event.hook in TOOL_HOOKS and s.event.phase == "enter"][:1]
    edit = Edit("tool_result", text="Heavy rain, 9°C.")
    res = rerun(rid, agent=demo.factory, db=store_db, at=at, edit=edit)
    with TraceDB(store_db) as t:
        fork = t.run(res.run_id)
        d = diff_tree(t, rid, t, res.run_id)
        listed = {r.id for r in t.runs()}
    assert fork.metadata["forked_from"] == {"run": rid, "step": at, "edit": edit.to_json()}
    assert {rid, res.run_id} <= listed
    tools = [m.text for m in fork.messages if m.type == "tool"]
    assert tools[0] == "Heavy rain, 9°C."
    # the first divergence: the tool call's result, the step after the fork's
    assert d.first_divergence is not None and d.first_divergence.index_a == at
    assert rows_of(store_db, rid) == before  # the original is never changed
    code, out, _ = cli(capsys, "diff", rid, res.run_id, "--db", store_db)
    assert code == 1 and "Heavy rain, 9°C." in out
