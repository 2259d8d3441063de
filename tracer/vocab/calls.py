"""A model call decoded from its events: its whole request, and the tokens it used.

The recorder does not repeat what a run already wrote
(``tracer.record.recorder.note_request``): a model call's ``enter`` payload holds its
system prompt (``system``) and its tool schemas (``tools``) only when they differ from
the last ones the run wrote; otherwise it says ``system_same: true`` and names the
tools it offered (``tool_names``). This module is the one reader of that rule
(besides the payload type and the recorder): ``Requests`` reads a run's ``enter``
payloads in order and gives each call's ``CallRequest`` whole. Every other reader
(``tracer.read.calls`` for a loaded run, the OTLP export on its rows) goes through it.

The rules, for the payload of each model call's ``enter``, in record order:

- ``system`` (a string, or a provider's content blocks): the call's system prompt,
  and the one later calls mean by ``system_same``; ``system_same``: the last one
  written; neither: the call had no system prompt.
- ``tools`` (schemas): offered, and kept for later calls; ``tool_names``: the kept
  schemas of those names were offered; neither: the payload does not say
  (``tool_names`` is None, no schemas).
- ``model``, ``tool_choice``, ``model_settings``: the call's own, never carried.

``Usage.of(payload)`` reads the token counts of a model call's ``exit`` payload (or of
a model call a node hook made, ``NodePayload.model_calls``): one rule for the
timeline, the loop checks, the captions, the cassette, the OTLP export and the cost.

The bottom layer: pure, no LangChain, no import of the project beyond ``vocab``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .content import content_text


def tool_name(schema: object) -> str | None:
    """The name of one recorded tool schema: OpenAI's function format
    (``{"type": "function", "function": {"name": ...}}``) or flat (Anthropic's, a
    LangChain tool's ``{"name": ...}``); a bare string is its own name."""
    if isinstance(schema, str):
        return schema
    if not isinstance(schema, Mapping):
        return None
    fn = schema.get("function")
    name = fn.get("name") if isinstance(fn, Mapping) else schema.get("name")
    return str(name) if name is not None else None


def tool_names(payload: Mapping[str, Any]) -> list[str] | None:
    """The tool names a model call's ``enter`` payload says it offered, in order.

    The schemas (``tools``) when the payload holds them, else the names
    (``tool_names``); None when it holds neither (it does not say). A schema without
    a name reads as ``"?"``.
    """
    tools = payload.get("tools")
    if isinstance(tools, list):
        return [tool_name(t) or "?" for t in tools]
    names = payload.get("tool_names")
    if isinstance(names, list):
        return [str(n) for n in names]
    return None


@dataclass(frozen=True)
class CallRequest:
    """What one model call sent besides its messages, whole (see the module doc).

    Attributes:
        system: the system prompt as text (content blocks' texts joined by newlines,
            as ``content_text`` shows them); None: the call had none.
        system_recorded: the system prompt as recorded: a string, or the content
            blocks kept (Anthropic's prompt caching marks the last one).
        tools: the schemas of the tools offered, as recorded.
        tool_names: the names of the tools offered, in order; None when the record
            does not say.
        model: the model the call asked for, when the record names it.
        tool_choice: the request's tool choice, as it carried it.
        settings: the request's model settings (``model_settings``).
    """

    system: str | None = None
    system_recorded: Any = None
    tools: list[Any] = field(default_factory=list)
    tool_names: list[str] | None = None
    model: str | None = None
    tool_choice: Any = None
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON (``looptrace show --json``, MCP ``get_step``):
        ``system`` as text, ``system_blocks`` when it was recorded as content blocks,
        ``tools`` (the schemas), and ``model`` / ``tool_choice`` / ``settings`` when set."""
        out: dict[str, Any] = {"system": self.system}
        if self.system_recorded is not None and not isinstance(self.system_recorded, str):
            out["system_blocks"] = self.system_recorded
        out["tools"] = self.tools
        if self.model:
            out["model"] = self.model
        if self.tool_choice is not None:
            out["tool_choice"] = self.tool_choice
        if self.settings:
            out["settings"] = self.settings
        return out


class Requests:
    """Reads one run's model-call ``enter`` payloads in record order (``read``), each
    into its whole ``CallRequest``. Feed every ``enter`` of the run's model calls, and
    nothing else (a ``"sent"`` or a layer's payload is not what the run last wrote)."""

    def __init__(self) -> None:
        self._system: Any = None
        self._schemas: list[Any] = []

    def read(self, payload: object) -> CallRequest:
        p: Mapping[str, Any] = payload if isinstance(payload, Mapping) else {}
        system: Any = None
        if p.get("system") is not None:
            system = self._system = p["system"]
        elif p.get("system_same"):
            system = self._system
        names = tool_names(p)
        if isinstance(p.get("tools"), list):
            self._schemas = list(p["tools"])
            tools = list(self._schemas)
        elif names is not None:
            wanted = set(names)
            tools = [t for t in self._schemas if tool_name(t) in wanted]
        else:
            tools = []
        model = p.get("model")
        settings = p.get("model_settings")
        return CallRequest(
            system=None if system is None else content_text(system),
            system_recorded=system, tools=tools, tool_names=names,
            model=model if isinstance(model, str) and model else None,
            tool_choice=p.get("tool_choice"),
            settings=dict(settings) if isinstance(settings, Mapping) else {})


def _count(d: object, *keys: str) -> int | None:
    """The first of ``keys`` in ``d`` that holds a count (an int, not a bool, not
    negative); None: none does (not reported, which is not 0)."""
    if not isinstance(d, Mapping):
        return None
    for k in keys:
        v = d.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return None


@dataclass(frozen=True)
class Usage:
    """The tokens one model call used, as its reply reported them (LangChain's
    ``usage_metadata``); a count that is None was not reported, which is not 0.

    Attributes:
        input: ``input_tokens``; it includes cache reads and writes (LangChain's rule).
        output: ``output_tokens``; it includes reasoning.
        total: ``total_tokens`` when reported, else ``input + output`` (either one
            alone when only one is reported); None when neither is.
        cache_read: ``input_token_details.cache_read`` (OpenAI's ``priority_`` /
            ``flex_`` tiers counted as the plain one).
        cache_write: Anthropic's two cache lifetimes added up
            (``ephemeral_5m_input_tokens`` + ``ephemeral_1h_input_tokens``) when not 0,
            else ``input_token_details.cache_creation``.
        cache_write_5m, cache_write_1h: the two lifetimes, when reported.
        reasoning: ``output_token_details.reasoning``.
        audio_in, audio_out: ``input_token_details.audio``, ``output_token_details.audio``.
        recorded: the usage as recorded (None: the call reported none).
    """

    input: int | None = None
    output: int | None = None
    total: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    cache_write_5m: int | None = None
    cache_write_1h: int | None = None
    reasoning: int | None = None
    audio_in: int | None = None
    audio_out: int | None = None
    recorded: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    @classmethod
    def of(cls, payload: object) -> Usage:
        """The usage of a model call's ``exit`` payload (``ModelExitPayload``), or of a
        model call a node hook made (an item of ``NodePayload.model_calls``): its
        ``usage``. Anything else reads as nothing reported."""
        usage = payload.get("usage") if isinstance(payload, Mapping) else None
        return cls.counts(usage)

    @classmethod
    def counts(cls, usage: object) -> Usage:
        """The counts of a ``usage_metadata`` mapping itself (see ``of``)."""
        if not isinstance(usage, Mapping) or not usage:
            return cls()
        i, o = _count(usage, "input_tokens"), _count(usage, "output_tokens")
        total = _count(usage, "total_tokens")
        if total is None and (i is not None or o is not None):
            total = (i or 0) + (o or 0)
        ind, outd = usage.get("input_token_details"), usage.get("output_token_details")
        m5, h1 = _count(ind, "ephemeral_5m_input_tokens"), _count(ind, "ephemeral_1h_input_tokens")
        write = (m5 or 0) + (h1 or 0) or _count(ind, "cache_creation",
                                                "priority_cache_creation", "flex_cache_creation")
        return cls(
            input=i, output=o, total=total,
            cache_read=_count(ind, "cache_read", "priority_cache_read", "flex_cache_read"),
            cache_write=write, cache_write_5m=m5, cache_write_1h=h1,
            reasoning=_count(outd, "reasoning", "priority_reasoning", "flex_reasoning"),
            audio_in=_count(ind, "audio"), audio_out=_count(outd, "audio"),
            recorded=dict(usage))

    @property
    def reported(self) -> bool:
        """Whether the call reported any usage at all."""
        return self.recorded is not None


__all__ = ["CallRequest", "Requests", "Usage", "tool_name", "tool_names"]
