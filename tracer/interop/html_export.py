"""A self-contained HTML replay of one run: one file, no server, no network.

``export_html(db_path, run_id, out_path)`` writes a single HTML file that plays
the run with the app's own replayer (``tracer/replayer``: the loop graph, the
message list as of each step, the caption, the controls, the keyboard; the
same script and style as the app's replay page). Everything is inline: the steps and messages travel
as JSON in a ``<script type="application/json">`` block with ``<``, ``>``,
``&``, U+2028 and U+2029 escaped, and the page's own script puts trace text in
the DOM with ``textContent`` only. A Content-Security-Policy meta tag forbids
every fetch (``default-src 'none'``), so the file opens from disk offline and a
hostile trace cannot load anything.

Stable hooks for tests: the replayer's (see ``tracer/replayer/replayer.js``), plus
``#run-name``, ``#run-meta`` and ``#back-to-parent`` in the page's header and
``[data-testid="lt-replayer"][data-depth]``; the run's notes (``tracer.db.notes``: a
workshop's talking points travel with the file) in ``#notes`` as ``li.lt-note[data-step]``
(``current`` at the step shown), a button each to go to its step, and as dots on the tick
strip. ``#step=N`` in the URL opens step N
(counted from 1). Subagent runs travel in the same file: "Open subagent"
(``[data-action="open-subagent"]``, shown while the call that ran one is active)
opens its own replay, ``#back-to-parent`` returns; ``#run=ID&step=N`` opens one.

Example:
    >>> export_html("looptrace.db", "3f2a", "run.html")
    PosixPath('run.html')
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from tracer.db.schema import refuse_database, written_whole
from tracer.read.cost import run_costs
from tracer.read.graph_layout import drawing
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay
from tracer.replayer import replay_json, script, style

from .exchange import run_tree


def replay_data(rp: Replay) -> dict[str, Any]:
    """The run as the replayer plays it (``tracer.replayer.replay_json``), payloads
    included: the page's step inspector shows them."""
    return replay_json(rp, payloads=True)


def script_json(data: Any) -> str:
    """JSON that is inert inside a ``<script>`` block: no ``<``, ``>``, ``&``, U+2028/9."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render_html(rp: Replay, subagents: Sequence[Replay] = (),
                notes: Mapping[str, list[dict[str, Any]]] | None = None,
                costs: Mapping[str, str] | None = None) -> str:
    """The whole page for one replay (and its subagent runs' replays), as a string;
    ``notes``: each run's notes (``Note.to_dict``, by run id), listed under the replay
    and marked on its tick strip; ``costs``: each run's cost as text
    (``tracer.read.cost``), shown in the header."""
    template = resources.files("tracer.interop").joinpath("templates/replay.html").read_text("utf-8")
    title = f"looptrace replay: {rp.run.summary.name or rp.run.id}"
    # Split at the data first and fill the title last, so nothing taken from the
    # trace is ever searched for a placeholder.
    head, sep, tail = template.partition("__DATA__")
    if not sep:
        msg = "replay template has no data placeholder"
        raise RuntimeError(msg)
    head = head.replace("__STYLE__", style()).replace("__TITLE__", html.escape(title))
    tail = tail.replace("__SCRIPT__", script())
    data = replay_data(rp)
    data["layout"] = drawing()
    data["subruns"] = {sub.run.id: replay_data(sub) for sub in subagents}
    for d in (data, *data["subruns"].values()):
        d["notes"] = list((notes or {}).get(d["run"]["id"], ()))
        if costs and d["run"]["id"] in costs:
            d["run"]["cost"] = costs[d["run"]["id"]]
    return head + script_json(data) + tail


def export_html(db_path: str | Path, run_id: str, out_path: str | Path) -> Path:
    """Write the run ``run_id`` (an id or unique prefix) as one self-contained HTML file.

    ``out_path`` is never the database itself (``InvalidOption``), and is replaced only
    once written whole (a failed export leaves an earlier file as it was)."""
    refuse_database(out_path, db_path)
    with TraceDB(db_path) as db:
        rid = db.resolve(run_id)
        tree = run_tree(db, rid)  # the run, then its subagent runs (nested ones too)
        runs = [db.run(i) for i in tree]
        notes = {i: [n.to_dict() for n in db.notes(i)] for i in tree}
        costs = {k: "cost " + c.text() for k, c in run_costs(db, tree).items()}
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    replays = [build_replay(r) for r in runs]
    page = render_html(replays[0], replays[1:], notes=notes, costs=costs)
    with written_whole(out) as f:
        f.write(page)
    return out


__all__ = ["export_html", "render_html", "replay_data", "script_json"]
