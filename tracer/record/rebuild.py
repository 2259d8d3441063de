"""How a live agent can be built again, for a rewind (``tracer.whatif.rewind``).

- ``Build``: the ``create_agent`` call that built an agent, as ``looptrace debug``'s
  wrapper of ``create_agent`` saw it (``tracer.record.autohook.capturing``), kept on
  the agent's ``TraceMiddleware`` (``builds_of``). Calling it again with another
  middleware list builds the same agent (the same model, tools, prompt and objects:
  they are the ones the script made, in this process).
- ``BEFORE_FORK``: set, in a rewound run's context, to a function that says whether
  the run is still in its part served from the record (before step K): the debugger
  keeps quiet there (``quiet``), and pauses at the breakpoints from step K on.

- ``register`` / ``starter``: the function that starts a rewind (the fork machinery,
  ``tracer.whatif.rewind``), registered by the package's root as the debugger is
  (``tracer/__init__.py``): the debugger, a sibling of the fork, calls it from here.

Nothing here imports LangChain, the debugger or the fork.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BEFORE_FORK", "Build", "builds_of", "keep", "quiet", "register", "starter"]

BEFORE_FORK: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "looptrace_before_fork", default=None)

_ATTR = "_looptrace_builds"


@dataclass(frozen=True)
class Build:
    """One ``create_agent(*args, **kwargs)`` call: ``create`` is the function called
    (``looptrace debug``'s wrapper, so that a rebuilt agent is debugged as the first
    was); ``middleware``: the list the script gave (without the tracer looptrace added)."""

    create: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    middleware: tuple[Any, ...] = ()

    @property
    def name(self) -> str | None:
        name = self.kwargs.get("name")
        return name if isinstance(name, str) else None

    def same_agent(self, other: Build) -> bool:
        """``other`` builds the same agent: the same function, given the same objects
        (the middleware aside)."""
        return (self.create is other.create and len(self.args) == len(other.args)
                and all(a is b for a, b in zip(self.args, other.args, strict=True))
                and self.kwargs.keys() == other.kwargs.keys()
                and all(self.kwargs[k] is other.kwargs[k] for k in self.kwargs))

    def factory(self) -> Callable[..., Any]:
        """A factory of the kind ``rerun`` takes: its ``middleware`` parameter
        defaults to the script's list."""
        def make_agent(middleware: Any = self.middleware) -> Any:
            return self.create(*self.args, **{**self.kwargs, "middleware": list(middleware)})

        return make_agent


def keep(middleware: object, build: Build) -> None:
    """Remember on ``middleware`` (the agent's tracer) that ``build`` made an agent."""
    got = builds_of(middleware)
    if any(b.same_agent(build) for b in got):
        return  # (a rewind's own rebuild: the same call again)
    try:
        setattr(middleware, _ATTR, [*got, build])
    except (AttributeError, TypeError):  # (a middleware that takes no attribute)
        return


def builds_of(middleware: object) -> list[Build]:
    """The ``create_agent`` calls that built agents around ``middleware``."""
    got = getattr(middleware, _ATTR, None)
    return list(got) if isinstance(got, list) else []


def quiet() -> bool:
    """Whether this context is a rewound run still served from the record (before its
    step K): the debugger does not pause there."""
    fn = BEFORE_FORK.get()
    return fn is not None and bool(fn())


_STARTERS: list[Callable[..., dict[str, Any]]] = []


def register(start: Callable[..., dict[str, Any]]) -> None:
    """The function that starts a rewind (``tracer.whatif.rewind.start``'s keywords)."""
    if start not in _STARTERS:
        _STARTERS.append(start)


def starter() -> Callable[..., dict[str, Any]] | None:
    return _STARTERS[-1] if _STARTERS else None
