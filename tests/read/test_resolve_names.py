"""A run is named the way a person names it (issue 39, item 15): by id, by a unique
prefix of one, by its name, or ``name@N`` (the Nth newest of that name), everywhere a
run is asked for: ``TraceDB.resolve`` is the one place the CLI, MCP and the app ask."""

from __future__ import annotations

import pytest
from tracer_kit import rows

from tracer.cli import main
from tracer.errors import RunNotFound
from tracer.read.loader import TraceDB


def _id_named(db: str, name: str) -> str:
    ((rid,),) = rows(db, "SELECT id FROM runs WHERE name = ?", [name])
    return str(rid)


def test_a_unique_name_is_its_run(sample_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    rid = _id_named(sample_store, "weather")
    with TraceDB(sample_store) as db:
        others = [r.id for r in db.runs() if r.id != rid]
        # the shortest prefix no other run shares (the demo's ids begin with the time)
        short = next(rid[:n] for n in range(4, len(rid) + 1)
                     if not any(o.startswith(rid[:n]) for o in others))
        assert db.resolve("weather") == rid
        assert db.resolve(rid) == rid and db.resolve(short) == rid
        with pytest.raises(RunNotFound, match="not an id, a prefix of one or a run's name"):
            db.resolve("no-such-name")
    capsys.readouterr()
    assert main(["show", "weather", "--db", str(sample_store)]) == 0
    assert capsys.readouterr().out.startswith(f"run {rid}  weather\n")


@pytest.fixture
def twice(store_db: str) -> str:
    """A store with three runs named ``triage`` (started at 1, 3 and 2) and one ``x@2``."""
    db = store_db
    from tracer.db.schema import connect

    conn = connect(db)
    conn.executemany("INSERT INTO runs(id, name, status, started_at) VALUES (?,?,?,?)",
                     [("r-old", "triage", "completed", 1.0), ("r-new", "triage", "completed", 3.0),
                      ("r-mid", "triage", "completed", 2.0), ("r-at", "x@2", "completed", 4.0)])
    conn.commit()
    conn.close()
    return db


def test_a_shared_name_asks_for_name_at_n(twice: str) -> None:
    with TraceDB(twice) as db:
        with pytest.raises(RunNotFound, match=r"3 runs are named 'triage'.*triage@1 \(the newest\)"):
            db.resolve("triage")
        assert [db.resolve(f"triage@{n}") for n in (1, 2, 3)] == ["r-new", "r-mid", "r-old"]
        with pytest.raises(RunNotFound, match="3 run.s. are named 'triage'.*not 4"):
            db.resolve("triage@4")
        with pytest.raises(RunNotFound, match="counts from 1"):
            db.resolve("triage@0")
        assert db.resolve("x@2") == "r-at"  # (a name with an @ is its own name first)
        assert db.resolve("r-n") == "r-new"  # (ids' prefixes still work)
