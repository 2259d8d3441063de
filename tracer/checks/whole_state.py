"""Checks that read the whole state (``Run.state``: todos, files, structured output,
a middleware's own keys), not only the conversation.

- ``todo-left-in-progress``: the agent ended with a step of its plan ``in_progress``
  (it said it was doing it, and stopped).
- ``file-never-read``: a file the agent wrote (``write_file`` / ``edit_file``) that
  nothing read afterwards: work that went nowhere, or a result nobody looked at.
- ``structured-response-missing``: the agent had a ``response_format`` (its state
  has ``structured_response``) and ended without one.
- ``jump-key-never-changed``: a middleware kept writing its own key and the value
  never changed, in a run that never ended by itself: a jump that depends on it
  (a counter, a flag) can never fire, a loop that cannot end.
"""

from __future__ import annotations

import json
from typing import Any

from tracer.read.loader import Run
from tracer.vocab.payloads import NodePayload, ToolEnterPayload, read_payload
from tracer.vocab.records import TOOL_HOOKS

from .base import Finding, Thresholds

# Deep Agents' filesystem tools that write a file, and the keys the state checks
# leave to others (the conversation; the jump itself).
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
_NOT_CUSTOM = frozenset({"messages", "jump_to", "structured_response", "todos", "files"})


def state_findings(run: Run, th: Thresholds) -> list[Finding]:
    """Every finding of the rules above (none for a run with no state recorded)."""
    if not run.state:
        return []
    return [*todo_left(run), *files_never_read(run), *structured_missing(run),
            *jump_key_never_changed(run, th)]


def todo_left(run: Run) -> list[Finding]:
    log = run.state
    if run.summary.status != "completed" or "todos" not in log:
        return []
    todos = log.final().get("todos")
    if not isinstance(todos, list):
        return []
    doing = [str(t.get("content", "?")) for t in todos
             if isinstance(t, dict) and t.get("status") == "in_progress"]
    if not doing:
        return []
    last = log.history("todos")[-1]
    names = "; ".join(f'"{d[:80]}"' for d in doing[:5])
    return [Finding(
        "todo-left-in-progress", "warning", None,
        f"The agent ended with {len(doing)} step(s) of its plan still in_progress: {names}. "
        "It said it was working on them and stopped: the task may be unfinished (or the "
        "plan was never brought up to date).",
        run.id, last.seq)]


def _tool_calls(run: Run) -> dict[str, tuple[int, str, str]]:
    """tool_call_id -> (seq of its enter event, tool name, its arguments as JSON)."""
    out: dict[str, tuple[int, str, str]] = {}
    for ev in run.events:
        if ev.hook in TOOL_HOOKS and ev.phase == "enter" and ev.tool_call_id:
            p = read_payload(ToolEnterPayload, ev.payload)
            out.setdefault(ev.tool_call_id, (ev.seq, str(p.get("name") or ""),
                                             json.dumps(p.get("args"), default=str)))
    return out


def files_never_read(run: Run) -> list[Finding]:
    log = run.state
    if run.summary.status != "completed" or "files" not in log:
        return []
    calls = _tool_calls(run)
    written: dict[str, tuple[int, str, str]] = {}  # path -> (enter seq, call id, tool)
    before: Any = {}
    for v in log.history("files"):
        now = log.value(v.hash) if v.hash is not None else {}
        if not isinstance(now, dict):
            before = {}
            continue
        call = calls.get(v.tool_call_id or "")
        if call is not None and call[1] in WRITE_TOOLS:
            prev = before if isinstance(before, dict) else {}
            for path, data in now.items():
                if prev.get(path) != data:
                    written[path] = (call[0], str(v.tool_call_id), call[1])
        before = now
    out = []
    for path, (seq, tcid, tool) in written.items():
        read = any(s > seq and name not in WRITE_TOOLS and path in args
                   for s, name, args in calls.values())
        if not read:
            out.append(Finding(
                "file-never-read", "info", None,
                f"{path} was written ({tool}, {tcid}) and nothing read it afterwards: "
                "work the agent did not use, or a result nobody looked at.",
                run.id, seq))
    return out


def structured_missing(run: Run) -> list[Finding]:
    log = run.state
    if run.summary.status != "completed" or "structured_response" not in log:
        return []
    if log.final().get("structured_response") is not None:
        return []
    last = run.events[-1].seq if run.events else None
    return [Finding(
        "structured-response-missing", "error", None,
        "The agent has a response_format (its state has structured_response) and ended "
        "without a structured response: whoever reads result['structured_response'] gets "
        "nothing.",
        run.id, last)]


def jump_key_never_changed(run: Run, th: Thresholds) -> list[Finding]:
    """A custom key written again and again by one middleware's hook with the same value,
    in a run that did not end by itself (it failed, e.g. at the recursion limit)."""
    log = run.state
    if run.summary.status == "completed":
        return []
    writes: dict[tuple[str, str], list[int]] = {}  # (key, hook node) -> seqs
    for ev in run.events:
        p = read_payload(NodePayload, ev.payload)
        if not p or ev.phase != "fire" or not ev.middleware:
            continue
        for key in p.get("update_keys") or ():
            if key not in _NOT_CUSTOM:
                writes.setdefault((str(key), f"{ev.middleware}.{ev.hook}"), []).append(ev.seq)
    out = []
    for (key, node), seqs in writes.items():
        versions = [v for v in log.history(key) if v.hash is not None]
        if len(seqs) < th.repeat_calls or len({v.hash for v in versions}) != 1:
            continue
        value = json.dumps(log.value(versions[0].hash), default=str)[:60]
        out.append(Finding(
            "jump-key-never-changed", "warning", None,
            f"{node} wrote {key} {len(seqs)} times and it never changed (always {value}), "
            "and the run never ended by itself: a jump that depends on it (a counter, a "
            "flag) can never fire, so the loop cannot end. Check that the hook updates it.",
            run.id, seqs[-1]))
    return out
