"""Conversations: the runs of one ``thread_id`` read as the turns of a conversation.

A thread is the top-level runs recorded under one ``thread_id`` (``runs.thread_id``;
their subagent runs count with them), in the order they started: each run is a turn.
A turn shows what it added to the conversation (the messages no earlier turn had: the
person's new message(s), the tool calls, the final answer), the interrupts that paused
it and the resumes that went on with it. A human-in-the-loop thread is recorded as one
run interrupted and resumed (one turn holding both), or as a run ending ``interrupted``
and another starting with a resume: the record says which, and both read the same way.

``list_threads(db)`` lists the threads (newest activity first) with their totals;
``load_thread(db, thread_id)`` reads one thread's turns. Tokens are ``None`` where the
model calls reported none ("not reported", never 0); the cost is
``tracer.read.cost.run_costs``'s, subagent runs included.

Example:
    ```python
    from tracer.read.loader import TraceDB
    from tracer.read.threads import list_threads, load_thread

    with TraceDB("looptrace.db") as db:
        for t in list_threads(db):
            print(t.thread_id, t.turns, t.tokens, t.cost.text())
        thread = load_thread(db, "demo-hitl-thread")
        for turn in thread.turns:
            print(turn.number, turn.asked, turn.answer)
    ```
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tracer.errors import ThreadNotFound
from tracer.vocab.content import content_text
from tracer.vocab.payloads import InterruptPayload, ToolEnterPayload, read_payload

from .cost import Cost, Prices, run_costs
from .loader import Message, Run, RunSummary, TraceDB
from .run_list import RunFilter

__all__ = [
    "Interrupt",
    "Repeat",
    "Resume",
    "Thread",
    "ThreadNotFound",
    "ThreadSummary",
    "Turn",
    "count_threads",
    "list_threads",
    "load_thread",
]


@dataclass(frozen=True)
class Interrupt:
    """An interrupt that paused a turn: its event (``seq``) and what it asked a person
    to decide, one line per action ("send_email({...})"), or the interrupt's value."""

    seq: int
    asks: tuple[str, ...]
    actions: tuple[tuple[str, Any], ...] = ()  # (tool name, args) of each action asked


@dataclass(frozen=True)
class Resume:
    """A resume that went on with a turn: its event (``seq``) and the person's
    decisions as recorded ("approve", "reject: Keep the draft"), ``None`` when the
    record holds none. Where the resume event holds no decisions (the tracer could not
    see the resume value), ``inferred`` is True and ``decisions`` are read from the
    tool calls that ran after it: "ran as asked: name(...)", "ran edited: name(...)",
    "did not run: name(...)"."""

    seq: int
    decisions: tuple[str, ...] | None
    inferred: bool = False


@dataclass(frozen=True)
class Turn:
    """One run of a thread: ``number`` (from 1), its summary, the messages it added to
    the conversation (``added``), the person's new messages' text (``asked``), the last
    answer it added (``answer``: an AI message without tool calls; None when it added
    none, as a turn paused by an interrupt), its interrupts and resumes, its tokens
    (its subagent runs' included; None: not reported) and cost."""

    number: int
    run: RunSummary
    added: tuple[Message, ...]
    asked: tuple[str, ...]
    answer: str | None
    interrupts: tuple[Interrupt, ...]
    resumes: tuple[Resume, ...]
    tokens: int | None
    cost: Cost
    subagent_runs: int = 0

    @property
    def resumed_only(self) -> bool:
        """The turn went on with a paused conversation: a resume, no new message."""
        return bool(self.resumes) and not self.asked


@dataclass(frozen=True)
class Repeat:
    """A question asked again in a later turn of the thread (a check across turns, kept
    apart from each run's own findings): turn ``turn`` repeats turn ``first``'s
    ``text``."""

    turn: int
    first: int
    text: str

    def text_line(self) -> str:
        return f"turn {self.turn} asks again what turn {self.first} asked: {self.text!r}"


