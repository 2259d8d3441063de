"""Every statement a caption makes is read from the record, and checked against it here.

The replay's captions (``tracer.read.steps``) explain each step in words: "the run fails",
"attach the callback handler", "outside TraceMiddleware", "the model is called with 3
messages", "asking for 2 tool calls", "jumped", "the loop's code caught the exception".
This test walks every step of every bundled sample and of the truth agents
(``tests/truth/``, with and without the callback handler) and, for each statement
it finds in a caption, checks the fact behind it in the record itself (the run's
status and source, its events and payloads, its messages): computed here, from the
loader's records, not by the caption code. Plurals too: never "1 messages".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from pg_kit import store_on
from truth.run import run_truth
from truth.scenarios import SCENARIOS

from tracer import TraceMiddleware
from tracer.read.captions import captions
from tracer.read.loader import Run, TraceDB
from tracer.read.steps import Replay, build_replay
from tracer.read.tool_life import signature_note
from tracer.vocab.hooks import HOOK_NAMES

MODEL = ("wrap_model_call", "model")
TOOL = ("wrap_tool_call", "tool")


def _status(rp: Replay) -> str:
    return str(rp.run.summary.status)


def _has_tracer(run: Run) -> bool:
    """TraceMiddleware (or a named instance of it) recorded model or tool calls."""
    return any(e.hook in MODEL + TOOL and e.phase in ("enter", "exit") and e.middleware
               and "Trace" in e.middleware for e in run.events)


def _hooks(run: Run) -> set[str]:
    return {e.hook for e in run.events}


def _messages_sent(rp: Replay, i: int) -> int:
    return len(rp.messages_at(i))


def _calls_asked(rp: Replay, i: int) -> int:
    seq = rp.steps[i].event.seq
    return sum(len(m.tool_calls) for m in rp.run.messages if m.seq == seq and m.type == "ai")


def _jump_said_before(rp: Replay, i: int) -> bool:
    """This event, or one since the last move before it, said it jumped (jump_to / goto)."""
    j = i
    while j >= 0:
        p = rp.steps[j].event.payload
        if isinstance(p, dict) and (p.get("jump_to") or p.get("goto")):
            return True
        if rp.steps[j].edge and j < i:
            return False
        j -= 1
    return False


def _create_agent(run: Run) -> bool:
    """The run's start says it is a create_agent graph (the callback handler's ``graph``)."""
    return any(e.hook == "run" and e.phase == "start" and isinstance(e.payload, dict)
               and e.payload.get("graph") == "create_agent" for e in run.events)


def _has_after_agent(run: Run) -> bool:
    """An after_agent hook fired, or the recorded stack has a middleware on it."""
    if any(e.hook == "after_agent" for e in run.events):
        return True
    start = run.events[0].payload if run.events else None
    stack = start.get("stack") if isinstance(start, dict) else None
    return any("after_agent" in (s.get("hooks") or ()) for s in stack or ()
               if isinstance(s, dict))


def _reply_fate(rp: Replay, i: int) -> tuple[list[str], list[str], bool]:
    """The calls the reply at step i asked for, those that ran before the next model
    call (in order), and whether an interrupt came before the first of them."""
    seq = rp.steps[i].event.seq
    asked = [c["id"] for m in rp.run.messages if m.seq == seq and m.type == "ai"
             for c in m.tool_calls]
    ran: list[str] = []
    paused = False
    for s in rp.steps[i + 1:]:
        e = s.event
        if e.hook in MODEL and e.phase == "enter":
            break
        if e.hook == "interrupt" or e.phase == "interrupt":
            paused = paused or not ran
        if e.hook in TOOL and e.phase == "enter" and e.tool_call_id in asked and (
                e.tool_call_id not in ran):
            ran.append(str(e.tool_call_id))
    return asked, ran, paused


def _all_ran(asked: list[str], ran: list[str], paused: bool) -> bool:
    """Several calls asked for, every one of them ran, and no pause came first."""
    return len(asked) > 1 and sorted(ran) == sorted(asked) and not paused


def _pending(rp: Replay, i: int, tcid: str | None) -> bool:
    """Tool call tcid is asked for and not answered in the conversation at step i."""
    msgs = rp.messages_at(i)
    return any(c.get("id") == tcid for m in msgs for c in m.tool_calls) and not any(
        m.tool_call_id == tcid for m in msgs)


def _fork_call(rp: Replay) -> int | None:
    """The step of the first call at or after the fork's step (the run's metadata), of the
    kind its edit is on: where the fork made its edit."""
    meta = rp.run.metadata if isinstance(rp.run.metadata, dict) else {}
    fork = meta.get("forked_from") or {}
    kind = (fork.get("edit") or {}).get("kind")
    hooks = MODEL if kind in ("message", "drop", "insert", "system", "model") else TOOL
    return next((s.index for s in rp.steps[max(int(fork.get("step") or 0) - 1, 0):]
                 if s.event.hook in hooks and s.event.phase == "enter"), None) if fork else None


def _next_firing(rp: Replay, i: int) -> Any:
    """The hook firing the record shows after step i's (history and node events aside)."""
    seq = rp.steps[i].event.seq
    return next((e for e in rp.run.events if e.seq > seq and e.hook not in ("history", "node")),
                None)


