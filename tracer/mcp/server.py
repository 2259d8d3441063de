"""``looptrace mcp``: a Model Context Protocol server over a looptrace database, so a
coding agent (Claude Code, Cursor ...) can ask "did my last run loop, where, and which
tool call was left without a result?" of the SQLite file itself.

Built with the official ``mcp`` SDK (``MCPServer``); stdio by default, streamable HTTP
on 127.0.0.1 with ``--http``. Every tool reads the file read-only (``TraceDB``) through
the same API as the command line (``TraceDB.runs`` and ``RunFilter``, ``tracer.interop.show``,
``check``'s findings, ``diff_tree``, ``TraceDB.wire``); ``export_html`` writes an HTML
file, never the database, and says so. ``add_note`` writes one row, a person's (or the
agent's) note on a run or a step (``tracer.db.notes.add_note``: checked first, one row
or nothing), and changes nothing else; the what-if tools (``tracer.mcp.whatif_tools``:
``rerun``, ``fork_run``) are the only ones that write a run to the database, through
a ``looptrace rerun`` child process. Every other tool only reads it.
Answers are sized for a model's context: lists are paged (``offset``/``limit`` in,
``next_offset`` out), long contents cut (with the call that gives the rest), and each
answer carries the ids the next call takes. A bad run id, a step out of range, a file
that is not a looptrace database or is locked: an error result naming the problem.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from tracer.db.notes import check_tags
from tracer.db.tables import RUN_STATUSES
from tracer.errors import LooptraceError
from tracer.read.cost import RunCost, run_costs
from tracer.read.loader import RunSummary, TraceDB
from tracer.read.run_list import HEALTH_CLASSES, RunFilter, parse_when
from tracer.vocab.hooks import HOOK_BY_NAME
from tracer.vocab.words import plural

__all__ = ["INSTRUCTIONS", "TOOLS", "build_server"]

INSTRUCTIONS = """\
looptrace records LLM agent loops (LangChain create_agent, LangGraph, Deep Agents, SDK loops
seen through its proxy) to a SQLite file. A run is one invocation of an agent: laps of
"call the model, run the tool calls it asked for, append one ToolMessage per call matched by
tool_call_id, go round again". Every step of a run is an event: a hook firing
(before_agent, before_model, wrap_model_call, after_model, wrap_tool_call, after_agent), a
model or tool call entering or exiting, a change to the conversation. Steps are counted
from 1. Start with list_runs (or search_runs), then run_summary for a run's findings (a
dangling tool call: a call with no result before the next model call; an orphan result;
a runaway loop; repeated calls ...), each with the step to open with get_step and
get_messages. People's notes on a run or a step (run_summary, get_step; add_note writes
one) say what they saw there. Runs sharing a thread_id are the turns of one conversation:
list_threads, then get_thread for its turns (a human-in-the-loop thread's interrupts and
decisions). A number outside its tool's bounds (an offset, a limit, a cut) is brought
within them, and the answer says so under "clamped"."""

T = TypeVar("T")
PAGE = 20  # default page size
CUT = 1500  # default characters of one message content
# The bounds of the arguments (a value outside is brought inside them, and the answer
# says so: "clamped": {"cut": {"asked": -5, "used": 200}}), so that no answer outgrows a
# model's context: a list page, one message's content (get_messages' cut), the contents
# and tool call arguments of one page of messages, a body of get_wire, a part of
# get_message_text or diff_runs, an offset.
PAGE_MAX = 200
THREAD_CUT = 600  # characters of a turn's question or answer in get_thread
CUT_MIN, CUT_MAX = 200, 20_000
MESSAGES_CHARS = 100_000
WIRE_CUT_MAX = 50_000
TEXT_MIN, TEXT_MAX = 100, 50_000
DIFF_MIN, DIFF_MAX = 500, 50_000
OFFSET_MAX = 1_000_000_000


class _Err(Exception):
    """Turned into an MCP error result with this text."""


def _tool_errors(fn: Callable[..., T]) -> Callable[..., T]:
    """A domain error (no such run, step out of range, not our file, locked ...) becomes
    the tool's error result, with its one-line message."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        from mcp.server.mcpserver.exceptions import ToolError

        _int_args(kwargs)
        try:
            return fn(*args, **kwargs)
        except (LooptraceError, ValueError, OSError) as exc:
            raise ToolError(str(exc) or type(exc).__name__) from None
    return wrapper