@dataclass(frozen=True)
class Thread:
    """One conversation: its turns in order, and its totals."""

    thread_id: str
    turns: tuple[Turn, ...]

    @property
    def tokens(self) -> int | None:
        return _sum_tokens(t.tokens for t in self.turns)

    @property
    def cost(self) -> Cost:
        total = Cost()
        for t in self.turns:
            total = total + t.cost
        return total

    @property
    def interrupts(self) -> int:
        return sum(len(t.interrupts) for t in self.turns)

    @property
    def resumes(self) -> int:
        return sum(len(t.resumes) for t in self.turns)

    @property
    def repeats(self) -> tuple[Repeat, ...]:
        """The questions a person asked again in a later turn."""
        first: dict[str, int] = {}
        out = []
        for t in self.turns:
            for q in t.asked:
                key = " ".join(q.lower().split())
                if not key:
                    continue
                if key in first and first[key] != t.number:
                    out.append(Repeat(t.number, first[key], q))
                first.setdefault(key, t.number)
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "turns": [_turn_dict(t) for t in self.turns],
                "tokens": self.tokens, "cost_usd": self.cost.usd, "cost": self.cost.to_dict(),
                "interrupts": self.interrupts, "resumes": self.resumes,
                "repeats": [{"turn": r.turn, "first": r.first, "text": r.text}
                            for r in self.repeats]}


@dataclass(frozen=True)
class ThreadSummary:
    """One row of the threads list: the thread id, how many turns (top-level runs), the
    first start and last activity, the turns' statuses (status -> count), tokens
    (None: not reported), cost, and how many interrupts and resumes it holds."""

    thread_id: str
    turns: int
    first_at: float | None
    last_at: float | None
    statuses: dict[str, int]
    tokens: int | None
    cost: Cost
    interrupts: int
    resumes: int

    def to_dict(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "turns": self.turns, "first_at": self.first_at,
                "last_at": self.last_at, "statuses": dict(self.statuses),
                "tokens": self.tokens, "cost_usd": self.cost.usd, "cost": self.cost.to_dict(),
                "interrupts": self.interrupts, "resumes": self.resumes}


def _turn_dict(t: Turn) -> dict[str, Any]:
    return {"turn": t.number, "run_id": t.run.id, "name": t.run.name, "status": t.run.status,
            "started_at": t.run.started_at, "asked": list(t.asked), "answer": t.answer,
            "added": [{"type": m.type, "text": m.text} for m in t.added],
            "interrupts": [{"seq": i.seq, "asks": list(i.asks)} for i in t.interrupts],
            "resumes": [{"seq": r.seq, "decisions": None if r.decisions is None
                         else list(r.decisions), "inferred": r.inferred} for r in t.resumes],
            "tokens": t.tokens, "cost_usd": t.cost.usd, "subagent_runs": t.subagent_runs}


def _sum_tokens(values: Iterable[int | None]) -> int | None:
    """The sum of the reported counts; None when none was reported."""
    got = [v for v in values if v is not None]
    return sum(got) if got else None


def _tokens(runs: Sequence[RunSummary]) -> int | None:
    """Tokens of ``runs``: None when those that called a model reported none (0 for
    runs that called none)."""
    reported = [r.total_tokens for r in runs if r.total_tokens]
    if reported:
        return sum(reported)
    return None if any(r.model_calls for r in runs) else 0


# -- the list ------------------------------------------------------------------------------

_THREADS = ("SELECT thread_id, COUNT(*), MIN(started_at), MAX(COALESCE(ended_at, started_at))"
            " FROM runs WHERE thread_id IS NOT NULL AND parent_id IS NULL GROUP BY thread_id")


def count_threads(db: TraceDB) -> int:
    """How many threads the file holds."""
    return int(db.query(f"SELECT COUNT(*) FROM ({_THREADS}) AS t")[0][0])


