"""The six hooks of a ``create_agent`` loop: the single source of truth.

The schema, the replay graph, the captions and the README table all read
``HOOKS``. A hook's ``node`` is where the replay graph draws it. ``merge_orders``
makes one middleware list of the partial orders the hooks show (the agent's graph
when recording, the events when reading).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Hook:
    name: str
    kind: str  # "node" (fires once) or "wrap" (enter and exit around a call)
    node: str  # the replay-graph node it belongs to
    purpose: str
    can: tuple[str, ...] = ()  # what a middleware can do from this hook


HOOKS: tuple[Hook, ...] = (
    Hook("before_agent", "node", "before_agent",
         "runs once per invocation, before the loop starts: load memory, validate input.",
         ("update state", "jump")),
    Hook("before_model", "node", "before_model",
         "runs before every model call: trim or summarise history, inject context.",
         ("update state", "jump")),
    Hook("wrap_model_call", "wrap", "model",
         "wraps the model call itself: rewrite the request (prompt, tools, model), "
         "retry, fall back, or cache the response.",
         ("rewrite the call", "short-circuit", "retry")),
    Hook("after_model", "node", "after_model",
         "runs after every model call: inspect the reply, ask a human, or jump.",
         ("update state", "jump")),
    Hook("wrap_tool_call", "wrap", "tools",
         "wraps each tool call: retry, time out, or turn an error into a ToolMessage.",
         ("rewrite the call", "short-circuit", "retry")),
    Hook("after_agent", "node", "after_agent",
         "runs once per invocation, after the loop ends: persist, clean up, report.",
         ("update state", "jump back")),
)

HOOK_NAMES: tuple[str, ...] = tuple(h.name for h in HOOKS)
HOOK_BY_NAME: dict[str, Hook] = {h.name: h for h in HOOKS}


def merge_orders(orders: list[list[Any]]) -> list[Any]:
    """One list that keeps the order of each of ``orders`` (each a part of the true
    middleware list): repeatedly take the first head no other order has later."""
    seqs = [list(dict.fromkeys(o)) for o in orders if o]
    out: list[Any] = []
    while any(seqs):
        pick = None
        for s in seqs:
            if s and not any(s[0] in t[1:] for t in seqs):
                pick = s[0]
                break
        if pick is None:  # (inconsistent orders: cannot happen for one agent)
            pick = next(s[0] for s in seqs if s)
        out.append(pick)
        seqs = [[x for x in s if x != pick] for s in seqs]
    return out
