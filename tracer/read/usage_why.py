"""Why a run's model calls reported no token usage, when its recorded requests say
(``looptrace show`` and the app's Runs page say it where they say "not reported")."""

from __future__ import annotations

import json
from typing import Any


def usage_why(wire: list[dict[str, Any]]) -> str | None:
    """Why a run's model calls reported no usage, when its recorded requests say: an
    OpenAI chat request streamed without ``stream_options.include_usage`` gets no usage
    back (the API sends it only when asked; ``ChatOpenAI`` asks with
    ``stream_usage=True``, and by default only of OpenAI's own URL). None: not known."""
    for w in wire:
        if w.get("provider") != "openai":
            continue
        try:
            body = json.loads(w.get("request_body") or "")
        except (TypeError, ValueError):
            continue
        if not isinstance(body, dict) or body.get("stream") is not True:
            continue
        opts = body.get("stream_options")
        if not (isinstance(opts, dict) and opts.get("include_usage")):
            return ("streamed without stream_options.include_usage: OpenAI sends no usage"
                    " then (ChatOpenAI(stream_usage=True) asks for it)")
    return None
