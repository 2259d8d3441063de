"""The same protocol rules on a captured provider request (the ``wire`` table).

When the HTTP body a model call really sent was recorded (``looptrace proxy``
or the wire emulator), it is read back into ``ProtocolMessage`` records, in the order the
provider sees them, and checked for that provider. A finding the recorded
messages already gave for the same step is not repeated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from tracer.read.loader import Run

from .base import Call, Finding, ModelInput, ProtocolMessage, is_empty_content
from .protocol import check_model_call


def _openai(body: dict[str, Any]) -> tuple[list[ProtocolMessage], bool]:
    out: list[ProtocolMessage] = []
    for i, m in enumerate(body.get("messages") or []):
        role = m.get("role")
        key = f"wire:{i}"
        if role in ("system", "developer"):
            out.append(ProtocolMessage(key, "system"))
        elif role == "assistant":
            calls = tuple(Call(c.get("id") or None, str((c.get("function") or {}).get("name")),
                               True) for c in m.get("tool_calls") or [])
            out.append(ProtocolMessage(key, "assistant", calls,
                            empty=not calls and is_empty_content(m.get("content"))))
        elif role == "tool":
            out.append(ProtocolMessage(key, "tool", tool_call_id=m.get("tool_call_id") or None))
        else:
            out.append(ProtocolMessage(key, "user"))
    has_system = bool(out) and out[0].role == "system"
    return out, has_system


def _anthropic(body: dict[str, Any]) -> tuple[list[ProtocolMessage], bool]:
    out: list[ProtocolMessage] = []
    for i, m in enumerate(body.get("messages") or []):
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if m.get("role") == "assistant":
            calls = tuple(Call(b.get("id") or None, str(b.get("name")), True) for b in blocks
                          if isinstance(b, dict) and b.get("type") == "tool_use")
            out.append(ProtocolMessage(f"wire:{i}", "assistant", calls,
                            empty=not calls and is_empty_content(content)))
            continue
        for j, b in enumerate(blocks):
            key = f"wire:{i}.{j}"
            if isinstance(b, dict) and b.get("type") == "tool_result":
                out.append(ProtocolMessage(key, "tool", tool_call_id=b.get("tool_use_id") or None))
            else:
                out.append(ProtocolMessage(key, "user"))
    return out, bool(body.get("system"))


def _ollama(body: dict[str, Any]) -> tuple[list[ProtocolMessage], bool]:
    """No ids on the Ollama wire: calls and results are paired by order here."""
    out: list[ProtocolMessage] = []
    queue: list[str] = []
    for i, m in enumerate(body.get("messages") or []):
        role = m.get("role")
        key = f"wire:{i}"
        if role == "assistant":
            calls = tuple(Call(f"#{i}.{k}", str((c.get("function") or {}).get("name")), True)
                          for k, c in enumerate(m.get("tool_calls") or []))
            queue = [c.id for c in calls if c.id]
            out.append(ProtocolMessage(key, "assistant", calls,
                            empty=not calls and is_empty_content(m.get("content"))))
        elif role == "tool":
            out.append(ProtocolMessage(key, "tool", tool_call_id=queue.pop(0) if queue else None))
        else:
            out.append(ProtocolMessage(key, "system" if role == "system" else "user"))
    has_system = bool(out) and out[0].role == "system"
    return out, has_system


_READERS = {"openai": _openai, "anthropic": _anthropic, "ollama": _ollama}


def wire_turns(provider: str, body: Any) -> tuple[list[ProtocolMessage], bool] | None:
    """The turns of a captured request body, and whether it carries a system prompt."""
    reader = _READERS.get(provider)
    if reader is None or not isinstance(body, dict):
        return None
    turns, has_system = reader(body)
    if provider in ("openai", "ollama") and has_system:
        turns = turns[1:]  # the leading system message is the system prompt
    return turns, has_system


def check_wire(run: Run, rows: Iterable[dict[str, Any]], providers: Iterable[str],
               found: Iterable[Finding], calls: Iterable[ModelInput] = ()) -> list[Finding]:
    """Findings on the captured requests of ``run`` not already in ``found``.

    ``calls`` (the recorded model calls) map wire messages to recorded ones by
    position when the counts agree, so a finding is not reported twice.
    """
    provs = set(providers)
    found = list(found)
    have = {(f.rule, f.provider, f.seq) for f in found}
    seen = {(f.rule, f.provider, f.message_keys) for f in found}
    recorded = {mc.seq: mc.turns for mc in calls}
    out: list[Finding] = []
    for row in rows:
        provider = row.get("provider")
        if provider not in provs or row.get("seq") is None:
            continue
        try:
            body = json.loads(row.get("request_body") or "")
        except (TypeError, ValueError):
            continue
        read = wire_turns(str(provider), body)
        if read is None:
            continue
        turns, has_system = read
        mc = ModelInput(int(row["seq"]), -1, turns, has_system, None)
        same = recorded.get(mc.seq)
        by_index = ({t.key: r.key for t, r in zip(turns, same, strict=True)}
                    if same is not None and len(same) == len(turns) else {})
        for f in check_model_call(run.id, mc, [str(provider)]):
            if f.provider != provider or (f.rule, f.provider, f.seq) in have:
                continue
            keys = tuple(dict.fromkeys(
                k for k in (by_index.get(w) or _run_key(run, turns, w) for w in f.message_keys)
                if k))
            if (f.rule, f.provider, keys) in seen:
                continue
            have.add((f.rule, f.provider, f.seq))
            seen.add((f.rule, f.provider, keys))
            out.append(replace(f, message=f"In the captured {provider} request: {f.message}",
                               message_keys=keys))
    return out


def _run_key(run: Run, turns: list[ProtocolMessage], wire_key: str) -> str | None:
    """The recorded message a wire turn stands for, when its call ids tell."""
    turn = next((t for t in turns if t.key == wire_key), None)
    if turn is None:
        return None
    if turn.tool_call_id and not turn.tool_call_id.startswith("#"):
        key = "t:" + turn.tool_call_id
        return key if key in run.message_by_key else None
    ids = {c.id for c in turn.calls if c.id}
    if ids:
        for m in run.messages:
            if ids & {c.get("id") for c in m.tool_calls}:
                return m.key
    return None
