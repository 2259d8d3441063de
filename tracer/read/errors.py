"""A run's errors, each counted once, and the step where each is first seen.

What is an error (one definition; ``tracer.db.summaries.ERRORS`` counts the same in SQL,
for the runs list, and ``tests/read/test_errors.py`` holds the two to each other):

- **a tool call that failed**: its result is a ``ToolMessage`` with ``status="error"``,
  or the tool raised (an ``error`` of a tool hook, or a layer that saw it raise). Once
  per tool call, however many layers saw it and however many attempts it took;
- **an exception raised by a model call** (or a tool call recorded without its id):
  an ``error`` of a model hook, or a layer that saw one come up (a fallback to another
  model). The same exception seen again by the layer just outside it (the event right
  before, with the same text) is the same error;
- **the run's own failure** (a ``run`` ``error`` event: a run resumed after it is
  ``completed`` and still failed once; or status ``error`` with no such event), unless
  it is one of those exceptions come up to the top (one seen before it with the same
  text, or with no text recorded): one ``TimeoutError`` raised by a tool, seen at the
  tool, at the graph's ``tools`` node and as the run's failure, is one error.

A person's rejection is not an error: a tool call a human in the loop said no to (a
resume carried a "reject" decision, and the tool never ran) has an error
``ToolMessage`` for an answer, but nothing failed: it was a decision.

An exception seen only at a graph node (a middleware's hook raising) counts through
the run's failure it causes. ``error_steps`` gives the steps the replayer's "Next error"
visits: one per error, where it is first seen.
"""

from __future__ import annotations

from typing import Any

from tracer.vocab.payloads import ErrorPayload, LayerPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

from .loader import Event, Run
from .steps import Replay

__all__ = ["error_indexes", "error_steps", "sighting"]

_NOT = object()


def sighting(ev: Event) -> Any:
    """The error text of ``ev`` if it is an exception seen (an ``error`` event, or a layer
    that saw one come up), else ``_NOT``; the text may be None (not recorded)."""
    if ev.phase == "error":
        return read_payload(ErrorPayload, ev.payload).get("error")
    layer = read_payload(LayerPayload, ev.payload)
    if ev.phase == "layer" and layer.get("what") == "error":
        return layer.get("error")
    return _NOT


def _failed_tool_result(ev: Event) -> bool:
    p = ev.payload
    return ev.phase == "exit" and isinstance(p, dict) and p.get("status") == "error"


def _rejects(ev: Event) -> bool:
    """``ev`` is a resume that carried a person's "reject" decision (a human in the loop
    said no to a tool call: ``HumanInTheLoopMiddleware`` answers it with an error
    ``ToolMessage`` and the tool never runs). ``tracer.db.summaries`` says the same."""
    if ev.hook != "resume" or not isinstance(ev.payload, dict):
        return False
    values = ev.payload.get("resume")
    for v in values if isinstance(values, list) else [values]:
        decisions = v.get("decisions") if isinstance(v, dict) else None
        if isinstance(decisions, list) and any(
                isinstance(d, dict) and d.get("type") == "reject" for d in decisions):
            return True
    return False


def error_steps(rp: Replay) -> list[int]:
    """The index of the step where each of the run's errors is first seen, one per
    error, in order (two errors first seen at one step: that step twice; see the
    module's docstring for what counts)."""
    run: Run = rp.run
    steps = rp.steps
    by_seq = {s.event.seq: s.event for s in steps}
    out: list[int] = []
    tools: set[str] = set()  # tool calls counted
    texts: list[tuple[int, Any]] = []  # (seq, text) of each exception of a model or tool call
    for st in steps:
        ev = st.event
        text = sighting(ev)
        seen = text is not _NOT
        if ev.hook in TOOL_HOOKS and ev.tool_call_id and (seen or _failed_tool_result(ev)):
            if ev.tool_call_id not in tools:
                tools.add(ev.tool_call_id)
                out.append(st.index)
            if seen:
                texts.append((ev.seq, text))
        elif seen and (ev.hook in MODEL_HOOKS or ev.hook in TOOL_HOOKS):
            prev = by_seq.get(ev.seq - 1)
            if prev is None or sighting(prev) is _NOT or sighting(prev) != text:
                out.append(st.index)
            texts.append((ev.seq, text))
    # error results the events did not say (a tool result seen in the conversation only),
    # but a person's rejection (a decision, not a failure)
    ran = {st.event.tool_call_id for st in steps if st.event.hook in TOOL_HOOKS}
    rejects = [st.event.seq for st in steps if _rejects(st.event)]
    for m in [*run.messages, *run.revisions]:
        if m.type == "tool" and m.tool_call_id and m.status == "error" and (
                m.tool_call_id not in tools) and not (
                m.tool_call_id not in ran and any(seq <= m.seq for seq in rejects)):
            tools.add(m.tool_call_id)
            i = rp.index_of_seq(m.seq)
            if i is not None:
                out.append(i)

    def came_up(text: Any, before: int | None = None) -> bool:
        """A failure with ``text`` is a model or tool call's exception come up (one seen
        before seq ``before`` with that text, or with no text recorded)."""
        return any(t is None or t == text for seq, t in texts
                   if before is None or seq < before)

    failures = [st for st in steps if st.event.hook == "run" and st.event.phase == "error"]
    for st in failures:
        if not came_up(sighting(st.event), st.event.seq):
            out.append(st.index)
    s = run.summary
    if s.status == "error" and not failures and steps and not came_up(s.error):
        out.append(len(steps) - 1)  # (it failed with no event saying so: at its end)
    return sorted(out)


def error_indexes(rp: Replay) -> frozenset[int]:
    """``error_steps`` as a set, built once per replay (``Replay.view``)."""
    return frozenset(rp.view(error_steps))
