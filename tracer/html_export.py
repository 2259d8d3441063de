"""A self-contained HTML replay of one run: one file, no server, no network.

``export_html(db_path, run_id, out_path)`` writes a single HTML file that plays
the run with the app's two panes (the loop graph as SVG and the message list as
of each step), the caption, and the controls (play / pause, step, first / last,
scrubber, speed, keyboard). Everything is inline: the steps and messages travel
as JSON in a ``<script type="application/json">`` block with ``<``, ``>``,
``&``, U+2028 and U+2029 escaped, and the page's own script puts trace text in
the DOM with ``textContent`` only. A Content-Security-Policy meta tag forbids
every fetch (``default-src 'none'``), so the file opens from disk offline and a
hostile trace cannot load anything.

Stable hooks for tests: ``#replay[data-step][data-active-node]``, buttons
``#play #pause #next #prev #first #last``, ``#scrubber``, ``#speed``,
``#counter`` ("Step N / M", N counted from 1), ``.msg[data-position]``,
``.msg.current`` for the messages the step added, ``.call.pending``, the SVG
nodes ``[data-node=...]`` (class ``active`` / ``visited``) and edges
``[data-edge="from>to"]`` (class ``taken``): the drawing and the edges each
step takes (``steps[i].r``) come from ``tracer.graph_layout``, like the app's;
a jump edge (a step that skipped nodes) is added to ``#jumps`` while its step
shows, and ``#replay[data-jump="1"]`` then. ``#step=N`` in the URL opens step N.
Subagent runs travel in the same file: ``#open-subagent`` (shown while the call
that ran one is active) opens its own replay, ``#back-to-parent`` returns;
``#replay[data-run][data-depth]`` tell which run is shown (``#run=ID&step=N``).

Example:
    >>> export_html("looptrace.db", "3f2a", "run.html")
    PosixPath('run.html')
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .exchange import run_tree
from .graph_layout import (
    BACK_EDGE,
    BACK_TO_POINT,
    COND,
    EDGES,
    LABEL_LIFT,
    MW_LABELS,
    NODES,
    POINTS,
    VIEWBOX,
    WRAPS,
    jump_path,
    middleware_labels,
    passable_points,
    route,
    unknown_hooks,
)
from .loader import Message, TraceDB, content_text
from .replay import GRAPH_NODES, Replay, build_replay

_WRAP_NODE = {"wrap_model_call": "model", "wrap_tool_call": "tools"}


def _svg() -> str:
    """The loop graph, drawn from ``tracer.graph_layout`` (the app draws the same).
    Jump edges are not here: the page's script adds the one a step takes."""
    e = html.escape
    vb = " ".join(str(v) for v in VIEWBOX)
    out = [f'<svg viewBox="{vb}" role="img" aria-label="agent loop graph">',
           ('<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" '
           'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
           'fill="context-stroke"/></marker></defs>')]
    for wrap, (x, y, w, h) in WRAPS.items():
        out.append(f'<rect class="wrap" id="wrap-{e(wrap)}" data-wrap-node="{_WRAP_NODE[wrap]}" '
                   f'x="{x}" y="{y}" width="{w}" height="{h}" rx="10"/>')
        out.append(f'<text class="wraplabel" x="{x + 8}" y="{y + 15}">{e(wrap)}</text>')
    for eid, d in EDGES.items():
        cls = "edge" + (" cond" if eid.startswith("after_model>") else "") + (
            " back" if eid == BACK_EDGE else "")
        out.append(f'<path class="{cls}" data-edge="{e(eid)}" d="{d}" marker-end="url(#arrow)"/>')
    out.append('<g id="jumps"></g>')
    cx, cy, half = COND
    out.append(f'<g class="cond" id="cond"><polygon points="{cx},{cy - half} {cx + half},{cy} '
               f'{cx},{cy + half} {cx - half},{cy}"/>'
               f'<text class="edgelabel" x="{cx - half - 6}" y="{cy + 4}" text-anchor="end">'
               'tool calls?</text></g>')
    for node, (x, y, w, h, label, shape) in NODES.items():
        cls = "node terminal" if shape == "pill" else "node"
        rx = h // 2 if shape == "pill" else 8
        out.append(f'<g class="{cls}" data-node="{e(node)}">'
                   f'<rect class="box" x="{x - w // 2}" y="{y - h // 2}" width="{w}" '
                   f'height="{h}" rx="{rx}"/><circle class="dot" cx="{x}" cy="{y}" r="7"/>'
                   f'<text class="label" x="{x}" y="{y}">{e(label)}</text></g>')
    # each hook's middleware: in a node hook's box, at the foot of a wrap hook's box (over
    # the edges, with a halo)
    out.extend(_mw_label(hook, halo=hook in WRAPS) for hook in MW_LABELS)
    tx, ty = NODES["tools"][:2]
    out.append(f'<text id="active-tools" x="{tx - 66}" y="{ty + 58}"></text>')
    out.append("</svg>")
    return "\n".join(out)


