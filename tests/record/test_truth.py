"""The record is the truth: a differential test against LangGraph itself.

Real agents with real prebuilt middleware (``tests/truth/``: PII in and out,
summarisation, context editing, a call limit that jumps to the end, tool retry, model
fallback, todo list, human in the loop with an edit, an ``after_agent`` that sends the
agent back to work, and a Deep Agent with an evicted tool result, a subagent and its
summarisation) run with ``TraceMiddleware`` first, in the middle and last in the list,
sync and async (under blockbuster). The oracle is LangGraph's own stream (the state
after every node) and a scripted model that keeps what it was given. Checked:

- after every graph node, the replay passes through the state LangGraph had, in order,
  and every state it shows lies on the way between two of them (tool results appear
  one by one as their calls return);
- at every model call the replay shows what the model received;
- the last step is what the invocation returned;
- the graph's steps visit the nodes that ran, in order (no path that never ran);
- the tracer never changes the result;
- a failing agent (a call limit that raises in before_model, a tool retry that gives
  up, a tool without error handling, a model whose fallback fails too): LangGraph's
  stream ends in the exception at a node; the record is ``error`` with the
  exception's type and text, and its last steps are the failure at that same node,
  with or without the callback handler.

With only the middleware (no callback handler) the tracer sees the state at its own
hooks: there the replay must equal the truth at those nodes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from blockbuster import blockbuster_ctx
from langchain_core.messages import BaseMessage, SystemMessage, messages_from_dict
from tracer_kit import whole_state
from truth.compare import message_key
from truth.run import Truth, arun_truth, run_truth
from truth.scenarios import FAILING, SCENARIOS

from tracer import TraceMiddleware
from tracer.read.loader import Message, TraceDB
from tracer.read.steps import GRAPH_NODES, Replay, build_replay
from tracer.vocab.records import MODEL_HOOKS

POSITIONS = ("first", "middle", "last", "around")
NAMES = sorted(SCENARIOS)


def _norm(text: Any) -> Any:
    """Deep Agents names its summary file with a random uuid: not a difference."""
    if isinstance(text, str):
        return re.sub(r"session_[0-9a-f-]{32,36}", "session_<uuid>", text)
    return text


def keys(msgs: Sequence[BaseMessage], *, ids: bool = True) -> list[tuple[Any, ...]]:
    """What is compared of each message (the system message aside): type, id,
    content, tool calls, tool_call_id. Without ``ids`` the message ids are left out
    (LangGraph gives random ones to messages made without: two runs differ there)."""
    out = []
    for m in msgs:
        if isinstance(m, SystemMessage):
            continue
        k = message_key(m)
        out.append((k[0], k[1] if ids else None, _norm(k[2]), k[3], k[4]))
    return out


def replayed(msgs: Sequence[Message]) -> list[tuple[Any, ...]]:
    return keys([m.to_langchain() for m in msgs])


def record(tmp_path: Path, name: str, position: str, mode: str,
           attach: bool) -> tuple[Truth, Replay]:
    db = tmp_path / f"{name}-{position}-{mode}.db"
    trace = TraceMiddleware(db=db)
    callbacks = [trace.callback_handler()] if attach else None
    if mode == "async":
        async def go() -> Truth:
            with blockbuster_ctx():
                return await arun_truth(name, [trace], position=position, callbacks=callbacks)
        truth = asyncio.run(go())
    else:
        truth = run_truth(name, [trace], position=position, callbacks=callbacks)
    trace.flush()
    with TraceDB(db) as tdb:
        roots = [r for r in tdb.runs() if r.parent_id is None]
        assert len(roots) == 1, [(r.name, r.status) for r in roots]
        run = tdb.run(roots[0].id)
    return truth, build_replay(run)


def _graph_node(name: str) -> str:
    if name in ("model", "tools"):
        return name
    return name.rsplit(".", 1)[-1]


def _dedupe(seq: list[Any]) -> list[Any]:
    out: list[Any] = []
    for x in seq:
        if not out or out[-1] != x:
            out.append(x)
    return out


def _is_prefix(a: list[Any], b: list[Any]) -> bool:
    return len(a) <= len(b) and b[:len(a)] == a


def check_states(truth: Truth, replay: Replay) -> None:
    """The replay's states walk through the truth's, in order, and only between them."""
    truths = _dedupe([keys(st) for _, st in truth.node_states])
    shown = [st for st in _dedupe([replayed(replay.state_at(s.event.seq))
                                   for s in replay.steps]) if st]
    t = 0
    for i, state in enumerate(shown):
        later = next((j for j in range(t, len(truths)) if truths[j] == state), None)
        if later is not None:
            t = later
            continue
        between = t + 1 < len(truths) and _between(truths, t, state)
        before_first = t == 0 and _is_prefix(state, truths[0])
        assert between or before_first, (
            f"replay state {i} of {len(shown)} is no state LangGraph had (after truth"
            f" {t}, {truth.node_states[t][0]}):\n  shown {_brief(state)}\n"
            f"  truth {_brief(truths[t])}")
    # (a state the kit rebuilt between parallel tool results never existed in
    # LangGraph, which applies them at once: it need not be shown)
    real = _dedupe([keys(s.messages) for s in truth.steps if not s.rebuilt])
    missing = [j for j, st in enumerate(real) if st not in shown]
    assert not missing, f"LangGraph states the replay never shows: {missing} of {len(real)}"


def _between(truths: list[list[Any]], t: int, state: list[Any]) -> bool:
    """``state`` is on the way from node state ``t`` to the next ones: tool results
    arrive one by one, in the order the calls return (LangGraph applies them in call
    order, one superstep for all), and a model's reply shows at its return, before the
    node's other writes (Deep Agents' model node also rewrites an old tool result)."""
    before = _results(truths[t])
    now = _results(state)
    if not _is_prefix(before, now):
        return False
    u = t + 1  # the furthest later state that only grows from here
    while u + 1 < len(truths) and _is_prefix(_results(truths[u]), _results(truths[u + 1])):
        u += 1
    if u >= len(truths):
        return False
    due = _results(truths[u])
    if not _is_prefix(before, due):
        return False
    came = now[len(before):]
    rest = due[len(before):]
    return all(x in rest for x in came) and len(set(map(repr, came))) == len(came)


def _results(state: list[Any]) -> list[Any]:
    """A state with tool results reduced to the call they answer: between two nodes the
    replay shows each result as the tracer's wrap_tool_call got it, and a layer outside
    it may still change its content (HITL's note on an edited call, Deep Agents'
    eviction); the new version is then a step of its own."""
    return [(k[0], k[4]) if k[0] == "tool" else k for k in state]


def _brief(state: list[Any]) -> str:
    return " | ".join(f"{k[0]}:{str(k[2])[:40]!r}" for k in state)


def model_views(replay: Replay) -> list[list[tuple[Any, ...]]]:
    """What each model call received according to the replay: the views recorded
    from the tracer's layer inwards (a ``sent`` step when the layers inside the tracer
    changed the request; with probes, a ``layer`` step for each layer that did)."""
    out: list[list[tuple[Any, ...]]] = []
    open_call = False
    for step in replay.steps:
        ev = step.event
        if ev.hook not in MODEL_HOOKS:
            continue
        if ev.phase == "enter":
            out.append(replayed(replay.messages_at(step.index)))
            open_call = True
        elif open_call and (ev.phase == "sent" or (
                ev.phase == "layer" and "message_keys" in (ev.payload or {}))):
            out.append(replayed(replay.messages_at(step.index)))  # a layer's view
        elif ev.phase in ("exit", "error"):
            open_call = False
    return out


def check_model_inputs(truth: Truth, replay: Replay, position: str) -> None:
    want = _dedupe([keys(m.messages) for m in truth.model_calls if m.kind == "main"])
    got = _dedupe(model_views(replay))
    # A sent step follows its enter step: what the model got is the last view per call.
    assert all(w in got for w in want), (
        "a model call's input is not shown by the replay:\n" + "\n".join(
            f"  truth {_brief(w)}" for w in want if w not in got))


def _plain(value: Any) -> Any:
    """A state value in the terms both sides can be compared in: messages by their
    ``keys``, pydantic models by their JSON fields, tuples as lists, the random
    names of Deep Agents' summary files made equal."""
    if isinstance(value, BaseMessage):
        return list(keys([value])[0]) if not isinstance(value, SystemMessage) else [
            "system", value.content]
    if isinstance(value, dict):
        if set(value) == {"type", "data"} and isinstance(value["data"], dict) and (
                "content" in value["data"]):  # a message as the record stores it
            return _plain(messages_from_dict([value])[0])
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _plain(dump(mode="json"))
    return _norm(value)


