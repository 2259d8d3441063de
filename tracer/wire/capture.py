"""Capture: one provider HTTP exchange -> one row of the ``wire`` table.

Rows are written through the database's background writer (the same one the
tracer uses, which redacts secrets in every text); credential headers
(``Authorization``, ``x-api-key``, ``api-key`` ..., and any header whose name
says it holds a secret: ``X-Custom-Auth``, ``X-Session-Token``) are masked here
as well, before anything is queued, whatever the redactor's settings, and so
are the request body's secret fields (``token``, ``api_key``, ``password`` ...).

Linking an exchange to its model call. The proxy sees HTTP, not LangChain, so
it cannot know the run. It links by time instead: a request received at time
``t`` belongs to the model call (a ``wrap_model_call`` or ``model`` *enter*
event) that started at or before ``t`` and had not finished at ``t``; among
several (concurrent runs) the one that started last. Model calls of one run
never overlap, and the adapter sends its request inside the call, so for
sequential runs this is exact, and retries of one call all land on it. The
link is made right after the exchange (the writer is flushed first, so the
in-process tracer's enter event is on disk), and again by ``link_wire`` for
rows whose model call was not yet written (a tracer in another process).
Rows that match no model call keep ``run_id`` NULL and are listed by
``unlinked``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tracer.db.schema import connect
from tracer.db.writer import get_writer
from tracer.vocab.records import MODEL_HOOKS, WireRecord
from tracer.vocab.redact import MASK, REQUEST_SECRET_KEYS, Redactor

log = logging.getLogger("looptrace")
RETRY_WINDOW_S = 10.0
TRAFFIC_GRACE_S = 2.0

# Header names whose values are credentials (compared lower-case).
SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie",
    "x-goog-api-key", "openai-organization", "openai-project", "anthropic-admin-api-key",
})
SECRET_QUERY = frozenset({"key", "api_key", "api-key", "apikey", "token", "access_token"})
# Any other header whose name says it carries a secret (``X-Custom-Auth``, ``X-Token``,
# ``X-Client-Secret``, ``X-Signature`` ...); not ``*-Tokens`` counts or ``Keep-Alive``.
_SECRET_NAME = re.compile(r"auth|token(?!s)|secret|passw|credential|signature|session|cookie"
                          r"|(?:^|[-_])(?:api|access|private)?[-_]?key(?:$|[-_])",
                          re.IGNORECASE)
_BODY_SECRETS = Redactor(extra_keys=REQUEST_SECRET_KEYS)


def is_secret_header(name: str) -> bool:
    low = name.lower()
    return low in SECRET_HEADERS or bool(_SECRET_NAME.search(low))


def redact_headers(headers: dict[str, str] | list[tuple[str, str]]) -> dict[str, str]:
    """A copy of ``headers`` with every credential value masked."""
    items = headers.items() if isinstance(headers, dict) else headers
    out: dict[str, str] = {}
    for k, v in items:
        out[k] = MASK if is_secret_header(k) else v
    return out


def redact_url(url: str) -> str:
    """``url`` with credential query parameters masked."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    q = [(k, MASK if k.lower() in SECRET_QUERY else v) for k, v in
         parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(q, safe="[]")))


@dataclass
class Exchange:
    """One request and its response, as seen on the wire."""

    provider: str
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: str
    ts: float = field(default_factory=time.time)
    status: int | None = None
    response_headers: dict[str, str] | None = None
    response_body: str | None = None
    chunks: list[str] | None = None
    error: str | None = None
    duration_ms: float | None = None
    run_id: str | None = None
    seq: int | None = None

    def row(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "seq": self.seq, "ts": self.ts, "provider": self.provider,
            "method": self.method, "url": redact_url(self.url),
            "request_headers": json.dumps(redact_headers(self.request_headers)),
            "request_body": _BODY_SECRETS(self.request_body), "status": self.status,
            "response_headers": (json.dumps(redact_headers(self.response_headers))
                                 if self.response_headers is not None else None),
            "response_body": self.response_body,
            "chunks": json.dumps(self.chunks) if self.chunks is not None else None,
            "error": self.error, "duration_ms": self.duration_ms,
        }

    def request_json(self) -> Any:
        try:
            return json.loads(self.request_body)
        except (TypeError, ValueError):
            return None

    def response_json(self) -> Any:
        try:
            return json.loads(self.response_body or "")
        except (TypeError, ValueError):
            return None


