"""Findings found once and kept: read back, they equal findings found afresh; they
are found again when the rules or the run change; a run's conversation is checked
once per model call, and the whole check grows with the run's length, not its
square."""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path

import pytest
from scale_kit import T0, Spec, records, template, write_runs

from tracer import checks
from tracer.checks import saved as findings_store
from tracer.checks.base import Call, ModelInput, ProtocolMessage
from tracer.checks.protocol import ProtocolScan, check_model_call
from tracer.checks.run import PROVIDERS, check_db, check_run
from tracer.db.writer import Writer
from tracer.read import run_list
from tracer.read.loader import Event, Message, Run, RunSummary, TraceDB
from tracer.vocab.records import EventRecord

SUBSETS = [PROVIDERS, ("openai",), ("anthropic",), ("ollama",), ("openai", "ollama")]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("found") / "found.db"
    write_runs(p, 120)
    return p


def fresh(db: TraceDB, providers=PROVIDERS) -> dict[str, list]:  # type: ignore[no-untyped-def]
    ids = [str(r[0]) for r in db.query("SELECT id FROM runs ORDER BY started_at, id")]
    return {rid: check_run(db.run(rid), providers=providers, wire=db.wire(rid)) for rid in ids}


def kept_checks(path: Path) -> dict[str, tuple]:
    conn = sqlite3.connect(path)
    try:
        return {r[0]: r[1:] for r in conn.execute("SELECT * FROM run_checks")}
    finally:
        conn.close()


def test_kept_findings_equal_fresh_ones(path: Path) -> None:
    first = check_db(path)  # finds and keeps
    kept = kept_checks(path)
    with TraceDB(path) as db:
        ended = {str(r[0]) for r in db.query("SELECT id FROM runs WHERE status != 'running'")}
        assert set(kept) == ended
        for subset in SUBSETS:
            assert check_db(db, providers=subset) == fresh(db, subset), subset
        assert first == fresh(db)
    assert kept_checks(path) == kept  # read back, not found again


def test_kept_findings_of_the_samples_equal_fresh_ones(sample_db: Path, tmp_path: Path) -> None:
    import shutil

    path = tmp_path / "samples.db"
    shutil.copyfile(sample_db, path)
    check_db(path)
    with TraceDB(path) as db:
        for subset in SUBSETS:
            assert check_db(db, providers=subset) == fresh(db, subset), subset


