"""Two runs compared (``tracer.read.diff``): aligned step by step, the first divergence,
and the difference in cost (``tracer.read.cost``)."""

from __future__ import annotations

from tracer.read.cost import cost_difference
from tracer.read.diff import Divergence, RunDiff, diff_replays, message_text

__all__ = ["Divergence", "RunDiff", "cost_difference", "diff_replays", "message_text"]
