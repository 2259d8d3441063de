"""The whole state's rows: a key's value as the tracer saw it (``StateRecord``), made into
``state`` and ``state_values`` rows on the writer thread.

On the writer thread a value is serialised the way messages are (redaction included),
hashed, and compared with the key's last stored hash: a ``state`` row is written only
when the value changed, and the value itself (``state_values``) only the first time the
run meets that content (content-addressed: a 150 KB file read back five times is stored
once). A key that left the state (an ephemeral ``jump_to``) is a row with no hash.

A value JSON cannot carry is stored as its type and ``repr``; a cyclic or huge one as
far as it goes (``serialize.dumps``: a marker says how much was cut). What puts the
records on the writer's queue is ``tracer.record.state_keys``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from .serialize import json_default, short_repr

# A state value is cut past this many characters of JSON (with a marker).
MAX_STATE_CHARS = 2_000_000

GONE: Any = object()  # the value of a key that left the state

# A store item's key (``tracer.record.basestore``): ``@store:[namespace, key]``.
STORE_PREFIX = "@store:"


class StateMemory:
    """Per run: what the caller's side last saw of each key (the object, by identity),
    what the writer last stored (the hash), the hashes whose value is stored, and
    the keys a tool's ``Command(update=...)`` wrote that have not been seen yet."""

    __slots__ = ("cmd", "context", "ended", "entries", "hashes", "objs", "store", "stored")

    def __init__(self) -> None:
        self.objs: dict[str, Any] = {}  # caller side
        self.cmd: dict[str, str] = {}  # caller side: key -> tool_call_id
        self.ended: list[str] = []  # caller side: tool calls ended since the state was seen
        self.context = False  # caller side: runtime.context recorded
        self.hashes: dict[str, str | None] = {}  # writer side
        self.stored: set[str] = set()  # writer side
        # writer side: id of a mapping's entry -> (the entry, its hash, its text's size):
        # an entry met again in the next version (the same object) is not serialised again
        self.entries: dict[int, tuple[Any, str, int]] = {}
        # caller side: writes to the LangGraph store not recorded yet (tracer.record.basestore):
        # (key, value or None, by, tool_call_id)
        self.store: list[tuple[str, Any, str | None, str | None]] = []


class StateRecord(NamedTuple):
    """One key's value as the tracer saw it at event ``seq`` (``GONE``: not there)."""

    run_id: str
    memory: StateMemory
    seq: int
    key: str
    value: Any
    by: str | None
    tool_call_id: str | None



def _state_default(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):  # e.g. a context schema
        with contextlib.suppress(Exception):
            return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    out = json_default(obj)
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
                           "__repr__": short_repr(value)}, ensure_ascii=False)
    if len(text) > MAX_STATE_CHARS:
        text = json.dumps({"looptrace_truncated": {"original_chars": len(text),
                                                   "kept_chars": MAX_STATE_CHARS},
                           "head": text[:MAX_STATE_CHARS]}, ensure_ascii=False)
    return text


def value_hash(text: str) -> str:
    """The content address of a stored value (its JSON text)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


# A mapping whose JSON is longer than this is stored entry by entry (each entry's value
# content-addressed on its own, the mapping as the list of their hashes): Deep Agents'
# ``files`` grows by one file at a time, and each file's content is stored once.
SPLIT_CHARS = 4_096
ENTRIES = "looptrace_entries"  # the key of such a mapping's stored form


def state_rows(it: StateRecord, red: Any) -> tuple[tuple[Any, ...] | None,
                                                    list[tuple[Any, ...]]]:
    """On the writer thread: the ``state`` row of ``it`` (None when its value is the
    one stored last for its key) and the ``state_values`` rows of the contents the
    run has not stored yet."""
    mem = it.memory
    values: list[tuple[Any, ...]] = []
    value = it.value
    if value is GONE:
        h = None
    else:
        text = None
        if isinstance(value, Mapping) and value:
            text = _split(mem, it.run_id, value, red, values)
        if text is None:
            text = red(value_json(value))
        h = value_hash(text)
        if mem.hashes.get(it.key, GONE) != h:
            _stored(mem, it.run_id, text, values)
    if mem.hashes.get(it.key, GONE) == h and not it.key.startswith(STORE_PREFIX):
        return None, values  # (a store write is recorded even when it changes nothing)
    mem.hashes[it.key] = h
    return (it.run_id, it.seq, it.key, h, it.by, it.tool_call_id), values


def _split(mem: StateMemory, run_id: str, value: Mapping[Any, Any], red: Any,
           out: list[tuple[Any, ...]]) -> str | None:
    """The stored form of a mapping whose entries together are longer than
    ``SPLIT_CHARS``: the hashes of its entries, each entry stored on its own (and
    serialised once while it is the same object); None for a smaller one."""
    cache = mem.entries
    if len(cache) > 100_000:
        cache.clear()
    entries: dict[str, str] = {}
    made: dict[str, str] = {}
    size = 0
    for k, v in value.items():
        hit = cache.get(id(v))
        if hit is None or hit[0] is not v:
            text = red(value_json(v))
            hit = cache[id(v)] = (v, value_hash(text), len(text))
            made[hit[1]] = text
        entries[str(k)] = hit[1]
        size += hit[2]
    if size <= SPLIT_CHARS:
        return None
    for k, v in value.items():
        h = entries[str(k)]
        if h not in mem.stored:  # (new, or met while the mapping was small)
            mem.stored.add(h)
            out.append((run_id, h, made.get(h) or red(value_json(v))))
    return json.dumps({ENTRIES: entries}, ensure_ascii=False, separators=(",", ":"))


def _stored(mem: StateMemory, run_id: str, text: str, out: list[tuple[Any, ...]]) -> str:
    """The hash of ``text``, with its ``state_values`` row put in ``out`` unless the run
    has it stored already."""
    h = value_hash(text)
    if h not in mem.stored:
        mem.stored.add(h)
        out.append((run_id, h, text))
    return h


STATE_SQL = ("INSERT OR REPLACE INTO state(run_id, seq, key, hash, by, tool_call_id)"
             " VALUES (?,?,?,?,?,?)")
VALUES_SQL = "INSERT OR IGNORE INTO state_values(run_id, hash, data) VALUES (?,?,?)"
