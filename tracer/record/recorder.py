"""Run bookkeeping shared by the middleware and the callback handler.

A ``RunState`` holds what the hot path needs in memory: the next ``seq``, the
lap, and which messages have been recorded already (each message is stored
once, at the event where it first appeared, with its conversation position).
"""

from __future__ import annotations

import atexit
import itertools
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.errors import ParentCommand

from tracer.db.schema import connect
from tracer.db.serialize import message_key, tool_calls_of
from tracer.db.writer import Writer, get_writer
from tracer.vocab.payloads import ModelEnterPayload, ModelExitPayload, RunEndPayload
from tracer.vocab.records import (
    MODEL_HOOKS,
    EventRecord,
    MessageRecord,
    RunRecord,
    StaleRunsRecord,
    tool_name,
)
from tracer.vocab.redact import DEFAULT_REDACTOR, Redactor

_INTERNAL_META = ("langgraph_", "lc_", "ls_", "checkpoint_", "__", "thread_id")


def user_metadata(meta: Any) -> dict[str, Any] | None:
    """The user's own run metadata (``config["metadata"]``), without LangGraph's keys."""
    if not isinstance(meta, dict):
        return None
    out = {k: v for k, v in meta.items() if not str(k).startswith(_INTERNAL_META)}
    return out or None


class RunState:
    """In-memory state of one run being recorded."""

    __slots__ = (
        "answered",
        "answered_by",
        "asked",
        "call_pos",
        "conv",
        "deferred",
        "end_seen",
        "ended",
        "error",
        "error_seen",
        "id",
        "interrupted",
        "keys",
        "known",
        "lap",
        "lap_open",
        "last_list",
        "last_node",
        "last_seq",
        "lc_ids",
        "lock",
        "middleware",
        "model",
        "name",
        "objs",
        "owner",
        "parent",
        "parent_call",
        "paused",
        "pending",
        "provider",
        "req_objs",
        "req_system",
        "seen",
        "seq",
        "state",
        "status",
        "sys_hash",
        "thread_id",
        "tokens",
        "tools_hash",
        "unnamed",
        "watched",
    )

    def __init__(self, run_id: str, *, start_seq: int = 0, thread_id: str | None = None,
                 parent: RunState | None = None, name: str | None = None) -> None:
        self.id = run_id
        self.seq = itertools.count(start_seq)
        self.lap = 0
        self.conv: list[str] = []  # message keys in conversation order (writer side)
        self.call_pos: dict[str, tuple[int, int]] = {}  # tool_call_id -> (ai position, index)
        self.thread_id = thread_id
        self.ended = False
        self.status = "running"
        self.error: str | None = None
        # input, output, total tokens of the model calls that reported usage; None until
        # one does (``asked``: a model call was made; both are written as the run's totals)
        self.tokens: list[int] | None = None
        self.asked = False
        # the models that answered, as their replies name them, in order (writer side):
        # the run's model is the first of them (``model``: the first asked, until one does)
        self.answered_by: list[str] = []
        self.lock = threading.Lock()
        self.tools_hash: int | None = None
        self.model: str | None = None
        self.provider: str | None = None
        self.lc_ids: set[Any] = set()
        self.middleware = False
        self.error_seen: str | None = None
        self.interrupted = False
        self.parent = parent
        self.parent_call: str | None = None  # the parent's tool call this run runs inside
        self.name = name
        self.sys_hash: int | None = None
        self.paused = False  # a GraphInterrupt was seen inside this invocation
        self.owner: object = None  # the invocation currently recording into this run
        self.answered = False  # the last model reply asked for no tools (a final answer)
        self.end_seen = False  # a ("run", "end") event was recorded
        # tool results seen before they reach the state: key -> (seq, message, guess)
        self.pending: dict[str, tuple[int, BaseMessage, int]] = {}
        self.lap_open = False  # a lap began (first before_model / model call) and is not over
        # Rows are written on the writer thread for a deferred run (see
        # Recorder.defer_messages). What the run has seen is kept on the caller's
        # side, where each change is noticed: the conversation as last seen (its
        # objects and keys, and the list object itself), and the last object
        # recorded under each key (None: recorded by an earlier process).
        self.deferred = False
        self.objs: list[BaseMessage] = []
        self.keys: list[str] = []
        self.seen: dict[str, BaseMessage | None] = {}
        self.last_list: object = None
        self.last_seq = -1  # the seq of the latest event recorded
        self.last_node: str | None = None  # the latest graph node seen to end (callbacks)
        self.req_objs: Sequence[BaseMessage] | None = None  # the last request at our layer
        self.req_system: Any = None  # and its system prompt
        self.watched = False  # the invocation watcher ends it (``tracer.record.watch``)
        self.state: Any = None  # the other state keys (``tracer.db.state_rows.StateMemory``)
        # messages recorded while they had no id, under a key that does not change when
        # the state gives them one (a tool result's: its call's id): key -> (seq, position,
        # version) of that row, written again once the state has named them
        self.unnamed: dict[str, tuple[int, int, int]] = {}