def _mw_label(hook: str, *, halo: bool = False) -> str:
    """The (empty) place of a hook's middleware names and their tooltip: the page's
    script fills both per run (``replay_data(...)["mw"]``) with ``textContent``."""
    x, y, anchor, _most = MW_LABELS[hook]
    cls = "mw halo" if halo else "mw"
    return (f'<g class="mwg" data-hook="{hook}"><text class="{cls}" id="mw-{hook}" x="{x}" y="{y}" '
            f'text-anchor="{anchor}"></text><title id="mwt-{hook}"></title></g>')


def _message(m: Message) -> dict[str, Any]:
    text = content_text(m.content) if m.body else m.text
    # Arguments travel as data; the page pretty-prints them (JSON.stringify).
    calls = [{"id": c.get("id"), "name": str(c.get("name", "?")), "args": c.get("args", {})}
             for c in m.tool_calls]
    calls += [{"id": c.get("id"), "name": f"invalid: {c.get('name', '?')}",
               "args": f"{c.get('args', '')}\n{c.get('error', '')}"}
              for c in m.invalid_tool_calls]
    return {"key": m.key, "pos": m.position, "seq": m.seq, "type": m.type, "name": m.name,
            "text": text, "calls": calls, "tcid": m.tool_call_id, "status": m.status}


class _MessageTable:
    """Every message a step of the replay shows (first versions, later versions, the
    forms a rewritten request carried), once each, numbered."""

    def __init__(self, rp: Replay) -> None:
        self.rp = rp
        self.rows: list[dict[str, Any]] = []
        self._ids: dict[int, int] = {}
        self._keep: list[Message] = []  # (ids stay unique while the objects live)

    def index(self, m: Message) -> int:
        i = self._ids.get(id(m))
        if i is None:
            i = self._ids[id(m)] = len(self.rows)
            row = _message(m)
            note = self.rp.version_note(m)
            if note:
                row["vn"] = note
            self.rows.append(row)
            self._keep.append(m)
        return i

    def indexes(self, msgs: list[Message]) -> list[int]:
        """The numbers of ``msgs`` (a step's list: mostly numbered already, so the
        lookups run in C: ``map`` and a set difference, not a Python loop)."""
        ids = list(map(id, msgs))
        new = set(ids).difference(self._ids)
        if new:
            for m in msgs:
                if id(m) in new:
                    self.index(m)
        return list(map(self._ids.__getitem__, ids))


def view_edit(prev: list[int], cur: list[int]) -> dict[str, Any] | None:
    """``cur`` as an edit of ``prev``: keep the first ``b`` entries, put ``x`` in place,
    append ``a``; or the whole list (``f``) when that is shorter. None: no change."""
    if prev == cur:
        return None
    n = len(prev)
    if len(cur) >= n and cur[:n] == prev:  # the usual step: messages added at the end
        return {"b": n, "a": cur[n:]}
    k = min(n, len(cur))
    subs = [[j, cur[j]] for j in range(k) if prev[j] != cur[j]]
    if len(subs) > 16:
        return {"f": cur}
    op: dict[str, Any] = {"b": k}
    if subs:
        op["x"] = subs
    if len(cur) > k:
        op["a"] = cur[k:]
    return op


