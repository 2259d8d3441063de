"""What every wire format shares: the neutral conversation (``Msg``, ``Request``,
``Reply``, ``ToolCall``), the ``WireFormat`` interface, and the helpers of the formats
(stream pieces, SSE blocks, JSON objects, tool-call arguments)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tracer.errors import MalformedStream
from tracer.vocab.content import WIRE, content_text

# The model named in a request rendered, or a demo run, for a provider when none was recorded.
DEFAULT_MODELS: dict[str, str] = {
    "openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "ollama": "llama3.1"}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Msg:
    """One message of a conversation, whatever provider carried it."""

    role: str  # system / user / assistant / tool
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool | None = None


@dataclass(frozen=True)
class Reply:
    """What a scripted model answers: text, tool calls, token counts."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = "emulated"
    id: str = "emu"
    # The emulator answers on a fixed clock so that recordings are reproducible.
    created: int = 1767225600  # 2026-01-01T00:00:00Z

    @property
    def stopped_for_tools(self) -> bool:
        return bool(self.tool_calls)


@dataclass
class Request:
    """A provider request read into neutral form."""

    provider: str
    model: str
    messages: list[Msg]
    tools: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False
    # OpenAI Responses API: the client continues a conversation the server
    # stored, so the history before it is not in this request.
    previous_response_id: str | None = None


def pieces(text: str, n: int = 3) -> list[str]:
    """Split ``text`` into up to ``n`` pieces (the deltas of a stream)."""
    if not text:
        return []
    words = text.split(" ")
    size = max(1, -(-len(words) // n))
    out = []
    for i in range(0, len(words), size):
        chunk = " ".join(words[i:i + size])
        out.append(chunk if i + size >= len(words) else chunk + " ")
    return out


def text_of(content: Any) -> str:
    """The text of a message's content in any provider's shape: a string, or a list of
    parts (``text``, ``input_text``, ``output_text``) whose texts are joined
    (``tracer.vocab.content.WIRE``).

    Args:
        content: the content as the wire carried it.

    Returns:
        The text; ``""`` for ``None``.
    """
    return content_text(content, WIRE)


def loads_args(text: Any) -> dict[str, Any]:
    """Tool-call arguments as an object, whether the wire sent an object (Anthropic,
    Ollama) or a JSON string (OpenAI); what does not parse is kept under ``__raw__``.

    Args:
        text: the arguments as the wire carried them.

    Returns:
        An object; a value that is not one is kept under ``__value__``.
    """
    if isinstance(text, dict):
        return text
    try:
        val = json.loads(text or "{}")
    except (TypeError, ValueError):
        return {"__raw__": text}
    return val if isinstance(val, dict) else {"__value__": val}


class WireFormat:
    name = ""
    # A proxy for a provider serves every format of that provider.
    provider = ""
    path = ""
    default_upstream = ""
    stream_content_type = "text/event-stream"

    # -- requests -------------------------------------------------------------
    def read_request(self, body: dict[str, Any]) -> Request:
        raise NotImplementedError

    # -- responses ------------------------------------------------------------
    def response(self, reply: Reply) -> dict[str, Any]:
        raise NotImplementedError

    def stream_chunks(self, reply: Reply, request: Request) -> list[str]:
        raise NotImplementedError

    def split_stream(self, raw: str) -> list[str]:
        """Raw stream text -> the chunks as framed on the wire (SSE blocks)."""
        blocks = raw.replace("\r\n", "\n").split("\n\n")
        return [b + "\n\n" for b in blocks if b.strip()]

    def reassemble(self, chunks: Iterable[str]) -> dict[str, Any]:
        raise NotImplementedError

    # -- where things are in a response ---------------------------------------
    usage_path: tuple[Any, ...] = ()
    stop_path: tuple[Any, ...] = ()


def json_object(text: str, what: str) -> dict[str, Any]:
    """``text`` parsed as a JSON object, or ``MalformedStream`` saying what it was."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        msg = f"{what} is not JSON: {text[:80]!r} ({exc})"
        raise MalformedStream(msg) from None
    if not isinstance(value, dict):
        msg = f"{what} is not an object: {text[:80]!r}"
        raise MalformedStream(msg)
    return value


def sse_data(block: str) -> tuple[str | None, str]:
    event = None
    data = []
    for line in block.splitlines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return event, "\n".join(data)

