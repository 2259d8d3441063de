"""The chat model of an agent factory: what ``create_agent`` was given as ``model``.

``agent_model("my_agent:make_agent")`` builds the agent the way a rerun or a fork does
(``tracer.whatif.rerun``: the factory called with its own middleware list, a
``TraceMiddleware`` first when the list has none) and takes the chat model out of the
compiled graph's ``model`` node: ``create_agent`` (and ``create_deep_agent``, which
calls it) resolves ``model`` (an ``init_chat_model`` name is made a chat model) and
its ``model`` node closes over it. The agent is built, never run: the tracer added is
one writing to a file of its own in a folder removed at once, and nothing reaches the
trace database.

A factory whose graph has no ``create_agent`` model node (a plain ``StateGraph``)
raises ``RerunError`` saying so.
"""

from __future__ import annotations

import inspect
import os
import tempfile
from typing import Any

from tracer.errors import RerunError

from .rerun import default_stack, load_factory

__all__ = ["agent_model"]


def agent_model(agent: Any) -> Any:
    """The chat model of ``agent`` (a factory, or ``module:factory``)."""
    factory = load_factory(agent) if isinstance(agent, str) else agent
    stack = default_stack(factory)
    name = agent if isinstance(agent, str) else getattr(factory, "__name__", repr(factory))
    from tracer.record.middleware import TraceMiddleware

    with tempfile.TemporaryDirectory(prefix="looptrace-agent-model-") as folder:
        added = None
        if not any(isinstance(m, TraceMiddleware) for m in stack):
            added = TraceMiddleware(db=os.path.join(folder, "unused.db"))
            stack = [added, *stack]
        try:
            built = factory(middleware=stack)
        except RerunError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's factory
            msg = f"the agent factory {name} failed: {type(exc).__name__}: {exc}"
            raise RerunError(msg.splitlines()[0]) from None
        finally:
            if added is not None:
                added.close()
    model = _model_of(built)
    if model is None:
        msg = (f"the agent factory {name} built no create_agent agent: its graph has no "
               "model node to take the model from")
        raise RerunError(msg)
    return model


def _model_of(graph: Any) -> Any:
    """The ``model`` the ``create_agent`` graph ``graph`` (or a binding of it) closes over."""
    seen = 0
    while not hasattr(graph, "nodes") and hasattr(graph, "bound") and seen < 8:
        graph, seen = graph.bound, seen + 1  # (``trace.attach``: a RunnableBinding)
    node = (getattr(graph, "nodes", None) or {}).get("model")
    func = getattr(getattr(node, "bound", None), "func", None)
    if func is None:
        return None
    model = inspect.getclosurevars(func).nonlocals.get("model")
    return model if hasattr(model, "invoke") else None
