"""Where the app's data comes from: the database path, cached loads, and the read
side's names.

This is the one module of ``app/`` that imports ``tracer``
(``tests/app/test_app_seam.py`` holds it): the other modules take what they need
from here, ``from .data import Replay`` or ``data.runs_page(...)``. Runs reach
the panes through ``tracer.read.loader.TraceDB`` and ``tracer.read.steps.build_replay``.
Loads are cached per (database path, run id, database stamp): the stamp changes
whenever the file (or its WAL) is written, so a run still being recorded is
reloaded and a finished one never is.

The read side's names are imported here, once, with the rest, except the two modules
that import LangChain's provider adapters (``tracer.wire.render``, ``tracer.wire.view``:
about 2 s): their names (``EXPORTS``: name -> module) are imported when first used
(PEP 562), so the Runs page never waits for them. ``preload()`` imports them
(``app/serve.py`` calls it before the server listens).
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import streamlit as st

from tracer.checks.run import Finding, check_replay, check_run, findings_for
from tracer.checks.saved import health_badge, stored_health
from tracer.db.notes import Note
from tracer.db.notes import add_note as _add_note
from tracer.db.url import for_child, is_url, safe
from tracer.errors import LooptraceError, NotALooptraceDatabase, RunNotFound
from tracer.interop.exchange import build_sample_db, sample_db_path, sample_files
from tracer.read.calls import tokens_by_lap
from tracer.read.captions import captions
from tracer.read.cost import Cost, RunCost, cost_difference, money, prices_stamp, run_costs
from tracer.read.diff import Divergence, RunDiff, diff_replays, message_text
from tracer.read.floorplan import (
    ACTIVE,
    NOW,
    STATE_LABEL,
    UNSEEN,
    Cell,
    Row,
    floor_plan,
    run_stack,
)
from tracer.read.fork_links import (
    AGENT_ENV,
    Fork,
    demo_agent,
    fork_argv,
    forks_among,
    origin_of,
)
from tracer.read.fork_links import forks_of as _forks_of
from tracer.read.graph_layout import drawing, shape
from tracer.read.loader import Run, RunSummary, TraceDB, content_text
from tracer.read.palette import KIND_COLOURS, colour_map
from tracer.read.run_list import HEALTH_CLASSES, RunFilter
from tracer.read.state_at import key_label
from tracer.read.steps import Replay, build_replay, plural
from tracer.read.threads import Thread, ThreadSummary, Turn, list_threads, load_thread
from tracer.read.tool_life import signature_note, tool_life
from tracer.read.usage_why import usage_why as _usage_why
from tracer.replayer import KIND_LETTER, STEP_MS, kinds, replay_json, script, style
from tracer.vocab.payloads import LayerPayload, ToolExitPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS
from tracer.wire.annotate import annotated_text, earlier_turns
from tracer.wire.providers import PROVIDERS

from ..kit.safe import md_escape


def breakpoint_help() -> str:
    """The breakpoint field's help: every form, and SPEC if EXPR (the debugger is
    imported on first use: ``import app.data`` imports no LangChain)."""
    from tracer.debug.breakpoints import CONDITION_HELP, FORMS

    return ("A breakpoint for this run: " + "; ".join(
        f"{form}: {what}" for form, what in FORMS.values()) + ". " + CONDITION_HELP)

if TYPE_CHECKING:  # (imported on first use: ``EXPORTS``; listed here for the type checker)
    from tracer.wire.render import call_at, model_call_events
    from tracer.wire.view import (
        CAPTURED,
        LANGCHAIN,
        RECORDED,
        RENDERED,
        ProviderBody,
        TurnView,
        aspect_rows,
        body_diff,
        turn_label,
        turn_view,
    )


# The read side's names the panes use, then this module's own loads.
__all__ = [
    "ACTIVE",
    "AGENT_ENV",
    "CAPTURED",
    "HEALTH_CLASSES",
    "KIND_COLOURS",
    "KIND_LETTER",
    "LANGCHAIN",
    "MODEL_HOOKS",
    "NOW",
    "PROVIDERS",
    "RECORDED",
    "RENDERED",
    "STATE_LABEL",
    "STEP_MS",
    "TOOL_HOOKS",
    "UNSEEN",
    "Cell",
    "Cost",
    "Divergence",
    "Finding",
    "Fork",
    "LayerPayload",
    "LooptraceError",
    "NotALooptraceDatabase",
    "Note",
    "ProviderBody",
    "Replay",
    "Row",
    "Run",
    "RunCost",
    "RunDiff",
    "RunFilter",
    "RunNotFound",
    "RunSummary",
    "Thread",
    "ThreadSummary",
    "ToolExitPayload",
    "TraceDB",
    "Turn",
    "TurnView",
    "annotated_text",
    "armed_for",
    "aspect_rows",
    "body_diff",
    "breakpoint_help",
    "build_replay",
    "call_at",
    "captions",
    "check_replay",
    "check_run",
    "child_env",
    "colour_map",
    "content_text",
    "cost_difference",
    "costs",
    "db_path",
    "db_stamp",
    "debug_answer",
    "debug_arm",
    "debug_clear",
    "debug_validate",
    "demo_agent",
    "diff_replays",
    "drawing",
    "earlier_turns",
    "find_run",
    "floor_plan",
    "fork_argv",
    "forks_below",
    "forks_of",
    "health",
    "health_badge",
    "key_label",
    "kinds",
    "load_runs",
    "message_text",
    "model_call_events",
    "money",
    "newest_top_level",
    "note_tags",
    "notes",
    "open_db",
    "origin_of",
    "paused_runs",
    "paused_status",
    "plural",
    "preload",
    "raised_lines",
    "read_payload",
    "recent_runs",
    "replay_json",
    "run_stack",
    "run_tagged",
    "runs",
    "runs_page",
    "sample_db_path",
    "script",
    "shape",
    "show_error",
    "shown_db",
    "signature_note",
    "style",
    "thread",
    "threads",
    "tokens_by_lap",
    "tool_life",
    "turn_label",
    "turn_view",
    "usage_why",
    "wire_rows",
    "write_note",
]

EXPORTS: dict[str, str] = {
    **dict.fromkeys(("call_at", "model_call_events"), "tracer.wire.render"),
    **dict.fromkeys(("CAPTURED", "LANGCHAIN", "RECORDED", "RENDERED", "ProviderBody",
                     "TurnView", "aspect_rows", "body_diff", "turn_label", "turn_view"),
                    "tracer.wire.view"),
}


def __getattr__(name: str) -> Any:
    """A name of ``EXPORTS``, imported from its module on first use and kept here."""
    module = EXPORTS.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def preload() -> None:
    """Import the modules of ``EXPORTS`` (the provider adapters): what a first visit
    to the Wire page would otherwise wait for."""
    for module in dict.fromkeys(EXPORTS.values()):
        importlib.import_module(module)


ENV_VAR = "LOOPTRACE_DB"


@st.cache_resource(show_spinner=False)
def _built_sample_db(newest: float) -> str:
    return str(build_sample_db(sample_db_path()))


def db_path() -> str:
    """The database the app shows: ``$LOOPTRACE_DB``, else the bundled samples.

    Raises ``LooptraceError`` with a one-line message when there is nothing to show.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return env
    files = sample_files()
    if not files:
        msg = "no database given (set LOOPTRACE_DB or run `looptrace ui --db PATH`) " \
              "and no bundled sample traces found"
        raise NotALooptraceDatabase(msg)
    return _built_sample_db(max(f.stat().st_mtime for f in files))


