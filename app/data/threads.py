"""Conversations (``tracer.read.threads``): the threads of the file and one thread's
turns, cached until the file or the prices file changes."""

from __future__ import annotations

from typing import Any

import streamlit as st

from tracer.read.cost import prices_stamp
from tracer.read.loader import TraceDB
from tracer.read.threads import Thread, ThreadSummary, Turn, list_threads, load_thread

from .store import db_stamp

__all__ = ["Thread", "ThreadSummary", "Turn", "thread", "threads"]


@st.cache_data(show_spinner=False, max_entries=16)
def _threads(path: str, stamp: Any, prices: Any, limit: int) -> list[ThreadSummary]:
    with TraceDB(path) as db:
        return list_threads(db, limit=limit)


def threads(path: str, limit: int = 500) -> list[ThreadSummary]:
    """The threads of the file (``tracer.read.threads.list_threads``), the one active last
    first, at most ``limit``."""
    return _threads(path, db_stamp(path), prices_stamp(), limit)


@st.cache_data(show_spinner=False, max_entries=32)
def _thread(path: str, stamp: Any, prices: Any, thread_id: str) -> Thread:
    with TraceDB(path) as db:
        return load_thread(db, thread_id)


def thread(path: str, thread_id: str) -> Thread:
    """One thread's turns (``tracer.read.threads.load_thread``)."""
    return _thread(path, db_stamp(path), prices_stamp(), thread_id)