INT64 = (-(2**63), 2**63 - 1)  # what SQLite binds


def _int_args(kwargs: dict[str, Any]) -> None:
    """Refuse an integer argument SQLite (or the OS) could not take, by its name: an
    offset of 2**63 was "Error executing tool" and nothing more."""
    from mcp.server.mcpserver.exceptions import ToolError

    for name, value in kwargs.items():
        if isinstance(value, int) and not isinstance(value, bool) and not (
                INT64[0] <= value <= INT64[1]):
            digits = len(str(abs(value)))
            shown = str(value) if digits <= 24 else f"an integer of {digits} digits"
            msg = f"{name}={shown}: out of range (an integer from -2**63 to 2**63-1)"
            raise ToolError(msg)


TOKEN_FIELDS = ("input_tokens", "output_tokens", "total_tokens")  # None: not reported


def _compact(s: RunSummary, cost: RunCost | None = None,
             models: list[str] | None = None) -> dict[str, Any]:
    return {"id": s.id, "name": s.name, "status": s.status, "started_at": s.started_at,
            "duration_s": round(s.duration_s, 3) if s.duration_s is not None else None,
            "laps": s.laps, "model_calls": s.model_calls, "tool_calls": s.tool_calls,
            "errors": s.errors, "total_tokens": s.total_tokens, "model": s.model,
            **({"models": models} if models is not None else {}),
            "parent_id": s.parent_id, "source": s.source,
            # (with the subagent runs; null when not every model call is priced)
            **({"cost_usd": cost.total.usd, "cost": cost.total.text()} if cost else {}),
            **({"error": s.error[:300]} if s.error else {})}


def _bounded(clamped: dict[str, Any], name: str, value: int, lo: int, hi: int) -> int:
    """``value`` brought within ``lo``..``hi``; noted in ``clamped`` when it was not."""
    used = min(max(value, lo), hi)
    if used != value:
        clamped[name] = {"asked": value, "used": used}
    return used


def _with_clamped(answer: dict[str, Any], clamped: dict[str, Any]) -> dict[str, Any]:
    if clamped:
        answer["clamped"] = clamped
    return answer


def _page(items: list[Any], offset: int, limit: int, clamped: dict[str, Any],
          names: tuple[str, str] = ("offset", "limit")) -> tuple[list[Any], int | None]:
    offset = _bounded(clamped, names[0], offset, 0, OFFSET_MAX)
    limit = _bounded(clamped, names[1], limit, 1, PAGE_MAX)
    part = items[offset: offset + limit]
    nxt = offset + limit
    return part, (nxt if nxt < len(items) else None)


