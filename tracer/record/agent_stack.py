"""The middleware stack of a compiled ``create_agent`` graph, read once.

``agent_stack(agent)`` lists the agent's middleware in list order, each with the
hooks its class overrides: ``[{"name", "class", "module", "hooks"}]``. It reads
what ``create_agent`` built, never runs anything:

- the graph's nodes named ``<Middleware>.<hook>`` (one per node hook, added in
  list order), each a callable bound to its middleware instance;
- the composed ``wrap_model_call`` handler inside the ``model`` node and the
  composed ``wrap_tool_call`` wrapper of the ``tools`` node (``ToolNode``):
  chains of closures ``outer(inner(...))`` whose leaves are the middleware's
  bound hooks (behind LangSmith's ``traceable``, which keeps ``__wrapped__``).

The three orders are merged into one list (the place of two middleware that share
no hook is not shown by the graph: the order ``trace.around`` returned decides
first, then the model call's chain). A middleware with no hook at all
(one that only adds tools) is not found; looptrace's layer probes
(``TraceMiddleware.around``) are left out, and the layer each one records is
marked ``"probed": true``. Anything it cannot
read gives a shorter list, never an error: the replay then falls back on what
the events show. ``TraceMiddleware.attach`` calls it once per agent, off the
hot path, and the callback handler writes the list into the run's ``start``
event (``payload["stack"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracer.vocab.hooks import HOOK_NAMES, merge_orders

_CHAIN_CELLS = ("outer", "inner", "single_handler", "func")  # outer before inner


def _hooks(cls: type) -> list[str]:
    from langchain.agents.middleware import AgentMiddleware

    return [h for h in HOOK_NAMES
            if getattr(cls, h, None) is not getattr(AgentMiddleware, h, None)
            or getattr(cls, "a" + h, None) is not getattr(AgentMiddleware, "a" + h, None)]


def _chain(fn: Any, depth: int = 0) -> list[Any]:
    """The middleware instances of a composed wrap chain, outermost first."""
    from langchain.agents.middleware import AgentMiddleware

    if fn is None or depth > 200:
        return []
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, AgentMiddleware):
        return [owner]
    inner = getattr(fn, "__wrapped__", None)
    if inner is not None and inner is not fn:
        return _chain(inner, depth + 1)
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    if code is None or not cells:
        return []
    named = dict(zip(code.co_freevars, cells, strict=False))
    out: list[Any] = []
    for name in _CHAIN_CELLS:
        cell = named.get(name)
        if cell is None:
            continue
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(value):
            out += _chain(value, depth + 1)
    return out


def _closure_value(fn: Any, name: str) -> Any:
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None)
    if code is None or not cells:
        return None
    cell = dict(zip(code.co_freevars, cells, strict=False)).get(name)
    try:
        return cell.cell_contents if cell is not None else None
    except ValueError:
        return None


def _graph(agent: Any) -> Any:
    seen = 0
    while not hasattr(agent, "builder") and hasattr(agent, "bound") and seen < 8:
        agent, seen = agent.bound, seen + 1  # a RunnableBinding (with_config)
    return agent


def agent_stack(agent: Any, order_hint: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The agent's middleware in list order, with the hooks each one uses.
    ``order_hint``: names in an order known to be the list's (``trace.around``'s)."""
    try:
        from .layers import LayerProbe  # (it imports langchain: only when reading an agent)

        graph = _graph(agent)
        nodes = getattr(getattr(graph, "builder", None), "nodes", None) or {}
        node_order: list[Any] = []
        for name, spec in nodes.items():
            if "." not in str(name):
                continue
            runnable = getattr(spec, "runnable", None)
            for attr in ("func", "afunc"):
                owner = getattr(getattr(runnable, attr, None), "__self__", None)
                if owner is not None:
                    node_order.append(owner)
                    break
        model = getattr(nodes.get("model"), "runnable", None)
        model_chain = _chain(_closure_value(getattr(model, "func", None),
                                            "wrap_model_call_handler"))
        tools = getattr(nodes.get("tools"), "runnable", None)
        tool_chain = _chain(getattr(tools, "_wrap_tool_call", None))
        # (two middleware that share no hook have no order the graph shows: the model
        # call's chain, usually the longest, decides first)
        found = list(dict.fromkeys([*model_chain, *node_order, *tool_chain]))
        hint = [mw for n in order_hint for mw in found if str(getattr(mw, "name", "")) == n]
        merged = merge_orders([hint, model_chain, node_order, tool_chain])
        probed = {p.layer for p in merged if isinstance(p, LayerProbe)}
        out = []
        for mw in merged:
            if isinstance(mw, LayerProbe):
                continue
            cls = type(mw)
            entry: dict[str, Any] = {"name": str(mw.name), "class": cls.__name__,
                                     "module": cls.__module__, "hooks": _hooks(cls)}
            if entry["name"] in probed:
                entry["probed"] = True  # its wrap hooks are recorded layer by layer
            out.append(entry)
        return out
    except Exception:  # noqa: BLE001 - best effort: the events still tell most of it
        return []


__all__ = ["agent_stack", "merge_orders"]
