"""Notes: a person's text and tags on a run, or on one step of it (schema 6).

A note is stored in ``notes`` (``tracer.db.schema.NOTES_COLUMNS``) with the ``seq`` of
the step's event (NULL: a note on the whole run); people give and read *steps* (counted
from 1, as the replay shows them: one step per recorded event, in ``seq`` order), the
database keeps ``seq``. ``add_note`` checks what it is given and writes one row, or
nothing with a one-line error: empty text, a run the file does not hold, a step the
run does not have, a tag that is not one short word. ``read_notes`` reads a run's notes
back (``TraceDB.notes`` gives them with their steps). A deleted run takes its notes
along (the schema's trigger); a fork or replay keeps none of its own, it names the run
it came from (``tracer.read.fork_links.origin_of``), whose notes are shown with it.

Example:
    ```python
    from tracer.db.notes import add_note

    note = add_note("looptrace.db", "3f2a...", "here it calls the tool twice", step=7,
                    tags=("bug",))
    print(note.id, note.seq)
    ```
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tracer.errors import (
    InvalidOption,
    LooptraceError,
    RunNotFound,
    StepOutOfRange,
    storage_errors,
)

from .schema import connect
from .url import is_url, safe

__all__ = ["MAX_TAGS", "MAX_TEXT", "TAGS_SQL", "Note", "add_note", "check_author", "check_tags",
           "check_text",
           "delete_note", "read_notes"]

MAX_TEXT = 10_000  # characters of one note
MAX_TAGS = 10  # tags of one note
MAX_AUTHOR = 100
# a tag is one short word: letters, digits, "-" and "_" (stored in lower case)
TAG = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
# a note's tags as a JSON array SQLite can walk (``json_each``): an unreadable value, none
TAGS_SQL = ("(CASE WHEN json_valid(n.tags) AND json_type(n.tags) = 'array' THEN n.tags"
            " ELSE '[]' END)")


@dataclass(frozen=True, slots=True)
class Note:
    """One note: on the run (``seq`` None) or on the step of event ``seq``; ``step``
    is that step counted from 1 when the reader knew it (``TraceDB.notes``)."""

    id: int
    run_id: str
    seq: int | None
    text: str
    tags: tuple[str, ...]
    author: str | None
    created_at: float | None
    step: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "step": self.step, "text": self.text, "tags": list(self.tags),
                "author": self.author, "created_at": self.created_at}


def check_text(given: Any) -> str:
    """The note's text, stripped; ``InvalidOption`` when it is not text, empty or too long."""
    if not isinstance(given, str):
        msg = f"a note's text is a string, not {type(given).__name__}"
        raise InvalidOption(msg)
    text = given.strip()
    if not text:
        msg = "a note needs text (it is empty)"
        raise InvalidOption(msg)
    if len(text) > MAX_TEXT:
        msg = f"a note is at most {MAX_TEXT:,} characters (this one has {len(text):,})"
        raise InvalidOption(msg)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        msg = "a note's text is not valid Unicode (a lone surrogate)"
        raise InvalidOption(msg) from None
    return text


def check_tags(tags: Iterable[Any] | None) -> tuple[str, ...]:
    """The tags, in lower case, each once, in the order given; ``InvalidOption`` for a tag
    that is not one short word, or too many."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    out: dict[str, None] = {}
    for t in tags:
        word = t.strip().lower() if isinstance(t, str) else None
        if word is None or not TAG.fullmatch(word):
            shown = repr(t) if len(repr(t)) <= 40 else repr(t)[:37] + "..."
            msg = (f"tag {shown}: a tag is one short word (letters, digits, - and _; up to "
                   "32 characters), e.g. bug, good-example, workshop")
            raise InvalidOption(msg)
        out[word] = None
    if len(out) > MAX_TAGS:
        msg = f"a note has at most {MAX_TAGS} tags, not {len(out)}"
        raise InvalidOption(msg)
    return tuple(out)


def check_author(author: Any) -> str | None:
    """The author's name, stripped (None: none given); ``InvalidOption`` otherwise."""
    if author is None:
        return None
    if not isinstance(author, str) or not author.strip() or len(author) > MAX_AUTHOR or any(
            not c.isprintable() for c in author):
        msg = f"author {author!r:.60}: a name of 1 to {MAX_AUTHOR} printable characters"
        raise InvalidOption(msg)
    return author.strip()


