"""Search through the FTS5 index equals a plain scan of every message's text.

The expected runs are found by Python over the raw ``messages`` rows (SQL's LIKE:
the query anywhere in the text, ASCII letters in either case), including texts
and queries full of quotes, ``%``, ``_``, backslashes, unicode and FTS5's own
operators, which must all be plain text.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from scale_kit import ODD_TEXTS, write_runs

from tracer.db.search import matching_runs
from tracer.db.writer import Writer
from tracer.read.loader import TraceDB
from tracer.read.run_list import RunFilter


def ascii_lower(text: str) -> str:
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in text)


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("search") / "search.db"
    write_runs(p, 240)
    return p


def plain_scan(path: Path, query: str) -> set[str]:
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT run_id, text FROM messages").fetchall()
    conn.close()
    q = ascii_lower(query)
    return {rid for rid, text in rows if q in ascii_lower(text or "")}


QUERIES = sorted({
    *ODD_TEXTS,
    *(t[i:i + n] for t in ODD_TEXTS for n in (1, 2, 3, 5, 9) for i in range(0, len(t), 4)),
    '"', "'", '""', "%", "_", "\\", "%_", "a_b", "a%b", "100%", "5_000", "1%0", "o_lo",
    "AND", "and", "OR", "NEAR", "NEAR(", "NEAR/3", "*", "*star*", "^", "-minus", "col:on",
    "Ærø", "ærø", "ÆRØ", "ærø,", "Straße", "STRASSE", "北京", "🚀", "– 北", "Tromsø",
    "Oslo", "oslo", "OSLO", "snowing", "weather", "city number 1", "city number 19?",
    "What's", "what'S", "number", "", " ", "  ", "sub-question #4#", "nothing like this",
})


@pytest.mark.parametrize("query", QUERIES)
def test_search_equals_a_plain_scan(path: Path, query: str) -> None:
    with TraceDB(path) as db:
        got = {r.id for r in db.runs(search=query)}
    if query == "":
        return  # (no search: every run)
    assert got == plain_scan(path, query), query


def test_the_index_is_used_for_three_characters_and_more(path: Path) -> None:
    conn = sqlite3.connect(path)
    for query, indexed in (("Oslo", True), ("a_b", False), ("%%%", False), ("ab", False),
                           ("100%_sure", True)):
        sql, params = matching_runs(query, indexed=True)
        plan = " ".join(str(r) for r in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
        assert ("messages_fts" in plan) == indexed, (query, plan)
    conn.close()


def test_the_index_follows_every_write(tmp_path: Path) -> None:
    """Messages written later (a run in progress, a later version of a message) are
    found; a deleted run's messages no longer are; nothing is indexed twice."""
    from scale_kit import Spec, records, template

    from tracer.vocab.records import MessageRecord

    path = tmp_path / "follow.db"
    spec = Spec("r1", "follow", "running", 1.0, "first question about Reykjavík")
    w = Writer(str(path))
    for rec in records(spec, template()):
        w.put(rec)
    w.flush()
    run = template()
    later = run.messages[-1].to_langchain().model_copy(update={"content": "ANSWER: Nuuk"})
    w.put(MessageRecord("r1", 3, 99, later, 1))
    w.flush()
    w.close()
    with TraceDB(path) as db:
        assert [r.id for r in db.runs(search="REYKJAVÍK")] == []  # (Í is not ASCII)
        assert [r.id for r in db.runs(search="reykjavík")] == ["r1"]
        assert [r.id for r in db.runs(search="answer: nuuk")] == ["r1"]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == conn.execute(
        "SELECT COUNT(*) FROM messages").fetchone()
    with conn:
        conn.execute("DELETE FROM runs WHERE id = 'r1'")
    assert conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone() == (0,)
    assert conn.execute("SELECT COUNT(*) FROM search_runs").fetchone() == (0,)
    conn.close()


def top_level_scan(path: Path, query: str) -> set[str]:
    """The top-level runs holding ``query`` in their own or a subagent run's messages."""
    conn = sqlite3.connect(path)
    parent = dict(conn.execute("SELECT id, parent_id FROM runs").fetchall())
    conn.close()
    out = set()
    for rid in plain_scan(path, query):
        while parent.get(rid):
            rid = parent[rid]
        out.add(rid)
    return out


@pytest.mark.parametrize("common", [1, 10**9], ids=["every-text-common", "none-common"])
@pytest.mark.parametrize("query", ["weather", "city number 19?", "sub-question #4#", "Ærø",
                                   "100%", "a_b", "NEAR/3", "nothing like this", "o"])
def test_both_ways_of_searching_find_the_same_runs(path: Path, query: str, common: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A common text is tested run by run (``run_has``), a rare one looked up in the
    index: forced one way or the other, each finds what a plain scan finds, the
    subagent runs' hits counting for their top-level run."""
    from tracer.db import search

    monkeypatch.setattr(search, "COMMON", common)
    want = top_level_scan(path, query)
    with TraceDB(path) as db:
        f = RunFilter(top_level=True, search=query)
        assert {r.id for r in db.runs(f)} == want, query
        assert db.count_runs(f) == len(want)
        assert db.count_runs(f, at_most=5) == min(5, len(want))
        assert {r.id for r in db.runs(search=query)} == plain_scan(path, query)
        page = db.runs(f, limit=7, offset=3)
    newest = sorted(want, reverse=True)  # (ids start with their start time, in hex)
    assert [r.id for r in page] == newest[3:10]


def test_a_common_text_is_told_from_a_rare_one(path: Path) -> None:
    from tracer.db.search import COMMON, is_common

    with TraceDB(path) as db:
        assert len(plain_scan(path, "weather")) >= COMMON  # (the file has that many)
        assert is_common(db.query, "weather", indexed=True)
        assert not is_common(db.query, "city number 19?", indexed=True)
        assert is_common(db.query, "ab", indexed=True)  # (too short for the index)