def list_threads(db: TraceDB, *, limit: int | None = None, offset: int = 0,
                 prices: Prices | None = None) -> list[ThreadSummary]:
    """The threads of the file, the one active last first, ``limit`` of them from
    ``offset`` on, each with its totals (read for the whole page at once: a few queries
    a page, not a few a thread)."""
    rows = db.query(f"{_THREADS} ORDER BY 4 DESC, 1 LIMIT ? OFFSET ?",
                    [-1 if limit is None else max(0, int(limit)), max(0, int(offset))])
    if not rows:
        return []
    tids = [str(r[0]) for r in rows]
    turns: dict[str, list[str]] = {}
    for part in _chunks(tids):
        for rid, tid in db.query(
                "SELECT id, thread_id FROM runs WHERE parent_id IS NULL AND thread_id IN"
                f" ({','.join('?' * len(part))})", part):
            turns.setdefault(str(tid), []).append(str(rid))
    every = [rid for tid in tids for rid in turns.get(tid, [])]
    summaries = {r.id: r for part in _chunks(every) for r in db.runs(ids=part)}
    # each run below a turn, counted for the turn's top-level run
    below = {r.id: r for part in _chunks(every) for r in db.subagent_runs(part)}
    root: dict[str, str] = {}

    def top(rid: str) -> str:
        seen = []
        while rid in below and rid not in root:
            seen.append(rid)
            rid = below[rid].parent_id or rid
            if rid in seen:  # (a cycle: stop)
                break
        found = root.get(rid, rid)
        for s in seen:
            root[s] = found
        return found

    under: dict[str, list[RunSummary]] = {}
    for rid, summary in below.items():
        under.setdefault(top(rid), []).append(summary)
    costs = run_costs(db, every, prices)
    marks: dict[str, tuple[int, int]] = {}
    for part in _chunks(every):
        for rid, ints, ress in db.query(
                "SELECT run_id, SUM(hook = 'interrupt' OR phase = 'interrupt'),"
                " SUM(hook = 'resume') FROM events WHERE run_id IN"
                f" ({','.join('?' * len(part))}) AND (hook IN ('interrupt', 'resume')"
                " OR phase = 'interrupt') GROUP BY run_id", part):
            marks[str(rid)] = (int(ints or 0), int(ress or 0))
    out = []
    for tid, n, first, last in rows:
        ids = turns.get(str(tid), [])
        runs = [summaries[r] for r in ids if r in summaries]
        cost = Cost()
        for rid in ids:
            if rid in costs:
                cost = cost + costs[rid].total
        statuses: dict[str, int] = {}
        for r in runs:
            statuses[r.status] = statuses.get(r.status, 0) + 1
        tokens = _tokens([*runs, *(c for r in ids for c in under.get(r, []))])
        out.append(ThreadSummary(str(tid), int(n), first, last, statuses, tokens, cost,
                                 sum(marks.get(r, (0, 0))[0] for r in ids),
                                 sum(marks.get(r, (0, 0))[1] for r in ids)))
    return out