def _then_after_model(rp: Replay, i: int) -> str | None:
    """The middleware whose after_model fires next in the same lap as step i's, if any."""
    e, ev = _next_firing(rp, i), rp.steps[i].event
    return e.middleware if e is not None and e.hook == "after_model" and e.lap == ev.lap else None


def _answer(rp: Replay, i: int) -> Any:
    tcid = rp.steps[i].event.tool_call_id
    return next((m for m in rp.run.messages if tcid and m.tool_call_id == tcid), None)


# A statement (regex) -> the fact it claims, read from the record at step i (match m).
Check = Callable[[Replay, int, "re.Match[str]"], bool]
FACTS: list[tuple[str, Check]] = [
    (r"[Tt]he run fail(s|ed)\b", lambda rp, i, m: _status(rp) == "error"),
    (r"attach the callback handler", lambda rp, i, m: rp.run.summary.source != "callbacks"),
    (r"the callback handler records|recorded by the callback handler",
     lambda rp, i, m: rp.run.summary.source == "callbacks"),
    (r"TraceMiddleware", lambda rp, i, m: _has_tracer(rp.run)),
    (r"called with (\d+) messages?\b",
     lambda rp, i, m: int(m.group(1)) == _messages_sent(rp, i)),
    (r"the whole history again, (\d+) messages?\b",
     lambda rp, i, m: int(m.group(1)) == _messages_sent(rp, i)),
    (r"asking for (\d+) tool calls?\b", lambda rp, i, m: int(m.group(1)) == _calls_asked(rp, i)),
    (r"\(lap (\d+)\)|Lap (\d+) begins",
     lambda rp, i, m: int(m.group(1) or m.group(2)) == rp.steps[i].event.lap),
    (r"the graph is invoked|the graph returned|conditional edge",
     lambda rp, i, m: bool(_hooks(rp.run) & set(HOOK_NAMES)) or _create_agent(rp.run)),
    (r"a create_agent graph with no middleware hook",
     lambda rp, i, m: _create_agent(rp.run) and not any(
         e.middleware for e in rp.run.events if e.hook in HOOK_NAMES)),
    # where the "tool calls?" edge goes: after_agent only for an agent that has that hook
    (r"the conditional edge goes to (after_agent|END)\b",
     lambda rp, i, m: _has_after_agent(rp.run) == (m.group(1) == "after_agent")),
    # the edge runs after the lap's last after_model firing; before it, the next one runs
    (r"Next, the conditional edge goes to",
     lambda rp, i, m: _then_after_model(rp, i) is None),
    (r"Next, (\S+)\.after_model runs", lambda rp, i, m: rp.steps[i].event.hook == "after_model"
     and _then_after_model(rp, i) == m.group(1)),
    # what the reply's tool calls became, up to the next model call
    (r"which run them in parallel", lambda rp, i, m: _all_ran(*_reply_fate(rp, i))),
    (r"Before any tool runs, the run pauses for a human",
     lambda rp, i, m: _reply_fate(rp, i)[2]),
    (r"only (\d+) of the (\d+) ran", lambda rp, i, m: [len(x) for x in _reply_fate(
        rp, i)[1::-1]] == [int(m.group(1)), int(m.group(2))]),
    (r"the subagent that ran inside this call", lambda rp, i, m: any(
        c.parent_tool_call_id == rp.steps[i].event.tool_call_id for c in rp.run.children)),
    (r"No parent run is recorded for this run",
     lambda rp, i, m: rp.run.summary.parent_id is None),
    # a fork's edit: at the call the fork's metadata points to; written in by "model" after
    (r"This is where the fork made its edit", lambda rp, i, m: _fork_call(rp) == i),
    (r"The fork's edit, made at step (\d+)", lambda rp, i, m: _fork_call(rp) == int(
        m.group(1)) - 1 and rp.steps[i].event.hook == "history"
     and rp.steps[i].event.payload.get("by") in ("model", None) and i > int(m.group(1)) - 1),
    # a loop's tool result: pending at its exit, in the conversation at the step named
    (r"Its result is not in the conversation yet .* at step (\d+)", lambda rp, i, m: _pending(
        rp, i, rp.steps[i].event.tool_call_id) and not _pending(
        rp, int(m.group(1)) - 1, rp.steps[i].event.tool_call_id)),
    (r"after_model\b", lambda rp, i, m: "after_model" in _hooks(rp.run)),
    (r"no after_agent", lambda rp, i, m: not any(
        s.event.hook == "after_agent" for s in rp.steps[i:])),
    (r"\bjumped\b", lambda rp, i, m: _jump_said_before(rp, i)),
    (r"[Tt]he loop's code caught the exception and went on",
     lambda rp, i, m: any(s.kind == "model" for s in rp.steps[i + 1:])),
    (r"\(the run (completed|interrupted|error)\)",
     lambda rp, i, m: _status(rp) == m.group(1)),
    (r"[Tt]he result sent back for this call is empty",
     lambda rp, i, m: _answer(rp, i) is not None and not _answer(rp, i).text.strip()),
    (r"the loop sends its result back in a ToolMessage with the call's id",
     lambda rp, i, m: _answer(rp, i) is not None),
    (r"no ToolMessage with this call's id was sent back|No result for this call was sent",
     lambda rp, i, m: _answer(rp, i) is None),
    (r"the loop's code is called", lambda rp, i, m: not (_hooks(rp.run) & {
        "before_model", "after_model", "wrap_model_call", "wrap_tool_call"})
     and not _create_agent(rp.run)),
    (r"the messages show from step (\d+)",
     lambda rp, i, m: not rp.messages_at(0) and bool(rp.messages_at(int(m.group(1)) - 1))
     and not any(rp.messages_at(k) for k in range(int(m.group(1)) - 1))),
    (r"The loop ended right after its tools ran",
     lambda rp, i, m: rp.steps[i - 1].kind == "tool" and rp.steps[i].node == "END"),
    (r"The run ends: the (graph|loop's code) returned",
     lambda rp, i, m: _status(rp) in ("completed", "interrupted")),
    # said once a lap, at its first before_model (issue 39: it was said at each firing)
    (r"Lap (\d+) begins", lambda rp, i, m: rp.steps[i].event.hook == "before_model"
     and rp.steps[i].event.lap == int(m.group(1)) and not any(
         s.event.hook == "before_model" and s.event.lap == int(m.group(1))
         for s in rp.steps[:i])),
    (r"The run hands off to", lambda rp, i, m: _status(rp) == "handoff"),
    (r"The run stops: its caller stopped", lambda rp, i, m: _status(rp) == "stopped"),
]
# Plurals: a count of one with a plural noun, or of several with a singular one.
WRONG_PLURAL = re.compile(
    r"\b1 (messages|tool calls|calls|laps|tokens|steps|results)\b"
    r"|\b(?:[02-9]|\d\d+) (message|tool call|lap|step|result)\b(?![-\w])")


