"""The runs list, filtered and paged in SQL, against a plain Python filter over what
was written (``scale_kit`` specs): never against the code under test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pg_kit import store_on
from scale_kit import T0, Spec, write_runs
from tracer_kit import rows

from tracer.checks.run import check_db
from tracer.cli import main
from tracer.interop.exchange import export_run, import_trace
from tracer.read.loader import TraceDB
from tracer.read.run_list import RunFilter

N = 300


@pytest.fixture(scope="module")
def made(engine: str, tmp_path_factory: pytest.TempPathFactory,
         pg_url: str | None) -> tuple[str, list[Spec]]:
    path = store_on(engine, tmp_path_factory.mktemp("runs"), pg_url, "runs.db")
    return path, write_runs(path, N)


def newest_first(specs: list[Spec]) -> list[str]:
    return [s.id for s in sorted(specs, key=lambda s: (s.started_at, s.id), reverse=True)]


def ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def expected_counts(s: Spec) -> tuple[int, int, int, int, int]:
    """laps, model calls, tool calls, errors, events of a copy of the weather run."""
    return (2, 2, 1, 1 if s.error else 0, 12 if s.status == "running" else 14)


def test_every_run_with_its_counts_newest_first(made) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    with TraceDB(path) as db:
        runs = db.runs()
        assert [r.id for r in runs] == newest_first(specs)
        by_id = {s.id: s for s in specs}
        for r in runs:
            s = by_id[r.id]
            assert (r.laps, r.model_calls, r.tool_calls, r.errors, r.events) == expected_counts(s)
            assert (r.status, r.name, r.parent_id, r.started_at) == (
                s.status, s.name, s.parent_id, s.started_at)
    # kept when they ended; the runs still running have none (counted on each read)
    kept = {r[0] for r in rows(path, "SELECT run_id FROM run_stats")}
    assert kept == {s.id for s in specs if s.status != "running"}


FILTERS = [
    (RunFilter(), lambda s: True),
    (RunFilter(top_level=True), lambda s: s.parent_id is None),
    (RunFilter(status=("error",)), lambda s: s.status == "error"),
    (RunFilter(status=("running", "interrupted")), lambda s: s.status in ("running", "interrupted")),
    (RunFilter(name="ærø"), lambda s: "ærø" in ascii_lower(s.name)),
    (RunFilter(name="RESEARCH"), lambda s: "research" in ascii_lower(s.name)),
    (RunFilter(name="100%_"), lambda s: "100%_" in s.name),
    (RunFilter(name="%"), lambda s: "%" in s.name),
    (RunFilter(since=T0 + 3600, until=T0 + 2 * 3600),
     lambda s: T0 + 3600 <= s.started_at < T0 + 2 * 3600),
    (RunFilter(since=T0 + 250 * 60), lambda s: s.started_at >= T0 + 250 * 60),
    (RunFilter(status=("completed",), top_level=True, until=T0 + 100 * 60),
     lambda s: s.status == "completed" and s.parent_id is None and s.started_at < T0 + 6000),
    (RunFilter(ids=()), lambda s: False),
]


@pytest.mark.parametrize(("flt", "keep"), FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_filters_and_pages_equal_a_plain_filter(made, flt, keep) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    expected = newest_first([s for s in specs if keep(s)])
    with TraceDB(path) as db:
        assert [r.id for r in db.runs(flt)] == expected
        assert db.count_runs(flt) == len(expected)
        for size in (1, 7, 100):
            pages = []
            for offset in range(0, len(expected) + size, size):
                pages += [r.id for r in db.runs(flt, limit=size, offset=offset)]
            assert pages == expected


def test_parent_filter_and_subagent_runs(made) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    parents = [s for s in specs if any(c.parent_id == s.id for c in specs)]
    assert len(parents) == N // 10
    with TraceDB(path) as db:
        for p in parents[:5]:
            kids = [s.id for s in specs if s.parent_id == p.id]
            assert [r.id for r in db.runs(RunFilter(parent_id=p.id))] == kids
            assert [r.id for r in db.subagent_runs([p.id])] == kids
        page = db.runs(RunFilter(top_level=True), limit=50)
        below = db.subagent_runs([r.id for r in page])
        shown = {r.id for r in page}
        assert {r.id for r in below} == {s.id for s in specs if s.parent_id in shown}


def test_health_filter_reads_stored_checks(made) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    with TraceDB(path) as db:
        # nothing checked yet: every run is unchecked
        assert db.count_runs(RunFilter(health=("unchecked",))) == len(specs)
        assert db.runs(RunFilter(health=("error", "warning", "ok"))) == []
    check_db(path)
    want = {
        "error": lambda s: s.flaw == "recursion",
        "warning": lambda s: s.flaw == "no-answer",
        "info": lambda s: False,
        "ok": lambda s: s.flaw is None and s.status != "running",
        "unchecked": lambda s: s.status == "running",  # (never kept while running)
    }
    with TraceDB(path) as db:
        for h, keep in want.items():
            flt = RunFilter(health=(h,))
            assert [r.id for r in db.runs(flt)] == newest_first([s for s in specs if keep(s)]), h
        both = RunFilter(health=("error", "warning"), top_level=True, status=("error",))
        assert [r.id for r in db.runs(both, limit=10, offset=5)] == newest_first(
            [s for s in specs if s.flaw and s.parent_id is None])[5:15]
    with pytest.raises(ValueError, match="unknown health"):
        RunFilter(health=("great",))


def test_search_with_top_level_finds_the_parent_of_a_hit(made) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    sub = next(s for s in specs if s.parent_id)
    with TraceDB(path) as db:
        assert [r.id for r in db.runs(RunFilter(search=sub.question))] == [sub.id]
        assert [r.id for r in db.runs(RunFilter(search=sub.question, top_level=True))] == [
            sub.parent_id]


def test_an_imported_run_has_its_counts_kept(made, tmp_path: Path, store_db: str) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    s = next(x for x in specs if x.error)
    trace = export_run(path, s.id, tmp_path / "one.jsonl")
    target = store_db
    import_trace(trace, target)
    (row,) = rows(target, "SELECT laps, model_calls, tool_calls, errors, events FROM run_stats"
                          " WHERE run_id = ?", [s.id])
    assert row == expected_counts(s)


def test_rows_after_the_end_refresh_the_counts(made, store_db: str) -> None:  # type: ignore[no-untyped-def]
    from scale_kit import records, template

    from tracer.db.writer import Writer
    from tracer.vocab.records import EventRecord, RunRecord

    path = store_db
    spec = Spec("late-run", "late", "completed", T0, "late?")
    w = Writer(str(path))
    for rec in records(spec, template()):
        w.put(rec)
    w.flush()
    (gen0,) = rows(path, "SELECT gen, events FROM run_stats")
    assert gen0 == (1, 14)
    w.put(EventRecord("late-run", 14, T0 + 1, "run", "error", None, None, 2, None, None,
                      {"error": "late"}))
    w.flush()
    assert rows(path, "SELECT gen, events, errors FROM run_stats") == [(2, 15, 1)]
    w.put(RunRecord("late-run", {"status": "running", "ended_at": None}))  # resumed
    w.put(EventRecord("late-run", 15, T0 + 2, "resume", "fire", None, None, 2, None, None, None))
    w.flush()
    with TraceDB(path) as db:
        (r,) = db.runs()
        assert (r.status, r.events, r.errors) == ("running", 16, 1)  # counted live
    w.close()


def test_cli_runs_filters_and_pages(made, capsys) -> None:  # type: ignore[no-untyped-def]
    path, specs = made
    assert main(["runs", "--db", str(path), "--json", "--status", "error", "--top-level",
                 "--limit", "5", "--offset", "2"]) == 0
    out, err = capsys.readouterr()
    expected = newest_first([s for s in specs if s.status == "error" and not s.parent_id])
    assert [r["id"] for r in json.loads(out)] == expected[2:7]
    assert f"of {len(expected)}" in err and "--offset 7" in err
    assert main(["runs", "--db", str(path), "--json", "--name", "ærø", "--limit", "0"]) == 0
    out, err = capsys.readouterr()
    assert len(json.loads(out)) == sum(1 for s in specs if "ærø" in ascii_lower(s.name))
    assert err == ""
    assert main(["runs", "--db", str(path), "--since", "2023-11-14T23:00", "--until",
                 "2023-11-15", "--limit", "0", "--json"]) == 0
    import datetime as dt

    lo = dt.datetime.fromisoformat("2023-11-14T23:00").timestamp()
    hi = dt.datetime.fromisoformat("2023-11-15").timestamp()
    out, _ = capsys.readouterr()
    assert [r["id"] for r in json.loads(out)] == newest_first(
        [s for s in specs if lo <= s.started_at < hi])
    parent = next(s for s in specs if s.parent_id).parent_id
    assert main(["runs", "--db", str(path), "--parent", parent[:12], "--json"]) == 0
    assert [r["parent_id"] for r in json.loads(capsys.readouterr()[0])] == [parent]
    check_db(path)
    assert main(["runs", "--db", str(path), "--health", "warning", "--limit", "0",
                 "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr()[0])] == newest_first(
        [s for s in specs if s.flaw == "no-answer"])
    assert main(["runs", "--db", str(path), "--since", "yesterday-ish"]) == 1
    assert "not a date, time or age" in capsys.readouterr().err
