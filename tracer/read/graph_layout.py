"""The loop graph's drawing and the edges each replay step lights up.

Pure Python (no Streamlit). ``drawing()`` is the picture as JSON, which the one
replayer (``tracer/replayer``: the app's component and the HTML export) builds
its SVG from; the JSON form of a replay carries the edges each step took
(``route``), so there is one picture and one answer to "which edge".

What a step draws (``route``). A step moves from the node of the previous event
to its own node (``Step.edge``). It is drawn over the standard edges only when
every node passed on the way is a *pass-through point*: a hook that no
middleware used in this run. ``create_agent`` builds no graph node for such a
hook, so passing its point is the real edge. A node that some middleware used
(and ``model``, ``tools``, ``START``, ``END``) is never passed: if no path
avoids them, the step skipped them: a ``jump_to`` (``end``, ``model``,
``tools``) from a node hook, ``after_agent`` sending the agent back to work, a
tool's ``Command(goto=...)``, or a loop without middleware going its own way.
Such a step is one *jump edge*, ``"a>b"``, drawn on demand by ``jump_path``:
an arc left of the spine (back jumps go up, forward jumps go down), or a curve
to or from the side of ``tools``.

Runs without any middleware hook (a hand-rolled loop, a plain LangGraph graph
recorded by the callback handler: no hook used, no hook event at all) have no
``before_agent`` and no ``after_agent``: those two are not pass-through points
there. ``before_model`` and ``after_model`` stay points: ``tools -> model`` is
such a loop's back edge (through the ``before_model`` point) and ``model ->
tools`` its "tool calls?" decision (through the ``after_model`` point and the
diamond). So a hand-rolled loop starts with the jump ``START>model`` and ends
with ``model>END`` (or ``tools>END``), never through ``after_agent``.

Nothing enters ``START``: a step that lands there (a new invocation) draws no edge.

Two shapes (``shape(replay)``). A run with middleware hooks is drawn as the
``create_agent`` graph above (shape ``"agent"``), and so is a ``create_agent`` graph
without any middleware whose start says so (``looptrace run``'s callback handler records
``graph``: ``is_create_agent``): every hook is a pass-through point there. A run without
any middleware hook (a hand-rolled
loop or a plain graph recorded by the callback handler, a loop seen through its
traffic or its spans) is drawn as the loop it is (shape ``"loop"``, ``LOOP_NODES``):
START, the model, the "tool calls?" decision, the tools and the back edge to the
model, END; no hook node, no wrap box. Its standard edges are ``LOOP_EDGES``; a
step that takes none of them (a loop stopped by its own bound right after the
tools) is drawn as a plain move, only while it shows.

In either shape a move is drawn as a *jump* (dotted, captioned "... jumped") only
when an event of the run says a jump happened: a hook's ``jump_to`` or a
``Command``'s ``goto`` (``jump_steps``). Any other move off the standard edges is
a plain *move* arc: the record shows where the run went, not that anything jumped.
"""

from __future__ import annotations

from collections import deque

from tracer.vocab.graph_shape import GRAPH_EDGES, GRAPH_NODES
from tracer.vocab.hooks import HOOK_BY_NAME
from tracer.vocab.payloads import NodePayload, RunStartPayload, read_payload

from .floorplan import ORDER, hook_middleware
from .steps import Replay, is_create_agent, run_shape

