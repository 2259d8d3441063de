"""The replay in the app: the one replayer (``tracer/replayer``) as a ``st.components.v2``
component.

The browser holds the run (its JSON form, ``tracer.replayer.replay_json``, built
once per loaded run) and steps and plays it by itself: a key press or a tick of
playback changes classes and a message list, with no server round trip. The
server hears about the step only for what needs Python (the URL, the
inspector, the floor plan, the wire formats): the replayer reports the step it
settled on (150 ms after the last key, or when playback pauses) and the
fragment reruns with it. The app moves the browser only through
``state.move_to`` (a finding, a link): a counter the browser follows once per
change, so a rerun never pulls the replay back to a step it has left.

A run longer than ``WHOLE_STEPS`` is sent a window at a time (``window_at``): the
replayer asks for the window around a step it does not hold ("window"), and
during playback for the next one before it reaches the edge.

While the run is being recorded, the component asks for a reload every
``state.LIVE_MS`` (not while playing); a run that grew is loaded again in place
and, shown at its last step, follows to its new end.

The run's JSON (2.5 MB for 5,000 steps) is sent once: each event the browser
sends names the version of the run it holds, and while it holds the current
one the app sends ``run: null``. A new mount given ``null`` (the page was left
and opened again) asks for the run ("need") and gets it on the next rerun.

On a lean page (a session's first replay, ``app/screens/replay/page.py``) the component is
given ``paint``: once the run it loads has been painted it sends "painted", and the
app draws the rest of the page.

``replayer_data(...)`` is a pure function (AppTest reads it from the
component's JSON); only ``render_replayer`` touches Streamlit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import streamlit as st

from ..data.drawing import STEP_MS, drawing, script, style
from ..kit import state

ADAPTER = """
const LAYOUT = __LAYOUT__;
const REPORT_MS = 150;
const WAIT_WHOLE_MS = 5000;
// The run last loaded on this page and where its replayer was when it went away: a
// replayer that Streamlit mounts again (it happens mid-session, rarely) takes up the
// same run, step and playback at once, without asking the app.
let LAST = null;
// A click on another page (the sidebar's pages, a page link) or the browser's back: the
// replayer sends nothing more until it is drawn again. Streamlit keeps one pending
// rerun per session and the newest wins, page and all: an event sent just after the
// click ("painted" as a newcomer clicks "Wire") took the user back to this page.
let LEFT_AT = 0;
const LEAVING_MS = 3000;
if (!window.__ltLeaveWatch) {
  window.__ltLeaveWatch = true;
  document.addEventListener("click", (e) => {
    if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;  // (a new tab)
    const link = e.target instanceof Element && e.target.closest(
      '[data-testid="stSidebarNav"] a, [data-testid="stPageLink"] a');
    if (link) LEFT_AT = performance.now();
  }, true);
  window.addEventListener("popstate", () => { LEFT_AT = performance.now(); });
}
const leaving = () => LEFT_AT > 0 && performance.now() - LEFT_AT < LEAVING_MS;
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  let P = parentElement.__lt;
  if (!P) {
    P = parentElement.__lt = { key: null, goto: null, timer: null, live: null, marks: null };
    P.player = createReplayer(parentElement, {
      layout: LAYOUT, keyboard: !!data.keyboard, parts: data.parts || {},
      className: data.presenter ? "lt-presenter" : "", speed: data.speed, stepMs: data.step_ms,
      // The step the browser settled on goes to the server (not each step of playback).
      onStep(i, cause) {
        if (P.timer) { clearTimeout(P.timer); P.timer = null; }
        if (P.leaving) return;  // (another run was asked for: a late step would land on it)
        const said = P.key + "|" + i;  // (the version held, and the step)
        if (cause === "user") P.timer = setTimeout(() => { P.timer = null; P.send("step", said); }, REPORT_MS);
        else if (cause === "pause") P.send("step", said);
      },
      onSpeed(v) { if (P.key !== null) P.send("speed", String(v)); },
      // A run sent as a window: the step needed next (the app sends the window around it).
      // (a step report still waiting for its REPORT_MS is dropped: sent after this, it
      // would move the app back to the window the browser is leaving)
      onWindow(i) {
        if (P.timer) { clearTimeout(P.timer); P.timer = null; }
        P.send("window", P.key + "|" + i);
      },
      onOpen: data.subagents ? (id) => {
        if (P.timer) { clearTimeout(P.timer); P.timer = null; }
        P.leaving = true;
        setTimeout(() => { P.leaving = false; }, 3000);  // (if the app did not switch)
        P.send("open", id + ":" + Date.now());
      } : undefined,
    });
  }
  LEFT_AT = 0;  // (drawn again: this page is the page)
  P.send = (name, value) => {
    if (leaving()) return;
    if (P.waiting && name !== "painted") { P.waiting.set(name, value); return; }
    setTriggerValue(name, value);
  };
  if (P.waiting && !data.paint) flushWaiting();  // (the whole page is here)
  const again = P.key === null && LAST && LAST.key === data.key && LAST.goto === data.goto;
  if (data.run == null && data.key !== P.key && !again) {
    // The app thought this browser held the run (a new mount does not): ask for it.
    P.send("need", data.key + "|" + Date.now());
    return cleanup;
  }
  if (data.key !== P.key) {
    P.leaving = false;
    const run = data.run || LAST.run;
    const other = P.player.run() !== run.run.id, moved = data.goto !== P.goto;
    // (the same run, grown while being recorded: shown at its last step, it follows; a
    // new window of a large run: the step the replayer was waiting for)
    P.player.load(run, { step: again ? LAST.step : (other || moved ? data.step : undefined),
                         follow: true });
    if (again && LAST.playing && performance.now() - LAST.at < 3000) P.player.play();
    P.key = data.key;
    P.goto = data.goto;
    LAST = { key: data.key, goto: data.goto, run, step: null, playing: false, at: 0 };
    if (data.paint) {
      // The app drew only the replayer: once this frame is painted, it draws the rest.
      // Until the rest is here, what the replayer would tell the app waits (the last of
      // each event): an event then reruns the fragment while the whole page is being
      // drawn, and Streamlit drops the fragment's part of that page (the replayer taken
      // off the page and mounted again, mid-playback, on a busy machine).
      const held = data.key;
      requestAnimationFrame(() => setTimeout(() => {
        P.send("painted", held + "|" + Date.now());
        if (!P.waiting) P.waiting = new Map();
        clearTimeout(P.waitTimer);
        P.waitTimer = setTimeout(flushWaiting, WAIT_WHOLE_MS);  // (not forever)
      }, 0));
    }
  } else if (data.goto !== P.goto) {
    P.goto = data.goto;
    if (LAST && LAST.key === P.key) LAST.goto = data.goto;
    P.player.go(data.step, "server");
  }
  P.player.setHighlight(data.highlight || [], data.step);
  const marks = JSON.stringify(data.markers || []);
  if (marks !== P.marks) { P.marks = marks; P.player.setMarkers(data.markers || []); }
  if (P.live) { clearInterval(P.live); P.live = null; }
  if (data.live_ms) {
    P.live = setInterval(() => { if (!P.player.playing()) P.send("reload", String(Date.now())); }, data.live_ms);
  }
  return cleanup;
  function flushWaiting() {
    const waiting = P.waiting;
    P.waiting = null;
    clearTimeout(P.waitTimer);
    if (waiting) for (const [name, value] of waiting) P.send(name, value);
  }
  function cleanup() {
    if (LAST && LAST.key === P.key) {
      Object.assign(LAST, { step: P.player.step(), playing: P.player.playing(), at: performance.now() });
    }
    if (P.live) clearInterval(P.live);
    if (P.timer) clearTimeout(P.timer);
    clearTimeout(P.waitTimer);
    P.player.destroy();
    parentElement.__lt = null;
  }
}
"""

# A run of more steps than WHOLE_STEPS goes to the browser a window of WINDOW_STEPS at a
# time (5,000 steps are about 2.5 MB of JSON; the first 1,000 of a 500-lap run 0.57 MB:
# the first visit's server script, transfer and parse scale with it, issue 29).
# LOOPTRACE_REPLAY_WINDOW=N sets the window (and sends runs up to 2N whole).
WINDOW_STEPS = max(50, int(os.environ.get("LOOPTRACE_REPLAY_WINDOW") or 1_000))
WHOLE_STEPS = 2 * WINDOW_STEPS


def window_at(n_steps: int, step: int) -> tuple[int, int] | None:
    """The window of a run of ``n_steps`` to send for ``step``: None (the whole run) when
    it is small enough; else ``WINDOW_STEPS`` steps, a quarter of them before ``step``
    (playback and stepping mostly go forward)."""
    if n_steps <= WHOLE_STEPS:
        return None
    start = max(0, min(step - WINDOW_STEPS // 4, n_steps - WINDOW_STEPS))
    return start, start + WINDOW_STEPS


_component: Callable[..., Any] | None = None


def _get() -> Callable[..., Any]:
    global _component
    if _component is None:
        _component = st.components.v2.component(
            "looptrace_replayer", html="", css=style(),
            js=script() + ADAPTER.replace("__LAYOUT__", json.dumps(drawing())))
    return _component


def replayer_data(run_json: dict[str, Any] | None, step: int, *, key: str, goto: int = 0,
                  live_ms: int = 0, keyboard: bool = True, presenter: bool = False,
                  parts: dict[str, bool] | None = None, markers: list[dict[str, Any]] | None = None,
                  highlight: tuple[str, ...] = (), speed: float = 1.0,
                  subagents: bool = False, paint: bool = False) -> dict[str, Any]:
    """What the component is given: the run (``replay_json``, or None when the browser
    holds this version already) and ``key`` naming its version (a new key loads it
    again), the step the app wants (followed once per new ``goto``), and the page's
    settings. ``paint``: the page is drawn lean (the replayer only): the browser says
    when the run it loads has been painted ("painted"), and the app draws the rest."""
    return {"key": key, "run": run_json, "step": int(step), "goto": int(goto), "paint": paint,
            "live_ms": max(0, int(live_ms)), "keyboard": keyboard, "presenter": presenter,
            "parts": parts or {}, "markers": markers or [], "highlight": list(highlight),
            "speed": speed if speed in state.SPEEDS else 1.0, "step_ms": STEP_MS,
            "subagents": subagents}


def render_replayer(data: dict[str, Any], *, key: str = state.REPLAYER,
                    on_step: Callable[[], None] | None = None,
                    on_speed: Callable[[], None] | None = None,
                    on_open: Callable[[], None] | None = None,
                    on_reload: Callable[[], None] | None = None,
                    on_need: Callable[[], None] | None = None,
                    on_window: Callable[[], None] | None = None,
                    on_painted: Callable[[], None] | None = None) -> Any:
    """Mount (or update) the replayer; each callback runs when the browser sends that event."""
    noop: Callable[[], None] = lambda: None
    return _get()(key=key, data=data, on_step_change=on_step or noop,
                  on_painted_change=on_painted or noop,
                  on_speed_change=on_speed or noop, on_open_change=on_open or noop,
                  on_reload_change=on_reload or noop, on_need_change=on_need or noop,
                  on_window_change=on_window or noop)


def event(name: str) -> str | None:
    """In a callback: the value the browser sent with event ``name``."""
    value = (st.session_state.get(state.REPLAYER) or {}).get(name)
    return value if isinstance(value, str) else None


__all__ = ["WHOLE_STEPS", "WINDOW_STEPS", "event", "render_replayer", "replayer_data",
           "window_at"]