def _values(values: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(v) for k, v in values.items() if k != "messages"}


def check_values(truth: Truth, replay: Replay, *, exact: bool = True) -> None:
    """Every other state key (todos, files, structured_response, custom keys, jump_to
    ...): the replay's whole state walks through LangGraph's ``values`` stream, in
    order; attached (every node's input seen), it shows each of them and nothing else."""
    truths = _dedupe([_values(s.values) for s in truth.steps if not s.rebuilt])
    shown = _dedupe([_values(replay.values_at(s.event.seq)) for s in replay.steps])
    if shown[:1] == [{}] and truths[:1] != [{}]:
        shown = shown[1:]  # (the run's start, before the input state was seen)
    if len(shown) > 1 and "jump_to" in truths[-1] and shown[-2] == truths[-1] and shown[-1] == {
            k: v for k, v in truths[-1].items() if k != "jump_to"}:
        # ``jump_to`` is ephemeral: the step after the jump clears it, and LangGraph
        # streams no values for a step that only cleared it; the graph's output (the
        # final state the record ends with) has it cleared.
        shown = shown[:-1]
    if exact:
        assert shown == truths, "\n".join(
            ["the replay's states (other than messages) are not LangGraph's:", "shown:"]
            + [f"  {_brief_values(v)}" for v in shown] + ["truth:"]
            + [f"  {_brief_values(v)}" for v in truths])
    else:
        t = 0
        for v in shown:
            assert v in truths[t:], f"{_brief_values(v)} is no later state LangGraph had"
            t = truths.index(v, t)
    assert shown[-1] == truths[-1]


