"""What a ``TraceMiddleware`` asks at each hook firing beyond recording it: its
registered processors (the debugger, ``tracer.debug``), as OpenTelemetry's provider
holds its span processors and never imports them.

A processor has one method, ``visit(site)``, called at every hook firing of the runs
the middleware records (a node hook's ``fire``; a model or tool call ``before`` it
goes down, ``after`` it came back, at its ``error``; and, with ``trace.around``, at
each ``layer`` just inside a middleware). ``visit`` is cheap and never blocks: it
returns None (go on unchanged) or the work to do, which may block (a pause waiting
for its answer): a sync hook runs it, an async hook runs it in a worker thread, so the
event loop never blocks. What the work returns is what the hook goes on with:

- ``before`` and ``layer``: ``(request, answer)``: the request as it goes on down, and
  what to answer with instead of going down (an AIMessage, a ToolMessage), or None;
- ``after``: the response (a ``ModelResponse``, a tool's result);
- ``error``: what to go on with instead of raising (an AIMessage, a ToolMessage), or
  None: raise;
- ``fire``: nothing.

Arming: ``TraceMiddleware(debug=...)`` or ``LOOPTRACE_DEBUG`` asks ``arm``, which asks
the armers registered with ``register`` (the package's root registers the
debugger's, ``tracer/__init__.py``); a processor object passed as ``debug=`` is
registered as it is. A processor may also have ``attach(middleware)``: it is then told
the middleware that holds it (the debugger watches that middleware's graph nodes and
its ``trace.around`` layers), never imported from here.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeAlias

from tracer.errors import UsageError

if TYPE_CHECKING:
    from .recorder import Recorder, RunState

__all__ = ["AFTER", "BEFORE", "ERROR", "FIRE", "LAYER", "Armer", "Down", "HookProcessor",
           "Site", "Work", "adrive", "arm", "drive", "off_loop", "register"]

FIRE = "fire"
BEFORE = "before"
AFTER = "after"
ERROR = "error"
LAYER = "layer"

Work: TypeAlias = Callable[[], object]


@dataclass(slots=True)
class Site:
    """One hook firing, as a processor sees it."""

    recorder: Recorder
    middleware: str  # the recording middleware's name
    run: RunState
    hook: str  # before_agent ... after_agent, wrap_model_call, wrap_tool_call
    at: str  # FIRE, BEFORE, AFTER, ERROR, LAYER
    request: object = None  # a ModelRequest or ToolCallRequest (wrap hooks)
    result: object = None  # AFTER: the response or the tool's result
    state: object = None  # FIRE: the graph state the node hook was given
    error: BaseException | None = None  # ERROR: what the call raised
    layer: str | None = None  # LAYER: the middleware just outside
    inner: bool = False  # BEFORE at the innermost probe: as the model receives it


class HookProcessor(Protocol):
    """Asked at every hook firing (see the module)."""

    def visit(self, site: Site) -> Work | None: ...

    def bind(self, db: str) -> None:
        """The database the middleware records into (the processor's own channel)."""
        ...


# what ``debug=`` is (True, specs, a processor, None: the environment) and the file ->
# the processor it arms, or None: this armer does not arm one
Armer: TypeAlias = Callable[[object, str], "HookProcessor | None"]
_ARMERS: list[Armer] = []


def register(armer: Armer) -> None:
    """Register an armer (once: registering it again changes nothing)."""
    if armer not in _ARMERS:
        _ARMERS.append(armer)


def _is_processor(obj: object) -> bool:
    return callable(getattr(obj, "visit", None)) and callable(getattr(obj, "bind", None))


def arm(debug: object, db: str | os.PathLike[str],
        owner: object = None) -> tuple[HookProcessor, ...]:
    """The processors a middleware made with ``debug=`` (and the environment) holds;
    ``owner``: that middleware, told to each processor that has ``attach``."""
    if debug is False or (debug is None and not os.environ.get("LOOPTRACE_DEBUG")):
        return ()
    path = os.fspath(db)
    out: tuple[HookProcessor, ...]
    if _is_processor(debug):
        proc: HookProcessor = debug  # type: ignore[assignment]  # (checked: it has both)
        proc.bind(path)
        out = (proc,)
    else:
        out = tuple(p for p in (armer(debug, path) for armer in _ARMERS) if p is not None)
    if not out:
        msg = "debug= asks for the debugger, and none is registered (import tracer.debug)"
        raise UsageError(msg)
    if owner is not None:
        for p in out:
            attach = getattr(p, "attach", None)
            if callable(attach):
                attach(owner)
    return out


# -- running a call with its processors, sync and async --------------------------------
class Down:
    """What ``_call`` yields to call the rest of the onion (the handler) with."""

    __slots__ = ("request",)

    def __init__(self, request: object) -> None:
        self.request = request


def drive(call: Generator[Down | Work, object, object],
           handler: Callable[[object], object]) -> object:
    """Run a call (``TraceMiddleware._call``) in a sync hook: the handler and the
    processors' work here."""
    sent: object = None
    thrown: BaseException | None = None
    while True:
        try:
            ask = call.send(sent) if thrown is None else call.throw(thrown)
        except StopIteration as done:
            return done.value
        thrown = None
        try:
            sent = handler(ask.request) if isinstance(ask, Down) else ask()
        except BaseException as exc:  # noqa: BLE001 - thrown into the call, where it raised
            sent, thrown = None, exc


async def off_loop(work: Work) -> object:
    """Run a processor's work (it may block: a pause) off the event loop: in the
    processor's own threads where the work says how (``work.off_loop()``: the
    debugger's, one per pause waiting, so that 20 parallel pauses never queue behind
    asyncio's cores + 4 threads), else in asyncio's."""
    own = getattr(work, "off_loop", None)
    if own is not None:
        return await own()
    return await asyncio.to_thread(work)


async def adrive(call: Generator[Down | Work, object, object],
                  handler: Callable[[object], Awaitable[object]]) -> object:
    """Run a call in an async hook: the handler awaited, the processors' work (which
    may block: a pause) in a worker thread."""
    sent: object = None
    thrown: BaseException | None = None
    while True:
        try:
            ask = call.send(sent) if thrown is None else call.throw(thrown)
        except StopIteration as done:
            return done.value
        thrown = None
        try:
            if isinstance(ask, Down):
                sent = await handler(ask.request)
            else:
                sent = await off_loop(ask)
        except BaseException as exc:  # noqa: BLE001
            sent, thrown = None, exc
