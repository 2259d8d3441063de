"""Every demo run's tokens are what its own wire says (issue 39, item 5): the record's
counts against the usage in the provider's responses, read here from the captured bodies
(each provider's fields, written out), not through the tracer. The emulator's Anthropic
stream put ``input_tokens`` in ``message_start`` only; langchain-anthropic reads usage
from ``message_delta`` (where the real API sends it, cumulative), so every Anthropic
reply said 0 input tokens and anthropic-shopping 92 tokens where its wire said 460."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracer.read.loader import TraceDB


def _wire_tokens(provider: str, body: dict[str, Any]) -> int:
    """A response's tokens, from the provider's own usage fields."""
    if provider == "anthropic":
        u = body["usage"]
        return int(u["input_tokens"]) + int(u["output_tokens"])
    if provider == "ollama":
        return int(body.get("prompt_eval_count") or 0) + int(body.get("eval_count") or 0)
    u = body.get("usage") or {}  # OpenAI: chat completions or the Responses API (a stream
    return int(u.get("total_tokens") or 0)  # without include_usage reports none: 0)


def _reports(w: dict[str, Any]) -> bool:
    """Whether a response says its usage at all (an OpenAI stream without include_usage
    does not)."""
    body = json.loads(w["response_body"])
    if w["provider"] == "ollama":
        return "prompt_eval_count" in body or "eval_count" in body
    return bool(body.get("usage"))


def test_every_demo_runs_tokens_are_its_wires(sample_db: Path) -> None:
    checked = []
    with TraceDB(sample_db) as db:
        for s in db.runs():
            rows = [w for w in db.wire(s.id) if w.get("response_body") and w.get("status") == 200]
            if not rows:
                continue
            on_wire = sum(_wire_tokens(str(w["provider"]), json.loads(w["response_body"]))
                          for w in rows)
            # (a wire that reports no usage at all: the record says "not reported", None)
            want = on_wire if any(_reports(w) for w in rows) else None
            assert s.total_tokens == want, (s.name, s.total_tokens, on_wire)
            checked.append(s.name)
    assert {"anthropic-shopping", "anthropic-weather", "openai-shopping",
            "ollama-shopping"} <= set(checked)
