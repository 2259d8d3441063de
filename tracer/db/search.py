"""Search in messages: which runs have a message containing a text.

What a search matches has not changed: a message whose text contains the query
as it is typed, ASCII letters in either case (SQL's ``LIKE``; ``%``, ``_``,
quotes and FTS operators are plain text). How it is found has: ``messages_fts``,
an FTS5 index of every message's text with the trigram tokenizer, narrows the
search to messages holding the query's three-letter pieces; the text of those is
then compared exactly. A query shorter than three characters has no pieces: it
is a scan of every message, as before. A file without the index (an older
schema read as it is) is scanned too.

A text the index finds in many messages (``COMMON`` or more: "weather" in a
file of a hundred thousand weather runs) is not looked up that way: checking
every message that holds it costs seconds, and a page needs only the first
hundred runs. ``run_has`` tests each run instead, newest first as the runs list
reads them, and the list stops at its page (``is_common`` decides, from the
index, in about a millisecond).

A trigger on ``messages`` (``tracer.db.schema``) puts each message's text, with its
run, in ``search_pending``, in the transaction that writes the message: it is
searched there (a scan of a few thousand rows at most) until ``catch_up`` moves a
batch into the index, giving each message its rowid there (its run's block, the
next free numbers in it, in the order written). The index then grows by one segment per batch rather than one
per commit, so that a commit costs about the same in a large file as in an
empty one. The writer catches up every ``BATCH`` messages and when it closes,
``looptrace import`` after each import.

Example:
    ```python
    from tracer.read.loader import TraceDB

    with TraceDB("looptrace.db") as db:
        hits = db.runs(search='100% "Oslo"')  # plain text, whatever it holds
    ```
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from .schema import FTS_BLOCK
from .tables import SCHEMA_VERSION
from .url import engine_of

MIN_INDEXED = 3  # the trigram tokenizer indexes three-character pieces
COMMON = 200  # messages the index finds a text in, from which the text is common
BATCH = 2000  # messages waiting in search_pending before the index takes them


def _like_pattern(text: str) -> str:
    """A ``LIKE`` pattern for ``text`` anywhere, with ``%`` and ``_`` escaped."""
    esc = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{esc}%"


def _fts_pattern(text: str) -> str:
    """A ``LIKE`` pattern the trigram index can answer: ``text`` anywhere, where the
    query's own ``%`` and ``_`` are left as wildcards (FTS5 takes no ``ESCAPE``):
    it finds every message the exact comparison keeps, and some more."""
    return f"%{text}%"


# (PostgreSQL: ``ILIKE`` folds every letter's case as the server's locale does, "É" as
# "é"; lower() under the "C" collation folds ASCII letters only, as SQLite's LIKE)
_PG_EXACT = "instr(lower({col} COLLATE \"C\"), lower(CAST(? AS TEXT) COLLATE \"C\")) > 0"


def exact(col: str, text: str, engine: str) -> tuple[str, list[Any]]:
    """The condition that the column ``col`` contains ``text`` as search matches it (SQL,
    and its parameters): SQLite's ``LIKE``; on PostgreSQL its ``ILIKE`` (which the
    trigram index answers) and the same ASCII-only folding."""
    like = f"{col} LIKE ? ESCAPE '\\'"
    if engine == "sqlite":
        return like, [_like_pattern(text)]
    return f"{like} AND {_PG_EXACT.format(col=col)}", [_like_pattern(text), text]


def matching_runs(text: str, *, indexed: bool, schema: int = SCHEMA_VERSION,
                  engine: str = "sqlite") -> tuple[str, list[Any]]:
    """SQL selecting the ids of runs with a message containing ``text``, and its
    parameters. ``indexed``: the file has ``messages_fts``; ``schema``: its version
    (a schema 3 or 4 file, read as it is, names a waiting message's run by its block).
    A PostgreSQL store (``engine``): its trigram index answers the ``ILIKE``."""
    like = _like_pattern(text)
    if engine != "sqlite" or not indexed or len(text) < MIN_INDEXED or not _has_piece(text):
        cond, params = exact("text", text, engine)
        return f"SELECT run_id FROM messages WHERE {cond}", params
    # The index (the run by its block), then the exact test (lower() folds ASCII
    # letters only, as LIKE does); and what waits in search_pending, scanned.
    indexed_sql = ("SELECT s.run_id FROM search_runs s WHERE s.n IN ("
                   f"SELECT rowid / {FTS_BLOCK} FROM messages_fts WHERE text LIKE ?"
                   " AND instr(lower(text), lower(?)) > 0")
    if schema < 5:
        sql = (indexed_sql + f" UNION ALL SELECT fts / {FTS_BLOCK} FROM search_pending"
               " WHERE text LIKE ? ESCAPE '\\')")
    else:
        sql = (indexed_sql + ") UNION SELECT run_id FROM search_pending"
               " WHERE text LIKE ? ESCAPE '\\'")
    return sql, [_fts_pattern(text), text, like]


def is_common(query: Callable[[str, list[Any]], list[tuple[Any, ...]]], text: str, *,
              indexed: bool, engine: str = "sqlite") -> bool:
    """Whether ``text`` is in so many messages (``COMMON`` or more, as the index says)
    that testing runs one by one (``run_has``) finds a page sooner than the index does.
    A text the index cannot narrow (short, or a file without the index) is scanned
    either way: testing runs one by one stops at the page. ``query``: rows of a query.

    A PostgreSQL store counts through its trigram index (``engine``): the server takes
    the index for a rare text and, for a text its statistics say is common, reads the
    messages until the ``COMMON``-th it finds, which is soon. (A text without three
    letters or digits in a row gives ``pg_trgm`` nothing to look up: the messages are
    read until the ``COMMON``-th, or to the end for a rare one.)"""
    if engine != "sqlite":
        (n,), = query("SELECT COUNT(*) FROM (SELECT 1 FROM messages WHERE text LIKE ?"
                      " ESCAPE '\\' LIMIT ?) AS x", [_like_pattern(text), COMMON])
        return int(n) >= COMMON
    if not indexed or len(text) < MIN_INDEXED or not _has_piece(text):
        return True
    (n,), = query("SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts WHERE text LIKE ? LIMIT ?)",
                  [_fts_pattern(text), COMMON])
    return int(n) >= COMMON


def run_has(text: str, *, below: bool, engine: str = "sqlite") -> tuple[str, list[Any]]:
    """A condition on the run ``r`` (SQL, and its parameters): one of its messages
    contains ``text`` (as ``matching_runs`` matches), or, with ``below``, one of the
    messages of a run below it (its subagent runs, theirs ...)."""
    cond, params = exact("m.text", text, engine)
    # (PostgreSQL: ``OFFSET 0`` keeps the test per run. Without it the server may
    # make the EXISTS one hashed set of every run holding the text, all of them read
    # before the first page, which is what testing run by run is there to avoid)
    fence = "" if engine == "sqlite" else " OFFSET 0"
    sql = f"EXISTS (SELECT 1 FROM messages m WHERE m.run_id = r.id AND {cond}{fence})"
    if below:
        sql = ("EXISTS (WITH RECURSIVE down(id) AS (SELECT r.id UNION SELECT k.id FROM runs k"
               " JOIN down ON k.parent_id = down.id) SELECT 1 FROM down JOIN messages m"
               f" ON m.run_id = down.id WHERE {cond}{fence})")
    return sql, params


def catch_up(conn: sqlite3.Connection, *, at_least: int = 0) -> int:
    """Move the text waiting in ``search_pending`` into the index (in the caller's
    transaction), if at least ``at_least`` messages wait; return how many moved. (A
    PostgreSQL store has no such index: its trigram index is kept by the server.)"""
    if engine_of(conn) != "sqlite":
        return 0
    if at_least > 0:
        (waiting,) = conn.execute(
            "SELECT COUNT(*) FROM (SELECT 1 FROM search_pending LIMIT ?) AS x", [at_least]).fetchone()
        if waiting < at_least:
            return 0
    # each run met there has its block of rowids (a new run the next block) ...
    conn.execute("INSERT INTO search_runs(run_id, messages) SELECT p.run_id, 0"
                 " FROM search_pending p WHERE NOT EXISTS"
                 " (SELECT 1 FROM search_runs s WHERE s.run_id = p.run_id)"
                 " GROUP BY p.run_id ORDER BY MIN(p.id)")
    # ... its waiting messages numbered on from those it has, in the order written
    moved = conn.execute(
        "INSERT INTO messages_fts(rowid, text)"
        f" SELECT s.n * {FTS_BLOCK} + s.messages + p.k, p.text FROM (SELECT run_id, text,"
        " ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY id) AS k FROM search_pending) p"
        " JOIN search_runs s ON s.run_id = p.run_id").rowcount
    conn.execute("UPDATE search_runs SET messages = messages + c.k FROM (SELECT run_id,"
                 " COUNT(*) AS k FROM search_pending GROUP BY run_id) c"
                 " WHERE c.run_id = search_runs.run_id")
    conn.execute("DELETE FROM search_pending")
    return int(moved)


def _has_piece(text: str) -> bool:
    """Whether ``text`` holds three characters in a row that are not wildcards
    (else the index cannot narrow anything down)."""
    run = 0
    for ch in text:
        run = 0 if ch in "%_" else run + 1
        if run >= MIN_INDEXED:
            return True
    return False