def check_replay(rp: Replay, seen: dict[str, int]) -> list[str]:
    """Every caption statement of ``rp`` against the record; the wrong ones, in words."""
    wrong = []
    name = rp.run.summary.name
    said = captions(rp)
    for st in rp.steps:
        for pattern, fact in FACTS:
            for m in re.finditer(pattern, said[st.index]):
                seen[pattern] = seen.get(pattern, 0) + 1
                if not fact(rp, st.index, m):
                    wrong.append(f"{name} step {st.index + 1}: {m.group(0)!r} is not so: "
                                 f"{said[st.index]}")
        bad = WRONG_PLURAL.search(said[st.index])
        if bad:
            wrong.append(f"{name} step {st.index + 1}: {bad.group(0)!r}: {said[st.index]}")
    note = signature_note(rp)
    if "TraceMiddleware records" in note and _has_tracer(rp.run):
        wrong.append(f"{name}: the signature note says TraceMiddleware did not record it")
    return wrong


def replays_of(db: str) -> list[Replay]:
    with TraceDB(db) as tdb:
        return [build_replay(tdb.run(r.id)) for r in tdb.runs()]


def test_every_caption_of_every_sample_is_true(sample_store: str) -> None:
    seen: dict[str, int] = {}
    wrong = [w for rp in replays_of(sample_store) for w in check_replay(rp, seen)]
    assert not wrong, "\n".join(wrong)
    # the statements the workshop meets most are met here, so their checks ran
    for pattern in (r"[Tt]he run fail(s|ed)\b", r"called with (\d+) messages?\b",
                    r"asking for (\d+) tool calls?\b", r"\bjumped\b", r"TraceMiddleware",
                    r"[Tt]he loop's code caught the exception and went on",
                    r"The loop ended right after its tools ran", r"Lap (\d+) begins",
                    r"which run them in parallel",
                    r"Before any tool runs, the run pauses for a human",
                    r"only (\d+) of the (\d+) ran", r"the subagent that ran inside this call",
                    r"No parent run is recorded for this run",
                    r"Its result is not in the conversation yet .* at step (\d+)",
                    r"the conditional edge goes to (after_agent|END)\b",
                    r"Next, the conditional edge goes to", r"Next, (\S+)\.after_model runs"):
        assert seen.get(pattern), f"no caption of the samples says {pattern!r}"


