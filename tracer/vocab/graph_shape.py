"""The loop as a graph: its nodes, its edges, and the node each recorded hook lights.

Shared vocabulary, at the bottom of the house with ``tracer.vocab.hooks``: the replay's step
model (``tracer.read.steps``), the graph's drawing (``tracer.read.graph_layout``) and the replayer
JSON all read it; it reads nothing of a recorded run.
"""

from __future__ import annotations

from .hooks import HOOK_BY_NAME

# The nodes in drawing order, and every edge the loop can take.
GRAPH_NODES: tuple[str, ...] = (
    "START", "before_agent", "before_model", "model", "after_model", "tools", "after_agent", "END",
)
GRAPH_EDGES: tuple[tuple[str, str], ...] = (
    ("START", "before_agent"),
    ("before_agent", "before_model"),
    ("before_model", "model"),
    ("model", "after_model"),
    ("after_model", "tools"),  # the conditional edge: tool calls asked for
    ("after_model", "after_agent"),  # the conditional edge: a plain answer
    ("tools", "before_model"),  # the back edge
    ("after_agent", "END"),
)

# Dispatch table: event hook -> graph node.
HOOK_NODE: dict[str, str] = {
    "before_agent": "before_agent",
    "before_model": "before_model",
    "wrap_model_call": "model",
    "model": "model",
    "after_model": "after_model",
    "wrap_tool_call": "tools",
    "tool": "tools",
    "after_agent": "after_agent",
}

# What a step is, for the player's "next model call / tool / error" jumps.
STEP_KINDS = ("model", "tool", "error", "interrupt", "hook", "run")
# The hooks that are graph nodes of their own (a wrap hook is the node it wraps).
NODE_HOOKS = frozenset(h.name for h in HOOK_BY_NAME.values() if h.kind == "node")

# The state keys that never outlive a step (``create_agent``'s ``jump_to`` is an
# ``EphemeralValue`` channel): LangGraph clears them itself after the step that wrote them,
# so their removal is no hook's doing (``EPHEMERAL_BY`` says who, on the read side).
EPHEMERAL_KEYS = ("jump_to",)
EPHEMERAL_BY = "LangGraph (an ephemeral channel: the graph clears it after one step)"

__all__ = ["EPHEMERAL_BY", "EPHEMERAL_KEYS", "GRAPH_EDGES", "GRAPH_NODES", "HOOK_NODE",
           "NODE_HOOKS", "STEP_KINDS"]
