"""Many realistic runs, quickly: copies of a recorded run written through the store.

``write_runs(path, n)`` takes the two-lap ``weather`` run that looptrace recorded
into ``tests/fixtures/schema2.db`` (a real ``create_agent`` run: 14 events, 4
messages) and writes ``n`` copies of it through ``tracer.db.writer.Writer``, the
tracer's own writer (its records serialised, redacted and committed as when
recording), each with its own id, start time, name, status, question and, for
some, a subagent run or a flaw the checks find:

- every 7th run failed on LangGraph's recursion limit (an error finding),
- every 11th failed before its final answer (a warning),
- every 13th was interrupted, every 17th is still running (no end, no counts),
- every 10th has a subagent run (a copy too, with ``parent_id``),
- the question of every 3rd run carries one of ``ODD_TEXTS``.

``Spec`` says what each copy is, so tests compute what to expect from the specs,
never from the code they test.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracer.db.pg import connect
from tracer.db.url import is_url
from tracer.db.writer import Writer
from tracer.read.loader import Run, TraceDB
from tracer.vocab.records import EventRecord, MessageRecord, RunRecord

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "schema2.db"
T0 = 1_700_000_000.0  # the first copy's start; the others one minute apart
STEP_S = 60.0

NAMES = ("weather", "shopping-bot", "research_agent", "Ærø-helper", "100%_sure")
ODD_TEXTS = (
    'She said "hello" and \'bye\'',
    "100% of the 5_000 runs",
    "a_b%c\\d",
    "Ærø, Tromsø og Straße – 北京 🚀",
    "tomatoes AND potatoes OR NEAR(x y) *star* ^caret -minus",
    "NEAR/3 \"quoted phrase\" col:on",
    "ÆRØ in capitals",
    "mixed CASE Oslo",
)


@dataclass(frozen=True)
class Spec:
    """What one copy is (the expectations of a test are computed from these)."""

    id: str
    name: str
    status: str  # completed / error / interrupted / running
    started_at: float
    question: str
    parent_id: str | None = None
    flaw: str | None = None  # "recursion" | "no-answer" | None
    error: str | None = None


def template() -> Run:
    with TraceDB(FIXTURE) as db:
        rid = next(r.id for r in db.runs() if r.name == "weather")
        return db.run(rid)


_LC: dict[int, tuple[Run, list[Any]]] = {}


def _langchain(run: Run) -> list[Any]:
    """The run's messages as LangChain messages (made once per template)."""
    got = _LC.get(id(run))
    if got is None or got[0] is not run:
        got = _LC[id(run)] = (run, [m.to_langchain() for m in run.messages])
    return got[1]


def run_id(started_at: float, key: str) -> str:
    """An id as the recorder makes them (``tracer.record.recorder.new_run_id``: the start
    second, then random digits; here from ``key``, so the same every time)."""
    return f"{int(started_at):08x}" + uuid.uuid5(uuid.NAMESPACE_URL, key).hex[8:]


def specs(n: int, *, seed: str = "run", t0: float = T0) -> list[Spec]:
    """``n`` top-level copies (and a subagent run for every 10th), the first
    started at ``t0``, the others a minute apart."""
    out: list[Spec] = []
    for i in range(n):
        started = t0 + i * STEP_S
        rid = run_id(started, f"{seed}/{i}")
        status, flaw, error = "completed", None, None
        if i % 7 == 3:
            status, flaw = "error", "recursion"
            error = "GraphRecursionError: Recursion limit of 25 reached without hitting a stop"
        elif i % 11 == 5:
            status, flaw, error = "error", "no-answer", "ValueError: the weather service is down"
        elif i % 13 == 6:
            status = "interrupted"
        elif i % 17 == 8:
            status = "running"
        question = (ODD_TEXTS[(i // 3) % len(ODD_TEXTS)] if i % 3 == 0
                    else f"What's the weather in city number {i}?")
        spec = Spec(rid, NAMES[i % len(NAMES)], status, started, question, None, flaw, error)
        out.append(spec)
        if i % 10 == 4:
            out.append(Spec(run_id(started + 1.0, f"{seed}/{i}/sub"), "researcher",
                            "completed", started + 1.0, f"sub-question #{i}#", rid))
    return out


def records(spec: Spec, run: Run) -> list[Any]:
    """The records of one copy of ``run`` as ``spec`` says."""
    shift = spec.started_at - (run.summary.started_at or 0.0)
    out: list[Any] = [RunRecord(spec.id, {
        "name": spec.name, "agent_name": spec.name, "status": "running",
        "started_at": spec.started_at, "parent_id": spec.parent_id,
        "parent_tool_call_id": "call_weather_1" if spec.parent_id else None,
        "model": run.summary.model, "provider": run.summary.provider, "source": "middleware"})]
    events = list(run.events)
    if spec.status == "running":
        events = events[:-2]  # (no after_agent, no end yet)
    for e in events:
        payload = e.payload
        if spec.error and e.hook == "run" and e.phase == "end":
            out.append(EventRecord(spec.id, e.seq, e.ts + shift, "run", "error", None, None,
                                   e.lap, None, None, {"error": spec.error}))
            continue
        out.append(EventRecord(spec.id, e.seq, e.ts + shift, e.hook, e.phase, e.duration_ms,
                               e.middleware, e.lap, e.tool_call_id, e.task, payload))
    messages = list(zip(run.messages, _langchain(run), strict=True))
    if spec.flaw == "no-answer":
        messages = messages[:-1]
    for m, msg in messages:
        if m.position == 0:
            msg = msg.model_copy(update={"content": spec.question})
        out.append(MessageRecord(spec.id, m.position, m.seq, msg, 0))
    if spec.status != "running":
        end = {"status": spec.status, "ended_at": spec.started_at + 0.5,
               "input_tokens": 57, "output_tokens": 20, "total_tokens": 77}
        if spec.error:
            end["error"] = spec.error
        out.append(RunRecord(spec.id, end))
    return out


def write_runs(path: str | Path, n: int, *, seed: str = "run",
               batch: int = 500) -> list[Spec]:
    """Write ``n`` copies (and their subagent runs) into ``path``; return their specs."""
    run = template()
    all_specs = specs(n, seed=seed)
    writer = Writer(str(path))
    try:
        for i, spec in enumerate(all_specs):
            for rec in records(spec, run):
                writer.put(rec)
            if i % batch == batch - 1:
                writer.flush()
        writer.flush()
    finally:
        writer.close()
    if is_url(str(path)):
        _still_written(str(path))
    return all_specs


def _still_written(url: str) -> None:
    """On PostgreSQL, the copies left ``running`` are a live writer's: this process
    wrote them, but the kit's ``Writer`` is closed, and with it the lock that says its
    writer lives (``tracer.db.liveness``), so any later writer would end them as a dead
    process's. They are given no writer (as a run recorded before schema 9 has), which
    is never taken for dead."""
    conn = connect(url)
    try:
        conn.execute("UPDATE runs SET writer = NULL WHERE status = 'running'")
        conn.commit()
    finally:
        conn.close()
