"""The loop graph: a small ``st.components.v2`` SVG component.

The SVG is drawn once with fixed node positions; each step only changes CSS
classes (active node, edge just taken, visited nodes), so the picture stays in
place and the change animates. The same component listens for the replay's
keyboard shortcuts on the document and sends them back as a trigger, keeps
the replay's time (a 'tick' asks for playback's next step, a 'reload' for a
fresh look at a run still being recorded), and scrolls the highlighted message
into view.

The drawing and the edges a step takes come from ``tracer.graph_layout`` (the
HTML export draws from the same): a step is drawn over the standard edges only
through pass-through points (hooks no middleware used), otherwise as one jump
edge ``"a>b"``, a dotted arc that exists only while it is the step's edge
(``graph_data(...)["jumps"]`` carries its path data).

``graph_data(replay, index)`` is a pure function (tests snapshot it); only
``render_graph`` touches Streamlit. Trace text (tool names and ids) reaches the
page through ``textContent`` only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st

from tracer.graph_layout import (
    BACK_EDGE,
    BACK_TO_POINT,
    COND,
    EDGES,
    LABEL_LIFT,
    MW_LABELS,
    NODE_HOOK,
    NODES,
    POINTS,
    VIEWBOX,
    WRAPS,
    jumps_for,
    middleware_labels,
    passable_points,
    passthrough_hooks,
    route,
    unknown_hooks,
)
from tracer.replay import Replay

from . import state
from .palette import call_colour
from .run_view import is_error

__all__ = ["EDGES", "NODES", "WRAPS", "graph_data", "key_action", "layout", "render_graph"]


def _route(a: str, b: str, passable: frozenset[str] | set[str] = frozenset(POINTS)) -> list[str]:
    """The edges a step from ``a`` to ``b`` takes: through pass-through points only
    (``passable``), else the one jump edge ``"a>b"`` (``tracer.graph_layout.route``)."""
    return route(a, b, passable)


def layout() -> dict[str, Any]:
    """The static drawing (our own constants only), embedded in the component's JS."""
    return {
        "viewBox": VIEWBOX,
        "nodes": [{"id": k, "x": v[0], "y": v[1], "w": v[2], "h": v[3], "label": v[4],
                   "shape": v[5], "hook": NODE_HOOK.get(k)} for k, v in NODES.items()],
        "wraps": [{"id": k, "x": v[0], "y": v[1], "w": v[2], "h": v[3]} for k, v in WRAPS.items()],
        "edges": [{"id": k, "d": d, "back": k == BACK_EDGE,
                   "cond": k.startswith("after_model>")} for k, d in EDGES.items()],
        "back": {"id": BACK_EDGE, "box": EDGES[BACK_EDGE], "point": BACK_TO_POINT},
        "cond": COND,
        # where each hook's middleware names go (tracer.graph_layout.MW_LABELS)
        "mw": {h: {"x": x, "y": y, "anchor": a} for h, (x, y, a, _n) in MW_LABELS.items()},
        "lift": LABEL_LIFT,
    }


def tool_names(replay: Replay) -> dict[str, str]:
    """tool_call_id -> tool name, from the tool-call events of the run."""
    out: dict[str, str] = {}
    for ev in replay.run.events:
        if ev.tool_call_id and isinstance(ev.payload, dict) and ev.payload.get("name"):
            out.setdefault(ev.tool_call_id, str(ev.payload["name"]))
    return out