def _brief_values(values: dict[str, Any]) -> str:
    return "; ".join(f"{k}={str(v)[:60]}" for k, v in values.items())


def check_paths(truth: Truth, replay: Replay) -> None:
    ran = _dedupe([_graph_node(n) for n in truth.nodes])
    drawn = _dedupe([s.node for s in replay.steps if s.node not in ("START", "END")])
    assert drawn == ran, f"\n  drawn {drawn}\n  ran   {ran}"
    assert set(drawn) <= set(GRAPH_NODES)


@pytest.fixture(scope="module")
def untraced() -> dict[str, Truth]:
    return {name: run_truth(name) for name in NAMES}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("name", NAMES)
def test_replay_is_the_truth(tmp_path, untraced, name, position, mode):
    truth, replay = record(tmp_path, name, position, mode, attach=True)
    # The tracer never changes the result, nor what the model was given: the whole
    # final state (every state channel, every field of every message) and every model
    # call's whole input.
    assert whole_state(truth.final_values) == whole_state(untraced[name].final_values)
    assert whole_state(truth.final) == whole_state(untraced[name].final)
    assert [whole_state(m.messages) for m in truth.model_calls] == [
        whole_state(m.messages) for m in untraced[name].model_calls]
    # The last step is what the invocation returned.
    assert replayed(replay.messages_at(len(replay) - 1)) == keys(truth.final)
    check_states(truth, replay)
    check_values(truth, replay)
    check_model_inputs(truth, replay, position)
    check_paths(truth, replay)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("name", NAMES)
