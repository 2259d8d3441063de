"""The State view's part of a replay's JSON: every other state key, step by step.

``state_json(replay, span)`` gives the replayer what it needs to show, at each step
of ``span``, the state as ``Replay.values_at`` has it (todos, files, structured
output, custom keys), which keys changed at that step, and who changed them:

- ``values``: every value the steps show, once each (a value met again, such as a
  file read back, is sent once);
- ``steps``: per step of the span, 0 (nothing changed) or a list of changes
  ``[key, value index or -1 (the key left the state), by, tool_call_id]``: the
  versions recorded after the step before and up to this step's event. The first
  step of the span carries the whole state there (``[["*"], ...]``, the keys not
  changed at it as ``[key, value index]``), so a window of a large run starts from
  what it needs, not from the run's first step.

The writes the run made to the LangGraph store (``tracer.record.basestore``) come as the
keys ``@store:[namespace, key]`` (the replayer draws them as a "store" branch); the
other ``@`` keys (``runtime.context``) are not sent.

None for a run with no state beyond messages (nothing is added to its JSON).
"""

from __future__ import annotations

from typing import Any

from tracer.read.state_at import STORE_PREFIX
from tracer.read.steps import Replay


def _hidden(key: str) -> bool:
    return key.startswith("@") and not key.startswith(STORE_PREFIX)


def state_json(rp: Replay, span: range) -> dict[str, Any] | None:
    log = rp.run.state
    if not log or not rp.steps or not span:
        return None
    values: list[Any] = []
    index: dict[str, int] = {}

    def vi(h: str | None) -> int:
        if h is None:
            return -1
        if h not in index:
            index[h] = len(values)
            values.append(log.value(h))
        return index[h]

    steps: list[Any] = []
    first = span.start
    prev_seq = rp.steps[first].event.seq
    for i in span:
        seq = rp.steps[i].event.seq
        if i == first:
            whole = log.versions_at(seq)
            changed = {v.key for v in log.changed_at(seq)}
            row: list[Any] = [["*"]]
            for key, v in whole.items():
                if _hidden(key):
                    continue
                # ([key, value]: held, not changed here; four entries: changed here)
                row.append([key, vi(v.hash), v.by, v.tool_call_id] if key in changed
                           else [key, vi(v.hash)])
            # (a key that left the state at this very step: shown as changed)
            row += [[v.key, -1, v.by, v.tool_call_id] for v in log.changed_at(seq)
                    if v.hash is None and not _hidden(v.key)]
            steps.append(row)
        else:
            latest: dict[str, Any] = {}
            for v in log.between(prev_seq, seq) if seq > prev_seq else ():
                if not _hidden(v.key):
                    latest[v.key] = v
            steps.append([[k, vi(v.hash), v.by, v.tool_call_id] for k, v in latest.items()]
                         or 0)
        prev_seq = max(prev_seq, seq)
    return {"values": values, "steps": steps}