def graph_data(replay: Replay, index: int, *, names: dict[str, str] | None = None,
               colours: dict[str, int] | None = None, scroll_to: str | None = None,
               keyboard: bool = True, play_ms: int = 0, live_ms: int = 0) -> dict[str, Any]:
    """Everything the graph shows at step ``index`` (JSON-ready). The component's
    timers: ``play_ms``, while playing, how long it shows this step before it asks
    for the next one (a 'tick'); ``live_ms``, while the run is being recorded, how
    often it asks for a reload. 0 turns a timer off."""
    timers = {"play_ms": max(0, int(play_ms)), "live_ms": max(0, int(live_ms))}
    passthrough = passthrough_hooks(replay)
    if not replay.steps:
        return {"step": 0, "steps": 0, "node": "START", "edges": [], "jumps": [], "jump": False,
                "visited": [], "passthrough": passthrough, "unknown": unknown_hooks(replay),
                "mw": middleware_labels(replay), "tools": [], "kind": "run",
                "keyboard": keyboard, "scroll_to": scroll_to, "lap": 0, **timers}
    step = replay.steps[index]
    names = names if names is not None else tool_names(replay)
    colours = colours or {}
    edges = route(*step.edge, passable_points(replay)) if step.edge else []
    jumps = jumps_for(edges)
    return {
        "step": step.index,
        "steps": len(replay.steps),
        "node": step.node,
        "edges": edges,
        "jumps": jumps,  # edges off the standard ones: [{"id": "a>b", "d": path data}]
        "jump": bool(jumps),
        "visited": sorted(step.visited),
        "passthrough": passthrough,
        "unknown": unknown_hooks(replay),  # a run seen from outside: hooks it cannot know
        # each hook's middleware, in execution order: {hook: {"text", "title"}}
        "mw": middleware_labels(replay),
        "tools": [{"id": t, "name": names.get(t, "tool"),
                   "colour": call_colour(colours.get(t, 0))} for t in step.active_tools],
        "kind": step.kind,
        "error": is_error(step),
        "interrupt": step.kind == "interrupt",
        "lap": step.event.lap,
        "keyboard": keyboard,
        "scroll_to": scroll_to,
        **timers,
    }


def _passthrough(replay: Replay) -> list[str]:
    """Hooks that no middleware used in this run: drawn as pass-through points."""
    return passthrough_hooks(replay)


CSS = """
:host { display: block; }
.lt-graph { font-family: var(--st-font, sans-serif); color: var(--st-text-color); }
.lt-graph svg { width: 100%; height: auto; display: block;
  max-height: var(--lt-graph-max-height, 74vh); }
.lt-graph .node rect, .lt-graph .node circle {
  fill: var(--st-secondary-background-color); stroke: var(--st-border-color, #888);
  stroke-width: 1.5; transition: fill .35s ease, stroke .35s ease, stroke-width .35s ease; }
.lt-graph .node text { fill: var(--st-text-color); font-size: 15px; font-weight: 600;
  text-anchor: middle; dominant-baseline: central; transition: fill .35s ease;
  font-family: var(--st-code-font, ui-monospace, monospace); }
.lt-graph .node.visited rect, .lt-graph .node.visited circle {
  fill: color-mix(in srgb, var(--st-primary-color) 16%, var(--st-secondary-background-color));
  stroke: color-mix(in srgb, var(--st-primary-color) 55%, var(--st-border-color, #888)); }
.lt-graph .node.active rect, .lt-graph .node.active circle {
  fill: var(--st-primary-color); stroke: var(--st-primary-color); stroke-width: 3; }
.lt-graph .node.active text { fill: #fff; }
.lt-graph .node.error.active rect { fill: #d62728; stroke: #d62728; }
.lt-graph .node.interrupt.active rect { fill: #f59f00; stroke: #f59f00; }
.lt-graph .node.interrupt.active text { fill: #1a1a1a; }
.lt-graph .node.passthrough text { font-weight: 400; font-size: 13px; opacity: .8; }
.lt-graph .node.passthrough circle { r: 7px; }
.lt-graph .node.passthrough.active circle { r: 10px; }
.lt-graph .node.passthrough.active text { fill: var(--st-primary-color); opacity: 1;
  font-weight: 700; }
.lt-graph .wrap rect { fill: none; stroke: var(--st-text-color); stroke-opacity: .45;
  stroke-dasharray: 6 4; stroke-width: 1.3; transition: stroke-opacity .35s ease; }
.lt-graph .wrap text { fill: var(--st-text-color); opacity: .7; font-size: 12.5px;
  font-family: var(--st-code-font, ui-monospace, monospace); }
.lt-graph .wrap.passthrough rect { stroke-opacity: .18; }
.lt-graph .wrap.passthrough text { opacity: .4; }
.lt-graph .node.unknown text { font-style: italic; opacity: .5; }
.lt-graph text.mw { font-size: 10.5px; font-weight: 400; opacity: .75;
  fill: var(--st-text-color); font-family: var(--st-code-font, ui-monospace, monospace);
  dominant-baseline: central; }
.lt-graph .mw-labels g.on text.mw { fill: #fff; opacity: .9; }
.lt-graph text.mw.halo { paint-order: stroke; stroke: var(--st-background-color, #fff);
  stroke-width: 4px; stroke-linejoin: round; }
.lt-graph .node.unknown circle { fill: none; stroke-dasharray: 2 2; }
.lt-graph .wrap.unknown rect { stroke-dasharray: 2 4; }
.lt-graph .wrap.active rect { stroke: var(--st-primary-color); stroke-opacity: 1;
  stroke-width: 2.2; }
.lt-graph .edge path { fill: none; stroke: var(--st-text-color); stroke-opacity: .45;
  stroke-width: 1.8; transition: stroke .35s ease, stroke-opacity .35s ease,
  stroke-width .35s ease; }
.lt-graph .edge.back path { stroke-dasharray: 5 4; }
.lt-graph .edge.taken path { stroke: var(--st-primary-color); stroke-opacity: 1;
  stroke-width: 3.5; stroke-dasharray: 10 6; animation: lt-flow .9s linear infinite; }
@keyframes lt-flow { to { stroke-dashoffset: -32; } }
.lt-graph .cond polygon { fill: var(--st-secondary-background-color);
  stroke: var(--st-text-color); stroke-opacity: .55; stroke-width: 1.5;
  transition: fill .35s ease; }
.lt-graph .cond.taken polygon { fill: var(--st-primary-color);
  stroke: var(--st-primary-color); stroke-opacity: 1; }
.lt-graph .cond text, .lt-graph .lap { fill: var(--st-text-color); opacity: .7;
  font-size: 12px; }
.lt-graph .chip rect { stroke: none; }
.lt-graph .chip text { fill: var(--st-text-color); font-size: 12.5px;
  font-family: var(--st-code-font, ui-monospace, monospace); dominant-baseline: central; }
.lt-graph marker path { fill: var(--st-text-color); fill-opacity: .6; }
.lt-graph marker.hot path { fill: var(--st-primary-color); fill-opacity: 1; }
.lt-graph marker.jump path { fill: var(--lt-jump-color); fill-opacity: 1; }
/* A jump edge (the step skipped nodes: jump_to, Command(goto=...), a loop of its own):
   dotted, in the jump colour, drawn only while it is the step's edge. */
.lt-graph { --lt-jump-color: var(--st-primary-color); }
.lt-graph .edge.jump path { stroke: var(--lt-jump-color); stroke-opacity: 1;
  stroke-width: 3.5; stroke-linecap: round; stroke-dasharray: 0.5 7.5;
  animation: lt-flow .9s linear infinite; }
@media (prefers-reduced-motion: reduce) {
  .lt-graph * { transition: none !important; animation: none !important; }
}
"""