def note_request(run: RunState, payload: ModelEnterPayload, *, system: Any,
                 tools: Sequence[Any] | None, tools_key: int,
                 schemas: Callable[[], Any]) -> None:
    """Put a model call's system prompt and tools into its ``enter`` payload, without
    repeating them: each is written when it differs from what the run last wrote
    (else ``system_same`` / ``tool_names``). One builder for every model call,
    whoever records it (the middleware, on the writer thread; the callback handler).
    ``schemas`` makes the tool schemas only when they are written; ``tools=None``
    (a loop whose model call carried none) writes nothing of tools."""
    if system is not None:
        h = hash(system if isinstance(system, str) else repr(system))
        if h != run.sys_hash:
            run.sys_hash = h
            payload["system"] = system
        else:
            payload["system_same"] = True
    if tools is None:
        return
    if tools_key != run.tools_hash:
        run.tools_hash = tools_key
        payload["tools"] = schemas()
    else:
        payload["tool_names"] = [tool_name(t) for t in tools]


def begin_lap(run: RunState) -> None:
    """Start the next lap unless one is open: whichever hook of the lap fires first.

    A lap opens at its first ``before_model`` (of any middleware) or, without
    node hooks, at the model call; it closes when the model call returns.
    """
    if not run.lap_open:
        run.lap_open = True
        run.lap += 1


def end_lap(run: RunState) -> None:
    run.lap_open = False


_PID = [os.getpid()]
_SINCE = [time.time()]  # (about) when this process started: before any run it records


def _after_fork() -> None:
    _PID[0] = os.getpid()
    _SINCE[0] = time.time()


os.register_at_fork(after_in_child=_after_fork)


def _totals(run: RunState) -> dict[str, Any]:
    """The run's token totals and model names, as a ``runs`` row's fields. Tokens no
    model call reported are unknown, NULL (not 0: "not reported"); a run that asked no
    model used none."""
    f: dict[str, Any] = {}
    tokens = run.tokens if run.tokens is not None else (
        [None, None, None] if run.asked else [0, 0, 0])
    f["input_tokens"], f["output_tokens"], f["total_tokens"] = tokens
    model = run.answered_by[0] if run.answered_by else run.model  # (else: the model asked)
    if model:
        f["model"] = model
    if run.provider:
        f["provider"] = run.provider
    return f


def answering_model(meta: Any) -> str | None:
    """The model that answered, as a reply's ``response_metadata`` names it (OpenAI's and
    Anthropic's ``model_name``, Ollama's ``model``), or None."""
    if not isinstance(meta, dict):
        return None
    name = meta.get("model_name") or meta.get("model")
    return name if isinstance(name, str) and name else None