def test_new_rules_find_again(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check_db(path)
    for mod in (checks, findings_store, run_list):
        monkeypatch.setattr(mod, "RULES_VERSION", checks.RULES_VERSION + 1)
    with TraceDB(path) as db:
        assert findings_store.stored_health(db, [r.id for r in db.runs()]) == {}
    check_db(path)
    assert {v[0] for v in kept_checks(path).values()} == {checks.RULES_VERSION + 1}


def test_rows_written_after_a_check_make_it_stale(tmp_path: Path) -> None:
    path = tmp_path / "stale.db"
    spec = Spec("s1", "stale", "completed", T0, "Weather in Oslo?")
    w = Writer(str(path))
    for rec in records(spec, template()):
        w.put(rec)
    w.flush()
    assert check_db(path) == {"s1": []}
    # the run goes on after its end: it fails on the recursion limit
    w.put(EventRecord("s1", 14, T0 + 1, "run", "error", None, None, 2, None, None,
                      {"error": "GraphRecursionError: Recursion limit of 25 reached"}))
    w.flush()
    w.close()
    with TraceDB(path) as db:
        assert findings_store.stored_health(db, ["s1"]) == {}
    assert [f.rule for f in check_db(path)["s1"]] == ["recursion-limit"]
    assert kept_checks(path)["s1"][1:] == (2, 1, 0, 0)  # gen 2, one error


def test_findings_of_an_older_gen_are_not_kept(path: Path) -> None:
    conn = sqlite3.connect(path)
    rid, gen = conn.execute("SELECT run_id, gen FROM run_stats LIMIT 1").fetchone()
    with conn:
        assert findings_store.save(conn, rid, gen + 5, []) is False
        assert findings_store.save(conn, rid, gen, []) is True
    conn.close()


def test_a_running_run_is_checked_afresh_and_never_kept(path: Path) -> None:
    with TraceDB(path) as db:
        running = [r.id for r in db.runs() if r.status == "running"]
        assert running
        check_db(db, running)
    assert not set(running) & set(kept_checks(path))


# -- the protocol scan: incremental equals whole ------------------------------------
def _random_calls(rng: random.Random, n: int) -> list[ModelInput]:
    """Model calls whose conversations mostly extend the one before (sometimes not),
    full of broken histories: dangling, duplicate, orphan and misplaced results, user
    and system messages in odd places, empty assistant messages, invalid calls."""
    turns: list[ProtocolMessage] = []
    out: list[ModelInput] = []
    ids = 0
    pending: list[str] = []
    for step in range(n):
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            k = len(turns)
            if r < 0.3:
                calls = []
                for _ in range(rng.choice((0, 1, 1, 2, 3))):
                    ids += 1
                    cid = rng.choice((f"c{ids}", f"c{ids}", None))
                    calls.append(Call(cid, rng.choice(("a", "b")), rng.random() > 0.1))
                    if cid:
                        pending.append(cid)
                turns.append(ProtocolMessage(f"k{k}", "assistant", tuple(calls),
                                  empty=not calls and rng.random() < 0.3))
            elif r < 0.65 and pending:
                cid = pending.pop(rng.randrange(len(pending))) if rng.random() < 0.8 else (
                    rng.choice(("zz", None, f"c{ids}")))
                turns.append(ProtocolMessage(f"k{k}", "tool", tool_call_id=cid))
            elif r < 0.8:
                turns.append(ProtocolMessage(f"k{k}", "user"))
            elif r < 0.87:
                turns.append(ProtocolMessage(f"k{k}", "system"))
            elif r < 0.93 and turns:
                del turns[rng.randrange(len(turns))]  # a rewritten history
            else:
                turns.append(ProtocolMessage(f"k{k}", "other"))
        out.append(ModelInput(step, step, list(turns), rng.random() < 0.5, None))
    return out


def _dedup(found_per_call) -> list:  # type: ignore[no-untyped-def]
    seen, out = set(), []
    for fs in found_per_call:
        for f in fs:
            key = (f.rule, f.provider, f.message_keys)
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


# (seed 2704: an empty assistant message ends one call's conversation; in the next,
# Anthropic's user turn after a call goes on past it, to a second result)
@pytest.mark.parametrize("seed", [*range(100), 2704])
def test_the_scan_finds_what_checking_each_call_whole_finds(seed: int) -> None:
    rng = random.Random(seed)
    calls = _random_calls(rng, rng.randint(5, 40))
    provs = rng.choice(SUBSETS)
    scan = ProtocolScan("r", provs)
    incremental = _dedup(scan.check(mc) for mc in calls)
    whole = _dedup(check_model_call("r", mc, provs) for mc in calls)
    assert incremental == whole


# -- linear in the run's length ------------------------------------------------------
def long_run(laps: int) -> Run:
    """A loop of ``laps`` laps, each a model call asking for one tool and its result."""
    events: list[Event] = []
    messages: list[Message] = []

    def ev(hook: str, phase: str, lap: int, tcid: str | None = None, payload=None) -> int:  # type: ignore[no-untyped-def]
        events.append(Event("long", len(events), float(len(events)), hook, phase, 1.0, None,
                            lap, tcid, None, payload))
        return len(events) - 1

    def msg(seq: int, typ: str, body: dict) -> None:  # type: ignore[type-arg]
        messages.append(Message(len(messages), seq, body.get("id"), typ,
                                body.get("tool_call_id"), str(body.get("content", "")),
                                {"type": typ, "data": body}))

    msg(ev("run", "start", 0), "human", {"id": "h", "content": "go"})
    for lap in range(1, laps + 1):
        ev("wrap_model_call", "enter", lap, payload={"messages": len(messages),
                                                     "tool_names": ["lookup"]})
        cid = f"call-{lap}"
        msg(ev("wrap_model_call", "exit", lap, payload={"tool_calls": 1}), "ai", {
            "id": f"ai-{lap}", "content": "",
            "tool_calls": [{"id": cid, "name": "lookup", "args": {"key": f"k{lap}"}}]})
        ev("wrap_tool_call", "enter", lap, cid, {"name": "lookup"})
        msg(ev("wrap_tool_call", "exit", lap, cid, {"status": "success"}), "tool", {
            "tool_call_id": cid, "content": f"value {lap}", "status": "success"})
    ev("wrap_model_call", "enter", laps + 1, payload={"messages": len(messages)})
    msg(ev("wrap_model_call", "exit", laps + 1), "ai", {"id": "end", "content": "done"})
    ev("run", "end", laps + 1)
    summary = RunSummary("long", None, None, "long", None, None, "completed", 0.0, 1.0, None,
                         None, None, None, None, None, None)
    return Run(summary, events, messages)


def _cost(laps: int) -> float:
    run = long_run(laps)
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        assert check_run(run) == []
        best = min(best, time.process_time() - t)
    return best / laps


def test_a_check_grows_with_the_run_not_its_square() -> None:
    small, large = _cost(50), _cost(800)
    # quadratic would be 16 times the cost per lap; allow for a noisy machine
    assert large < 4 * small, (small, large)


def test_kept_findings_are_written_by_the_files_one_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22: findings are kept through the writer's queue (its thread, its
    connection), not by a second write connection of their own."""
    import threading

    path = tmp_path / "one-writer.db"
    write_runs(path, 6)
    writes: list[tuple[str, str]] = []
    connect = sqlite3.connect

    def spying(*args, **kwargs):  # type: ignore[no-untyped-def]
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(lambda sql: writes.append(
            (threading.current_thread().name, sql)) if (
                "INTO run_checks" in sql or "INTO findings" in sql) else None)
        return conn

    monkeypatch.setattr(sqlite3, "connect", spying)
    from tracer.db.writer import close_all

    close_all()  # (a writer opened before the spy would not be seen)
    check_db(path)
    assert writes, "no findings were kept"
    assert {name for name, _ in writes} == {"looptrace-writer"}, writes[:3]
    assert set(kept_checks(path)) == {
        str(r[0]) for r in sqlite3.connect(path).execute(
            "SELECT id FROM runs WHERE status != 'running'")}