def child_env(path: str) -> dict[str, str]:
    """The environment a child given ``--db`` (``fork_argv``'s) needs: the URL's
    password, kept off its command line."""
    return for_child(path)[1]


def shown_db(path: str) -> str:
    """The database as the app shows it: a URL without its password."""
    return safe(path)


def db_stamp(path: str) -> tuple[float, int, float]:
    """Changes whenever the database (or its write-ahead log) changes; a PostgreSQL
    store's: the server's write-ahead log insert position (any write moves it at once,
    with ``synchronous_commit=off`` too; a replica: the position it replayed)."""
    if is_url(path):
        return _store_stamp(path)
    p = Path(path)
    try:
        st_main = p.stat()
    except OSError:
        return (0.0, 0, 0.0)
    try:
        wal = Path(path + "-wal").stat()
        wal_key = (wal.st_mtime, wal.st_size)
    except OSError:
        wal_key = (0.0, 0)
    return (st_main.st_mtime + wal_key[0], st_main.st_size + wal_key[1], wal_key[0])


def _store_stamp(url: str) -> tuple[float, int, float]:
    from tracer.db.schema import connect

    try:
        conn = connect(url, readonly=True)
    except LooptraceError:
        return (0.0, 0, 0.0)
    try:
        # (not the runs' count and last activity: at 100,000 runs those scanned the
        # table, 60-70 ms each, a dozen times per page: 2.7 s of the Runs page's paint)
        (lsn,) = conn.execute(
            "SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()"
            " ELSE pg_current_wal_insert_lsn() END - '0/0'::pg_lsn").fetchone()
        return (float(lsn or 0.0), 0, 0.0)
    finally:
        conn.close()