JS = """
const LAYOUT = __LAYOUT__;
const BACK = LAYOUT.back;
const NS = 'http://www.w3.org/2000/svg';
function el(tag, attrs, parent) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (parent) parent.appendChild(e);
  return e;
}
function build(parent) {
  const root = document.createElement('div');
  root.className = 'lt-graph';
  root.setAttribute('data-testid', 'lt-graph');
  const svg = el('svg', {viewBox: LAYOUT.viewBox.join(' '), role: 'img',
                         'aria-label': 'agent loop graph'}, root);
  const defs = el('defs', {}, svg);
  for (const [id, cls] of [['lt-arrow', ''], ['lt-arrow-hot', 'hot'], ['lt-arrow-jump', 'jump']]) {
    const m = el('marker', {id, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7,
                            markerHeight: 7, orient: 'auto-start-reverse', class: cls}, defs);
    el('path', {d: 'M0 0 L10 5 L0 10 z'}, m);
  }
  for (const w of LAYOUT.wraps) {
    const g = el('g', {class: 'wrap', 'data-hook': w.id}, svg);
    el('rect', {x: w.x, y: w.y, width: w.w, height: w.h, rx: 10}, g);
    el('text', {x: w.x + 8, y: w.y + 15}, g).textContent = w.id;
  }
  for (const e of LAYOUT.edges) {
    const g = el('g', {class: 'edge' + (e.back ? ' back' : ''), 'data-edge': e.id}, svg);
    el('path', {d: e.d, 'marker-end': 'url(#lt-arrow)'}, g);
  }
  // Jump edges (a step that skipped nodes): drawn here only while a step takes one.
  el('g', {class: 'jumps'}, svg);
  const [cx, cy, s] = LAYOUT.cond;
  const cg = el('g', {class: 'cond', 'data-node': 'conditional'}, svg);
  el('polygon', {points: `${cx},${cy - s} ${cx + s},${cy} ${cx},${cy + s} ${cx - s},${cy}`}, cg);
  el('text', {x: cx - s - 6, y: cy + 4, 'text-anchor': 'end'}, cg).textContent = 'tool calls?';
  for (const n of LAYOUT.nodes) {
    const g = el('g', {class: 'node', 'data-node': n.id}, svg);
    if (n.shape === 'pill') {
      el('rect', {x: n.x - n.w / 2, y: n.y - n.h / 2, width: n.w, height: n.h, rx: n.h / 2}, g);
    } else {
      el('rect', {x: n.x - n.w / 2, y: n.y - n.h / 2, width: n.w, height: n.h, rx: 8}, g);
    }
    el('circle', {cx: n.x, cy: n.y, r: 7, class: 'dot', style: 'display:none'}, g);
    el('text', {x: n.x, y: n.y}, g).textContent = n.label;
  }
  // Each hook's middleware: in a node hook's box under its name, at the foot of a wrap
  // hook's dashed box (over the edges: a halo keeps them readable).
  const ml = el('g', {class: 'mw-labels'}, svg);
  for (const [hook, m] of Object.entries(LAYOUT.mw)) {
    const g = el('g', {'data-hook': hook}, ml);
    const wrap = hook.startsWith('wrap_');
    el('text', {class: wrap ? 'mw halo' : 'mw', x: m.x, y: m.y, 'text-anchor': m.anchor}, g);
    el('title', {}, g);
  }
  el('g', {class: 'chips'}, svg);
  el('text', {class: 'lap', x: 452, y: 24, 'text-anchor': 'end'}, svg);
  parent.appendChild(root);
  return root;
}
function update(root, d) {
  root.setAttribute('data-step', String(d.step));
  root.setAttribute('data-active-node', d.node);
  root.setAttribute('data-kind', d.kind);
  const visited = new Set(d.visited), pass = new Set(d.passthrough), hot = new Set(d.edges),
        unknown = new Set(d.unknown || []);
  for (const n of LAYOUT.nodes) {
    const g = root.querySelector(`g.node[data-node="${n.id}"]`);
    const isPass = n.hook && pass.has(n.hook);
    g.classList.toggle('active', d.node === n.id);
    g.classList.toggle('visited', visited.has(n.id) && d.node !== n.id);
    g.classList.toggle('error', d.node === n.id && !!d.error);
    g.classList.toggle('interrupt', d.node === n.id && !!d.interrupt);
    g.classList.toggle('passthrough', !!isPass);
    g.classList.toggle('unknown', !!(n.hook && unknown.has(n.hook)));
    const rect = g.querySelector('rect'), dot = g.querySelector('circle'),
          text = g.querySelector('text');
    text.textContent = n.hook && unknown.has(n.hook) ? n.label + ' ?' : n.label;
    rect.style.display = isPass ? 'none' : '';
    dot.style.display = isPass ? '' : 'none';
    text.setAttribute('x', isPass ? n.x - 16 : n.x);
    text.style.textAnchor = isPass ? 'end' : '';
    // The middleware on this hook (names from the trace: textContent only).
    const mw = n.hook && !isPass && (d.mw || {})[n.hook];
    const lg = n.hook && root.querySelector(`g.mw-labels g[data-hook="${n.hook}"]`);
    if (lg) {
      lg.querySelector('text').textContent = mw ? mw.text : '';
      lg.querySelector('title').textContent = mw ? mw.title : '';
      lg.classList.toggle('on', d.node === n.id);
      text.setAttribute('y', mw ? n.y - LAYOUT.lift : n.y);
    }
  }
  // The back edge ends at before_model's box, or at its point when it passes through.
  const back = root.querySelector(`g.edge[data-edge="${BACK.id}"] path`);
  back.setAttribute('d', pass.has('before_model') ? BACK.point : BACK.box);
  for (const w of LAYOUT.wraps) {
    const g = root.querySelector(`g.wrap[data-hook="${w.id}"]`);
    const node = w.id === 'wrap_model_call' ? 'model' : 'tools';
    g.classList.toggle('passthrough', pass.has(w.id));
    g.classList.toggle('unknown', unknown.has(w.id));
    g.classList.toggle('active', d.node === node && !pass.has(w.id));
    const mw = (d.mw || {})[w.id];
    const lg = root.querySelector(`g.mw-labels g[data-hook="${w.id}"]`);
    lg.querySelector('text').textContent = mw ? mw.text : '';
    lg.querySelector('title').textContent = mw ? mw.title : '';
  }
  for (const e of LAYOUT.edges) {
    const g = root.querySelector(`g.edge[data-edge="${e.id}"]`);
    const on = hot.has(e.id);
    g.classList.toggle('taken', on);
    g.querySelector('path').setAttribute('marker-end', on ? 'url(#lt-arrow-hot)' : 'url(#lt-arrow)');
  }
  // Jump edges: ids and path data are our own constants (node names, numbers).
  const jumps = root.querySelector('g.jumps');
  const want = new Map((d.jumps || []).map((j) => [j.id, j.d]));
  for (const g of Array.from(jumps.children)) {
    const id = g.getAttribute('data-edge');
    if (want.get(id) === g.querySelector('path').getAttribute('d')) want.delete(id);
    else jumps.removeChild(g);
  }
  for (const [id, path] of want) {
    const g = el('g', {class: 'edge jump taken', 'data-edge': id}, jumps);
    el('path', {d: path, 'marker-end': 'url(#lt-arrow-jump)'}, g);
    el('title', {}, g).textContent = 'jump: ' + id.replace('>', ' \u2192 ');
  }
  root.setAttribute('data-jump', d.jump ? '1' : '0');
  root.querySelector('g.cond').classList.toggle(
    'taken', hot.has('after_model>tools') || hot.has('after_model>after_agent'));
  const chips = root.querySelector('g.chips');
  while (chips.firstChild) chips.removeChild(chips.firstChild);
  const max = 5;
  d.tools.slice(0, max).forEach((t, i) => {
    const g = el('g', {class: 'chip', 'data-tool-call': t.id}, chips);
    const y = 436 + i * 22;
    el('rect', {x: 292, y: y - 9, width: 12, height: 18, rx: 3, fill: t.colour}, g);
    const label = el('text', {x: 310, y: y}, g);
    const full = t.name + '  ' + t.id;
    label.textContent = full.length > 20 ? full.slice(0, 19) + '…' : full;
    el('title', {}, g).textContent = full;
  });
  if (d.tools.length > max) {
    el('text', {x: 310, y: 436 + max * 22, class: 'chip'}, chips).textContent =
      `+${d.tools.length - max} more`;
  }
  root.querySelector('text.lap').textContent = d.steps ? `lap ${d.lap}` : '';
}
function scrollLater(key) {
  // Scroll the message pane (not the page) so the highlighted message shows.
  let tries = 0;
  const go = () => {
    const target = document.querySelector('.st-key-' + key);
    if (!target) { if (++tries < 20) setTimeout(go, 50); return; }
    let box = target.parentElement;
    while (box && !(box.scrollHeight > box.clientHeight + 4 &&
                    /(auto|scroll)/.test(getComputedStyle(box).overflowY))) {
      box = box.parentElement;
    }
    if (!box || box === document.body || box === document.documentElement) return;
    const t = target.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (t.top < b.top || t.bottom > b.bottom) {
      const delta = t.height > b.height ? t.top - b.top - 8 : t.bottom - b.bottom + 8;
      box.scrollTop += (t.top < b.top ? t.top - b.top - 8 : delta);
    }
  };
  setTimeout(go, 30);
}
// Playback: while playing, ask for the next step once this one has been shown for
// play_ms. The next tick is scheduled only when the new step arrives, so playback
// never runs ahead of the page. If nothing arrives (a tick lost in a busy rerun),
// the same tick is sent again; the app ignores a tick for a step already left.
// Ticks and shortcuts share the component's one event queue, where Streamlit keeps
// only the newest event of a burst: a shortcut therefore puts the next tick off,
// so a tick never replaces a shortcut (a tick replaced by a shortcut is resent).
// A step shows from its arrival until the next step's: while the next tick is being
// answered too. So the time the server took to answer the last tick is taken off
// the wait, and 4x is close to 4x when the server keeps up.
// While the run is being recorded (and not playing), ask for a reload every live_ms.
const retryMs = (d) => (d.play_ms ? Math.max(1500, 3 * d.play_ms) : d.live_ms);
function schedule(host, d, delay) {
  if (host.__ltTimer) clearTimeout(host.__ltTimer);
  host.__ltTimer = null;
  host.__ltData = d;
  const sentAt = host.__ltTickAt;
  host.__ltTickAt = null;
  if (!d.play_ms && !d.live_ms) return;
  const event = d.play_ms ? 'tick:' + d.step : 'reload';
  const send = (ms) => {
    host.__ltTimer = setTimeout(() => {
      host.__ltSend('key', event + ':' + Date.now());
      if (d.play_ms) host.__ltTickAt = performance.now();
      send(retryMs(d));
    }, ms);
  };
  if (delay === undefined && d.play_ms) {
    const answer = sentAt ? performance.now() - sentAt : 0;
    delay = Math.max(50, d.play_ms - answer);
  }
  send(delay === undefined ? d.live_ms : delay);
}
const KEYS = {ArrowRight: 'next', ArrowLeft: 'prev', ' ': 'toggle', Home: 'first', End: 'last'};
const NAVIGABLE = new Set(['radio', 'tab', 'option', 'menuitem', 'menuitemradio', 'gridcell']);
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let root = parentElement.querySelector('.lt-graph');
  if (!root) root = build(parentElement);
  update(root, data);
  if (data.scroll_to) scrollLater(data.scroll_to);
  const host = root;
  host.__ltSend = setTriggerValue;
  schedule(host, data);
  if (data.keyboard && !host.__ltKey) {
    host.__ltKey = (ev) => {
      const action = KEYS[ev.key];
      if (!action || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      const t = ev.target;
      const tag = (t && t.tagName) || '';
      const role = (t && t.getAttribute && t.getAttribute('role')) || '';
      if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' ||
          (t && t.isContentEditable) || role === 'slider') {
        return;
      }
      // Arrows, Home and End move within a radio group or tab list (the speed control).
      if (action !== 'toggle' && NAVIGABLE.has(role)) return;
      ev.preventDefault();
      if (tag === 'BUTTON' && t.blur) t.blur();
      host.__ltSend('key', action + ':' + Date.now());
      if (host.__ltData) schedule(host, host.__ltData, retryMs(host.__ltData));
    };
    // The capture phase: widgets such as the speed control stop the key's bubbling,
    // so after choosing a speed the space bar would not reach a bubbling listener.
    document.addEventListener('keydown', host.__ltKey, true);
  }
  return () => {
    if (host.__ltKey) {
      document.removeEventListener('keydown', host.__ltKey, true);
      host.__ltKey = null;
    }
    if (host.__ltTimer) { clearTimeout(host.__ltTimer); host.__ltTimer = null; }
  };
}
"""