class WireRecorder:
    """Writes exchanges into a trace database and links them to model calls.

    Keeps the exchanges it recorded in ``exchanges`` (newest last), with
    ``run_id``/``seq`` filled in once linked.
    """

    def __init__(self, db: str | os.PathLike[str], *, redactor: Redactor | None = None,
                 link: bool = True, traffic: bool = True) -> None:
        self.path = os.fspath(db)
        self.writer = get_writer(self.path, redactor) if redactor else get_writer(self.path)
        self.auto_link = link
        # exchanges no traced model call claims become runs of their own (see traffic.py),
        # through a Conversations made at the first one (traffic.py imports LangChain: a
        # proxy whose every exchange is claimed, `looptrace run --wire`'s, starts without it)
        self.traffic_on = traffic
        self.traffic: Any = None
        self._redactor = redactor
        self._build_lock = threading.Lock()
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._timer_lock = threading.Lock()
        self._closing = False

    def record(self, ex: Exchange) -> None:
        """Queue ``ex`` for writing; with ``link``, write it now and link it."""
        with self._lock:
            self.exchanges.append(ex)
            self.writer.put(WireRecord(ex.row()))
            if self.auto_link:
                self.writer.flush()
                self.link()

    def link(self) -> int:
        """Link every unlinked row of the file; return how many were linked.

        Rows of the last ``RETRY_WINDOW_S`` seconds still unlinked (their model
        call recorded by another process, not yet on disk) are tried again a
        second later, in the background.
        """
        self.writer.flush()
        # Only recent rows: a proxy used without a tracer keeps every row unlinked,
        # and each exchange must not rescan them all. close() links the rest.
        linked = link_wire(self.path, since=time.time() - 6 * RETRY_WINDOW_S)
        self._note(linked)
        now = time.time()
        if self.traffic_on:
            self._build(before=now - TRAFFIC_GRACE_S)
        if any(ex.run_id is None and now - ex.ts < RETRY_WINDOW_S for ex in self.exchanges):
            self._schedule_retry()
        return len(linked)

    def _note(self, linked: list[tuple[float, str, int]]) -> None:
        if linked:
            by_ts = {round(ts, 6): (rid, seq) for ts, rid, seq in linked}
            for ex in self.exchanges:
                hit = by_ts.get(round(ex.ts, 6))
                if ex.run_id is None and hit:
                    ex.run_id, ex.seq = hit

    def _build(self, before: float | None = None) -> None:
        """Exchanges still unclaimed ``TRAFFIC_GRACE_S`` after they were sent (a
        tracer in another process has written its model call by then) are a loop
        looptrace does not trace: give them to their runs."""
        with self._build_lock:
            if not any(ex.run_id is None and (before is None or ex.ts < before)
                       for ex in self.exchanges):
                return
            from .traffic import Conversations, build_runs

            if self.traffic is None:
                self.traffic = Conversations(self.path, redactor=self._redactor)
            build_runs(self.path, before=before, conversations=self.traffic)
            conn = connect(self.path)
            try:
                rows = conn.execute("SELECT ts, run_id, seq FROM wire WHERE run_id IS NOT NULL"
                                    " AND ts >= ?", [min((e.ts for e in self.exchanges),
                                                         default=0)]).fetchall()
            finally:
                conn.close()
            self._note([(ts, rid, seq) for ts, rid, seq in rows])

    def _schedule_retry(self) -> None:
        with self._timer_lock:
            if self._closing or (self._timer is not None and self._timer.is_alive()
                                 and threading.current_thread() is not self._timer):
                return
            self._timer = threading.Timer(1.0, self._retry)
            self._timer.daemon = True
            self._timer.start()

    def _retry(self) -> None:
        try:
            self.link()
        except Exception as exc:  # noqa: BLE001 - best effort; close() links once more
            log.debug("looptrace could not link wire rows: %r", exc)

    def close(self) -> None:
        """Stop retrying and link what can be linked."""
        with self._timer_lock:
            self._closing = True
            if self._timer is not None:
                self._timer.cancel()
        try:
            self.writer.flush()
            self._note(link_wire(self.path))
            if self.traffic_on:
                self._build()
            if self.traffic is not None:
                self.traffic.close()
        except Exception as exc:  # noqa: BLE001 - the rows stay, unlinked
            log.debug("looptrace could not link wire rows: %r", exc)





def open_model_calls(conn: Any, ts: float) -> list[tuple[float, str, int]]:
    """The model calls (enter ts, run id, enter seq) in progress at ``ts``, latest first."""
    runs = [r[0] for r in conn.execute(
        "SELECT id FROM runs WHERE started_at <= ? AND (ended_at IS NULL OR ended_at >= ?)",
        [ts + 0.001, ts - 0.001])]
    out: list[tuple[float, str, int]] = []
    for rid in runs:
        rows = conn.execute(
            "SELECT seq, ts, hook, phase FROM events WHERE run_id = ? AND hook IN (?, ?)"
            " AND phase IN ('enter', 'exit', 'error') ORDER BY seq", [rid, *sorted(MODEL_HOOKS)]
        ).fetchall()
        open_calls: dict[str, tuple[int, float]] = {}
        for seq, ets, hook, phase in rows:
            if ets > ts:
                break
            if phase == "enter":
                open_calls[hook] = (seq, ets)
            else:
                open_calls.pop(hook, None)
        out += [(ets, rid, seq) for seq, ets in open_calls.values()]
    return sorted(out, reverse=True)