# Node boxes: name -> (centre x, centre y, width, height, label, shape)
NODES: dict[str, tuple[int, int, int, int, str, str]] = {
    "START": (170, 28, 96, 30, "START", "pill"),
    "before_agent": (170, 92, 170, 38, "before_agent", "box"),
    "before_model": (170, 160, 170, 38, "before_model", "box"),
    "model": (170, 242, 150, 42, "model", "model"),
    "after_model": (170, 322, 170, 38, "after_model", "box"),
    "tools": (362, 384, 124, 42, "tools", "tools"),
    "after_agent": (170, 452, 170, 38, "after_agent", "box"),
    "END": (170, 516, 96, 30, "END", "pill"),
}
# Dashed boxes drawn around a node for the wrap hooks: hook -> (x, y, w, h)
WRAPS: dict[str, tuple[int, int, int, int]] = {
    "wrap_model_call": (40, 200, 260, 86),
    "wrap_tool_call": (288, 342, 160, 86),
}
COND = (170, 384, 20)  # the conditional edge's diamond: centre x, y, half size
# Edge paths (SVG path data); the conditional edges pass through the diamond.
EDGES: dict[str, str] = {
    "START>before_agent": "M170 43 V71",
    "before_agent>before_model": "M170 111 V139",
    "before_model>model": "M170 179 V219",
    "model>after_model": "M170 263 V301",
    "after_model>tools": "M170 341 V364 M190 384 H298",
    "after_model>after_agent": "M170 341 V364 M170 404 V431",
    "tools>before_model": "M424 384 H452 V172 Q452 160 440 160 H257",
    "after_agent>END": "M170 471 V499",
}
BACK_EDGE = "tools>before_model"
# The back edge when before_model is drawn as a pass-through point: it ends at the point.
BACK_TO_POINT = EDGES[BACK_EDGE].rsplit("H", 1)[0] + "H180"
VIEWBOX = (0, 0, 460, 560)

# Where each hook's middleware names go (``middleware_labels``): hook -> (x, y, text
# anchor, most characters). A node hook's names sit inside its box under the hook's
# name (which moves up by ``LABEL_LIFT``); a wrap hook's at the foot of its dashed box.
MW_LABELS: dict[str, tuple[int, int, str, int]] = {
    "before_agent": (170, 102, "middle", 27),
    "before_model": (170, 170, "middle", 27),
    "after_model": (170, 332, "middle", 27),
    "after_agent": (170, 462, "middle", 27),
    "wrap_model_call": (48, 280, "start", 40),
    "wrap_tool_call": (294, 422, "start", 24),
}
LABEL_LIFT = 7

# The loop without hooks (shape "loop"): the seed's loop. Same box format as NODES.
LOOP_NODES: dict[str, tuple[int, int, int, int, str, str]] = {
    "START": (170, 36, 96, 30, "START", "pill"),
    "model": (170, 132, 150, 42, "model", "model"),
    "tools": (362, 250, 124, 42, "tools", "tools"),
    "END": (170, 376, 96, 30, "END", "pill"),
}
LOOP_COND = (170, 250, 20)
LOOP_EDGES: dict[str, str] = {
    "START>model": "M170 51 V108",
    "model>tools": "M170 153 V230 M190 250 H298",
    "model>END": "M170 153 V230 M170 270 V358",
    "tools>model": "M362 229 V132 H247",
}
LOOP_BACK = "tools>model"
LOOP_VIEWBOX = (0, 0, 460, 410)
# The words on the decision's two branches: (x, y, text).
LOOP_LABELS = ((246, 242, "yes"), (180, 300, "no"))
SHAPES = ("agent", "loop")

# The node hooks: each is a node of the drawing, or a pass-through point.
POINTS: tuple[str, ...] = tuple(h.name for h in HOOK_BY_NAME.values() if h.kind == "node")
NODE_HOOK: dict[str, str] = {h.node: h.name for h in HOOK_BY_NAME.values() if h.kind == "node"}
# Not points in a run without middleware hooks (see the module docstring).
NOT_POINTS_WITHOUT_MIDDLEWARE = frozenset({"before_agent", "after_agent"})

assert set(NODES) == set(GRAPH_NODES), "the drawing must cover every replay node"
assert {f"{a}>{b}" for a, b in GRAPH_EDGES} == set(EDGES), "and every replay edge"
assert set(POINTS) <= set(NODES)
assert set(MW_LABELS) == set(HOOK_BY_NAME), "a label place for every hook"


def _adjacency() -> dict[str, list[str]]:
    adj: dict[str, list[str]] = {}
    for x, y in GRAPH_EDGES:
        adj.setdefault(x, []).append(y)
    return adj