_component: Callable[..., Any] | None = None


def _get_component() -> Callable[..., Any]:
    global _component
    if _component is None:
        _component = st.components.v2.component(
            "looptrace_graph", html="", css=CSS,
            js=JS.replace("__LAYOUT__", json.dumps(layout())))
    return _component


def render_graph(data: dict[str, Any], *, key: str = state.GRAPH,
                 on_key: Callable[[], None] | None = None) -> Any:
    """Mount the graph; ``on_key`` runs when a shortcut is pressed (see ``key_action``)."""
    return _get_component()(key=key, data=data, on_key_change=on_key or (lambda: None))


ACTIONS = ("next", "prev", "toggle", "first", "last", "tick", "reload")


def key_action() -> tuple[str | None, int | None]:
    """In a callback: what the component sent, as (action, step). The action is a
    shortcut ('next', 'prev', 'toggle', 'first', 'last'), 'tick' (the playback
    timer fired; ``step`` is the step the graph showed then) or 'reload' (the run
    is being recorded: the rerun itself reloads it). The replay's graph only
    (``state.GRAPH``): the Compare page's graphs take no keys."""
    value = (st.session_state.get(state.GRAPH) or {}).get("key")
    if not isinstance(value, str):
        return None, None
    action, _, rest = value.partition(":")
    if action not in ACTIONS:
        return None, None
    if action != "tick":
        return action, None
    arg = rest.split(":", 1)[0]
    return (action, int(arg)) if arg.isdigit() else (None, None)
