"""Whether a breakpoint armed from outside can hit, as far as the trace database can
tell: ``layer:NAME`` names a middleware that no recorded agent wraps with
``trace.around``; ``node:NAME`` a node no recorded graph run has. Said when the
breakpoint is armed (``b SPEC`` at the prompt, MCP ``set_breakpoint``): it is armed all
the same (an agent not run yet may have it), and the agent says it again when it
starts (``Debugger.check_layers``, ``tracer.debug.nodes``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from .breakpoints import Breakpoint

__all__ = ["unreachable"]

_RECENT = 200  # the latest runs' starts read


def unreachable(db: str | Path, bp: Breakpoint) -> str | None:
    """One line saying why ``bp`` cannot hit in the agents recorded in ``db``, or None."""
    if bp.kind not in ("layer", "node") or not Path(db).exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{Path(db).resolve()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        if bp.kind == "layer":
            return _layer(conn, bp)
        return _node(conn, bp)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _layer(conn: sqlite3.Connection, bp: Breakpoint) -> str | None:
    layers: set[str] = set()
    middleware: set[str] = set()
    rows = conn.execute(
        "SELECT payload FROM events WHERE hook = 'run' AND phase = 'start' AND payload"
        " LIKE '%\"stack\"%' ORDER BY ts DESC LIMIT ?", [_RECENT]).fetchall()
    for (payload,) in rows:
        stack: Any = (json.loads(payload) or {}).get("stack") or []
        for entry in stack:
            if isinstance(entry, dict) and entry.get("name"):
                middleware.add(str(entry["name"]))
                if entry.get("probed"):
                    layers.add(str(entry["name"]))
    layers |= {str(r[0]) for r in conn.execute(
        "SELECT DISTINCT middleware FROM events WHERE phase = 'layer' AND middleware IS NOT"
        " NULL LIMIT 100")}
    if bp.value in layers or (not rows and not layers):
        return None
    what = ("a middleware of the agents recorded here, not wrapped with trace.around"
            if bp.value in middleware else "no middleware of the agents recorded here")
    return (f"breakpoint {bp.spec}: {bp.value!r} is {what} (layers: "
            f"{', '.join(sorted(layers)) or 'none'}); it hits only inside a layer "
            "trace.around made")


def _node(conn: sqlite3.Connection, bp: Breakpoint) -> str | None:
    nodes = {str(r[0]) for r in conn.execute(
        "SELECT DISTINCT json_extract(payload, '$.node') FROM events WHERE hook = 'node'"
        " AND payload IS NOT NULL LIMIT 500") if r[0]}
    if not nodes or bp.value in nodes:
        return None
    return (f"breakpoint {bp.spec}: no graph recorded here has a node {bp.value!r} "
            f"(nodes: {', '.join(sorted(nodes)[:20])}); it hits only if one does")