def find_model_call(conn: Any, ts: float) -> tuple[str, int] | None:
    """The model call (run id, enter seq) that was in progress at ``ts`` (the latest
    to start, when several were: see ``link_wire`` for the choice by content)."""
    calls = open_model_calls(conn, ts)
    return (calls[0][1], calls[0][2]) if calls else None


Signature = tuple[int, str, frozenset[str]]


def wire_signature(row: dict[str, Any]) -> Signature | None:
    """What an exchange's request carried, in terms a recorded model call also has: the
    number of assistant turns, the last user text, the tool-call ids (None: unreadable)."""
    from .providers import format_for_path, get_format

    try:
        body = json.loads(row.get("request_body") or "")
        fmt = format_for_path(str(row.get("url") or "")) or get_format(str(row.get("provider")))
        msgs = fmt.read_request(body).messages
    except Exception:  # noqa: BLE001 - a body we cannot read: time decides
        return None
    users = [m.text.strip() for m in msgs if m.role == "user" and m.text.strip()]
    ids = {c.id for m in msgs for c in m.tool_calls} | {
        m.tool_call_id or "" for m in msgs if m.role == "tool"}
    return (sum(1 for m in msgs if m.role == "assistant"), users[-1] if users else "",
            frozenset(i for i in ids if i))


def call_signature(messages: list[Any]) -> Signature:
    """The same of what a recorded model call received (``Replay.messages_at``)."""
    from tracer.read.loader import content_text

    humans = [content_text(m.content).strip() for m in messages if m.type == "human"]
    humans = [h for h in humans if h]
    ids = {str(c.get("id")) for m in messages for c in m.tool_calls if c.get("id")} | {
        m.tool_call_id for m in messages if m.tool_call_id}
    return (sum(1 for m in messages if m.type in ("ai", "AIMessageChunk")),
            humans[-1] if humans else "", frozenset(ids))


def match(wire: Signature, call: Signature) -> int:
    """How well an exchange fits a model call (0-3): same number of assistant turns,
    same last user text, and the exchange's tool-call ids all known to the call."""
    return ((wire[0] == call[0]) + (wire[1] == call[1])
            + (bool(wire[2]) and wire[2] <= call[2]))


def same_conversation(wire: Signature, call: Signature) -> bool:
    """Whether an exchange can be a model call's at all: the same last user text, or
    tool-call ids the call knows. (The number of turns alone proves nothing: every
    conversation's first call has none.)"""
    return wire[1] == call[1] or (bool(wire[2]) and wire[2] <= call[2])


class _Calls:
    """Recorded model calls' signatures, read on demand (one replay per run)."""

    def __init__(self, db: str) -> None:
        self.db = db
        self._replays: dict[str, Any] = {}

    def signature(self, run_id: str, seq: int) -> Signature | None:
        from tracer.read.loader import TraceDB
        from tracer.read.steps import build_replay

        rp = self._replays.get(run_id)
        if rp is None:
            with TraceDB(self.db) as tdb:
                rp = self._replays[run_id] = build_replay(tdb.run(run_id))
        step = next((s.index for s in rp.steps if s.event.seq == seq), None)
        return None if step is None else call_signature(rp.messages_at(step))


def link_wire(db: str | os.PathLike[str], *,
              since: float | None = None) -> list[tuple[float, str, int]]:
    """Link unlinked wire rows (sent after ``since``, if given) to their model call:
    of the calls in progress when a row was sent, the one whose recorded request it
    matches by content (turns, last user text, tool-call ids); time decides a tie
    (the latest to start). A row that matches none of them in anything (a loop
    the tracer does not see, calling while a traced run does) is left unlinked,
    for ``traffic``. Return (ts, run id, seq) of each row linked."""
    path = os.fspath(db)
    conn = connect(path)
    try:
        out = []
        calls = _Calls(path)
        rows = conn.execute(
            "SELECT id, ts, url, provider, request_body FROM wire WHERE run_id IS NULL"
            " AND ts >= ?", [since if since is not None else float("-inf")]).fetchall()
        with conn:
            for wid, ts, url, provider, body in rows:
                candidates = open_model_calls(conn, ts)
                if not candidates:
                    continue
                hit = candidates[0][1:]
                sig = wire_signature({"url": url, "provider": provider, "request_body": body})
                if sig is not None:
                    scored = []
                    for ets, rid, seq in candidates:
                        cs = calls.signature(rid, seq)
                        if cs is None:
                            scored.append((-1, ets, rid, seq))
                        elif same_conversation(sig, cs):
                            scored.append((match(sig, cs), ets, rid, seq))
                    if not scored:  # in progress, but other conversations: not their call
                        continue
                    hit = max(scored)[2:]
                conn.execute("UPDATE wire SET run_id = ?, seq = ? WHERE id = ?", [*hit, wid])
                out.append((ts, *hit))
        return out
    finally:
        conn.close()


def unlinked(db: str | os.PathLike[str]) -> int:
    conn = connect(os.fspath(db))
    try:
        return int(conn.execute("SELECT COUNT(*) FROM wire WHERE run_id IS NULL").fetchone()[0])
    finally:
        conn.close()
