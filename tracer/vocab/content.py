"""A message's content as text: one function, with the variants each reader needs named.

A message's ``content`` is a string or a list of content blocks (LangChain's,
OpenAI's, Anthropic's, an OTel span's). Three readers turn it into text, each a
little differently, and each is a named ``TextVariant`` of ``content_text``:

- ``DISPLAY`` (the default; what the app, the diff and the exports show): text
  blocks joined by newlines, tool-use blocks left out (they show as tool calls),
  any other block as canonical JSON.
- ``WIRE`` (``tracer.wire``: a provider's request or response body): the texts of
  ``text`` / ``input_text`` / ``output_text`` parts run together, other parts left out.
- ``OTEL`` (``tracer.otel``: a span's message content): ``text`` parts (or their
  ``content``) run together, other parts left out, anything else as JSON.

The bottom layer: no import of the project.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass


def _json_sorted(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class TextVariant:
    """How ``content_text`` reads a content list.

    Attributes:
        text_types: the block ``type`` values that carry text (``None``: no type).
        joiner: what goes between the texts of the blocks.
        skip_types: block types left out without a word.
        others_as_json: any other block as canonical JSON (else left out).
        fallback_key: where a text block's text is when ``text`` is empty.
        scalar: the text of content that is neither a string nor a list.
    """

    text_types: frozenset[str | None]
    joiner: str
    skip_types: frozenset[str] = frozenset()
    others_as_json: bool = False
    fallback_key: str | None = None
    scalar: Callable[[object], str] = str


DISPLAY = TextVariant(text_types=frozenset({"text"}), joiner="\n",
                      skip_types=frozenset({"tool_use", "tool_call"}), others_as_json=True,
                      scalar=_json_sorted)
WIRE = TextVariant(text_types=frozenset({"text", "input_text", "output_text", None}), joiner="")
OTEL = TextVariant(text_types=frozenset({"text", None}), joiner="", fallback_key="content",
                   scalar=_json)


def content_text(content: object, variant: TextVariant = DISPLAY) -> str:
    """The plain text of a message's content.

    Args:
        content: a string, a list of content blocks (strings or dicts with a
            ``type``), ``None``, or another value.
        variant: which reader's rules to follow (``DISPLAY``, ``WIRE``, ``OTEL``).

    Returns:
        The text; ``""`` for ``None``.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return variant.scalar(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") in variant.text_types:
            text = block.get("text", "")
            if variant.fallback_key is not None and not text:
                text = block.get(variant.fallback_key) or ""
            parts.append(str(text))
        elif isinstance(block, dict) and block.get("type") in variant.skip_types:
            continue
        elif variant.others_as_json:
            parts.append(_json_sorted(block))
    return variant.joiner.join(p for p in parts if p)


__all__ = ["DISPLAY", "OTEL", "WIRE", "TextVariant", "content_text"]
