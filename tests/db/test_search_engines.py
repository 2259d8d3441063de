"""Search finds the same runs on both engines (``store_db``): the text anywhere in a
message or a note, ASCII letters in either case and no other letter folded (SQLite's
``LIKE``; PostgreSQL's ``ILIKE`` folds "É" as "é" by itself), ``%``, ``_``, quotes
and backslashes as plain text, whether the text is looked up in the index (rare) or
tested run by run (common).

The expected runs are found by Python over the stored rows (``plain_scan``)."""

from __future__ import annotations

import pytest
from scale_kit import ODD_TEXTS, Spec, records, template, write_runs
from tracer_kit import rows

from tracer.db.notes import add_note
from tracer.db.writer import Writer
from tracer.read.loader import TraceDB
from tracer.read.run_list import RunFilter

QUERIES = (*ODD_TEXTS, "Ærø", "ærø", "ÆRØ", "Straße", "STRASSE", "北京", "Oslo", "oslo",
           "OSLO", "weather", "city number 1", "100%", "5_000", "a_b", "a%b", "\\", "%", "_",
           "o", "ab", "zz", "'", '"', "NEAR/3", "nothing like this", "mixed case oslo")


def ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


def plain_scan(db: str, query: str) -> set[str]:
    q = ascii_lower(query)
    found = rows(db, "SELECT run_id, text FROM messages") + rows(db, "SELECT run_id, text"
                                                                   " FROM notes")
    return {rid for rid, text in found if q in ascii_lower(text or "")}


def top_level(db: str, ids: set[str]) -> set[str]:
    parent = dict(rows(db, "SELECT id, parent_id FROM runs"))
    out = set()
    for rid in ids:
        while parent.get(rid):
            rid = parent[rid]
        out.add(rid)
    return out


@pytest.mark.parametrize("common", [1, 10**9], ids=["every-text-common", "none-common"])
def test_search_finds_what_a_plain_scan_finds_on_each_engine(
        store_db: str, common: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.db import search

    write_runs(store_db, 60)
    (first,) = rows(store_db, "SELECT id FROM runs WHERE parent_id IS NULL"
                              " ORDER BY started_at LIMIT 1")[0]
    add_note(store_db, first, "a NOTE about Ærø and 5_000")
    monkeypatch.setattr(search, "COMMON", common)
    wrong = []
    with TraceDB(store_db) as db:
        for query in QUERIES:
            want = plain_scan(store_db, query)
            got = {r.id for r in db.runs(search=query)}
            up = {r.id for r in db.runs(RunFilter(top_level=True, search=query))}
            if got != want or up != top_level(store_db, want):
                wrong.append((query, len(got), len(want), len(up)))
            if db.count_runs(RunFilter(search=query)) != len(want):
                wrong.append((query, "count"))
    assert wrong == []


def test_only_ascii_letters_are_folded_on_each_engine(store_db: str) -> None:
    """PostgreSQL's ILIKE alone finds "Reykjavík" for "REYKJAVÍK" (the server's locale
    folds Í as í); SQLite's LIKE does not, and search says the same on both."""
    w = Writer(store_db)
    for rec in records(Spec("r1", "fold", "completed", 1.0, "a question about Reykjavík"),
                       template()):
        w.put(rec)
    w.close()
    add_note(store_db, "r1", "Café")
    with TraceDB(store_db) as db:
        for common in (False, True):
            db._common = lambda f, c=common: c  # type: ignore[method-assign]
            assert [r.id for r in db.runs(search="REYKJAVÍK")] == [], common
            assert [r.id for r in db.runs(search="REYKJAVíK")] == ["r1"], common
            assert [r.id for r in db.runs(search="CAFÉ")] == [], common
            assert [r.id for r in db.runs(search="cAFé")] == ["r1"], common
