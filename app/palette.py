"""Colours shared by the panes: one colour per tool call id, one per step kind.

Mid-saturation colours that read on both the light and the dark theme.
"""

from __future__ import annotations

CALL_COLOURS: tuple[str, ...] = (
    "#1f77b4", "#e8710a", "#2ca02c", "#9467bd", "#d6336c", "#17a2b8", "#8c6d1f", "#6c757d",
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