_ADJ = _adjacency()


def route(a: str, b: str, passable: frozenset[str] | set[str] = frozenset(POINTS),
          shape: str = "agent") -> list[str]:
    """The edge ids a step from ``a`` to ``b`` takes: the standard edges from ``a``
    to ``b`` that pass only through the nodes in ``passable`` (the run's
    pass-through points), or, when there is no such path, the one edge ``"a>b"``
    off the standard ones (a jump or a move). ``[]`` when there is no step
    (``a == b``) or ``b`` is START. In the ``"loop"`` shape the standard edges are
    ``LOOP_EDGES`` and nothing is passed through."""
    if shape == "loop":
        if a == b or b == "START" or a not in LOOP_NODES or b not in LOOP_NODES:
            return []
        return [f"{a}>{b}"]
    if a == b or b == "START" or a not in NODES or b not in NODES:
        return []
    points = set(passable) & set(POINTS)  # START, END, model and tools are never passed
    prev: dict[str, str] = {}
    todo = deque([a])
    seen = {a}
    while todo:
        n = todo.popleft()
        if n == b:
            break
        if n != a and n not in points:
            continue  # a node that ran (or has middleware on it) is never passed through
        for m in _ADJ.get(n, ()):
            if m not in seen:
                seen.add(m)
                prev[m] = n
                todo.append(m)
    if b not in prev:
        return [f"{a}>{b}"]
    out = []
    n = b
    while n != a:
        out.append(f"{prev[n]}>{n}")
        n = prev[n]
    return out[::-1]


def is_jump(edge_id: str, shape: str = "agent") -> bool:
    """True for an edge that is not one of the standard edges of ``shape`` (drawn by
    ``jump_path``, as a jump or a move)."""
    return edge_id not in (LOOP_EDGES if shape == "loop" else EDGES)


def shape(replay: Replay) -> str:
    """``"loop"`` for a run without middleware hooks (drawn as the loop it is), else
    ``"agent"`` (the ``create_agent`` graph with its hooks)."""
    return run_shape(replay.run, replay.used_hooks)


def jump_steps(replay: Replay) -> dict[int, str]:
    """Step index -> who jumped, for each step that left the standard edges right after
    an event that says a jump happened (a hook's ``jump_to``, a ``Command``'s ``goto``).
    Only these steps are drawn and captioned as jumps."""
    kind = shape(replay)
    passable = passable_points(replay)
    out: dict[int, str] = {}
    who: str | None = None
    for i, st in enumerate(replay.steps):
        if st.edge:
            edges = route(*st.edge, passable, kind)
            if who and len(edges) == 1 and is_jump(edges[0], kind):
                out[i] = who
            who = None  # any move uses up a recorded jump
        p = read_payload(NodePayload, st.event.payload)
        target = p.get("jump_to") or p.get("goto")
        if target:
            name = f"{st.event.middleware}.{st.event.hook}" if st.event.middleware else (
                str(p.get("node") or st.event.hook))
            who = f"{name} (to {target})"
    return out


def _short(name: str) -> str:
    """A middleware's name for a small label: without the ``Middleware`` suffix."""
    base, bracket, rest = name.partition("[")
    base = base.lstrip("_").removesuffix("Middleware") or base
    return base + bracket + rest


def middleware_labels(replay: Replay) -> dict[str, dict[str, str]]:
    """For each hook some middleware is on: a short label (names in execution order,
    cut to fit ``MW_LABELS``) and the full list for a tooltip. The same for the app's
    graph and the HTML export."""
    out: dict[str, dict[str, str]] = {}
    for hook, names in hook_middleware(replay).items():
        if not names:
            continue
        most = MW_LABELS[hook][3]
        parts = [_short(n) for n in names]
        text = " · ".join(parts)
        k = len(parts)
        while len(text) > most and k > 1:
            k -= 1
            text = " · ".join(parts[:k]) + f" +{len(parts) - k}"
        if len(text) > most:
            text = text[:most - 1] + "…"
        title = f"{hook} ({ORDER[hook]}): " + ", ".join(
            f"{i + 1}. {n}" for i, n in enumerate(names))
        out[hook] = {"text": text, "title": title}
    return out