def replay_data(rp: Replay) -> dict[str, Any]:
    """Everything the page needs, as plain JSON-able data."""
    s = rp.run.summary
    bit = {n: 1 << i for i, n in enumerate(GRAPH_NODES)}
    passable = passable_points(rp)
    steps = []
    jumps: dict[str, str] = {}
    table = _MessageTable(rp)
    prev: list[int] = []
    for st in rp.steps:
        ev = st.event
        taken = route(*st.edge, passable) if st.edge else []
        for eid in taken:
            if eid not in EDGES:
                a, _, b = eid.partition(">")
                jumps[eid] = jump_path(a, b)
        steps.append({
            "n": st.node, "e": list(st.edge) if st.edge else None, "r": taken,
            "v": sum(bit.get(n, 0) for n in st.visited), "t": list(st.active_tools),
            "k": st.kind, "nk": list(st.new_keys), "c": st.caption, "h": ev.hook,
            "p": ev.phase, "l": ev.lap, "s": ev.seq, "mw": ev.middleware,
            "d": ev.duration_ms, "tc": ev.tool_call_id, "pl": ev.payload,
        })
        # The conversation the step shows, as Python's Replay.messages_at has it, given
        # as an edit of the step before's (the page applies it: no second replay in JS).
        cur = table.indexes(rp.messages_at(st.index))
        op = view_edit(prev, cur)
        if op is not None:
            steps[-1]["mv"] = op
        prev = cur
    view0 = [] if rp.steps else [table.index(m) for m in rp.run.messages]
    return {
        "format": "looptrace-html-replay", "version": 1,
        "run": {"id": s.id, "name": s.name, "status": s.status, "laps": s.laps,
                "parent_id": s.parent_id, "parent_tool_call_id": s.parent_tool_call_id,
                "model": s.model, "provider": s.provider, "error": s.error,
                "total_tokens": s.total_tokens, "started_at": s.started_at,
                "ended_at": s.ended_at},
        "nodes": list(GRAPH_NODES),
        "steps": steps,
        "messages": table.rows,
        "view0": view0,
        "system": rp.system_prompt(),
        # each hook's middleware in execution order: {hook: {"text", "title"}}
        "mw": middleware_labels(rp),
        "lift": LABEL_LIFT,
        "unused_hooks": [h for h in POINTS if h not in rp.used_hooks],
        # a run seen from outside: the hooks it cannot know (drawn as unknown)
        "unknown_hooks": unknown_hooks(rp),
        # The edges steps take that are not standard edges: id -> SVG path data.
        "jumps": jumps,
        "back": EDGES[BACK_EDGE] if "before_model" in rp.used_hooks else BACK_TO_POINT,
        "used_wraps": sorted(h for h in ("wrap_model_call", "wrap_tool_call")
                             if h in rp.used_hooks),
        "children": [{"id": c.id, "name": c.name, "parent_tool_call_id": c.parent_tool_call_id}
                     for c in rp.run.children],
    }


def script_json(data: Any) -> str:
    """JSON that is inert inside a ``<script>`` block: no ``<``, ``>``, ``&``, U+2028/9."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render_html(rp: Replay, subagents: Sequence[Replay] = ()) -> str:
    """The whole page for one replay (and its subagent runs' replays), as a string."""
    template = resources.files("tracer").joinpath("templates/replay.html").read_text("utf-8")
    title = f"looptrace replay: {rp.run.summary.name or rp.run.id}"
    # Split at the data first and fill the title last, so nothing taken from the
    # trace is ever searched for a placeholder.
    head, sep, tail = template.partition("__DATA__")
    if not sep:
        msg = "replay template has no data placeholder"
        raise RuntimeError(msg)
    head = head.replace("__SVG__", _svg()).replace("__TITLE__", html.escape(title))
    data = replay_data(rp)
    data["subruns"] = {sub.run.id: replay_data(sub) for sub in subagents}
    return head + script_json(data) + tail


def export_html(db_path: str | Path, run_id: str, out_path: str | Path) -> Path:
    """Write the run ``run_id`` (an id or unique prefix) as one self-contained HTML file."""
    with TraceDB(db_path) as db:
        rid = db.resolve(run_id)
        tree = run_tree(db, rid)  # the run, then its subagent runs (nested ones too)
        runs = [db.run(i) for i in tree]
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    replays = [build_replay(r) for r in runs]
    out.write_text(render_html(replays[0], replays[1:]), encoding="utf-8")
    return out


__all__ = ["export_html", "render_html", "replay_data", "script_json"]
