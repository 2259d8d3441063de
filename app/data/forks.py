"""Forks and replays (reruns) of a run: those recorded (``tracer.read.fork_links``),
and the ``looptrace rerun`` command line that makes a new one ("Fork here").

The command line is the app's own: ``fork_argv`` builds it from an ``Edit``
(``tracer.vocab.edits``), ``looptrace rerun`` parses it back. The agent is the one
``looptrace ui --agent`` named (``$LOOPTRACE_AGENT``), else, for a demo run or a bundled
sample, the demo's factory (``tracer.demo.catalog``).
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from tracer.db.url import for_child
from tracer.demo.catalog import demo_agent
from tracer.read.fork_links import Fork, forks_among, origin_of, tagged_run
from tracer.read.fork_links import forks_of as _forks_of
from tracer.read.loader import RunSummary, TraceDB
from tracer.vocab.edits import BadEdit, Edit

from .store import db_stamp

__all__ = ["AGENT_ENV", "Fork", "child_env", "demo_agent", "fork_argv", "forks_below",
           "forks_of", "origin_of", "run_tagged"]

# the environment variable ``looptrace ui --agent`` sets for the app
AGENT_ENV = "LOOPTRACE_AGENT"


def fork_argv(run_id: str, step: int, edit: dict[str, Any], *, agent: str, db: str) -> list[str]:
    """``looptrace rerun`` arguments that fork ``run_id`` at ``step`` with ``edit`` (any
    edit a fork makes, ``tracer.vocab.edits.Edit`` or its JSON): a message, tool result or
    system prompt edit by its own option, any other as ``--edit JSON``; ``BadEdit`` for
    one that is not an edit a fork makes."""
    made = Edit.of(edit)
    if not made.spec.fork:
        msg = f"a fork does not make a {made.kind!r} edit"
        raise BadEdit(msg)
    # (a URL's password is not put on a command line: for_child gives it as PGPASSWORD)
    argv = ["looptrace", "rerun", run_id, "--agent", agent, "--db", for_child(db)[0],
            "--at", str(step)]
    if made.kind == "message":
        return [*argv, "--message", f"{made.position}={made.text}"]
    if made.kind == "tool_result":
        return [*argv, "--tool-result", str(made.text)]
    if made.kind == "system":
        return [*argv, "--system", str(made.text)]
    return [*argv, "--edit", json.dumps(made.to_json(), ensure_ascii=False)]


def child_env(path: str) -> dict[str, str]:
    """The environment a child given ``--db`` (``fork_argv``'s) needs: the URL's
    password, kept off its command line."""
    return for_child(path)[1]


def forks_of(path: str, run_id: str) -> list[Fork]:
    """The forks and reruns of ``run_id`` (``tracer.read.fork_links.forks_of``), read now."""
    with TraceDB(path) as db:
        return _forks_of(db, run_id)


def run_tagged(path: str, token: str) -> str | None:
    """The top-level run whose metadata holds ``token`` (a fork started from the app
    tags its run so), read now; None while there is none."""
    with TraceDB(path) as db:
        return tagged_run(db, token)


@st.cache_data(show_spinner=False, max_entries=64)
def _load_forks(path: str, stamp: Any, run_ids: tuple[str, ...],
                since: float | None) -> tuple[list[RunSummary], dict[str, Fork]]:
    with TraceDB(path) as db:
        forks = forks_among(db, list(run_ids), since)
        missing = [f for f in forks if f not in run_ids]
        return (db.runs(ids=missing) if missing else []), forks


def forks_below(path: str, runs: list[RunSummary]) -> tuple[list[RunSummary], dict[str, Fork]]:
    """The forks and reruns of ``runs`` (``tracer.read.fork_links``), by run id, and those of
    them not among ``runs``: what the Runs page nests under the run they fork."""
    starts = [r.started_at for r in runs if r.started_at is not None]
    return _load_forks(path, db_stamp(path), tuple(r.id for r in runs),
                       min(starts) if starts else None)
