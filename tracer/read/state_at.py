"""Reading the whole state back: every key's versions, and the state at any step.

The read side of ``tracer.record.state_keys`` (it imports nothing of LangChain). A run's
``state`` rows are versions of its keys; ``StateLog.at(seq)`` folds them up to an
event into the state as it was then (``messages`` aside: the replay has those).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tracer.vocab.graph_shape import EPHEMERAL_BY, EPHEMERAL_KEYS

CONTEXT_KEY = "@runtime.context"  # (tracer.record.state_keys writes them: the same names)
ENTRIES = "looptrace_entries"
STORE_PREFIX = "@store:"  # a LangGraph store item's versions (tracer.record.basestore)


def store_item(key: str) -> tuple[tuple[str, ...], str] | None:
    """The (namespace, key) of a store item's ``state`` key; None for another key."""
    if not key.startswith(STORE_PREFIX):
        return None
    try:
        ns, k = json.loads(key[len(STORE_PREFIX):])
        return tuple(str(p) for p in ns), str(k)
    except (ValueError, TypeError):
        return None


def key_label(key: str) -> str:
    """A ``state`` key as a person reads it: a store item as ``store item ns/…:key``."""
    item = store_item(key)
    if item is None:
        return f"state key {key}"
    return f"store item {'/'.join(item[0])}:{item[1]}"


@dataclass(frozen=True, slots=True)
class StateVersion:
    """A key took this value at event ``seq`` (``hash`` None: it left the state)."""

    seq: int
    key: str
    hash: str | None
    by: str | None
    tool_call_id: str | None


@dataclass
class StateLog:
    """Every version of a run's state keys, in order, and their values by hash."""

    versions: list[StateVersion] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    _parsed: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.versions.sort(key=lambda v: v.seq)
        self._seqs = [v.seq for v in self.versions]

    def __bool__(self) -> bool:
        return bool(self.versions)

    def value(self, h: str | None) -> Any:
        """The value stored under ``h`` (parsed once; a missing one says so)."""
        if h is None:
            return None
        if h not in self._parsed:
            text = self.texts.get(h)
            try:
                value = json.loads(text) if text is not None else {
                    "looptrace_missing": "the value was not stored"}
            except ValueError:
                value = {"looptrace_unreadable": text}
            if isinstance(value, dict) and len(value) == 1 and isinstance(
                    value.get(ENTRIES), dict):  # a mapping stored entry by entry
                value = {k: self.value(eh) for k, eh in value[ENTRIES].items()}
            self._parsed[h] = value
        return self._parsed[h]

    def __contains__(self, key: object) -> bool:
        """Whether the run's state ever held ``key``."""
        return any(v.key == key for v in self.versions)

    def keys(self) -> list[str]:
        """Every key the run's state ever held, in the order they first appeared."""
        return list(dict.fromkeys(v.key for v in self.versions if not v.key.startswith("@")))

    def versions_at(self, seq: int) -> dict[str, StateVersion]:
        """The version of each key current at event ``seq`` (keys that left, dropped)."""
        out: dict[str, StateVersion] = {}
        for v in self.versions[:bisect.bisect_right(self._seqs, seq)]:
            if v.hash is None:
                out.pop(v.key, None)
            else:
                out[v.key] = v
        return out

    def at(self, seq: int) -> dict[str, Any]:
        """The state at event ``seq``: every key other than ``messages``."""
        return {k: self.value(v.hash) for k, v in self.versions_at(seq).items()
                if not k.startswith("@")}

    def compared_at(self, seq: int) -> dict[str, Any]:
        """What ``diff`` compares at event ``seq``: every state key but ``messages``
        (``at``) and every store item the run had written (by its ``@store:`` key)."""
        out = self.at(seq)
        for k, v in self.versions_at(seq).items():
            if k.startswith(STORE_PREFIX):
                out[k] = self.value(v.hash)
        return out

    def store_at(self, seq: int) -> dict[tuple[tuple[str, ...], str], Any]:
        """What the run had written to the LangGraph store up to event ``seq``:
        (namespace, key) -> the value it last put (items it deleted left out)."""
        out: dict[tuple[tuple[str, ...], str], Any] = {}
        for k, v in self.versions_at(seq).items():
            item = store_item(k)
            if item is not None:
                out[item] = self.value(v.hash)
        return out

    def store_writes(self) -> list[StateVersion]:
        """Every write the run made to the LangGraph store, in order (``hash`` None:
        a delete)."""
        return [v for v in self.versions if v.key.startswith(STORE_PREFIX)]

    def context(self) -> Any:
        """``runtime.context`` as the run was given it (None if it had none)."""
        v = next((v for v in self.versions if v.key == CONTEXT_KEY), None)
        return self.value(v.hash) if v is not None else None

    def changed_at(self, seq: int) -> list[StateVersion]:
        """The versions recorded at event ``seq`` (the keys that changed there)."""
        i = bisect.bisect_left(self._seqs, seq)
        j = bisect.bisect_right(self._seqs, seq)
        return self.versions[i:j]

    def between(self, after: int, upto: int) -> list[StateVersion]:
        """The versions recorded after event ``after`` and up to event ``upto``."""
        return self.versions[bisect.bisect_right(self._seqs, after):
                             bisect.bisect_right(self._seqs, upto)]

    def history(self, key: str) -> list[StateVersion]:
        """Every version of ``key``, in order."""
        return [v for v in self.versions if v.key == key]

    def final(self) -> dict[str, Any]:
        """The state after the last recorded event."""
        return self.at(self._seqs[-1]) if self._seqs else {}


def _credited(v: StateVersion) -> StateVersion:
    """``v``, its removal of an ephemeral key credited to LangGraph: the record names the
    node that ran last (the tracer's own ``after_agent``, say), which removed nothing."""
    if v.hash is None and v.key in EPHEMERAL_KEYS:
        return StateVersion(v.seq, v.key, None, EPHEMERAL_BY, v.tool_call_id)
    return v


def load_state(query: Callable[[str, Any], list[tuple[Any, ...]]], run_id: str) -> StateLog:
    """A run's state versions and values (``query``: ``TraceDB._query``); an empty log
    for a file older than schema 4 (read-only files are not migrated)."""
    if not query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'state'", ()):
        return StateLog()
    versions = [_credited(StateVersion(*row)) for row in query(
        "SELECT seq, key, hash, by, tool_call_id FROM state WHERE run_id = ? ORDER BY seq, key",
        [run_id])]
    texts = dict(query("SELECT hash, data FROM state_values WHERE run_id = ?", [run_id])) \
        if versions else {}
    return StateLog(versions, texts)
