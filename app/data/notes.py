"""Notes on runs and steps (``tracer.db.notes``): read, cached until the file changes,
and written: the app's one write, through the tracer's own function."""

from __future__ import annotations

from typing import Any

import streamlit as st

from tracer.db.notes import Note, add_note
from tracer.read.loader import TraceDB

from .store import db_stamp

__all__ = ["Note", "note_tags", "notes", "write_note"]


@st.cache_data(show_spinner=False, max_entries=64)
def _notes(path: str, stamp: Any, run_id: str) -> list[Note]:
    with TraceDB(path) as db:
        return db.notes(run_id)


def notes(path: str, run_id: str) -> list[Note]:
    """The notes on ``run_id`` (``TraceDB.notes``: the run's first, then by step), cached
    until the file changes."""
    return _notes(path, db_stamp(path), run_id)


@st.cache_data(show_spinner=False, max_entries=16)
def _note_tags(path: str, stamp: Any) -> list[tuple[str, int]]:
    with TraceDB(path) as db:
        return db.note_tags()


def note_tags(path: str) -> list[tuple[str, int]]:
    """Every tag of a note in the file, with how many runs have it (``TraceDB.note_tags``)."""
    return _note_tags(path, db_stamp(path))


def write_note(path: str, run_id: str, text: str, *, step: int | None,
               tags: list[str]) -> Note:
    """Write a note (``tracer.db.notes.add_note``): the one write of the app, through
    the tracer's own function, the file opened for writing for that row only. A bad
    input or a file that cannot be written is a ``LooptraceError`` (nothing written)."""
    return add_note(path, run_id, text, step=step, tags=tags)