@st.cache_data(show_spinner=False, max_entries=64)
def load_runs(path: str, stamp: Any, search: str | None = None) -> list[RunSummary]:
    with TraceDB(path) as db:
        return db.runs(search=search or None)


def runs(path: str, search: str | None = None) -> list[RunSummary]:
    """Every run (or every run with ``search`` in its messages): for small files and
    tests; the pages list ``runs_page`` or ``recent_runs``."""
    return load_runs(path, db_stamp(path), search)


@st.cache_data(show_spinner=False, max_entries=64)
def _load_page(path: str, stamp: Any, f: RunFilter, limit: int,
               offset: int) -> tuple[list[RunSummary], list[RunSummary], int]:
    with TraceDB(path) as db:
        page = db.runs(f, limit=limit, offset=offset)
        # (a search counts no further than the next page: the runs list says "more than")
        total = db.count_runs(f, at_most=offset + limit + 1 if f.search else None)
        below = db.subagent_runs([r.id for r in page]) if f.top_level else []
    return page, below, total


def runs_page(path: str, f: RunFilter, limit: int,
              offset: int) -> tuple[list[RunSummary], list[RunSummary], int]:
    """One page of the runs ``f`` selects (newest first), the subagent runs below them
    (with ``f.top_level``), and how many runs ``f`` selects in all: with ``f.search``,
    counted no further than ``offset + limit + 1`` (that many: "more than")."""
    return _load_page(path, db_stamp(path), f, limit, offset)


def recent_runs(path: str, limit: int = 200) -> list[RunSummary]:
    """The newest ``limit`` runs (for a run picker: not every run of a large file)."""
    return _load_page(path, db_stamp(path), RunFilter(), limit, 0)[0]


@st.cache_data(show_spinner=False, max_entries=256)
def _find_run(path: str, stamp: Any, prefix: str) -> RunSummary:
    with TraceDB(path) as db:
        return db.summary(db.resolve(prefix))


def find_run(path: str, prefix: str) -> RunSummary:
    """The run ``prefix`` names (its id, or a unique prefix of one); ``RunNotFound``
    for none (or for an ambiguous prefix)."""
    return _find_run(path, db_stamp(path), prefix)


@st.cache_data(show_spinner=False, max_entries=32)
def _wire_rows(path: str, run_id: str, stamp: Any) -> list[dict[str, Any]]:
    with TraceDB(path) as db:
        return db.wire(run_id)


