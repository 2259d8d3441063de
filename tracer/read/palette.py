"""Colours shared by every view of a run: one colour per tool call id, one per step kind.

Mid-saturation colours that read on both the light and the dark theme. A tool
call's colour is its place among the run's tool call ids in order of first
appearance (``colour_map``): the replayer (app and HTML export), the inspector
and the timeline all take it from here, so one call has one colour everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .loader import Message

# No call colour is near the error red or the interrupt amber (a successful call must not
# read as a failed one), nor the hooks' grey; CIEDE2000 distances in
# tests/read/test_palette.py (issue 39: a pink call bar next to the legend's error red).
CALL_COLOURS: tuple[str, ...] = (
    "#1f77b4", "#8c6d1f", "#2ca02c", "#9467bd", "#e377c2", "#17a2b8", "#862e9c", "#364fc7",
)

KIND_COLOURS: dict[str, str] = {
    "model": "#3b82f6",
    "tool": "#22a559",
    "error": "#e03131",
    "interrupt": "#f59f00",
    "hook": "#9aa0a6",
    "run": "#9aa0a6",
}

HIGHLIGHT = "#f59f00"


def call_colour(index: int) -> str:
    return CALL_COLOURS[index % len(CALL_COLOURS)]


def colour_indexes(messages: Iterable[Message]) -> dict[str, int]:
    """tool_call_id -> palette index, in order of first appearance (a call, or a
    result whose call was never recorded)."""
    out: dict[str, int] = {}
    for m in messages:
        for c in m.tool_calls:
            cid = str(c.get("id") or "")
            if cid and cid not in out:
                out[cid] = len(out)
        if m.tool_call_id and m.tool_call_id not in out:
            out[m.tool_call_id] = len(out)
    return out


def colour_map(messages: Iterable[Message]) -> dict[str, str]:
    """tool_call_id -> colour, for every call id of ``messages``."""
    return {cid: call_colour(i) for cid, i in colour_indexes(messages).items()}


__all__ = ["CALL_COLOURS", "HIGHLIGHT", "KIND_COLOURS", "call_colour", "colour_indexes",
           "colour_map"]