def test_middleware_alone_is_true_at_its_hooks(tmp_path, name, position, mode):
    """Without callbacks: at each of its own node hooks the replay equals LangGraph's
    state there; the last step equals the result when no after_agent runs after it."""
    truth, replay = record(tmp_path, name, position, mode, attach=False)
    own = [keys(s) for n, s in truth.node_states if n.startswith("TraceMiddleware.")]
    seen = [replayed(replay.state_at(s.event.seq)) for s in replay.steps
            if s.event.middleware == "TraceMiddleware" and s.event.phase == "fire"]
    assert seen == own
    # every other state key too, as LangGraph had it there
    own_values = [_values(s.values) for s in truth.steps
                  if s.name.startswith("TraceMiddleware.") and not s.rebuilt]
    seen_values = [_values(replay.values_at(s.event.seq)) for s in replay.steps
                   if s.event.middleware == "TraceMiddleware" and s.event.phase == "fire"]
    assert seen_values == own_values
    check_values(truth, replay, exact=False)
    last_node = next((n for n in reversed(truth.nodes) if n.endswith(".after_agent")), None)
    if last_node == "TraceMiddleware.after_agent":
        assert replayed(replay.messages_at(len(replay) - 1)) == keys(truth.final)


@pytest.mark.parametrize("attach", [False, True], ids=["alone", "attached"])
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("name", sorted(FAILING))
def test_a_failing_run_ends_where_langgraph_says(tmp_path, name, position, mode, attach):
    truth, replay = record(tmp_path, name, position, mode, attach=attach)
    # LangGraph's account: the stream ended in the exception, raised at its last node.
    assert truth.raised is not None
    failed = [s for s in truth.steps if s.error is not None]
    assert failed and failed[-1] is truth.steps[-1], [(s.name, s.error) for s in truth.steps]
    assert failed[-1].error is truth.raised
    where = failed[-1].name
    text = f"{type(truth.raised).__name__}: {truth.raised}"
    # the record: the run failed with that exception ...
    summary = replay.run.summary
    assert (summary.status, summary.error) == ("error", text)
    # ... and its last steps are the failure at the same node
    last, before = replay.steps[-1], replay.steps[-2]
    assert (last.event.hook, last.event.phase) == ("run", "error")
    assert last.event.payload["error"] == text
    assert before.event.phase == "error" and text in str(before.event.payload)
    assert before.node == last.node == _graph_node(where), (
        where, [(s.event.hook, s.event.phase, s.node) for s in replay.steps[-4:]])
    if "." in where:  # a middleware's node hook: named as that middleware's
        assert (before.event.middleware, before.event.hook) == tuple(where.rsplit(".", 1))
    if attach:  # every node seen: the states and the path up to the failure are true too
        check_states(truth, replay)
        check_values(truth, replay)
        check_paths(truth, replay)


@pytest.fixture
def eager_writer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer builds and commits each record as soon as it is put (from the agent's
    side): as if its thread ticked between any two hooks. The rows must not depend on
    when that happens: LangGraph changes some messages in place after the tracer saw
    them (its reducer gives a message without an id one), and the writer serialises a
    message when it builds its row."""
    import threading

    from tracer.db.writer import Writer

    put = Writer.put

    def eager(self: Writer, item: Any) -> None:
        put(self, item)
        if not self._is_control(item) and threading.current_thread() is not self._thread:
            self.flush()

    monkeypatch.setattr(Writer, "put", eager)


@pytest.mark.parametrize("position", ["first", "last"])
@pytest.mark.parametrize("name", NAMES)
def test_the_record_does_not_depend_on_when_the_writer_writes(tmp_path, eager_writer, name,
                                                              position):
    # (structured: the structured response's ToolMessage is recorded at the model call's
    # exit, without an id, and named by the reducer after: its row had no id when the
    # writer happened to build it in between)
    truth, replay = record(tmp_path, name, position, "sync", attach=True)
    assert replayed(replay.messages_at(len(replay) - 1)) == keys(truth.final)
    check_states(truth, replay)
    check_values(truth, replay)