def wire_rows(path: str, run_id: str) -> list[dict[str, Any]]:
    """The HTTP exchanges captured for ``run_id`` (``TraceDB.wire``), cached."""
    return _wire_rows(path, run_id, db_stamp(path))


def usage_why(path: str, run_id: str) -> str | None:
    """Why ``run_id``'s model calls reported no token usage, when its captured requests
    say (``tracer.read.usage_why``, as ``looptrace show`` says it); None: not known."""
    return _usage_why(wire_rows(path, run_id))


def forks_of(path: str, run_id: str) -> list[Fork]:
    """The forks and replays of ``run_id`` (``tracer.read.fork_links.forks_of``), read now."""
    with TraceDB(path) as db:
        return _forks_of(db, run_id)


def run_tagged(path: str, token: str) -> str | None:
    """The top-level run whose metadata holds ``token`` (a fork started from the app
    tags its run so), read now; None while there is none."""
    with TraceDB(path) as db:
        rows = db.query("SELECT id FROM runs WHERE parent_id IS NULL AND metadata LIKE ?",
                        [f"%{token}%"])
    return str(rows[0][0]) if rows else None


@st.cache_data(show_spinner=False, max_entries=64)
def _load_forks(path: str, stamp: Any, run_ids: tuple[str, ...],
                since: float | None) -> tuple[list[RunSummary], dict[str, Fork]]:
    with TraceDB(path) as db:
        forks = forks_among(db, list(run_ids), since)
        missing = [f for f in forks if f not in run_ids]
        return (db.runs(ids=missing) if missing else []), forks


def forks_below(path: str, runs: list[RunSummary]) -> tuple[list[RunSummary], dict[str, Fork]]:
    """The forks and replays of ``runs`` (``tracer.read.fork_links``), by run id, and those of
    them not among ``runs``: what the Runs page nests under the run they fork."""
    starts = [r.started_at for r in runs if r.started_at is not None]
    return _load_forks(path, db_stamp(path), tuple(r.id for r in runs),
                       min(starts) if starts else None)


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
    return _add_note(path, run_id, text, step=step, tags=tags)


def newest_top_level(path: str) -> RunSummary | None:
    page = _load_page(path, db_stamp(path), RunFilter(top_level=True), 1, 0)[0]
    return page[0] if page else None


@st.cache_data(show_spinner=False, max_entries=64)
def _health(path: str, stamp: Any, run_ids: tuple[str, ...]) -> dict[str, str]:
    with TraceDB(path) as db:
        out = stored_health(db, run_ids)
        rest = [r for r in run_ids if r not in out]
        if rest:  # found now (and kept, for the runs that have ended)
            for rid, found in findings_for(db, rest).items():
                out[rid] = health_badge(found)  # (the one health function)
    return out


def health(path: str, run_ids: list[str]) -> dict[str, str]:
    """The health badge of each of ``run_ids``: kept by an earlier check, or found now
    (``tracer.checks.saved``); "check failed" for a run the checks cannot read."""
    try:
        return _health(path, db_stamp(path), tuple(run_ids))
    except Exception:  # noqa: BLE001 - a broken checker must not break the runs list
        return {r: "check failed" for r in run_ids}


@st.cache_data(show_spinner=False, max_entries=64)
def _costs(path: str, stamp: Any, run_ids: tuple[str, ...],
           prices: Any) -> dict[str, RunCost]:
    with TraceDB(path) as db:
        return run_costs(db, run_ids)


def costs(path: str, run_ids: list[str]) -> tuple[dict[str, RunCost], str | None]:
    """The cost of each of ``run_ids``, with its subagent runs (``tracer.read.cost``),
    cached until the file or the prices file changes; and what went wrong, if the costs
    cannot be had (a prices file that does not fit: the runs list shows no cost)."""
    try:
        return _costs(path, db_stamp(path), tuple(run_ids), prices_stamp()), None
    except LooptraceError as exc:
        return {}, str(exc)


