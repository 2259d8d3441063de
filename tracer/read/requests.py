"""A model call's request beyond its messages: the system prompt, the tools, the model
and its settings, as the call sent them.

The recorder writes the system prompt and the tool schemas only when they differ from
what the run last wrote (``system_same`` / ``tool_names`` otherwise:
``tracer.record.recorder.note_request``), so a call's own ``enter`` payload may name
them without holding them. ``model_request`` walks the run's model calls up to the
one asked for and gives them whole: one rule for every reader (``looptrace show``,
the MCP server, the wire formats).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracer.vocab.records import MODEL_HOOKS

from .loader import Run


@dataclass
class ModelRequest:
    """What model call ``seq`` sent besides its messages."""

    seq: int
    system: str | None = None
    tools: list[Any] = field(default_factory=list)  # the schemas, as the model saw them
    tool_names: list[str] | None = None  # the names this call offered, when a subset
    model: str | None = None
    tool_choice: Any = None
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        tools = self.tools if self.tool_names is None else [
            t for t in self.tools if _name(t) in self.tool_names]
        out: dict[str, Any] = {"system": self.system, "tools": tools}
        if self.model:
            out["model"] = self.model
        if self.tool_choice is not None:
            out["tool_choice"] = self.tool_choice
        if self.settings:
            out["settings"] = self.settings
        return out


def _name(t: Any) -> Any:
    if isinstance(t, dict):
        fn = t.get("function")
        return fn.get("name") if isinstance(fn, dict) else t.get("name")
    return getattr(t, "name", t)


def model_request(run: Run, seq: int) -> ModelRequest | None:
    """The request of the model call whose ``enter`` event is ``seq``; None when no
    model call begins there."""
    req = ModelRequest(seq)
    found = False
    for ev in run.events:
        if ev.seq > seq:
            break
        if ev.hook not in MODEL_HOOKS or ev.phase != "enter":
            continue
        p = ev.payload if isinstance(ev.payload, dict) else {}
        if isinstance(p.get("system"), str):
            req.system = p["system"]
        elif ev.seq == seq and not p.get("system_same") and "system" not in p:
            req.system = None if ev.hook == "model" else req.system
        if isinstance(p.get("tools"), list):
            req.tools = p["tools"]
            req.tool_names = None
        if ev.seq == seq:
            found = True
            if isinstance(p.get("tool_names"), list):
                req.tool_names = [str(n) for n in p["tool_names"]]
            req.model = p.get("model") if isinstance(p.get("model"), str) else None
            req.tool_choice = p.get("tool_choice")
            settings = p.get("model_settings")
            req.settings = dict(settings) if isinstance(settings, dict) else {}
    return req if found else None
