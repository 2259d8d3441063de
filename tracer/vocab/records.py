"""The event format: one definition for the write side and the read side.

What the hooks put on the writer's queue is one of the typed records below
(``Writer`` dispatches on their type); what the loader reads back are rows of
the same columns. The names an event can carry (hooks and phases), which of
them make a model call or a tool call, and the key that identifies a message
across the two sides are defined here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from .hooks import HOOK_NAMES

if TYPE_CHECKING:  # (the read side imports this module: it must not import LangChain)
    from langchain_core.messages import BaseMessage

# -- names ---------------------------------------------------------------------
# A model call is recorded by the middleware's wrap hook (``wrap_model_call``) or,
# for a loop without middleware, by the callback handler (``model``); the same
# for tool calls. Every reader asks these sets, never spells the pair out.
MODEL_HOOKS: frozenset[str] = frozenset({"wrap_model_call", "model"})
TOOL_HOOKS: frozenset[str] = frozenset({"wrap_tool_call", "tool"})

# Every hook an event can name: the six middleware hooks, and ``run`` (a run's
# start/end/error), ``model`` / ``tool`` (calls recorded by the callback handler),
# ``node`` (a node of a plain graph), ``interrupt``, ``resume`` and ``history`` (a
# change to the conversation).
EVENT_HOOKS: tuple[str, ...] = (*HOOK_NAMES, "run", "model", "tool", "node", "interrupt",
                                "resume", "history")
# Every phase. ``sent``: what the model received when layers inside the tracer
# rewrote the request it recorded at ``enter``; ``layer``: what one wrap layer did
# (``TraceMiddleware.around``); ``pause``: the debugger paused the run at this hook
# (``tracer.debug``); ``debug``: how the pause ended (the command, an edit with its
# before and after).
PHASES: tuple[str, ...] = ("fire", "enter", "sent", "layer", "exit", "error", "interrupt",
                           "start", "end", "pause", "debug")


def tool_name(t: Any) -> str:
    """The name of a tool as a model-call payload lists it: a LangChain tool, or a
    provider tool schema given as a dict (OpenAI's ``{"function": {"name"}}`` or a
    flat ``{"name"}``)."""
    if isinstance(t, dict):
        fn = t.get("function")
        return str(fn.get("name") if isinstance(fn, dict) else t.get("name"))
    return str(getattr(t, "name", None) or t)


# -- records on the writer's queue -----------------------------------------------


class EventRecord(NamedTuple):
    """One row of ``events``; ``payload`` is any value, or an object with
    ``__looptrace_json__`` that the writer builds off the agent's thread."""

    run_id: str
    seq: int
    ts: float
    hook: str
    phase: str
    duration_ms: float | None
    middleware: str | None
    lap: int
    tool_call_id: str | None
    task: str | None
    payload: Any


class MessageRecord(NamedTuple):
    """One row of ``messages``: ``message`` at ``position`` from event ``seq`` on;
    ``version`` 0 when it first appears, 1 for a later version of it."""

    run_id: str
    position: int
    seq: int
    message: BaseMessage
    version: int


class RunRecord(NamedTuple):
    """Fields of a ``runs`` row to set (merged in order); a function is called on the
    writer thread, in order with the other records."""

    run_id: str
    fields: dict[str, Any] | Callable[[], dict[str, Any]]


class StaleRunsRecord(NamedTuple):
    """Close the runs of ``thread_id`` that another process left ``running`` (it exited
    or died before their end was recorded) when ``run_id``, the thread's next run,
    starts: they become ``error`` with ``error``'s text (``{pid}``: the process).
    Another process: another ``pid``, or this pid before ``since`` (this process's
    start: a restarted container often gets the same pid)."""

    thread_id: str
    run_id: str
    pid: int
    error: str
    ended_at: float
    since: float


class WireRecord(NamedTuple):
    """One row of ``wire`` (a provider HTTP exchange)."""

    row: dict[str, Any]


class Deferred(NamedTuple):
    """Work to do on the writer thread in order with the records around it; the
    records it puts are written in its place."""

    fn: Callable[..., None]
    args: tuple[Any, ...]


Record = EventRecord | MessageRecord | RunRecord | StaleRunsRecord | WireRecord | Deferred