# -- conversations (tracer.read.threads) --------------------------------------------------
@st.cache_data(show_spinner=False, max_entries=16)
def _threads(path: str, stamp: Any, prices: Any, limit: int) -> list[ThreadSummary]:
    with TraceDB(path) as db:
        return list_threads(db, limit=limit)


def threads(path: str, limit: int = 500) -> list[ThreadSummary]:
    """The threads of the file (``tracer.read.threads.list_threads``), the one active last
    first, at most ``limit``; cached until the file or the prices file changes."""
    return _threads(path, db_stamp(path), prices_stamp(), limit)


@st.cache_data(show_spinner=False, max_entries=32)
def _thread(path: str, stamp: Any, prices: Any, thread_id: str) -> Thread:
    with TraceDB(path) as db:
        return load_thread(db, thread_id)


def thread(path: str, thread_id: str) -> Thread:
    """One thread's turns (``tracer.read.threads.load_thread``), cached the same way."""
    return _thread(path, db_stamp(path), prices_stamp(), thread_id)


@st.cache_data(show_spinner=False, max_entries=16)
def _validate(path: str, stamp: Any) -> None:
    TraceDB(path).close()


def show_error(exc: BaseException) -> NoReturn:
    """A one-line message for a LooptraceError (never a traceback), then stop."""
    text = str(exc) if isinstance(exc, LooptraceError) else f"{type(exc).__name__}: {exc}"
    st.error(md_escape(text), icon=":material/error:")
    st.stop()


def open_db() -> str:
    """The database path, validated: shows ``st.error`` and stops the page if unusable."""
    try:
        path = db_path()
        _validate(path, db_stamp(path))
    except LooptraceError as exc:
        show_error(exc)
    return path


# -- the debugger (tracer.debug.channel): read-only until a control is used -------------
def paused_runs(path: str) -> list[dict[str, Any]]:
    """The runs paused in the debugger now (``tracer.debug.channel.list_paused``, with
    what each waits on), read now; none for a file the channel cannot read."""
    import sqlite3

    from tracer.debug.channel import list_paused

    try:
        return list_paused(path, with_pending=True)
    except (LooptraceError, sqlite3.Error, OSError, ValueError):
        return []


def paused_status(path: str) -> dict[str, str]:
    """{run id: "paused" or "paused at an error"} for the runs paused in the debugger now
    (``tracer.debug.channel.paused_status``: shown instead of the status recorded, which
    reads ``running``, or ``error`` while paused at an error); none for a file the
    channel cannot read."""
    import sqlite3

    from tracer.debug.channel import paused_status as status

    try:
        return status(path)
    except (LooptraceError, sqlite3.Error, OSError, ValueError):
        return {}


def shown_statuses(path: str, runs: list[RunSummary]) -> dict[str, str]:
    """{run id: the status to show}: "paused" (or "paused at an error") for a run paused
    in the debugger now, else the status recorded. The header, the run pickers and the
    replayer all read it, so they agree (issue 44: the picker said "running" beside a
    "paused" header)."""
    paused = paused_status(path) if any(r.status in ("running", "error") for r in runs) else {}
    return {r.id: paused.get(r.id, r.status) if r.status in ("running", "error") else r.status
            for r in runs}


def armed_for(path: str, run_id: str) -> list[str]:
    """The breakpoints armed from outside for ``run_id`` (its specs), read-only."""
    import sqlite3

    from tracer.db.schema import connect
    from tracer.debug.channel import armed_breaks

    try:
        conn = connect(path, readonly=True)
    except (LooptraceError, sqlite3.Error, OSError):
        return []
    try:
        return [b[1] for b in armed_breaks(conn) if b[2] == run_id]
    except sqlite3.Error:  # (a file older than schema 6)
        return []
    finally:
        conn.close()


