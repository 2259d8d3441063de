"""The scrubber's tick strip: one tick per step coloured by kind (model, tool,
error, interrupt), findings as markers, the current step as a cursor.
Clicking the strip seeks there. Drawn on a canvas by a small
``st.components.v2`` component (thousands of steps stay cheap)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from . import state
from .palette import KIND_COLOURS
from .run_view import KIND_LETTER

LETTER_COLOUR = {letter: KIND_COLOURS[kind] for kind, letter in KIND_LETTER.items()}

CSS = """
:host { display: block; }
.lt-ticks { position: relative; width: 100%; height: 30px; cursor: pointer; }
.lt-ticks canvas { width: 100%; height: 30px; display: block; }
"""

JS = """
const COLOURS = __COLOURS__;
function draw(root, d) {
  const canvas = root.querySelector('canvas');
  const w = Math.max(50, root.clientWidth), h = 30, dpr = window.devicePixelRatio || 1;
  canvas.width = w * dpr; canvas.height = h * dpr;
  const ctx = canvas.getContext('2d');
  ctx.scale(dpr, dpr);
  ctx.clearRect(0, 0, w, h);
  const n = d.kinds.length;
  const style = getComputedStyle(root);
  ctx.fillStyle = style.getPropertyValue('--st-secondary-background-color') || '#eee';
  ctx.fillRect(0, 8, w, 14);
  const x = (i) => n <= 1 ? w / 2 : 4 + (i / (n - 1)) * (w - 8);
  const tw = Math.max(1.5, Math.min(6, (w - 8) / Math.max(n, 1) * 0.8));
  for (let i = 0; i < n; i++) {
    const k = d.kinds[i];
    if (k === 'h' || k === 'r') continue;
    ctx.fillStyle = COLOURS[k] || '#999';
    const tall = (k === 'e' || k === 'i');
    ctx.fillRect(x(i) - tw / 2, tall ? 4 : 9, tw, tall ? 22 : 12);
  }
  for (const f of d.findings) {
    ctx.fillStyle = f.severity === 'error' ? '#e03131' : (f.severity === 'warning' ? '#f59f00' : '#3b82f6');
    const fx = x(f.step);
    ctx.beginPath(); ctx.moveTo(fx - 5, 30); ctx.lineTo(fx + 5, 30); ctx.lineTo(fx, 23); ctx.fill();
  }
  const cx = x(d.step);
  ctx.fillStyle = style.getPropertyValue('--st-text-color') || '#222';
  ctx.fillRect(cx - 1.5, 0, 3, 30);
}
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let root = parentElement.querySelector('.lt-ticks');
  if (!root) {
    root = document.createElement('div');
    root.className = 'lt-ticks';
    root.setAttribute('data-testid', 'lt-ticks');
    root.appendChild(document.createElement('canvas'));
    parentElement.appendChild(root);
  }
  root.__ltData = data;
  root.__ltSend = setTriggerValue;
  root.setAttribute('data-step', String(data.step));
  root.onclick = (ev) => {
    const d = root.__ltData, n = d.kinds.length;
    if (n < 1) return;
    const r = root.getBoundingClientRect();
    const f = Math.min(1, Math.max(0, (ev.clientX - r.left - 4) / Math.max(1, r.width - 8)));
    root.__ltSend('seek', Math.round(f * (n - 1)) + ':' + Date.now());
  };
  requestAnimationFrame(() => draw(root, data));
  if (!root.__ltResize && window.ResizeObserver) {
    root.__ltResize = new ResizeObserver(() => draw(root, root.__ltData));
    root.__ltResize.observe(root);
  }
}
"""

_component: Callable[..., Any] | None = None


def _get() -> Callable[..., Any]:
    global _component
    if _component is None:
        import json

        _component = st.components.v2.component(
            "looptrace_ticks", html="", css=CSS,
            js=JS.replace("__COLOURS__", json.dumps(LETTER_COLOUR)))
    return _component


def render_ticks(kinds: str, step: int, findings: list[dict[str, Any]], *,
                 on_seek: Callable[[], None]) -> Any:
    return _get()(key=state.TICKS, data={"kinds": kinds, "step": step, "findings": findings},
                  on_seek_change=on_seek)


def seek_target() -> int | None:
    """In the seek callback: the step index clicked on the strip."""
    value = (st.session_state.get(state.TICKS) or {}).get("seek")
    if not isinstance(value, str):
        return None
    try:
        return int(value.split(":", 1)[0])
    except ValueError:
        return None


def legend() -> str:
    """A caption (our own markdown) naming the tick colours."""
    return ("ticks: :blue[▮ model call] · :green[▮ tool call] · :red[▮ error] · "
            ":orange[▮ interrupt] · ▲ finding")