class ResponsePayload:
    """What a model call answered (usage, stop reason, number of tool calls), as an
    event payload built on the writer thread, off the agent's path. Building it adds
    the usage to the run's token totals there, in order with the totals records
    (``Recorder.update_totals``)."""

    __slots__ = ("msgs", "run")

    def __init__(self, run: RunState, msgs: Sequence[BaseMessage]) -> None:
        self.run = run
        self.msgs = msgs

    def __looptrace_json__(self) -> ModelExitPayload | None:
        payload: ModelExitPayload = {}
        for m in self.msgs:
            if isinstance(m, AIMessage):
                usage = m.usage_metadata
                if usage:
                    t = self.run.tokens
                    if t is None:
                        t = self.run.tokens = [0, 0, 0]
                    t[0] += usage.get("input_tokens", 0) or 0
                    t[1] += usage.get("output_tokens", 0) or 0
                    t[2] += usage.get("total_tokens", 0) or 0
                    payload["usage"] = dict(usage)
                meta = m.response_metadata or {}
                stop = meta.get("finish_reason") or meta.get("stop_reason") or meta.get(
                    "done_reason")
                if stop:
                    payload["stop_reason"] = stop
                by = answering_model(meta)
                if by is not None:
                    payload["model"] = by
                    if by not in self.run.answered_by:
                        self.run.answered_by.append(by)
                payload["tool_calls"] = len(m.tool_calls)
        return payload or None


def new_run_id(now: float) -> str:
    """A new run's id: 32 hex digits, the start second first, then 96 random bits.

    Ids that grow with time put a new run's rows (``events`` and ``messages`` are
    clustered on the run id) at the end of their tables, on pages a recent commit
    wrote, instead of on random pages of a large file: recording costs the same in
    a file of 100,000 runs as in an empty one. Twelve digits (``looptrace runs``)
    still tell runs of the same second apart."""
    return f"{int(now) & 0xFFFFFFFF:08x}{random.getrandbits(96):024x}"


