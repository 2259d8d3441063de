"""What the panes read off a run's replay (``tracer.read``, pure, no LangChain): the
steps, their payloads and captions, the tools' lives, the colours, tokens per lap."""

from __future__ import annotations

from tracer.read.calls import tokens_by_lap
from tracer.read.captions import captions
from tracer.read.loader import content_text
from tracer.read.palette import KIND_COLOURS, colour_map
from tracer.read.state_at import key_label
from tracer.read.steps import Replay, plural
from tracer.read.tool_life import signature_note, tool_life
from tracer.vocab.payloads import LayerPayload, ToolExitPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

__all__ = ["KIND_COLOURS", "MODEL_HOOKS", "TOOL_HOOKS", "LayerPayload", "Replay",
           "ToolExitPayload", "captions", "colour_map", "content_text", "key_label",
           "plural", "read_payload", "signature_note", "tokens_by_lap", "tool_life"]