def _chunks(items: Sequence[str], size: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


# -- one thread ----------------------------------------------------------------------------

def load_thread(db: TraceDB, thread_id: str, *, prices: Prices | None = None) -> Thread:
    """The turns of ``thread_id`` in the order they started (``ThreadNotFound`` when no
    top-level run has that thread id)."""
    runs = db.runs(RunFilter(thread=thread_id, top_level=True))
    if not runs:
        msg = f"no thread {thread_id!r} in {db.path}"
        raise ThreadNotFound(msg)
    runs.sort(key=lambda r: (r.started_at or 0, r.id))
    costs = run_costs(db, [r.id for r in runs], prices)
    seen: set[str] = set()
    turns = []
    for i, summary in enumerate(runs, 1):
        run = db.run(summary.id)
        added = tuple(m for m in run.messages if m.key not in seen)
        seen.update(m.key for m in run.messages)
        below = db.subagent_runs([summary.id])
        rc = costs.get(summary.id)
        turns.append(Turn(
            number=i, run=summary, added=added,
            asked=tuple(_text(m) for m in added if m.type == "human"),
            answer=_answer(added), interrupts=(paused := _interrupts(run)),
            resumes=_resumes(run, paused),
            tokens=_tokens([summary, *below]), cost=rc.total if rc else Cost(),
            subagent_runs=len(below)))
    return Thread(thread_id, tuple(turns))


def _text(m: Message) -> str:
    return content_text(m.content) if m.content is not None else m.text


def _answer(added: Sequence[Message]) -> str | None:
    for m in reversed(added):
        if m.type == "ai" and not m.tool_calls:
            return _text(m)
    return None


def _interrupts(run: Run) -> tuple[Interrupt, ...]:
    out = []
    for e in run.events:
        if e.hook != "interrupt" and e.phase != "interrupt":
            continue
        p = read_payload(InterruptPayload, e.payload)
        asks: list[str] = []
        asked: list[tuple[str, Any]] = []
        for item in p.get("interrupts") or []:
            value = item.get("value") if isinstance(item, dict) else item
            requests = value.get("action_requests") if isinstance(value, dict) else None
            if isinstance(requests, list) and requests:
                asks.extend(f"{a.get('name')}({_json(a.get('args'))})" if isinstance(a, dict)
                            else _json(a) for a in requests)
                asked.extend((str(a.get("name")), a.get("args")) for a in requests
                             if isinstance(a, dict))
            else:
                asks.append(_json(value))
        out.append(Interrupt(e.seq, tuple(asks), tuple(asked)))
    return tuple(out)


def _resumes(run: Run, interrupts: Sequence[Interrupt]) -> tuple[Resume, ...]:
    out = []
    for e in run.events:
        if e.hook != "resume":
            continue
        decisions = _decisions(e.payload)
        before = [i for i in interrupts if i.seq < e.seq and i.actions]
        if decisions is not None or not before:
            out.append(Resume(e.seq, decisions))
            continue
        # (no resume value recorded: read the decisions from the tool calls that ran)
        later = [x.seq for x in interrupts if x.seq > e.seq]
        end = min(later) if later else None
        ran = [(str(p.get("name")), p.get("args")) for x in run.events
               if x.seq > e.seq and (end is None or x.seq < end)
               and x.hook == "wrap_tool_call" and x.phase == "enter"
               for p in [read_payload(ToolEnterPayload, x.payload)] if p]
        said = []
        for name, args in before[-1].actions:
            same = [a for n, a in ran if n == name]
            call = f"{name}({_json(args)})"
            if args in same:
                said.append(f"ran as asked: {call}")
            elif same:
                said.append(f"ran edited: {name}({_json(same[0])})")
            else:
                said.append(f"did not run: {call}")
        out.append(Resume(e.seq, tuple(said), inferred=True))
    return tuple(out)


def _decisions(payload: Any) -> tuple[str, ...] | None:
    """The decisions a resume carried ("approve", "reject: why", "edit: name({...})"), or
    its value as JSON; None when the event holds none."""
    if not isinstance(payload, dict) or payload.get("resume") is None:
        return None
    values = payload["resume"]
    values = values if isinstance(values, list) else [values]
    out: list[str] = []
    for v in values:
        decisions = v.get("decisions") if isinstance(v, dict) else None
        if not isinstance(decisions, list):
            out.append(_json(v))
            continue
        for d in decisions:
            if not isinstance(d, dict):
                out.append(_json(d))
                continue
            kind = str(d.get("type", "?"))
            if d.get("message"):
                out.append(f"{kind}: {d['message']}")
            elif isinstance(d.get("edited_action"), dict):
                a = d["edited_action"]
                out.append(f"{kind}: {a.get('name')}({_json(a.get('args'))})")
            else:
                out.append(kind)
    return tuple(out)


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)