def _check_step(step: Any) -> int | None:
    if step is None:
        return None
    if isinstance(step, bool) or not isinstance(step, int):
        msg = f"step {step!r:.40}: a step number, counted from 1"
        raise InvalidOption(msg)
    return step


def seq_of_step(conn: sqlite3.Connection, run_id: str, step: int, where: str = "") -> int:
    """The ``seq`` of step ``step`` (from 1) of ``run_id``: its ``step``-th event in
    ``seq`` order (one step per recorded event, as ``build_replay`` makes them).
    ``StepOutOfRange`` naming the run's steps otherwise."""
    (total,) = conn.execute("SELECT COUNT(*) FROM events WHERE run_id = ?", [run_id]).fetchone()
    if not 1 <= step <= total:
        has = f"has steps 1 to {total}" if total else "has no steps"
        msg = f"run {run_id[:12]}{where} {has}, not {step}"
        raise StepOutOfRange(msg)
    row = conn.execute("SELECT seq FROM events WHERE run_id = ? ORDER BY seq LIMIT 1 OFFSET ?",
                       [run_id, step - 1]).fetchone()
    return int(row[0])


def add_note(db_path: str | Path, run_id: str, text: str, *, step: int | None = None,
             tags: Sequence[str] | None = (), author: str | None = None,
             now: float | None = None) -> Note:
    """Write a note on run ``run_id`` (its full id), or on its step ``step`` (from 1);
    return it as stored. Everything is checked before anything is written: a bad input
    is one ``LooptraceError`` line (``InvalidOption``, ``RunNotFound``, ``StepOutOfRange``)
    and no row. The file is opened for writing for this one row (an older schema is
    migrated first, as any write does), then closed."""
    text = check_text(text)
    tagged = check_tags(tags)
    author = check_author(author)
    step = _check_step(step)
    if not is_url(db_path) and not Path(db_path).exists():
        msg = f"{db_path}: no such database"
        raise LooptraceError(msg)
    conn = connect(db_path, create=False, verify=True, done="no note was written")
    try:
        conn.isolation_level = None
        with storage_errors(db_path, done="no note was written"):
            conn.execute("BEGIN IMMEDIATE")
            try:
                if not conn.execute("SELECT 1 FROM runs WHERE id = ?", [run_id]).fetchone():
                    msg = f"no run {run_id!r} in {safe(str(db_path))}"
                    raise RunNotFound(msg)
                seq = None if step is None else seq_of_step(conn, run_id, step)
                created = time.time() if now is None else now
                cur = conn.execute(
                    "INSERT INTO notes(run_id, seq, text, tags, author, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    [run_id, seq, text, json.dumps(list(tagged), ensure_ascii=False), author,
                     created])
                note_id = int(cur.lastrowid or 0)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
    finally:
        conn.close()
    return Note(note_id, run_id, seq, text, tagged, author, created, step)


def delete_note(db_path: str | Path, run_id: str, note_id: int) -> None:
    """Delete note ``note_id`` of run ``run_id``; ``InvalidOption`` when the run has none
    of that number (nothing deleted)."""
    conn = connect(db_path, create=False, verify=True, done="nothing was deleted")
    try:
        with storage_errors(db_path, done="nothing was deleted"), conn:
            cur = conn.execute("DELETE FROM notes WHERE id = ? AND run_id = ?",
                               [int(note_id), run_id])
            if cur.rowcount != 1:
                msg = f"run {run_id[:12]} has no note {note_id}"
                raise InvalidOption(msg)
    finally:
        conn.close()


def _tags(text: Any) -> tuple[str, ...]:
    try:
        value = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return ()
    return tuple(str(t) for t in value) if isinstance(value, list) else ()


def read_notes(query: Callable[[str, list[Any]], list[tuple[Any, ...]]],
               run_id: str) -> list[Note]:
    """The notes of ``run_id``: those on the run first, then by step, each in the order
    written. ``query``: rows of a query (``TraceDB.query``, or a connection's)."""
    rows = query("SELECT id, run_id, seq, text, tags, author, created_at FROM notes"
                 " WHERE run_id = ? ORDER BY seq IS NOT NULL, seq, id", [run_id])
    return [Note(int(i), str(r), None if s is None else int(s), str(t or ""), _tags(g), a, c)
            for i, r, s, t, g, a, c in rows]


def with_steps(notes: list[Note], steps: dict[int, int]) -> list[Note]:
    """``notes`` with their ``step`` from ``steps`` (seq -> step)."""
    return [replace(n, step=steps.get(n.seq)) if n.seq is not None else n for n in notes]
