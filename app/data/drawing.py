"""What draws a run's graph: its shape and layout (``tracer.read.graph_layout``), the
floor plan of hooks against middleware (``tracer.read.floorplan``), and the browser's
replayer (``tracer.replayer``: its script, style and step time)."""

from __future__ import annotations

from tracer.read.floorplan import ACTIVE, NOW, STATE_LABEL, UNSEEN, Cell, Row, floor_plan, run_stack
from tracer.read.graph_layout import drawing, shape
from tracer.replayer import STEP_MS, replay_json, script, style

__all__ = ["ACTIVE", "NOW", "STATE_LABEL", "STEP_MS", "UNSEEN", "Cell", "Row", "drawing",
           "floor_plan", "replay_json", "run_stack", "script", "shape", "style"]
