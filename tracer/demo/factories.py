"""The demo agents as factories, for reruns and forks of the demo's runs and the bundled
sample traces: ``looptrace rerun RUN --agent tracer.demo.factories:weather --db DB``,
and the app's "Fork here" on a sample run (``tracer.demo.catalog.demo_agent`` names
the factory from the run's name and model, ``DEMO_FACTORIES``).

Each factory builds the demo agent of its name (``tracer.demo.scenarios.AGENTS``) with
the scripted model it was recorded with. Its ``middleware`` parameter defaults to the
agent's own middleware without a tracer: ``looptrace rerun`` then puts a
``TraceMiddleware`` writing to ``--db`` first in it, and the factory attaches that
tracer's callback handler, as the demo did when it recorded (``trace.attach``; a Deep
Agents subagent is then nested under its parent). Called with no tracer in
``middleware``, a factory adds one writing to ``looptrace.db``.

``middleware-stack`` has no factory: its layers are recorded one at a time by its own
tracer (``trace.around``), which a rerun's tracer cannot take over.

Example:
    ```python
    from tracer import rerun

    rerun(run_id, agent="tracer.demo.factories:weather", db="looptrace.db")
    ```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracer.record.middleware import TraceMiddleware

from .catalog import DEMO_FACTORIES
from .scenarios import AGENTS, approvals_hitl, stuck_limit


def _build(name: str, middleware: Sequence[Any]) -> Any:
    tracer = next((m for m in middleware if isinstance(m, TraceMiddleware)), None)
    if tracer is None:
        tracer = TraceMiddleware()
        middleware = [tracer, *middleware]
    # (the demo is made for the tracer's file: its own tracer, unused, shares the writer)
    return AGENTS[name](tracer.recorder.path).factory(middleware=list(middleware))


def weather(middleware: Sequence[Any] = ()) -> Any:
    """The ``weather`` demo: one tool call, then the answer."""
    return _build("weather", middleware)


def shopping(middleware: Sequence[Any] = ()) -> Any:
    """The ``shopping`` demo: parallel calls, a tool that raises, an unknown tool."""
    return _build("shopping", middleware)


def repeated_tool(middleware: Sequence[Any] = (stuck_limit(),)) -> Any:
    """The ``repeated-tool`` demo (run ``stuck-search``), with its call limit."""
    return _build("repeated-tool", middleware)


def deep_agent(middleware: Sequence[Any] = ()) -> Any:
    """The ``deep-agent`` demo (run ``deep-research``) and its ``researcher`` subagent."""
    return _build("deep-agent", middleware)


def deep_workspace(middleware: Sequence[Any] = ()) -> Any:
    """The ``deep-workspace`` demo (run ``release-notes``)."""
    return _build("deep-workspace", middleware)


def human_in_the_loop(middleware: Sequence[Any] = (approvals_hitl(),)) -> Any:
    """The ``human-in-the-loop`` demo (run ``approvals``), with its approvals; a rerun
    gives the recorded decisions."""
    return _build("human-in-the-loop", middleware)


def hostile_content(middleware: Sequence[Any] = ()) -> Any:
    """The ``hostile-content`` demo (run ``hostile-page``)."""
    return _build("hostile-content", middleware)


def tool_validation_error(middleware: Sequence[Any] = ()) -> Any:
    """The ``tool-validation-error`` demo (run ``booking``)."""
    return _build("tool-validation-error", middleware)


def tool_exception(middleware: Sequence[Any] = ()) -> Any:
    """The ``tool-exception`` demo (run ``stock-check``): it fails, as recorded."""
    return _build("tool-exception", middleware)


__all__ = ["DEMO_FACTORIES", "deep_agent", "deep_workspace", "hostile_content",
           "human_in_the_loop", "repeated_tool", "shopping", "tool_exception",
           "tool_validation_error", "weather"]