@pytest.fixture(scope="module")
def truth_db(engine: str, tmp_path_factory: pytest.TempPathFactory,
             pg_url: str | None) -> str:
    """Every truth agent, traced with the callback handler (TraceMiddleware first) and
    without it (TraceMiddleware last), into one store (on each engine)."""
    db = store_on(engine, tmp_path_factory.mktemp("truth"), pg_url, "truth.db")
    for name in sorted(SCENARIOS):
        for position, attach in (("first", True), ("last", False)):
            trace = TraceMiddleware(db=db, run_name=f"{name}-{position}")
            run_truth(name, [trace], position=position,
                      callbacks=[trace.callback_handler()] if attach else None)
            trace.flush()
            trace.close()
    return db


def test_every_caption_of_every_truth_agent_is_true(truth_db: str) -> None:
    seen: dict[str, int] = {}
    rps = replays_of(truth_db)
    assert len([r for r in rps if not r.run.summary.parent_id]) == 2 * len(SCENARIOS)
    wrong = [w for rp in rps for w in check_replay(rp, seen)]
    assert not wrong, "\n".join(wrong)
    for pattern in (r"attach the callback handler", r"\bjumped\b",
                    r"called with (\d+) messages?\b"):
        assert seen.get(pattern), f"no caption of the truth agents says {pattern!r}"
