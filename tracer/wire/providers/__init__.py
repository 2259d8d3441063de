"""The provider wire formats: OpenAI chat completions and responses, Anthropic messages,
Ollama chat.

Each ``WireFormat`` knows, for its provider: the endpoint path and the default
upstream; how to read a request into a provider-neutral conversation (for the
emulator's scripts); how to write a scripted reply as a JSON response or as
the raw chunks of a stream (SSE for OpenAI and Anthropic, NDJSON for Ollama);
how to split a recorded stream into chunks and reassemble them into the final
response body. Pure functions over dicts and strings: no I/O.
"""

from __future__ import annotations

from tracer.errors import InvalidOption, MalformedStream
from tracer.vocab.provider_names import PROVIDERS

from .anthropic import AnthropicFormat
from .base import (
    DEFAULT_MODELS,
    Msg,
    Reply,
    Request,
    ToolCall,
    WireFormat,
    loads_args,
    text_of,
)
from .ollama import OllamaFormat
from .openai import OpenAIFormat
from .responses import ResponsesFormat

FORMATS: dict[str, WireFormat] = {f.name: f for f in (OpenAIFormat(), ResponsesFormat(),
                                                      AnthropicFormat(), OllamaFormat())}


def format_for_path(path: str) -> WireFormat | None:
    """The wire format whose endpoint ``path`` ends with (query string ignored).

    Args:
        path: a request's path.

    Returns:
        The format, or ``None`` for a path of no known provider.
    """
    p = path.split("?", 1)[0].rstrip("/")
    for f in FORMATS.values():
        if p.endswith(f.path):
            return f
    return None


def get_format(provider: str) -> WireFormat:
    """The wire format named ``provider`` (a provider's name is its main format's).

    Args:
        provider: ``openai``, ``openai-responses``, ``anthropic`` or ``ollama``.

    Returns:
        The format.

    Raises:
        ValueError: for an unknown name.
    """
    try:
        return FORMATS[provider]
    except KeyError:
        msg = f"unknown provider {provider!r} (expected one of {', '.join(FORMATS)})"
        raise InvalidOption(msg) from None


def formats_of(provider: str) -> list[WireFormat]:
    """Every wire format of ``provider`` (OpenAI has two endpoints).

    Args:
        provider: a provider's name (``PROVIDERS``).

    Returns:
        Its formats; empty for an unknown provider.
    """
    return [f for f in FORMATS.values() if f.provider == provider]


__all__ = ["DEFAULT_MODELS", "FORMATS", "PROVIDERS", "AnthropicFormat", "MalformedStream", "Msg",
           "OllamaFormat", "OpenAIFormat", "Reply", "Request", "ResponsesFormat", "ToolCall",
           "WireFormat", "format_for_path", "formats_of", "get_format", "loads_args", "text_of"]