class Tools:
    """The server's tools as plain functions over one database path (each call opens
    the file read-only, so a database being written meanwhile is read as it is now)."""

    def __init__(self, db: str | os.PathLike[str], export_dir: str | None = None) -> None:
        self.db = os.fspath(db)
        self.export_dir = export_dir

    def _open(self) -> TraceDB:
        _not_locked(self.db)
        return TraceDB(self.db)

    # -- runs ---------------------------------------------------------------------------
    def list_runs(self, status: list[str] | None = None, name: str | None = None,
                  since: str | None = None, until: str | None = None,
                  health: list[str] | None = None, parent: str | None = None,
                  top_level: bool = False, search: str | None = None,
                  tags: list[str] | None = None, thread: str | None = None,
                  offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
        for s in status or ():
            if s not in RUN_STATUSES:
                raise _bad(f"unknown status {s!r} (one of {', '.join(RUN_STATUSES)})")
        for h in health or ():
            if h not in HEALTH_CLASSES:
                raise _bad(f"unknown health {h!r} (one of {', '.join(HEALTH_CLASSES)})")
        clamped: dict[str, Any] = {}
        offset = _bounded(clamped, "offset", offset, 0, OFFSET_MAX)
        limit = _bounded(clamped, "limit", limit, 1, PAGE_MAX)
        with self._open() as db:
            f = RunFilter(status=tuple(status or ()), name=name or None,
                          health=tuple(health or ()),
                          since=parse_when(since) if since else None,
                          until=parse_when(until) if until else None,
                          parent_id=db.resolve(parent) if parent else None,
                          top_level=top_level, search=search or None,
                          tags=check_tags(tags), thread=thread)
            wanted = [h for h in f.health if h != "unchecked"]
            if not wanted:
                runs = db.runs(f, limit=limit, offset=offset)
                total = db.count_runs(f)
                more: dict[str, Any] = {}
            else:
                runs, total, more = _with_health_computed(db, f, wanted, offset, limit)
            costs = run_costs(db, [r.id for r in runs])
            models = db.models([r.id for r in runs])
        nxt = offset + limit
        return _with_clamped({"total": total, "offset": offset,
                              "runs": [_compact(r, costs.get(r.id), models.get(r.id))
                                       for r in runs],
                              "next_offset": nxt if nxt < total else None, **more}, clamped)

    # -- threads (conversations) ----------------------------------------------------------
    def list_threads(self, offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
        from tracer.read.threads import count_threads, list_threads

        clamped: dict[str, Any] = {}
        offset = _bounded(clamped, "offset", offset, 0, OFFSET_MAX)
        limit = _bounded(clamped, "limit", limit, 1, PAGE_MAX)
        with self._open() as db:
            total = count_threads(db)
            rows = list_threads(db, limit=limit, offset=offset)
        nxt = offset + limit
        return _with_clamped({"total": total, "offset": offset,
                              "threads": [t.to_dict() for t in rows],
                              "next_offset": nxt if nxt < total else None}, clamped)

    def get_thread(self, thread: str, offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
        from tracer.read.threads import load_thread

        with self._open() as db:
            d = load_thread(db, thread).to_dict()
        clamped: dict[str, Any] = {}
        turns, nxt = _page(d["turns"], offset, limit, clamped)
        for t in turns:  # (what the turn added: its messages' kinds; the texts cut)
            t["added"] = [m["type"] for m in t["added"]]
            t["asked"] = [q[:THREAD_CUT] for q in t["asked"]]
            if t["answer"] is not None:
                t["answer"] = t["answer"][:THREAD_CUT]
        d["turns_total"] = len(d["turns"])
        d["turns"] = turns
        d["turns_next_offset"] = nxt
        return _with_clamped(d, clamped)

    def run_summary(self, run: str, findings_offset: int = 0,
                    findings_limit: int = PAGE) -> dict[str, Any]:
        from tracer.interop.show import overview

        with self._open() as db:
            d = overview(db, run)
        clamped: dict[str, Any] = {}
        part, nxt = _page(d["findings"], findings_offset, findings_limit, clamped,
                          ("findings_offset", "findings_limit"))
        for f in part:
            f["message"] = f["message"][:600]
        d["findings_total"] = len(d["findings"])
        d["findings"] = part
        d["findings_next_offset"] = nxt
        # (tokens no call reported are said, as null: not left out, not 0)
        d["run"] = {**_compact_dict(d["run"]),
                    **{k: d["run"].get(k) for k in TOKEN_FIELDS}}
        d["notes_total"] = len(d["notes"])
        d["notes"] = [_cut_note(n) for n in d["notes"][:NOTES_SHOWN]]
        d["cost_usd"] = d["cost"]["usd"]
        calls = d["cost"]["model_calls"]
        if len(calls) > PAGE:  # (each call's cost: the first PAGE of them)
            d["cost"]["model_calls"] = calls[:PAGE]
            d["cost"]["model_calls_total"] = len(calls)
        return _with_clamped(d, clamped)

    def add_note(self, run: str, text: str, step: int | None = None,
                 tags: list[str] | None = None, author: str | None = None) -> dict[str, Any]:
        from tracer.db.notes import add_note

        with self._open() as db:
            rid = db.resolve(run)
        note = add_note(self.db, rid, text, step=step, tags=tags or (), author=author)
        return {"run_id": rid, "note": note.to_dict(),
                "next": f"run_summary(run={rid[:12]!r}) lists the run's notes"}

    def list_steps(self, run: str, hook: str | None = None, tool_call_id: str | None = None,
                   offset: int = 0, limit: int = 50) -> dict[str, Any]:
        from tracer.interop.show import open_replay
        from tracer.read.captions import captions

        with self._open() as db:
            r, replay = open_replay(db, run)
        said = captions(replay)
        rows = [{"step": s.index + 1, "hook": s.event.hook, "phase": s.event.phase,
                 "middleware": s.event.middleware, "lap": s.event.lap,
                 "tool_call_id": s.event.tool_call_id, "caption": said[s.index]}
                for s in replay.steps
                if (hook is None or s.event.hook == hook)
                and (tool_call_id is None or s.event.tool_call_id == tool_call_id)]
        clamped: dict[str, Any] = {}
        part, nxt = _page(rows, offset, limit, clamped)
        # What each hook does is said once per hook in ``hooks``, not in every caption
        # (it was most of the answer's bytes); a caption keeps what this step did.
        hooks: dict[str, str] = {}
        for row in part:
            h = HOOK_BY_NAME.get(row["hook"])
            generic = f"{row['hook']} {h.purpose}" if h is not None else None
            if generic and row["caption"].startswith(generic):
                hooks[row["hook"]] = generic
                row["caption"] = row["caption"][len(generic):].strip() or "(see hooks)"
            row["caption"] = row["caption"][:200]
        return _with_clamped({"run_id": r.id, "steps_total": len(replay.steps),
                              "matching": len(rows), "hooks": hooks, "steps": part,
                              "next_offset": nxt}, clamped)

    def get_step(self, run: str, step: int) -> dict[str, Any]:
        from tracer.interop.show import step_view

        with self._open() as db:
            d = step_view(db, run, step, limit=0)
        d.pop("messages")
        d.pop("messages_offset")
        d["notes"] = [_cut_note(n) for n in d["notes"][:NOTES_SHOWN]]
        return d

    def get_messages(self, run: str, step: int, offset: int = 0, limit: int = PAGE,
                     cut: int = CUT) -> dict[str, Any]:
        from tracer.interop.show import step_view

        clamped: dict[str, Any] = {}
        offset = _bounded(clamped, "offset", offset, 0, OFFSET_MAX)
        limit = _bounded(clamped, "limit", limit, 1, PAGE_MAX)
        cut = _bounded(clamped, "cut", cut, CUT_MIN, CUT_MAX)
        with self._open() as db:
            d = step_view(db, run, step, cut=cut, offset=offset, limit=limit,
                          rest_hint=(f"get_message_text(run={run!r}, step={step}, "
                                     "index={index})"))
        # a page holds MESSAGES_CHARS characters of contents and arguments at most (and
        # always one message): the next page begins where this one stopped
        shown: list[dict[str, Any]] = []
        size = 0
        for m in d["messages"]:
            n = len(m["content"]) + sum(len(c["args"]) for c in m.get("tool_calls", ()))
            if not shown and n > MESSAGES_CHARS and m.get("tool_calls"):
                n = _cut_calls(m, MESSAGES_CHARS - len(m["content"]),
                               f"get_message_text(run={run!r}, step={step}, index={m['index']})")
            if shown and size + n > MESSAGES_CHARS:
                clamped["limit"] = {"asked": clamped.get("limit", {}).get("asked", limit),
                                    "used": len(shown),
                                    "why": f"a page holds {MESSAGES_CHARS} characters of "
                                           "contents and tool call arguments at most"}
                break
            shown.append(m)
            size += n
        nxt = offset + len(shown)
        return _with_clamped({
            "run_id": d["run_id"], "step": step, "messages_are": d["messages_are"],
            "pending_tool_calls": d["pending_tool_calls"],
            **({"request": d["request"]} if "request" in d else {}),
            "messages_total": d["messages_total"], "offset": offset, "messages": shown,
            "next_offset": nxt if nxt < d["messages_total"] else None}, clamped)

    def get_message_text(self, run: str, step: int, index: int, offset: int = 0,
                         limit: int = 8000) -> dict[str, Any]:
        from tracer.interop.show import message_text

        clamped: dict[str, Any] = {}
        offset = _bounded(clamped, "offset", offset, 0, OFFSET_MAX)
        limit = _bounded(clamped, "limit", limit, TEXT_MIN, TEXT_MAX)
        with self._open() as db:
            return _with_clamped(message_text(db, run, step, index, offset=offset,
                                              limit=limit), clamped)

    def get_wire(self, run: str, step: int, cut: int = 4000,
                 offset: int = 0) -> dict[str, Any]:
        from tracer.interop.show import open_replay

        clamped: dict[str, Any] = {}
        cut = _bounded(clamped, "cut", cut, CUT_MIN, WIRE_CUT_MAX)
        offset = _bounded(clamped, "offset", offset, 0, OFFSET_MAX)
        with self._open() as db:
            r, replay = open_replay(db, run)
            total = len(replay.steps)
            if not 1 <= step <= total:
                raise _bad(f"run {r.id[:12]} has steps 1 to {total}, not {step}")
            rows = db.wire(r.id)
        # the model call this step belongs to: its enter event at or before the step
        seq = replay.steps[step - 1].event.seq
        calls = [s.event.seq for s in replay.steps if s.event.hook in (
            "wrap_model_call", "model") and s.event.phase == "enter" and s.event.seq <= seq]
        call_seq = calls[-1] if calls else None
        mine = [w for w in rows if call_seq is not None and w.get("seq") == call_seq]
        out = []
        for w in mine:
            d = {k: w.get(k) for k in ("id", "provider", "method", "url", "status", "error",
                                       "duration_ms", "seq")}
            for k in ("request_body", "response_body"):
                text = w.get(k) or ""
                part = text[offset: offset + cut]
                d[k] = part
                if offset > 0 or len(text) > offset + cut:
                    end = offset + len(part)
                    d[k + "_cut"] = {
                        "offset": offset, "shown": len(part), "total": len(text),
                        "rest": (f"get_wire(run={run!r}, step={step}, offset={end}, "
                                 f"cut={cut})" if end < len(text) else None)}
            out.append(d)
        return _with_clamped({"run_id": r.id, "step": step, "model_call_step": (
            next(s.index + 1 for s in replay.steps if s.event.seq == call_seq)
            if call_seq is not None else None),
            "exchanges": out, "exchanges_in_run": len(rows),
            "note": None if out else (
                "no provider HTTP exchange was captured for this model call (record with "
                "`looptrace run --wire` or `looptrace proxy`)")}, clamped)

    def diff_runs(self, run_a: str, run_b: str, offset: int = 0,
                  limit: int = 6000) -> dict[str, Any]:
        from tracer.read.diff import diff_tree, format_text

        with self._open() as db:
            d = diff_tree(db, db.resolve(run_a), db, db.resolve(run_b))
        clamped: dict[str, Any] = {}
        offset = _bounded(clamped, "offset", offset, 0, OFFSET_MAX)
        limit = _bounded(clamped, "limit", limit, DIFF_MIN, DIFF_MAX)
        text = format_text(d)
        part = text[offset: offset + limit]
        end = offset + len(part)
        return _with_clamped({"identical": d.identical, "text": part,
                              "total_chars": len(text),
                              "next_offset": end if end < len(text) else None}, clamped)

    def export_html(self, run: str, path: str | None = None) -> dict[str, Any]:
        from tracer.interop.html_export import export_html

        with self._open() as db:
            rid = db.resolve(run)
        out = self._export_path(path or f"looptrace-{rid[:12]}.html")
        written = export_html(self.db, rid, out)  # (refuses the database and its -wal/-shm)
        return {"run_id": rid, "path": str(written.resolve()),
                "bytes": written.stat().st_size}


    def _export_path(self, path: str) -> Path:
        """Where ``export_html`` may write ``path``: an ``.html`` file in the export
        directory (a relative path is taken there), links resolved; anything else is
        refused."""
        base = Path(self.export_dir or tempfile.gettempdir()).resolve()
        out = (base / path).resolve()
        if not out.is_relative_to(base) or out == base:
            msg = (f"export_html writes in the export directory {base} only (looptrace mcp "
                   f"--export-dir), not {path!r}")
            raise _bad(msg)
        if Path(path).suffix.lower() not in (".html", ".htm"):
            msg = f"export_html writes .html files only, not {path!r}"
            raise _bad(msg)
        return out


HEALTH_COMPUTED_MAX = 200  # runs never checked whose health ``list_runs`` finds itself


def _with_health_computed(db: TraceDB, f: RunFilter, wanted: list[str], offset: int,
                          limit: int) -> tuple[list[RunSummary], int, dict[str, Any]]:
    """``list_runs`` with a health filter: the runs whose stored findings match, and the
    runs never checked (``looptrace check`` stores findings) whose findings, found now
    and not kept (the file is read-only here), match: the newest
    ``HEALTH_COMPUTED_MAX`` of them, the answer saying so when there were more."""
    from tracer.checks.base import health_class
    from tracer.checks.run import findings_for

    unchecked = replace(f, health=("unchecked",))
    n_unchecked = db.count_runs(unchecked)
    todo = [r for r in db.runs(unchecked, limit=HEALTH_COMPUTED_MAX) if r.status != "running"]
    found = findings_for(db, [r.id for r in todo], keep=False) if todo else {}
    computed = [r for r in todo if health_class(found.get(r.id, [])) in wanted]
    stored_total = db.count_runs(f)
    stored = db.runs(f, limit=offset + limit)
    merged = sorted([*stored, *computed], key=lambda r: (r.started_at or 0, r.id),
                    reverse=True)
    more: dict[str, Any] = {"health_found_now": len(todo)}
    if n_unchecked > HEALTH_COMPUTED_MAX:
        more["health_bounded"] = (
            f"{plural(n_unchecked, 'run')} {'was' if n_unchecked == 1 else 'were'} never checked;"
            f" the newest {HEALTH_COMPUTED_MAX} were "
            "checked now for this answer, the others are left out: `looptrace check` "
            "stores every run's findings")
    return merged[offset: offset + limit], stored_total + len(computed), more


def _cut_calls(m: dict[str, Any], room: int, rest: str) -> int:
    """The tool calls of message ``m`` (alone on its page, yet over it) that fit in
    ``room`` characters of arguments (one at least), and a note of how many there are
    and where they all are; the characters left shown."""
    calls: list[dict[str, Any]] = []
    for c in m["tool_calls"]:
        room -= len(c["args"])
        if calls and room < 0:
            break
        calls.append(c)
    if len(calls) < len(m["tool_calls"]):
        m["tool_calls_cut"] = {"shown": len(calls), "total": len(m["tool_calls"]),
                               "rest": rest}
        m["tool_calls"] = calls
    return len(m["content"]) + sum(len(c["args"]) for c in calls)


def _not_locked(path: str) -> None:
    """Fail at once, naming the problem, on a file another process holds locked (the
    reader would otherwise wait for it for half a minute)."""
    import sqlite3

    from tracer.errors import DatabaseUnavailable

    if not os.path.isfile(path):
        return  # (TraceDB says what is wrong with it)
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            msg = f"{path} is locked by another process ({exc}); try again when it is released"
            raise DatabaseUnavailable(msg) from None
    except sqlite3.DatabaseError:
        pass
    finally:
        conn.close()


NOTES_SHOWN = 50  # notes listed in run_summary and get_step (notes_total says how many)
NOTE_CUT = 2000  # characters of one note's text


def _cut_note(n: dict[str, Any]) -> dict[str, Any]:
    text = str(n.get("text") or "")
    if len(text) > NOTE_CUT:
        n = {**n, "text": text[:NOTE_CUT], "text_cut": {"shown": NOTE_CUT, "total": len(text)}}
    return n


def _compact_dict(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _bad(text: str) -> LooptraceError:
    return LooptraceError(text)


# name -> description, in the domain's words (what each is for, what it returns)
TOOLS: dict[str, str] = {
    "list_runs": (
        "List recorded agent runs, newest first, with the filters of `looptrace runs`: "
        "status (running, completed, error, interrupted, handoff, stopped), name (substring "
        "of the run or agent name), since/until (a date, a time or an age such as 7d or "
        "12h), health (error, warning, info, ok, unchecked: a stored `looptrace check`, and "
        "for runs never checked their findings found now, the newest 200 of them; "
        "health_bounded says when more were left out), parent (the "
        "subagent runs of a run), top_level, search (text in the messages or notes), tags "
        "(runs with a note tagged with any of these), thread (the runs recorded under "
        "that thread_id: a conversation's turns). Paged: "
        "offset/limit in, next_offset out. Each run: id (pass it, or a unique prefix, to "
        "the other tools), laps, model and tool calls, errors, tokens (total_tokens null: "
        "the provider reported no usage, not 0), models (those that answered, in order: "
        "a fallback's too), cost_usd (with its subagent runs; null when a model call has "
        "no known price, never 0 for unknown)."),
    "list_threads": (
        "List the conversations: the runs recorded under one thread_id (each top-level "
        "run a turn, its subagent runs with it), the one active last first. Each thread: "
        "thread_id, turns, first_at/last_at, statuses (status -> turns), tokens (null: "
        "not reported), cost_usd (null when a model call has no known price), interrupts "
        "and resumes (a human-in-the-loop thread). Paged: offset/limit in, next_offset "
        "out. Open one with get_thread, its runs with list_runs(thread=...)."),
    "get_thread": (
        "One conversation's turns in order: each turn's run id and status, what the person "
        "asked (the turn's new human messages), the final answer it added, the kinds of "
        "messages it added, its interrupts (what they asked a person to decide) and "
        "resumes (the decisions: approve, reject: why, edit ...; inferred: read from the "
        "tool calls that ran when the record holds no resume value), tokens and cost; "
        "the thread's totals; and repeats: a question asked again in a later turn (a "
        "check across turns, apart from each run's findings). Paged over turns."),
    "search_runs": (
        "Find runs whose messages (user text, model replies, tool results, tool call "
        "arguments) or notes contain a text (ASCII letters in either case; a text holding a "
        "NUL character is refused); paged like list_runs."),
    "run_summary": (
        "One run: status, laps, model and tool calls, tokens (null: not reported), its "
        "cost (cost_usd, with its subagent runs; per model and per model call), its "
        "subagent runs (Deep "
        "Agents' task calls), how it was recorded and what that could not see, and its "
        "findings, each with the step to open: protocol problems a provider rejects with "
        "a 400 (a dangling tool call: an AIMessage's tool call with no ToolMessage of the "
        "same tool_call_id before the next model call; an orphan result; results out of "
        "place) and loop problems (a runaway loop, the same tool call repeated, repeated "
        "tool errors, a swallowed tool error, no final answer, a token jump); and the "
        "notes people wrote on it (add_note), each at its step (null: on the whole run), "
        "and for a fork or rerun, the run it came from (source) and how many notes that "
        "run has."),
    "list_steps": (
        "The steps of a run, one line each (step number from 1, hook, phase, middleware, "
        "lap, tool_call_id, caption: what this step did), and `hooks`: what each hook on "
        "the page does, once; filter by hook (before_agent, before_model, "
        "wrap_model_call, after_model, wrap_tool_call, after_agent, model, tool, history "
        "...) or by tool_call_id to follow one tool call from the reply that asked for it "
        "to its result. Paged."),
    "get_step": (
        "One step of a run: the hook and phase (enter/exit of a model or tool call, a "
        "node hook firing, a change to the conversation), the middleware, the lap, the "
        "tool_call_id, the caption saying what happened, the tool calls still "
        "dangling (asked for, no result yet) at that point, and the notes on that step."),
    "get_messages": (
        "The messages at a step: at a model call, exactly what the model received (after "
        "every middleware rewrote the request), with `request`: its system prompt (as "
        "text; `system_blocks`: the content blocks it was sent as), tools "
        "(the schemas), model, tool_choice and settings; elsewhere the conversation as it "
        "stood. "
        "Each with its type, tool_calls (id, name, arguments) or tool_call_id pairing a "
        "ToolMessage to its call, and the version when a middleware replaced it. Long "
        "contents are cut at `cut` characters (200 to 20000), with the get_message_text "
        "call that gives the rest. Paged: limit 1 to 200 messages, and a page stops at "
        "100000 characters of contents and arguments (next_offset continues; a message "
        "over it alone shows the tool calls that fit, tool_calls_cut says how many)."),
    "get_message_text": (
        "The whole content of one message at a step (index as get_messages gives it), "
        "paged by characters: offset/limit (100 to 50000) in, next_offset out."),
    "get_wire": (
        "The provider HTTP exchange (request and response bodies, status, URL) of the "
        "model call a step belongs to, when it was captured (looptrace run --wire, "
        "looptrace proxy): what OpenAI, Anthropic or Ollama really got and answered. "
        "Each body from `offset`, `cut` characters (200 to 50000) of it, with the call "
        "that gives the rest."),
    "diff_runs": (
        "Compare two runs lap by lap and hook by hook: the first divergence (another "
        "tool, other arguments, another answer or result, an extra lap), every difference "
        "per lap and a diff of the messages. Paged by characters: offset/limit (500 to "
        "50000) in, next_offset out."),
    "export_html": (
        "Write a run (with its subagent runs) as one self-contained HTML replay file and "
        "return its path. path: an .html file in the server's export directory (`looptrace "
        "mcp --export-dir`, default the temporary directory; a relative path is taken "
        "there; default looptrace-<run>.html); a path outside it, or the database, is "
        "refused. Writes that file only; the database is never written."),
    "add_note": (
        "WRITES one note to the database (nothing else changes): text and tags on a run, or "
        "with `step` (counted from 1, as list_steps shows it) on one of its steps, for the "
        "people who replay it (the app, looptrace show, the HTML export show it). tags: "
        "short words (letters, digits, - and _; e.g. bug, good-example, workshop). Bad "
        "input (empty text, a step the run does not have, a tag that is not one short "
        "word) is an error naming the problem, nothing written. Answer: the note as "
        "stored (its id and step)."),
}
# (the what-if tools, rerun and fork_run, are in tracer.mcp.whatif_tools: the only tools
# that write to the database, through a ``looptrace rerun`` child process)


def build_server(db: str | os.PathLike[str], *, export_dir: str | None = None,
                 agent: str | None = None) -> Any:
    """The ``MCPServer`` with every tool over ``db`` (``agent``: the default
    ``module:factory`` of the what-if tools)."""
    from mcp.server.mcpserver import MCPServer

    from .whatif_tools import WHATIF_TOOLS, WhatIf

    tools = Tools(db, export_dir)
    server = MCPServer("looptrace", instructions=INSTRUCTIONS, log_level="WARNING")

    def search_runs(text: str, offset: int = 0, limit: int = PAGE) -> dict[str, Any]:
        return tools.list_runs(search=text, offset=offset, limit=limit)

    impl: dict[str, Callable[..., Any]] = {
        "list_runs": tools.list_runs, "search_runs": search_runs,
        "run_summary": tools.run_summary, "list_steps": tools.list_steps,
        "get_step": tools.get_step, "get_messages": tools.get_messages,
        "get_message_text": tools.get_message_text, "get_wire": tools.get_wire,
        "diff_runs": tools.diff_runs, "export_html": tools.export_html,
        "add_note": tools.add_note, "list_threads": tools.list_threads,
        "get_thread": tools.get_thread,
    }
    from mcp.types import ToolAnnotations

    for name, description in TOOLS.items():
        read_only = name not in ("export_html", "add_note")
        server.tool(name=name, description=description, annotations=ToolAnnotations(
            read_only_hint=read_only, destructive_hint=False, open_world_hint=False),
            structured_output=False)(_as_text(_tool_errors(impl[name])))
    from .debug_tools import DEBUG_TOOLS, Debug

    debug = Debug(db)
    for name, description in DEBUG_TOOLS.items():
        read_only = name in ("list_paused", "get_pending", "playground")
        server.tool(name=name, description=description, annotations=ToolAnnotations(
            read_only_hint=read_only, destructive_hint=False, idempotent_hint=read_only,
            open_world_hint=name == "playground"), structured_output=False)(
            _as_text(_tool_errors(getattr(debug, name))))
    whatif = WhatIf(os.fspath(db), agent)
    aimpl: dict[str, Callable[..., Any]] = {"rerun": whatif.rerun,
                                           "fork_run": whatif.fork_run}
    for name, description in WHATIF_TOOLS.items():
        server.tool(name=name, description=description, annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=False,
            open_world_hint=True), structured_output=False)(_async_tool(aimpl[name]))
    return server


def _async_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``_tool_errors`` and ``_as_text`` for a coroutine tool."""
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> str:
        from mcp.server.mcpserver.exceptions import ToolError

        _int_args(kwargs)
        try:
            out = await fn(*args, **kwargs)
        except (LooptraceError, ValueError, OSError) as exc:
            raise ToolError(str(exc) or type(exc).__name__) from None
        return json.dumps(out, ensure_ascii=False, default=str, separators=(",", ":"))
    wrapper.__annotations__ = {**fn.__annotations__, "return": str}
    return wrapper


def _as_text(fn: Callable[..., Any]) -> Callable[..., str]:
    """The answer as compact JSON text (what a model reads)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        return json.dumps(fn(*args, **kwargs), ensure_ascii=False, default=str,
                          separators=(",", ":"))
    wrapper.__annotations__ = {**fn.__annotations__, "return": str}
    return wrapper
