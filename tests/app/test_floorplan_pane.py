"""The floor plan pane says each note in the cell of the middleware it is about (issue 39
item 10): "it changed nothing looptrace saw" was drawn under the hook's name, beside a
cell where ModelFallbackMiddleware had just changed the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_kit import app_test

from tracer.read.floorplan import floor_plan
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay


@pytest.fixture
def support_desk(sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Replay]:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    with TraceDB(sample_db) as t:
        s = next(r for r in t.runs() if r.name == "support-desk")
        return s.id, build_replay(t.run(s.id))


def _fallback_changed_the_model(rp: Replay) -> int:
    return next(s.index for s in rp.steps if s.event.middleware == "ModelFallbackMiddleware"
                and s.event.payload.get("what") == "request")


def test_the_note_is_in_its_own_middlewares_cell(support_desk: tuple[str, Replay]) -> None:
    run_id, rp = support_desk
    at_step = _fallback_changed_the_model(rp)
    at = app_test("replay", run=run_id, step=str(at_step + 1), floorplan="1").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    ce = texts.index("3. ContextEditingMiddleware")  # (its cell: state, name, role, note)
    fb = texts.index("4. ModelFallbackMiddleware  ×3")
    note = ("every call passes through ContextEditingMiddleware; it changed nothing "
            "looptrace saw up to this step")
    assert ce < texts.index(note) < fb  # in ContextEditingMiddleware's cell, before the next
    assert texts[fb + 2] == "last: changed the request (model)"  # (its cell: name, role, did)
    assert "changed nothing" not in texts[fb + 3]
    # nothing of a cell is said under the hook's name (the row's left column)
    assert not any("changed nothing" in c.value for c in at.caption)


def test_a_layer_that_changed_the_call_has_no_such_note(
        support_desk: tuple[str, Replay]) -> None:
    _, rp = support_desk
    rows = {r.hook: r for r in floor_plan(rp, _fallback_changed_the_model(rp))}
    cells = {c.middleware: c for c in rows["wrap_model_call"].cells}
    assert cells["ModelFallbackMiddleware"].did == "changed the request (model)"
    assert cells["ModelFallbackMiddleware"].note == ""
    assert "ContextEditingMiddleware" in cells["ContextEditingMiddleware"].note