def raised_lines(pending: dict[str, Any]) -> list[str]:
    """An error pause's exception: ``Type: message`` and the frames of the user's code
    (``tracer.debug.raised.raised_lines``)."""
    from tracer.debug.raised import raised_lines as lines

    return lines(pending)


def debug_answer(path: str, run_id: str, command: str,
                 edit: dict[str, Any] | None = None, pause: int | None = None) -> dict[str, Any]:
    """Answer pause ``pause`` of run ``run_id`` (``tracer.debug.channel.answer``: the
    edit is validated first; a bad one raises ``InvalidOption`` and nothing is written;
    a pause that is over raises ``NotPaused``)."""
    from tracer.debug.channel import answer

    return answer(path, run_id, command, edit, pause=pause)


def debug_rewind(path: str, run_id: str, step: int, edits: Any = None,
                 pause: int | None = None) -> dict[str, Any]:
    """Answer pause ``pause`` of ``run_id`` with a rewind to ``step`` with ``edits``
    (``tracer.debug.channel.rewind``), checked against the record first
    (``tracer.whatif.rewind.check``): one line (a ``LooptraceError``) for one that
    cannot be, and nothing is written."""
    from tracer.debug.channel import pending, rewind, rewind_edits
    from tracer.whatif.rewind import check

    made = [e.to_json() for e in rewind_edits(edits)]
    said = (pending(path, run_id, pause).get("pending") or {}).get("rewind") or {}
    if said.get("can"):
        check(path, run_id, step, made)
    return rewind(path, run_id, step, made, pause=pause)


def debug_arm(path: str, spec: str, run_id: str) -> int:
    """Arm ``spec`` for ``run_id`` (and its subagent runs) from the app."""
    from tracer.debug.channel import arm

    return arm(path, spec, run=run_id, source="app")


def debug_clear(path: str, run_id: str) -> int:
    """Clear the breakpoints armed for ``run_id``."""
    from tracer.debug.channel import clear

    return clear(path, run=run_id)


def debug_validate(edit: dict[str, Any], pending: dict[str, Any]) -> dict[str, Any]:
    """``edit`` checked against what is ``pending`` (``tracer.vocab.edits.Edit``):
    ``BadEdit`` (an ``InvalidOption``) with one line when it is not a valid edit of it."""
    from tracer.vocab.edits import Edit

    return Edit.of(edit).check(pending).to_json()


# -- the playground (app/panes/playground_pane.py; tracer.wire.playground imports LangChain:
# imported on first use) -----------------------------------------------------------------
def agent_of(run: RunSummary) -> str | None:
    """The agent factory whose model the playground can ask for a run: the one
    ``looptrace ui --agent`` named, or the demo's own for a demo or sample run."""
    return os.environ.get(AGENT_ENV) or demo_agent(run.name, run.model)


@st.cache_data(show_spinner=False, max_entries=64)
def _playground_call(path: str, stamp: Any, run_id: str, step: int) -> dict[str, Any]:
    from tracer.wire.playground import pending_at

    return pending_at(path, run_id, step)


def playground_call(path: str, run_id: str, step: int) -> dict[str, Any]:
    """The model call at or after ``step`` (from 1) of ``run_id`` as the playground edits
    it: ``{"run", "step", "model_call", "pending"}`` (``tracer.wire.playground.pending_at``)."""
    return _playground_call(path, db_stamp(path), run_id, step)


def playground(path: str, run_id: str, step: int, edit: dict[str, Any] | None, model: str,
               agent: str | None) -> dict[str, Any]:
    """That call re-sent, edited, to ``model`` (``offline``, ``recorded``, ``agent`` or an
    ``init_chat_model`` name): ``PlayResult.to_dict()``. Nothing is written."""
    from tracer.wire.playground import playground as play

    return play(path, run_id, step, edit=edit, model=model, agent=agent).to_dict()
