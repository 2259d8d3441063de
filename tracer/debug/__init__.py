"""The debugger: breakpoints at any hook of a running agent, pause, look, edit, go on.

- ``tracer.debug.breakpoints``: where and when (``--break`` specs);
- ``tracer.debug.session``: the debugger inside the agent's process
  (``TraceMiddleware(debug=...)``, ``LOOPTRACE_DEBUG``);
- ``tracer.debug.hooks``: where the middleware asks it (``tracer.record.processors``);
- ``tracer.debug.nodes``: at a graph's nodes (``node:NAME``, ``tracer.record.node_hook``),
  and a ``state`` edit made through the graph's reducers;
- ``tracer.debug.condition``, ``tracer.debug.reach``: ``SPEC if EXPR``, and breakpoints
  that cannot hit;
- ``tracer.debug.frames``: stepping into a subagent (``step`` at its tool call) and out
  of it (``out``), and out of a subgraph;
- what may change at a pause: ``tracer.vocab.edits`` (made by ``tracer.record.edit_apply``);
- ``tracer.debug.channel``: the trace database's tables between the agent and whoever
  drives it (the app, ``looptrace debug``'s terminal, MCP).
"""

from __future__ import annotations

from .breakpoints import FORMS, Breakpoint, parse
from .channel import COMMANDS, NotPaused, answer, arm, clear, list_paused, pending
from .session import DebugAborted, Debugger

__all__ = ["COMMANDS", "FORMS", "Breakpoint", "DebugAborted", "Debugger", "NotPaused",
           "answer", "arm", "clear", "list_paused", "parse", "pending"]
