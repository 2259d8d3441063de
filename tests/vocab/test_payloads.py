"""The data contract typed on both sides (``tracer/vocab/payloads.py``): every key an
event's payload holds, in every sample and in recordings made now, is declared by the
TypedDict its kind names (``payload_type``), so a reader that takes the payload as that
type (``read_payload``) sees every key the writer wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from truth.run import run_truth

from tracer import TraceMiddleware
from tracer.interop.exchange import sample_files
from tracer.read.loader import TraceDB
from tracer.record.callbacks import TraceCallbackHandler
from tracer.vocab.payloads import (
    ErrorPayload,
    LayerPayload,
    ModelEnterPayload,
    NodePayload,
    ToolExitPayload,
    payload_type,
    read_payload,
)


def undeclared(hook: str, phase: str, payload: object) -> set[str]:
    """The keys of ``payload`` its kind's TypedDict does not declare (a kind of event
    with a dict payload and no type: every key)."""
    if not isinstance(payload, dict):
        return set()
    kind = payload_type(hook, phase)
    declared = set(getattr(kind, "__annotations__", {})) if kind is not None else set()
    return {f"({hook}, {phase}).{k}" for k in payload} - {
        f"({hook}, {phase}).{k}" for k in declared}


@pytest.mark.parametrize("path", sample_files(), ids=lambda p: p.stem)
def test_every_sample_payload_key_is_declared(path: Path) -> None:
    missing: set[str] = set()
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("table") != "events":
            continue
        row = rec["row"]
        payload = row.get("payload")
        if isinstance(payload, str):
            payload = json.loads(payload)
        missing |= undeclared(row["hook"], row["phase"], payload)
    assert missing == set()


def _recorded(db: Path) -> set[str]:
    missing: set[str] = set()
    with TraceDB(db) as tdb:
        for summary in tdb.runs():
            for ev in tdb.run(summary.id).events:
                missing |= undeclared(ev.hook, ev.phase, ev.payload)
    return missing


# a fallback (attempts, errors), context editing (a request's messages rewritten),
# a retried tool (a tool call's attempt), HITL (interrupt, resume), a Command's update
@pytest.mark.parametrize("scenario", ["model_fallback", "context_editing", "tool_retry",
                                      "hitl_edit", "command_update", "tool_raises"])
def test_every_payload_key_recorded_now_is_declared(tmp_path: Path, scenario: str) -> None:
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db)
    handler = TraceCallbackHandler(db=tmp_path / "cb.db")
    run_truth(scenario, [trace], position="around", callbacks=[handler])
    trace.flush()
    handler.flush()
    assert _recorded(db) == set()
    assert _recorded(tmp_path / "cb.db") == set()


def test_each_kind_of_event_names_its_type() -> None:
    assert payload_type("wrap_model_call", "enter") is ModelEnterPayload
    assert payload_type("model", "sent") is ModelEnterPayload
    assert payload_type("tool", "exit") is ToolExitPayload
    assert payload_type("wrap_tool_call", "error") is ErrorPayload
    assert payload_type("run", "error") is ErrorPayload
    assert payload_type("wrap_model_call", "layer") is LayerPayload
    assert payload_type("before_model", "fire") is NodePayload
    assert payload_type("wrap_tool_call", "sent") is None


def test_read_payload_is_the_dict_itself_or_an_empty_one() -> None:
    written = {"status": "error", "error_path": "returned"}
    assert read_payload(ToolExitPayload, written) is written
    for other in (None, "text", ["status"], 3):
        assert read_payload(ToolExitPayload, other) == {}
