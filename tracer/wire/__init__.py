"""Provider wire formats: emulate, proxy, capture, render and annotate.

The same tool-calling turn travels very differently to OpenAI, Anthropic and
Ollama. This package records what the real LangChain adapters send and
receive (``WireServer``: an emulator for offline use, or a recording proxy in
front of the real provider), links each exchange to its model-call event, and
renders any recorded model call as each provider's request with the adapters'
own request builders, annotated where the formats differ.

Public names here are imported lazily: ``tracer.wire.providers`` (the
provider names and formats) is read by the checks, which start without the
proxy or LangChain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracer._lazy import lazy_getattr

if TYPE_CHECKING:
    from .capture import Exchange, WireRecorder, link_wire, redact_headers
    from .providers import FORMATS, PROVIDERS, format_for_path, get_format
    from .proxy import WireServer

_EXPORTS: dict[str, str] = {
    "Exchange": "capture",
    "FORMATS": "providers",
    "PROVIDERS": "providers",
    "WireRecorder": "capture",
    "WireServer": "proxy",
    "format_for_path": "providers",
    "get_format": "providers",
    "link_wire": "capture",
    "redact_headers": "capture",
}

__all__ = [
    "FORMATS", "PROVIDERS", "Exchange", "WireRecorder", "WireServer", "format_for_path",
    "get_format", "link_wire", "redact_headers",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS)