class Recorder:
    """Writes runs, events and messages for one database through its writer."""

    def __init__(self, db: str | os.PathLike[str], *, redactor: Redactor | None = None) -> None:
        self.path = os.fspath(db)
        self.writer: Writer = get_writer(self.path, redactor or DEFAULT_REDACTOR)
        self._lock = threading.Lock()
        self.by_thread: dict[str, RunState] = {}  # thread id -> latest interrupted run
        self.lc_runs: dict[Any, RunState] = {}  # LangChain callback run id -> run
        # (parent run id, parent tool_call_id) -> a subagent run that paused inside it
        self.paused_children: dict[tuple[str, str], RunState] = {}
        self.live: dict[str, RunState] = {}  # run id -> a run not seen to end yet
        _RECORDERS.add(self)

    # -- runs ---------------------------------------------------------------
    def start_run(self, *, name: str | None, thread_id: str | None = None,
                  parent: RunState | None = None, parent_tool_call_id: str | None = None,
                  source: str, agent_name: str | None = None,
                  metadata: dict[str, Any] | None = None) -> RunState:
        # (no system call on the hot path: ``random`` is seeded from the OS and Python
        # re-seeds it in a forked child; the pid is cached and renewed the same way)
        started = time.time()
        run = RunState(new_run_id(started), thread_id=thread_id, parent=parent, name=name)
        fields: dict[str, Any] = {
            "name": name, "thread_id": thread_id, "status": "running",
            "started_at": started, "source": source, "agent_name": agent_name,
            "parent_id": parent.id if parent else None,
            "parent_tool_call_id": parent_tool_call_id, "pid": _PID[0],
        }
        if metadata:
            fields["metadata"] = metadata
        run.parent_call = parent_tool_call_id
        self.writer.put(RunRecord(run.id, fields))
        self.live[run.id] = run
        if thread_id and parent is None:
            with self._lock:
                self.by_thread[thread_id] = run
        if thread_id and parent is None and source in _LIVE_SOURCES:
            # A run of this thread that another process left running (it exited or
            # died first) is over: its thread went on. (Not for runs rebuilt from
            # spans or traffic: those arrive in their own order.)
            self.writer.put(StaleRunsRecord(thread_id, run.id, _PID[0], _NEXT_RUN, started,
                                            _SINCE[0]))
        return run

    def resume_run(self, thread_id: str, *, live: bool = False,
                   from_file: bool = True) -> RunState | None:
        """The interrupted run of ``thread_id`` to continue, from memory or the file.

        With ``live`` (the invocation carries a resume value) a run of the thread
        that was never seen to end is taken over too: without callbacks the pause
        is only noticed when the paused invocation is garbage-collected. Without
        ``from_file`` only runs this process remembers are found (the file is not
        read: on an event loop that would block).
        """
        with self._lock:
            run = self.by_thread.get(thread_id)
            if run is not None and (run.interrupted or (live and not run.ended)):
                run.interrupted = False
                run.owner = "resumed"  # an old invocation's finaliser must not end it again
                run.ended = False
                run.status = "running"
                self.live[run.id] = run
                self.writer.put(RunRecord(run.id, {"status": "running", "ended_at": None}))
                return run
        return self._resume_from_db(thread_id) if from_file else None

    def remembers(self, thread_id: str) -> bool:
        """Whether a paused run of ``thread_id`` is known without reading the file."""
        return thread_id in self.by_thread

    def resume_child(self, parent: RunState, tool_call_id: str) -> RunState | None:
        """The subagent run that paused inside ``parent``'s call ``tool_call_id``, if any:
        when the parent resumes, that call runs again and its subagent continues."""
        with self._lock:
            run = self.paused_children.pop((parent.id, tool_call_id), None)
            if run is None or not run.interrupted:
                return None
            run.interrupted = False
            run.paused = False
            run.owner = "resumed"
            run.ended = False
            run.status = "running"
        self.live[run.id] = run
        self.writer.put(RunRecord(run.id, {"status": "running", "ended_at": None}))
        return run

    def _resume_from_db(self, thread_id: str) -> RunState | None:
        self.writer.flush()
        try:
            conn = connect(self.path)
            try:
                row = conn.execute(
                    "SELECT id, name FROM runs WHERE thread_id = ? AND status = 'interrupted' "
                    "AND parent_id IS NULL ORDER BY started_at DESC LIMIT 1", [thread_id]
                ).fetchone()
                if row is None:
                    return None
                run_id, name = row
                last = conn.execute("SELECT COALESCE(MAX(seq), -1), COALESCE(MAX(lap), 0) "
                                    "FROM events WHERE run_id = ?", [run_id]).fetchone()
                msgs = conn.execute("SELECT msg_id, tool_call_id, type FROM messages "
                                    "WHERE run_id = ? ORDER BY position, seq", [run_id]).fetchall()
                # (the tokens so far: the resumed run's calls add to them)
                tokens = conn.execute("SELECT input_tokens, output_tokens, total_tokens,"
                                      " EXISTS (SELECT 1 FROM events WHERE run_id = runs.id AND"
                                      " phase = 'enter' AND hook IN ('model', 'wrap_model_call'))"
                                      " FROM runs WHERE id = ?", [run_id]).fetchone()
            finally:
                conn.close()
        except Exception:  # noqa: BLE001 - resuming is best effort
            return None
        run = RunState(run_id, start_seq=last[0] + 1, thread_id=thread_id, name=name)
        run.lap = last[1]
        if tokens is not None:
            if tokens[2] is not None:
                run.tokens = [int(v or 0) for v in tokens[:3]]
            run.asked = bool(tokens[3])
        for msg_id, tcid, _type in msgs:
            key = "t:" + tcid if tcid else msg_id
            if key and key not in run.seen:
                run.conv.append(key)
                run.seen[key] = None  # recorded, its object unknown here
        run.keys = list(run.conv)
        run.last_seq = last[0]
        self.live[run.id] = run
        self.writer.put(RunRecord(run_id, {"status": "running", "ended_at": None}))
        return run

    def end_run(self, run: RunState, status: str, error: str | None = None) -> None:
        with run.lock:
            if run.ended:
                return
            run.ended = True
            run.status = status
        self.live.pop(run.id, None)
        if status == "interrupted" and run.thread_id and run.parent is None:
            run.interrupted = True
            with self._lock:
                self.by_thread[run.thread_id] = run
        elif run.thread_id:
            with self._lock:
                if self.by_thread.get(run.thread_id) is run:
                    del self.by_thread[run.thread_id]
        if status == "interrupted" and run.parent is not None and run.parent_call:
            run.interrupted = True
            with self._lock:
                self.paused_children[(run.parent.id, run.parent_call)] = run
        self.flush_pending(run)
        if status == "completed" and not run.end_seen:
            run.end_seen = True
            self.event(run, "run", "end")  # the replay's END node
        # (the error is written in any case: an end seen late replaces what was said
        # of the run meanwhile, e.g. by another process's ``StaleRunsRecord``)
        fields: dict[str, Any] = {"status": status, "ended_at": time.time(), "error": error}
        self.writer.put(RunRecord(run.id, fields))
        self.update_totals(run)
        self.writer.flush(wait=False)

    def end_not_failed(self, run: RunState, error: BaseException) -> bool:
        """End ``run`` as what ``error`` really says, when it is no failure: a handoff to
        the parent graph (``ParentCommand``: LangGraph's multi-agent ``Command(goto=...,
        graph=Command.PARENT)``), or a caller who stopped reading the run's stream
        (``GeneratorExit``). Returns whether it was one of those (and the run ended)."""
        payload: RunEndPayload
        if isinstance(error, ParentCommand):
            cmd = error.args[0] if error.args else None
            goto = getattr(cmd, "goto", None)
            names = [goto] if isinstance(goto, str) else [
                str(getattr(g, "node", g)) for g in (goto if isinstance(goto, (list, tuple))
                                                     else [goto] if goto else [])]
            payload, status = {"handoff": {"goto": names, "graph": "parent"}}, "handoff"
        elif isinstance(error, GeneratorExit):
            payload = {"stopped": "the caller stopped reading the run's stream"}
            status = "stopped"
        else:
            return False
        if not run.end_seen:
            run.end_seen = True
            self.event(run, "run", "end", payload=payload)
        self.end_run(run, status)
        return True

    def end_unfinished(self, why: str) -> None:
        """End every run this recorder has not seen end, with what is known: the error
        a wrap hook saw come up, a pause, else ``error`` saying ``why``."""
        for run in list(self.live.values()):
            if run.ended:
                continue
            if run.error_seen:
                self.end_run(run, "error", run.error_seen)
            elif run.paused:
                self.end_run(run, "interrupted")
            else:
                self.end_run(run, "error", why)

    def update_totals(self, run: RunState) -> None:
        """Write the run's token totals and model names, as the writer finds them: token
        counts are added on the writer thread (``ResponsePayload``), in order."""
        self.writer.put(RunRecord(run.id, lambda: _totals(run)))

    # -- events -------------------------------------------------------------
    def event(self, run: RunState, hook: str, phase: str, *, middleware: str | None = None,
              duration_ms: float | None = None, tool_call_id: str | None = None,
              task: str | None = None, payload: Any = None, ts: float | None = None,
              seq: int | None = None) -> int:
        """Record one event; ``seq`` if it was taken already (see ``sync_messages``)."""
        if seq is None:
            seq = next(run.seq)
        run.last_seq = max(run.last_seq, seq)
        if phase == "enter" and hook in MODEL_HOOKS:
            run.asked = True  # (its tokens are unknown until a call reports usage)
        # (tuple.__new__: the record without the NamedTuple's own __new__ frame; this
        # is the hottest record)
        self.writer.put(_new(EventRecord, (run.id, seq, ts or time.time(), hook, phase,
                                           duration_ms, middleware, run.lap, tool_call_id,
                                           task, payload)))
        return seq

    # -- messages -----------------------------------------------------------
    # Every change to the conversation is recorded where it is seen: a message
    # is written once when it first appears, and again (a new version, same
    # key) when an object with the same key but other content takes its place
    # (a middleware that redacts, clears or evicts keeps the id). A change of
    # order (summarised, trimmed, removed) is a ``history`` event with the new
    # order of keys. What is new or changed is decided here, on the caller's
    # thread, by identity first (an unchanged message is the same object) and
    # by equality only where identity differs; the rows are written by the
    # writer, in order with the events (``Writer.defer``) for a deferred run.

    def defer_messages(self, run: RunState) -> None:
        """From now on, write ``run``'s message rows on the writer thread."""
        run.deferred = True

    def _do(self, run: RunState, fn: Callable[..., None], *args: Any) -> None:
        if run.deferred:
            self.writer.defer(fn, *args)
        else:
            fn(*args)

    def message(self, run: RunState, seq: int, position: int, m: BaseMessage) -> None:
        """Record ``m`` (a model's reply) at ``position``: once, and again only if an
        object with the same key but other content was recorded before."""
        key = message_key(m)
        seen = run.seen
        prev = seen.get(key, _MISSING)
        if prev is m:
            return
        seen[key] = m
        if prev is _MISSING:
            version = 0
        elif prev is not None and not same_message(prev, m):
            version = 1
        else:
            return
        if m.id is None and key[:2] == "t:":
            # LangGraph's reducer names it in place when it reaches the state: written
            # again then (``sync_messages``), so that the row does not depend on whether
            # the writer serialised it before or after
            run.unnamed[key] = (seq, position, version)
        self._do(run, self._message_now, run, seq, position, m, version)

    def _message_now(self, run: RunState, seq: int, position: int, m: BaseMessage,
                     version: int = 0) -> None:
        calls = tool_calls_of(m)
        if calls:
            for i, c in enumerate(calls):
                if c.get("id"):
                    run.call_pos[c["id"]] = (position, i)
        self.writer.put(MessageRecord(run.id, position, seq, m, version))

    def tool_result(self, run: RunState, seq: int, m: BaseMessage) -> None:
        """Record a tool result seen at ``seq``; its position is fixed when it reaches
        the state (results can be reordered or joined by others, e.g. a rejection)."""
        key = message_key(m)
        prev = run.seen.get(key, _MISSING)
        if prev is m or (prev is not _MISSING and (prev is None or same_message(prev, m))):
            return
        run.seen[key] = m
        self._do(run, self._tool_result_now, run, seq, key, m)

    def _tool_result_now(self, run: RunState, seq: int, key: str, m: BaseMessage) -> None:
        if key in run.conv:  # already in the conversation: a new version in its place
            self.writer.put(MessageRecord(run.id, run.conv.index(key), seq, m, 1))
            return
        tcid = key[2:] if key.startswith("t:") else None
        run.pending[key] = (seq, m, self.tool_result_position(run, tcid))

    def flush_pending(self, run: RunState) -> None:
        """Write tool results that never reached the state, at their best-guess position."""
        self._do(run, self._flush_pending_now, run)

    def _flush_pending_now(self, run: RunState) -> None:
        items = list(run.pending.values())
        run.pending.clear()
        for seq, m, guess in items:
            self.writer.put(MessageRecord(run.id, guess, seq, m, 0))

    def tool_result_position(self, run: RunState, tool_call_id: str | None) -> int:
        pos = run.call_pos.get(tool_call_id or "")
        if pos is None:
            return len(run.conv)
        return pos[0] + 1 + pos[1]

    def sync_messages(self, run: RunState, seq: int | Callable[[], int],
                      messages: Sequence[BaseMessage], by: str | None = None) -> int:
        """Bring the run's conversation up to ``messages`` (the state as it is now).

        New messages are recorded at ``seq``. A change to what was there (a
        message replaced by another version, removed, reordered, or inserted)
        is a ``history`` event placed before ``seq``, naming ``by`` (the graph
        node that made it, when known) and the event after which it was seen;
        the new versions are recorded at it. The common cases (nothing changed:
        the same list object; or the list only grew) cost an identity check of
        the part seen before. ``seq`` may be a function that takes the seq of
        the event the messages belong to: it is called after the history
        event's, so that the event comes after the change it saw. Returns it.
        """
        objs = run.objs
        n = len(objs)
        if messages is run.last_list and len(messages) == n:
            return seq() if callable(seq) else seq
        k = len(messages)
        i = 0
        lim = min(k, n)
        while i < lim and messages[i] is objs[i]:
            i += 1
        seen = run.seen
        added: list[tuple[int, BaseMessage]] = []
        placed: list[tuple[int, str]] = []
        replaced: list[tuple[int, str, BaseMessage]] = []
        keys = run.keys[:i]
        for j in range(i, k):
            m = messages[j]
            key = message_key(m)
            keys.append(key)
            prev = seen.get(key, _MISSING)
            if prev is _MISSING:
                added.append((j, m))
            elif prev is m or prev is None or same_message(prev, m):
                placed.append((j, key))
                if run.unnamed and prev is m and key in run.unnamed and m.id is not None:
                    at, pos, version = run.unnamed.pop(key)
                    self._do(run, self._message_now, run, at, pos, m, version)
            elif key in keys[:j]:  # the key twice (e.g. two results for one call): a new message
                added.append((j, m))
                continue
            else:
                placed.append((j, key))
                replaced.append((j, key, m))
            seen[key] = m
        reordered = i < n and keys[:n] != run.keys
        change = None
        if reordered or replaced:
            change = next(run.seq)
            payload: dict[str, Any] = {"previous": n, "by": by}
            if reordered:
                payload["keys"] = keys
                removed = set(run.keys).difference(keys)
                if removed:
                    payload["removed"] = sorted(removed)
            if replaced:
                payload["replaced"] = [key for _, key, _ in replaced]
            self.event(run, "history", "fire", payload=payload, seq=change)
        if callable(seq):
            seq = seq()
        run.objs = list(messages)
        run.keys = keys
        run.last_list = messages
        if added or placed or change is not None:
            self._do(run, self._sync_now, run, seq, change, keys, added, placed, replaced)
        return seq

    def _sync_now(self, run: RunState, seq: int, change: int | None, keys: list[str],
                  added: list[tuple[int, BaseMessage]], placed: list[tuple[int, str]],
                  replaced: list[tuple[int, str, BaseMessage]]) -> None:
        run.conv = keys
        at = seq if change is None else change
        for j, m in added:
            self._message_now(run, at, j, m)
        if run.pending:
            for j, key in placed:
                entry = run.pending.pop(key, None)
                if entry is not None:
                    self.writer.put(MessageRecord(run.id, j, entry[0], entry[1], 0))
        for j, _key, m in replaced:
            self._message_now(run, at, j, m, 1)

    def request_view(self, run: RunState, msgs: Sequence[BaseMessage]) -> ModelEnterPayload:
        """What a model call received, as keys, with the messages the run has not
        recorded in that form inlined (a layer rewrote or added them)."""
        seen = run.seen
        keys = []
        inline = []
        for m in msgs:
            k = message_key(m)
            keys.append(k)
            prev = seen.get(k, _MISSING)
            if prev is _MISSING or (prev is not m and prev is not None
                                    and not same_message(prev, m)):
                inline.append(m)
        out: ModelEnterPayload = {"message_keys": keys}
        if inline:
            out["inline_messages"] = inline
            out["inline_keys"] = [message_key(m) for m in inline]
        return out


_MISSING: Any = object()
_new = tuple.__new__

_NEXT_RUN = ("looptrace: this run has no end in the record: its thread's next run started while"
             " it was still running (process {pid}, which recorded it, exited or died first)")
_EXITED = ("looptrace: this run has no end in the record: the process exited while it was"
           " still running")
_RECORDERS: weakref.WeakSet[Recorder] = weakref.WeakSet()
_LIVE_SOURCES = ("middleware", "callbacks")  # runs recorded as they happen


def _at_exit() -> None:
    """At interpreter exit (before the writers' own exit flush: ``atexit`` runs in
    reverse order of registration, and this module registers after ``tracer.db.writer``)."""
    for rec in list(_RECORDERS):
        try:
            rec.end_unfinished(_EXITED)
        except Exception:  # noqa: BLE001, S110 - never fail the interpreter's exit
            pass


atexit.register(_at_exit)


def same_message(a: BaseMessage, b: BaseMessage) -> bool:
    """Whether two message objects hold the same message (a copy, not a new version)."""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an odd payload: count it as changed
        return False
