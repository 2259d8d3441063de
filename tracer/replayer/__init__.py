"""The one replayer: the JSON form of a replay and the script and style that play it.

Python builds a run's JSON once (``replay_json``); ``replayer.js`` steps and
plays it in the browser, with ``replayer.css``. The HTML export inlines the
three in one file; the app's Streamlit component (``app/panes/replayer_component.py``)
loads the same script and style. One drawing (``tracer.read.graph_layout.drawing``),
one message list, one colour per tool call (``tracer.read.palette``).
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from .data import FORMAT, KIND_LETTER, VERSION, is_error, kinds, replay_json, view_edit

STEP_MS = 1200  # how long a step shows at 1x playback (replayer.js's default)


@cache
def script() -> str:
    """``replayer.js``: defines ``createReplayer(host, options)``."""
    return resources.files(__package__).joinpath("replayer.js").read_text("utf-8")


@cache
def style() -> str:
    """``replayer.css``."""
    return resources.files(__package__).joinpath("replayer.css").read_text("utf-8")


__all__ = ["FORMAT", "KIND_LETTER", "STEP_MS", "VERSION", "is_error", "kinds", "replay_json",
           "script", "style", "view_edit"]
