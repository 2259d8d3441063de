"""Every bundled sample trace: current, importable, lossless, and replayable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pg_kit import store_on

from tracer.demo.record import record_all
from tracer.demo.scenarios import SCENARIOS
from tracer.interop.exchange import export_lines, import_trace, normalize, read_trace, sample_files
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

SAMPLES = sample_files()
# Samples whose results answer no call, because that is the mistake they record.
WRONG_IDS_ON_PURPOSE = frozenset({"footgun-wrong-id"})


def test_every_scenario_ships_a_sample() -> None:
    names = {p.stem for p in SAMPLES}
    assert set(SCENARIOS) <= names


TOOL_HOOKS = ("wrap_tool_call", "tool")


def canonical(lines: list[str]) -> list[object]:
    """A recording made comparable with another recording of the same scenario.

    Ids, times and thread names are normalised (``normalize``); everything else is
    compared in its recorded order, ``seq`` included, except inside a batch of tool
    calls: the consecutive events of tool calls running in parallel on threads may
    enter and exit in either order from one recording to the next. Such a batch is
    compared as its calls, each call's own events in their order (a call's enter
    before its exit), the calls in the order of what they were asked (tool and
    arguments: some adapters make up the call ids at random); inside it the events'
    and the messages' ``seq`` become the batch's range.
    """
    recs = [json.loads(x) for x in lines if x.strip()]
    head, body = recs[0], recs[1:]
    events = [r for r in body if r["table"] == "events"]
    batch_of: dict[tuple[str, int], str] = {}  # (run, seq) -> the batch it is in
    ordered: list[dict] = []
    batches: list[int] = []  # index in ``ordered`` where each batch starts
    i = 0
    while i < len(events):
        row = events[i]["row"]
        j = i
        while (j < len(events) and events[j]["row"]["hook"] in TOOL_HOOKS
               and events[j]["row"].get("tool_call_id")
               and events[j]["row"]["run_id"] == row["run_id"]):
            j += 1
        calls: dict[str, list[dict]] = {}
        for k in range(i, j):
            calls.setdefault(events[k]["row"]["tool_call_id"], []).append(events[k])
        if len(calls) < 2:  # not a parallel batch: one event, in place
            ordered.append(events[i])
            i += 1
            continue
        label = f"batch {row['seq']}-{events[j - 1]['row']['seq']}"
        for k in range(i, j):
            batch_of[(row["run_id"], events[k]["row"]["seq"])] = label
        batches.append(len(ordered))
        for evs in sorted(calls.values(), key=lambda evs: str(evs[0]["row"].get("payload"))):
            ordered.extend(evs)
        i = j
    for r in body:
        row = r["row"]
        if r["table"] in ("events", "messages"):
            row["seq"] = batch_of.get((row["run_id"], row["seq"]), row["seq"])
    rest = [r for r in body if r["table"] != "events"]
    norm = normalize(json.dumps(r) for r in [head, *ordered, *rest])
    head_n, events_n, rest_n = norm[0], norm[1:1 + len(ordered)], norm[1 + len(ordered):]
    out: list[object] = [head_n]
    k = 0
    while k < len(events_n):
        label = events_n[k]["row"]["seq"]
        if isinstance(label, str):  # a batch: its calls, each call's events in order
            n = sum(1 for e in events_n[k:] if e["row"]["seq"] == label)
            group = events_n[k:k + n]
            by_call: dict[str, list[dict]] = {}
            for e in group:
                by_call.setdefault(e["row"]["tool_call_id"], []).append(e)
            out.append({"parallel tool calls": list(by_call.values())})
            k += n
        else:
            out.append(events_n[k])
            k += 1
    # (a run's state values are exported in the order of their content addresses, which
    # differ from one recording to the next when a value holds a time: compared as a set)
    values = sorted((r for r in rest_n if r["table"] == "state_values"), key=json.dumps)
    return out + [r for r in rest_n if r["table"] != "state_values"] + values


@pytest.fixture(scope="module")
def regenerated(engine: str, tmp_path_factory: pytest.TempPathFactory,
                pg_url: str | None) -> dict[str, list[object]]:
    """Record every scenario afresh into a store on each engine and export it,
    normalised (on PostgreSQL: the demo matches the shipped samples run by run)."""
    db = store_on(engine, tmp_path_factory.mktemp("regen"), pg_url, "regen.db")
    recorded = record_all(db)
    out = {}
    with TraceDB(db) as tdb:
        for name, ids in recorded.items():
            for i, run_id in enumerate(ids):
                suffix = f"-{i + 1}" if len(ids) > 1 else ""
                out[name + suffix] = canonical(list(export_lines(tdb, run_id)))
    return out


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_is_what_the_code_records(path: Path,
                                         regenerated: dict[str, list[object]]) -> None:
    """The shipped file is regenerated by `looptrace demo --export`, not hand-edited."""
    assert path.stem in regenerated, f"no scenario records {path.stem}"
    shipped = canonical(path.read_text(encoding="utf-8").splitlines())
    assert shipped == regenerated[path.stem], (
        f"{path.name} is stale: regenerate with "
        "`uv run looptrace demo --db /tmp/s.db --export sample_traces`")


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_round_trips_without_loss(path: Path, store_db: str) -> None:
    header, rows = read_trace(path)
    ids = import_trace(path, store_db)
    assert ids and ids[0] == header["root"]
    with TraceDB(store_db) as db:
        again = list(export_lines(db, header["root"]))
    original = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert [json.loads(x) for x in again] == original


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_sample_loads_and_replays(path: Path, sample_store: str) -> None:
    header, _ = read_trace(path)
    with TraceDB(sample_store) as db:
        for run_id in [header["root"]] + [c.id for c in db.run(header["root"]).children]:
            run = db.run(run_id)
            replay = build_replay(run)
            assert len(replay) == len(run.events) > 0
            assert [s.event.seq for s in replay.steps] == list(range(len(run.events)))
            # every message becomes visible at some step, and the last step shows them all
            last = replay.messages_at(len(replay) - 1)
            assert {m.key for m in last} == {m.key for m in run.messages}
            # messages from the trace rebuild as LangChain messages
            for m in run.messages:
                assert m.to_langchain().type == m.type
            # tool results answer a call asked earlier (but in the footgun that breaks it)
            asked = {c["id"] for m in run.messages for c in m.tool_calls}
            for m in run.messages:
                if m.type == "tool" and path.stem not in WRONG_IDS_ON_PURPOSE:
                    assert m.tool_call_id in asked


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_state_at_is_the_plain_definition(path: Path, store_db: str) -> None:
    """``Replay.state_at`` (bisection over the messages' seq bounds) gives, at every
    step, what the plain definition gives: the messages recorded by then, in
    conversation order (after the latest reorder), each in its version of then."""
    db = store_db
    import_trace(path, db)
    with TraceDB(db) as tdb:
        runs = [tdb.run(s.id) for s in tdb.runs()]
    for run in runs:
        replay = build_replay(run)
        for step in replay.steps:
            seq = step.event.seq
            orders = [e for e in run.events if e.hook == "history" and e.seq <= seq
                      and isinstance(e.payload, dict) and "keys" in e.payload]
            known = [m for m in run.messages if m.seq <= seq]
            if orders:
                last = orders[-1]
                by_key = {m.key: m for m in known}
                plain = [by_key[k] for k in last.payload["keys"] if k in by_key]
                plain += [m for m in known if m.seq > last.seq and m not in plain]
            else:
                plain = known
            versions = [max((v for v in run.revisions if v.key == m.key and v.seq <= seq),
                            key=lambda v: v.seq, default=m) for m in plain]
            assert replay.state_at(seq) == versions, (path.stem, step.index)


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_every_event_uses_the_format_names(path: Path) -> None:
    """Every event of every sample names a hook and a phase of ``tracer.vocab.records``."""
    from tracer.vocab.records import EVENT_HOOKS, PHASES

    _header, rows = read_trace(path)
    events = [r for t, r in rows if t == "events"]
    assert events
    assert {e["hook"] for e in events} <= set(EVENT_HOOKS), path.stem
    assert {e["phase"] for e in events} <= set(PHASES), path.stem


def test_a_runs_children_are_its_subagent_runs(store_db: str) -> None:
    """``TraceDB.run`` asks only for a run's own children (not every run of the file)."""
    db = store_db
    for path in SAMPLES:
        import_trace(path, db)
    with TraceDB(db) as tdb:
        every = tdb.runs()
        parents = {r.parent_id for r in every if r.parent_id}
        assert parents  # the deep-agent sample nests a subagent run
        for r in every:
            want = sorted(x.id for x in every if x.parent_id == r.id)
            assert sorted(c.id for c in tdb.run(r.id).children) == want
