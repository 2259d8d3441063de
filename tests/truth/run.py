"""Running a scenario and capturing what really happened: :func:`run_truth` streams the
agent (``stream`` or ``astream``, so the very same run can also be traced by looptrace)
and returns a :class:`Truth`: LangGraph's own account of the run, independent of
looptrace.

Where each field of :class:`Truth` comes from, and why it is exact
------------------------------------------------------------------

``model_inputs`` / ``sub_model_inputs`` / ``summary_inputs`` / ``model_calls``
    What the recording model received, call by call (:mod:`truth.model`).

``node_states`` / ``nodes`` / ``steps``
    The agent is streamed with ``stream_mode=["debug", "values"]``:

    * ``debug`` ``task`` events give, per superstep (``step``), every task that
      LangGraph scheduled, in the order it prepared them; ``task_result`` events
      give each task's writes (``result``), ``interrupts`` and ``error``.
    * ``values`` events give the full state after a superstep's writes were
      applied. LangGraph emits one only when the superstep changed an output
      channel, so a superstep without one left the state unchanged.

    LangGraph's runner yields control to the stream consumer *before* it runs
    the next superstep's tasks (``PregelRunner.tick`` yields first), so the deep
    copy the kit takes of a ``values`` event is the state exactly after that
    superstep, before any later node could mutate a message in place.

    A superstep with one task (every node of ``create_agent`` except parallel tool
    calls) therefore gets the exact state after that node. A superstep with
    several tasks (one ``tools`` task per tool call, sent with ``Send``) is applied
    by LangGraph all at once, in task-path order, which for ``Send`` tasks is the
    order of the tool calls in the AIMessage, which is also the order in which the
    ``debug`` ``task`` events arrive (not the completion order in which the
    ``task_result`` / ``updates`` events arrive). The kit rebuilds the
    intermediate states by applying each task's ``messages`` writes with
    ``add_messages`` in that order; the state after the LAST task is LangGraph's
    own ``values`` event, and the kit checks that its rebuild reproduces it (ids
    and contents) and raises :class:`TruthError` otherwise. ``StepRecord.rebuilt``
    marks the rebuilt intermediate states.

    Invocations are concatenated (HITL: the interrupted invocation, then the
    resumed one). A node interrupted by ``interrupt()`` is listed (it ran, up to
    the interrupt) with the state unchanged (its writes were not applied); on
    resume LangGraph runs it again from the start, so it is listed again.

``final``
    The messages of the last ``values`` event of the last invocation, which is
    what ``invoke`` would have returned as ``result["messages"]``.

``interrupts``
    The ``Interrupt`` objects LangGraph surfaced (``__interrupt__`` of the
    ``values`` stream), in order, deep-copied.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.graph.message import add_messages

from truth.compare import message_key
from truth.model import RECORDER, ModelCall, Recorder
from truth.scenarios import FAILING, SCENARIOS, Scenario


class TruthError(AssertionError):
    """The kit could not establish the truth exactly (its own consistency check failed)."""

# ---------------------------------------------------------------------------
# Running and capturing
# ---------------------------------------------------------------------------


@dataclass
class StepRecord:
    """One task (graph node run) of the top-level graph."""

    invocation: int                 # index into Scenario.inputs
    step: int                       # LangGraph superstep number
    task_id: str
    name: str                       # node name, e.g. "model", "PIIMiddleware[email].before_model"
    writes: dict[str, Any] | None   # the task's writes (debug task_result "result"), deep copy
    messages: list[BaseMessage]     # state messages after this node's update was applied
    values: dict[str, Any]          # full output state after the node (see ``rebuilt``)
    interrupts: list[Any] = field(default_factory=list)
    error: Any = None
    rebuilt: bool = False           # intermediate state of a multi-task superstep, rebuilt


@dataclass
class Truth:
    """What really happened in one :func:`run_truth` (see the module docstring).

    ``final_values`` is the last ``values`` chunk: EVERY state channel, including the
    private ones ``invoke()`` filters out (``jump_to``, ``run_model_call_count``,
    ``hitl_edited_tool_calls``, ``_summarization_event`` ...). ``invocation_finals``
    holds the final messages of each invocation (HITL: the paused one, then the
    resumed one). ``model_calls`` has every chat-model call of every kind, in order.
    """

    final: list[BaseMessage]
    model_inputs: list[list[BaseMessage]]
    node_states: list[tuple[str, list[BaseMessage]]]
    nodes: list[str]
    interrupts: list[Any]
    sub_model_inputs: list[list[BaseMessage]] = field(default_factory=list)
    summary_inputs: list[list[BaseMessage]] = field(default_factory=list)
    model_calls: list[ModelCall] = field(default_factory=list)
    steps: list[StepRecord] = field(default_factory=list)
    final_values: dict[str, Any] = field(default_factory=dict)
    invocation_finals: list[list[BaseMessage]] = field(default_factory=list)
    raised: BaseException | None = None  # what the stream ended in (a failing scenario)


class _Capture:
    """Folds ``("debug", ...)`` and ``("values", ...)`` stream chunks into StepRecords."""

    def __init__(self) -> None:
        self.steps: list[StepRecord] = []
        self.interrupts: list[Any] = []
        self.invocation = 0
        self.values: dict[str, Any] = {}
        self._step: int | None = None
        self._tasks: list[tuple[str, str]] = []
        self._results: dict[str, dict[str, Any]] = {}
        self._after: dict[str, Any] | None = None
        self.last_values: dict[str, Any] = {}

    def begin(self, invocation: int) -> None:
        self.invocation = invocation
        self._step = None
        self._tasks, self._results, self._after = [], {}, None

    def feed(self, chunk: Any) -> None:
        mode, data = chunk
        if mode == "debug":
            kind, payload = data["type"], data["payload"]
            if kind == "task":
                if data["step"] != self._step:
                    self._close_step()
                    self._step = data["step"]
                self._tasks.append((payload["id"], payload["name"]))
            elif kind == "task_result":
                # (the exception itself as raised: not every exception can be copied)
                error = payload.get("error")
                kept = copy.deepcopy({k: v for k, v in payload.items() if k != "error"})
                self._results[payload["id"]] = {**kept, "error": error}
        elif mode == "values":
            data = dict(data)
            interrupts = data.pop("__interrupt__", None)
            snapshot = copy.deepcopy(data)
            if interrupts is not None:
                self.interrupts.extend(copy.deepcopy(list(interrupts)))
            elif self._step is None:
                self.values = snapshot      # the input state (or the resumed checkpoint)
            else:
                self._after = snapshot
            self.last_values = snapshot

    def end(self) -> None:
        self._close_step()

    def _close_step(self) -> None:
        if self._step is None or not self._tasks:
            return
        before = self.values
        after = self._after if self._after is not None else before
        if len(self._tasks) == 1:
            task_id, name = self._tasks[0]
            self._add(task_id, name, after, rebuilt=False)
        else:
            msgs = list(before.get("messages", []))
            for i, (task_id, name) in enumerate(self._tasks):
                written = (self._results.get(task_id) or {}).get("result") or {}
                w = written.get("messages")
                if w is not None:
                    for part in (w["$writes"] if isinstance(w, dict) and "$writes" in w else [w]):
                        msgs = add_messages(msgs, part)
                last = i == len(self._tasks) - 1
                if last:
                    want = [message_key(m) for m in after.get("messages", [])]
                    got = [message_key(m) for m in msgs]
                    if want != got:
                        msg = (f"rebuilt state of step {self._step} does not match LangGraph's:"
                               f"\nrebuilt: {got}\nlanggraph: {want}")
                        raise TruthError(msg)
                    self._add(task_id, name, after, rebuilt=False)
                else:
                    values = {**before, "messages": copy.deepcopy(msgs)}
                    self._add(task_id, name, values, rebuilt=True)
        self.values = after
        self._tasks, self._results, self._after = [], {}, None

    def _add(self, task_id: str, name: str, values: dict[str, Any], *, rebuilt: bool) -> None:
        res = self._results.get(task_id) or {}
        self.steps.append(StepRecord(
            invocation=self.invocation, step=int(self._step or 0), task_id=task_id, name=name,
            writes=res.get("result"), messages=list(values.get("messages", [])), values=values,
            interrupts=list(res.get("interrupts") or []), error=res.get("error"),
            rebuilt=rebuilt))


STREAM_MODES = ["debug", "values"]


def _prepare(scenario: Scenario | str, extra_middleware: list[Any] | None, position: str,
             callbacks: list[Any] | None) -> tuple[Scenario, Recorder, Any, dict[str, Any]]:
    sc = (SCENARIOS.get(scenario) or FAILING[scenario]) if isinstance(scenario, str) else scenario
    rec = Recorder()
    token = RECORDER.set(rec)
    try:
        agent = sc.build(list(extra_middleware or []), position=position)
    finally:
        RECORDER.reset(token)
    config = copy.deepcopy(sc.config)
    if callbacks:
        config["callbacks"] = list(callbacks)
    return sc, rec, agent, config


def _truth(cap: _Capture, rec: Recorder, finals: list[list[BaseMessage]],
           raised: BaseException | None = None) -> Truth:
    return Truth(
        raised=raised,
        final=finals[-1] if finals else [],
        model_inputs=[c.messages for c in rec.calls if c.kind == "main"],
        node_states=[(s.name, s.messages) for s in cap.steps],
        nodes=[s.name for s in cap.steps],
        interrupts=cap.interrupts,
        sub_model_inputs=[c.messages for c in rec.calls if c.kind == "sub"],
        summary_inputs=[c.messages for c in rec.calls if c.kind == "summary"],
        model_calls=list(rec.calls),
        steps=cap.steps,
        final_values=cap.last_values,
        invocation_finals=finals,
    )


def run_truth(scenario: Scenario | str, extra_middleware: list[Any] | None = None, *,
              position: str = "last", mode: str = "sync",
              callbacks: list[Any] | None = None) -> Truth:
    """Build ``scenario`` with ``extra_middleware`` at ``position``, run all its inputs.

    ``mode="sync"`` uses ``agent.stream``; ``mode="async"`` runs :func:`arun_truth`
    (``agent.astream``) with ``asyncio.run`` (call :func:`arun_truth` directly from a
    running event loop). ``callbacks`` go into the run config.
    """
    if mode == "async":
        return asyncio.run(arun_truth(scenario, extra_middleware, position=position,
                                      callbacks=callbacks))
    if mode != "sync":
        msg = f"mode must be 'sync' or 'async', not {mode!r}"
        raise ValueError(msg)
    sc, rec, agent, config = _prepare(scenario, extra_middleware, position, callbacks)
    cap = _Capture()
    finals: list[list[BaseMessage]] = []
    raised = None
    for i, inp in enumerate(sc.inputs):
        cap.begin(i)
        # a copy: LangGraph stamps ids onto the caller's input messages in place
        try:
            for chunk in agent.stream(copy.deepcopy(inp), config=config,
                                      stream_mode=STREAM_MODES):
                cap.feed(chunk)
        except Exception as exc:
            if sc.raises is None or not isinstance(exc, sc.raises):
                raise
            raised = exc
        cap.end()
        finals.append(list(cap.last_values.get("messages", [])))
    if sc.raises is not None and raised is None:
        msg = f"{sc.name} was to fail with {sc.raises.__name__}, and did not"
        raise TruthError(msg)
    return _truth(cap, rec, finals, raised)


async def arun_truth(scenario: Scenario | str, extra_middleware: list[Any] | None = None, *,
                     position: str = "last", callbacks: list[Any] | None = None) -> Truth:
    """The async twin of :func:`run_truth` (``agent.astream``)."""
    sc, rec, agent, config = _prepare(scenario, extra_middleware, position, callbacks)
    cap = _Capture()
    finals: list[list[BaseMessage]] = []
    raised = None
    for i, inp in enumerate(sc.inputs):
        cap.begin(i)
        try:
            async for chunk in agent.astream(copy.deepcopy(inp), config=config,
                                             stream_mode=STREAM_MODES):
                cap.feed(chunk)
        except Exception as exc:
            if sc.raises is None or not isinstance(exc, sc.raises):
                raise
            raised = exc
        cap.end()
        finals.append(list(cap.last_values.get("messages", [])))
    if sc.raises is not None and raised is None:
        msg = f"{sc.name} was to fail with {sc.raises.__name__}, and did not"
        raise TruthError(msg)
    return _truth(cap, rec, finals, raised)


__all__ = ["STREAM_MODES", "StepRecord", "Truth", "TruthError", "arun_truth", "run_truth"]
