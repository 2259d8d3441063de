"""Recording the whole state: every key other than ``messages``, as versions.

Where the tracer sees the state (its node hooks, the ``request.state`` of its wrap
hooks, and with ``attach`` every graph node's input and the final state), each key
whose value is another object than the one last seen is put on the writer's queue
(``StateRecord``: the object itself, no copy, no serialising on the agent's path).
On the writer thread its value is serialised the way messages are (redaction
included), hashed, and compared with the key's last stored hash: a ``state`` row is
written only when the value changed, and the value itself (``state_values``) only
the first time the run meets that content (content-addressed: a 150 KB file read
back five times is stored once). A key that left the state (an ephemeral
``jump_to``) is a row with no hash.

A value JSON cannot carry is stored as its type and ``repr``; a cyclic or huge one as
far as it goes (``serialize.dumps``: a marker says how much was cut). Nothing here
raises into the agent: the callers guard it, as every hook of the tracer does.

``messages`` are not recorded here: the recorder keeps them, with versions, in
``messages``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from .serialize import _default, _short_repr

# The keys kept elsewhere: the conversation (``tracer.recorder``).
SKIP_KEYS = frozenset({"messages"})

# A state value is cut past this many characters of JSON (with a marker).
MAX_STATE_CHARS = 2_000_000

GONE: Any = object()  # the value of a key that left the state


class StateMemory:
    """Per run: what the caller's side last saw of each key (the object, by identity),
    what the writer last stored (the hash), the hashes whose value is stored, and
    the keys a tool's ``Command(update=...)`` wrote that have not been seen yet."""

    __slots__ = ("cmd", "hashes", "objs", "stored")

    def __init__(self) -> None:
        self.objs: dict[str, Any] = {}  # caller side
        self.cmd: dict[str, str] = {}  # caller side: key -> tool_call_id
        self.hashes: dict[str, str | None] = {}  # writer side
        self.stored: set[str] = set()  # writer side


class StateRecord(NamedTuple):
    """One key's value as the tracer saw it at event ``seq`` (``GONE``: not there)."""

    run_id: str
    memory: StateMemory
    seq: int
    key: str
    value: Any
    by: str | None
    tool_call_id: str | None


def memory_of(run: Any) -> StateMemory:
    mem = run.state
    if mem is None:
        mem = run.state = StateMemory()
    return mem


def note_state(rec: Any, run: Any, seq: int, state: Any, *, by: str | None = None,
               whole: bool = True) -> None:
    """Record the keys of ``state`` (a node's input, a hook's state) that changed since
    the run last saw them, at event ``seq``, changed by ``by``. ``whole``: ``state``
    holds every key, so a key seen before and missing now has left the state."""
    if not isinstance(state, Mapping):
        return
    mem = run.state
    if mem is None:
        if len(state) <= 1 and "messages" in state:  # (the common case: nothing but messages)
            return
        mem = memory_of(run)
    objs = mem.objs
    put = rec.writer.put
    for key, value in state.items():
        if key in SKIP_KEYS or objs.get(key, GONE) is value:
            continue
        key = str(key)
        objs[key] = value
        put(StateRecord(run.id, mem, seq, key, value, by, mem.cmd.pop(key, None)))
    if whole:
        for key in [k for k in objs if k not in state]:
            del objs[key]
            put(StateRecord(run.id, mem, seq, key, GONE, by, mem.cmd.pop(key, None)))


def note_command(run: Any, tool_call_id: str | None, update: Any) -> None:
    """A tool call returned ``Command(update=update)``: the keys it writes, other than
    messages, are attributed to that call where they are next seen to change."""
    if not tool_call_id or not isinstance(update, Mapping):
        return
    keys = [str(k) for k in update if k not in SKIP_KEYS]
    if keys:
        cmd = memory_of(run).cmd
        for k in keys:
            cmd[k] = tool_call_id


def _state_default(obj: Any) -> Any:
    out = _default(obj)
    if isinstance(out, dict) and set(out) == {"__repr__"}:
        # (what JSON cannot carry: its type and repr)
        t = type(obj)
        return {"__type__": f"{t.__module__}.{t.__qualname__}", "__repr__": out["__repr__"]}
    return out


_ENCODER = json.JSONEncoder(default=_state_default, ensure_ascii=False, separators=(",", ":"),
                            sort_keys=False)


def value_json(value: Any) -> str:
    """JSON text of a state value; never raises (type and repr for the rest)."""
    try:
        text = _ENCODER.encode(value)
    except Exception:  # noqa: BLE001 - a cycle, a broken __repr__ inside ...
        t = type(value)
        text = json.dumps({"__type__": f"{t.__module__}.{t.__qualname__}",
                           "__repr__": _short_repr(value)}, ensure_ascii=False)
    if len(text) > MAX_STATE_CHARS:
        text = json.dumps({"looptrace_truncated": {"original_chars": len(text),
                                                   "kept_chars": MAX_STATE_CHARS},
                           "head": text[:MAX_STATE_CHARS]}, ensure_ascii=False)
    return text


def value_hash(text: str) -> str:
    """The content address of a stored value (its JSON text)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def state_rows(it: StateRecord, red: Any) -> tuple[tuple[Any, ...] | None,
                                                    tuple[Any, ...] | None]:
    """On the writer thread: the ``state`` row of ``it`` (None when its value is the
    one stored last for its key) and the ``state_values`` row (None when the run has
    that content stored already)."""
    mem = it.memory
    if it.value is GONE:
        text, h = None, None
    else:
        text = red(value_json(it.value))
        h = value_hash(text)
    if mem.hashes.get(it.key, GONE) == h:
        return None, None
    mem.hashes[it.key] = h
    row = (it.run_id, it.seq, it.key, h, it.by, it.tool_call_id)
    if h is None or h in mem.stored:
        return row, None
    mem.stored.add(h)
    return row, (it.run_id, h, text)


STATE_SQL = ("INSERT OR REPLACE INTO state(run_id, seq, key, hash, by, tool_call_id)"
             " VALUES (?,?,?,?,?,?)")
VALUES_SQL = "INSERT OR IGNORE INTO state_values(run_id, hash, data) VALUES (?,?,?)"