def has_middleware_hooks(replay: Replay) -> bool:
    """False for a run with no middleware hook at all (a hand-rolled loop, a plain graph)."""
    return bool(replay.used_hooks) or any(e.hook in NODE_HOOK for e in replay.run.events)


def _on_stack(replay: Replay) -> frozenset[str]:
    """Hooks the run's middleware stack has a middleware on (recorded with ``attach``),
    whether or not it fired: ``after_agent`` of a run that failed is a graph node."""
    recorded = any(e.hook == "run" and e.phase == "start"
                   and read_payload(RunStartPayload, e.payload).get("stack")
                   for e in replay.run.events)
    if not recorded:  # (without the stack, only what fired is known)
        return frozenset()
    return frozenset(h for h, names in hook_middleware(replay).items() if names)


def passthrough_hooks(replay: Replay) -> list[str]:
    """Hooks that no middleware used in this run, nor has on its stack: drawn as
    pass-through points (node hooks) or faded boxes (wrap hooks)."""
    on = _on_stack(replay)
    return sorted(h for h in HOOK_BY_NAME if h not in replay.used_hooks and h not in on)


def unknown_hooks(replay: Replay) -> list[str]:
    """Hooks this run cannot say anything about: all six for a run seen from outside
    (its traffic or its spans show model calls and tool results, never hooks)."""
    return sorted(HOOK_BY_NAME) if replay.run.observed else []


def passable_points(replay: Replay) -> frozenset[str]:
    """The nodes a step may pass through in this run (see the module docstring)."""
    on = _on_stack(replay)
    points = frozenset(p for p in POINTS if p not in replay.used_hooks and p not in on)
    if not has_middleware_hooks(replay) and not is_create_agent(replay.run):
        points -= NOT_POINTS_WITHOUT_MIDDLEWARE  # (create_agent's hooks stay points)
    return points


def step_edges(replay: Replay, index: int, passable: frozenset[str] | None = None) -> list[str]:
    """The edge ids step ``index`` takes (``[]`` for a step that stays on its node)."""
    step = replay.steps[index]
    if not step.edge:
        return []
    return route(*step.edge, passable if passable is not None else passable_points(replay),
                 shape(replay))


# -- jump edges -----------------------------------------------------------------
def _num(v: float) -> str:
    return f"{round(v, 1):g}"


def _side(node: str, side: str,
          nodes: dict[str, tuple[int, int, int, int, str, str]] = NODES) -> tuple[float, float]:
    x, y, w, h = nodes[node][:4]
    if side == "left":
        return x - w / 2, y
    if side == "right":
        return x + w / 2, y
    if side == "top":
        return x, y - h / 2
    return x, y + h / 2


