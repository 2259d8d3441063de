"""Recording the whole state: every key other than ``messages``, as versions.

Where the tracer sees the state (its node hooks, the ``request.state`` of its wrap
hooks, and with ``attach`` every graph node's input and the final state), each key
whose value is another object than the one last seen is put on the writer's queue
(``StateRecord``: the object itself, no copy, no serialising on the agent's path).
On the writer thread it becomes ``state`` and ``state_values`` rows
(``tracer.db.state_rows``: written only when the value changed, each content once).
Nothing here raises into the agent: the callers guard it, as every hook of the tracer does.

``messages`` are not recorded here: the recorder keeps them, with versions, in
``messages``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from tracer.db.state_rows import GONE, StateMemory, StateRecord
from tracer.vocab.graph_shape import EPHEMERAL_KEYS

# The keys kept elsewhere: the conversation (``tracer.record.recorder``).
SKIP_KEYS = frozenset({"messages"})

STORE_LOCK = threading.Lock()  # guards ``StateMemory.store``

# ``runtime.context`` (what the invocation was given with ``context=``), recorded once,
# when first seen, under a key no state key can have.
CONTEXT_KEY = "@runtime.context"


def memory_of(run: Any) -> StateMemory:
    mem: StateMemory | None = run.state  # (a RunState: Any keeps the recorder unimported)
    if mem is None:
        mem = run.state = StateMemory()
    return mem


# The keys that never outlive a step (``EPHEMERAL_KEYS``, ``tracer.vocab.graph_shape``):
# gone from the final state even where the graph's output, which leaves out the private
# keys, cannot say so.


def note_state(rec: Any, run: Any, seq: int, state: Any, *, by: str | None = None,
               whole: bool = True, runtime: Any = None) -> None:
    """Record the keys of ``state`` (a node's input, a hook's state) that changed since
    the run last saw them, at event ``seq``, changed by ``by``. ``whole``: ``state``
    holds every key, so a key seen before and missing now has left the state (else
    only the ``EPHEMERAL_KEYS`` have: ``state`` is a graph's output, without its
    private keys). ``runtime``: the hook's, whose ``context`` is recorded the first
    time."""
    mem = run.state
    if mem is not None and mem.store:
        note_store_writes(rec, run, seq)
    if runtime is not None and (mem is None or not mem.context):
        context = getattr(runtime, "context", None)
        if context is not None:
            mem = memory_of(run)
            mem.context = True
            rec.writer.put(StateRecord(run.id, mem, seq, CONTEXT_KEY, context, "runtime", None))
    if not isinstance(state, Mapping):
        return
    if mem is None:
        if len(state) <= 1 and "messages" in state:  # (the common case: nothing but messages)
            return
        mem = memory_of(run)
    objs = mem.objs
    put = rec.writer.put
    # A change seen after the tools node ran one tool call alone was made by that call
    # (Deep Agents' state backend writes ``files`` straight to the channel, no Command).
    lone = mem.ended[0] if by == "tools" and len(mem.ended) == 1 else None
    for key, value in state.items():
        if key in SKIP_KEYS or objs.get(key, GONE) is value:
            continue
        key = str(key)
        objs[key] = value
        put(StateRecord(run.id, mem, seq, key, value, by, mem.cmd.pop(key, None) or lone))
    for key in [k for k in objs if k not in state and (whole or k in EPHEMERAL_KEYS)]:
        del objs[key]
        put(StateRecord(run.id, mem, seq, key, GONE, by, mem.cmd.pop(key, None) or lone))
    if mem.ended:
        mem.ended = []


def note_store_writes(rec: Any, run: Any, seq: int, tool_call_id: str | None = None) -> None:
    """Record the store writes of ``run`` not recorded yet (all of them, or those made
    inside tool call ``tool_call_id``) at event ``seq``."""
    mem = run.state
    if mem is None or not mem.store:
        return
    with STORE_LOCK:  # (a tool's thread may be adding one)
        pending = mem.store
        if tool_call_id is None:
            mine = pending
            mem.store = []
        else:
            mine = [w for w in pending if w[3] == tool_call_id]
            if mine:
                mem.store = [w for w in pending if w[3] != tool_call_id]
    for key, value, by, tcid in mine:
        rec.writer.put(StateRecord(run.id, mem, seq, key, GONE if value is None else value,
                                   by, tcid))


def note_tool_end(run: Any, tool_call_id: str | None, result: Any) -> None:
    """A tool call ended with ``result``. The keys a ``Command(update=...)`` writes,
    other than messages, are attributed to that call where they are next seen to
    change."""
    if not tool_call_id:
        return
    mem = memory_of(run)
    mem.ended.append(tool_call_id)
    update = getattr(result, "update", None)
    if isinstance(update, Mapping):
        for k in update:
            if k not in SKIP_KEYS:
                mem.cmd[str(k)] = tool_call_id
