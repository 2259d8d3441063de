"""A tool call's writes to the state, made again when a rerun serves its result.

The record says which tool call changed which state key (``state.tool_call_id``: the
keys of its ``Command(update=...)``, or what changed while the tools step ran that call
alone, as Deep Agents' state backend writes ``files`` straight to the channel). A
rerun that gives the call's recorded result back without running the tool makes the
same writes, so the rerun's state follows its record:

- ``writes_of(log, tool_call_id)``: each key the call changed, its value before the
  call and after it (as recorded);
- ``update_for(channel, write)``: the value to write so that the key's channel turns
  the one into the other: for a channel with a reducer (``files``' merge, a list that
  grows) the entries that changed, checked by running the reducer on the recorded
  value before (else the value after as an ``Overwrite``); for a plain channel the
  value after.

A value the record could not hold as it was (stored as its type and repr, or cut) is
not ``faithful``: a call that wrote one runs again instead (``tracer.whatif.player``).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["MISSING", "StateWrite", "StoreWrite", "channels_of", "faithful", "store_writes_of",
           "update_for", "writes_of"]

MISSING: Any = object()  # the key was not in the state before the call

# markers of a value the record does not hold as it was (``tracer.record.state_keys``)
_NOT_AS_IT_WAS = frozenset({"__repr__", "looptrace_truncated", "looptrace_missing",
                            "looptrace_unreadable"})


@dataclass(frozen=True)
class StateWrite:
    """Key ``key`` was ``before`` (``MISSING``: absent) and the call made it ``after``."""

    key: str
    before: Any
    after: Any


def writes_of(log: Any, tool_call_id: str | None) -> dict[str, StateWrite]:
    """The state keys the recorded tool call ``tool_call_id`` changed (``log``: the
    run's ``StateLog``), each with its value before the call and after it."""
    if not tool_call_id or not log:
        return {}
    out: dict[str, StateWrite] = {}
    for v in log.versions:
        if v.tool_call_id != tool_call_id or v.key.startswith("@") or v.hash is None:
            continue
        first = out.get(v.key)
        if first is None:
            earlier = [x for x in log.history(v.key) if x.seq < v.seq]
            before = log.value(earlier[-1].hash) if earlier and earlier[-1].hash else MISSING
        else:
            before = first.before
        out[v.key] = StateWrite(v.key, before, log.value(v.hash))
    return out


@dataclass(frozen=True)
class StoreWrite:
    """The call put ``value`` at ``key`` of the LangGraph store's ``namespace`` (None:
    deleted it)."""

    namespace: tuple[str, ...]
    key: str
    value: Any


def store_writes_of(log: Any, tool_call_id: str | None) -> list[StoreWrite]:
    """The writes to the LangGraph store the recorded tool call ``tool_call_id`` made,
    in order (``tracer.record.basestore`` records them as ``@store:`` versions)."""
    from tracer.read.state_at import store_item

    if not tool_call_id or not log:
        return []
    out: list[StoreWrite] = []
    for v in log.store_writes():
        item = store_item(v.key) if v.tool_call_id == tool_call_id else None
        if item is not None:
            out.append(StoreWrite(item[0], item[1],
                                  None if v.hash is None else log.value(v.hash)))
    return out


def faithful(value: Any) -> bool:
    """Whether the record holds ``value`` as it was (no repr, no cut, nothing missing)."""
    if isinstance(value, dict):
        if _NOT_AS_IT_WAS & set(value):
            return False
        return all(faithful(v) for v in value.values())
    if isinstance(value, list):
        return all(faithful(v) for v in value)
    return True


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True,
                                                                   default=str)


def _candidates(write: StateWrite) -> list[Any]:
    before, after = write.before, write.after
    out: list[Any] = []
    if isinstance(after, dict) and isinstance(before, dict):
        delta: dict[str, Any] = {k: v for k, v in after.items()
                                 if k not in before or not _same(before[k], v)}
        delta.update({k: None for k in before if k not in after})  # (None: removed)
        out.append(delta)
    if (isinstance(after, list) and isinstance(before, list) and len(after) >= len(before)
            and _same(after[:len(before)], before)):
        out.append(after[len(before):])
    out.append(after)
    return out


def update_for(channel: Any, write: StateWrite) -> Any:
    """The value to write to ``channel`` (the key's channel in the rerun graph; None
    when unknown: written as a plain value) so that it holds ``write.after``."""
    operator = getattr(channel, "operator", None)
    if operator is None or write.before is MISSING:
        return write.after
    for candidate in _candidates(write):
        try:
            made = operator(copy.deepcopy(write.before), copy.deepcopy(candidate))
        except Exception:  # noqa: BLE001, S112 - a reducer that wants other values: next
            continue
        if _same(made, write.after):
            return candidate
    from langgraph.types import Overwrite  # (no smaller update makes it: the value itself)

    return Overwrite(write.after)


def channels_of(agent: Any) -> dict[str, Any]:
    """The state channels of a compiled agent (through ``with_config`` bindings)."""
    graph = agent
    for _ in range(8):
        channels = getattr(graph, "channels", None)
        if isinstance(channels, dict):
            return channels
        graph = getattr(graph, "bound", None)
        if graph is None:
            break
    return {}