def jump_path(a: str, b: str, shape: str = "agent") -> str:
    """SVG path data for the jump edge ``a>b`` (any two distinct nodes).

    Between two nodes of the spine: a curve from the left side of ``a`` out to
    the left and back into the left side of ``b`` (it ends pointing right, into
    the box); the further apart the nodes, the wider the arc. To or from
    ``tools`` (right of the spine): a curve between the right side of the spine
    node (just below its middle) and the top of ``tools`` (the bottom, for a
    node below it)."""
    nodes = LOOP_NODES if shape == "loop" else NODES
    if a == b or a not in nodes or b not in nodes:
        msg = f"no jump from {a!r} to {b!r}"
        raise ValueError(msg)
    if "tools" in (a, b):
        other = b if a == "tools" else a
        _, ty = nodes["tools"][:2]
        tx, tyy = _side("tools", "top" if nodes[other][1] < ty else "bottom", nodes)
        ox, oy = _side(other, "right", nodes)
        oy += 6  # a little below the middle: the back edge arrives at before_model's
        bend = ox + 0.4 * (tx - ox)
        if a == "tools":  # up (or down) out of tools, then left into the node
            pts = [(tx, tyy), (tx, oy), (bend, oy), (ox, oy)]
        else:  # right out of the node, then down (or up) into tools
            pts = [(ox, oy), (bend, oy), (tx, oy), (tx, tyy)]
    else:
        ax, ay = _side(a, "left", nodes)
        bx, by = _side(b, "left", nodes)
        # The arc's leftmost point: further out for longer jumps, never off the drawing.
        reach = max(16.0, min(ax, bx) - min(70.0, max(22.0, 0.35 * abs(by - ay))))
        # A cubic with both inner control points at x = c has its middle at
        # x = (ax + bx) / 8 + 0.75 c.
        c = (reach - (ax + bx) / 8) / 0.75
        pts = [(ax, ay), (c, ay), (c, by), (bx, by)]
    (x0, y0), *rest = pts
    return f"M{_num(x0)} {_num(y0)} C" + ", ".join(f"{_num(x)} {_num(y)}" for x, y in rest)


def drawing() -> dict[str, object]:
    """The static drawing as JSON (our own constants only): what the replayer's script
    builds the SVG from, in the app and in the HTML export alike."""
    return {
        "viewBox": list(VIEWBOX),
        "nodes": [{"id": k, "x": v[0], "y": v[1], "w": v[2], "h": v[3], "label": v[4],
                   "shape": v[5], "hook": NODE_HOOK.get(k)} for k, v in NODES.items()],
        "wraps": [{"id": k, "x": v[0], "y": v[1], "w": v[2], "h": v[3]} for k, v in WRAPS.items()],
        "edges": [{"id": k, "d": d, "back": k == BACK_EDGE,
                   "cond": k.startswith("after_model>")} for k, d in EDGES.items()],
        "back": {"id": BACK_EDGE, "box": EDGES[BACK_EDGE], "point": BACK_TO_POINT},
        "cond": list(COND),
        # where each hook's middleware names go (MW_LABELS)
        "mw": {h: {"x": x, "y": y, "anchor": a} for h, (x, y, a, _n) in MW_LABELS.items()},
        "lift": LABEL_LIFT,
        "nodeOrder": list(GRAPH_NODES),  # the bit of each node in a step's visited mask
        # where the tool calls in flight are listed: below wrap_tool_call's box and the
        # middleware names at its foot
        "chips": [292, 446],
        # The loop without hooks (shape "loop"): what replaces the above for such a run.
        "loop": {
            "viewBox": list(LOOP_VIEWBOX),
            "nodes": [{"id": k, "x": v[0], "y": v[1], "w": v[2], "h": v[3], "label": v[4],
                       "shape": v[5], "hook": None} for k, v in LOOP_NODES.items()],
            "wraps": [],
            "edges": [{"id": k, "d": d, "back": k == LOOP_BACK, "cond": k.startswith("model>")}
                      for k, d in LOOP_EDGES.items()],
            "back": {"id": LOOP_BACK, "box": LOOP_EDGES[LOOP_BACK],
                     "point": LOOP_EDGES[LOOP_BACK]},
            "cond": list(LOOP_COND),
            "labels": [{"x": x, "y": y, "text": t} for x, y, t in LOOP_LABELS],
            "mw": {},
            "chips": [300, 300],
        },
    }


__all__ = [
    "BACK_EDGE", "BACK_TO_POINT", "COND", "EDGES", "LABEL_LIFT", "LOOP_BACK", "LOOP_EDGES",
    "LOOP_NODES", "MW_LABELS", "NODES", "NODE_HOOK", "POINTS", "SHAPES", "VIEWBOX", "WRAPS",
    "drawing", "has_middleware_hooks", "is_jump", "jump_path", "jump_steps",
    "middleware_labels", "passable_points", "passthrough_hooks", "route", "shape",
    "step_edges", "unknown_hooks",
]
