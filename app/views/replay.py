"""Replay: the run as an animated two-pane walkthrough.

The run header (name, status, subagent runs) and, drawn together step by step,
the control bar and scrubber, the step's caption, the graph beside the message
list, the floor plan, the step inspector and the wire formats; the run's
findings below.
"""

from __future__ import annotations

from ..replay_view import show_replay


def replay_page() -> None:
    show_replay()
