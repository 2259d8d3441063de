"""One driver for the one replayer (``tracer/replayer/replayer.js``), wherever it runs.

The HTML export inlines the replayer in a page; the app's Streamlit component
(``app/panes/replayer_component.py``) mounts the same script in a shadow root. Both
expose the same DOM contract (see the top of ``replayer.js``), so the browser
tests of the export and of the app drive and read it through this one class:

    r = Replayer(page)                 # or Replayer(page, ".st-key-presenter")
    r.wait_ready()
    r.press("ArrowRight"); r.click("next"); r.speed(4); r.seek(10)
    r.assert_at(replay, 9)             # what the page shows == tracer.read.steps at step 9

Playwright's CSS selectors reach into the component's shadow root; the state is
read with ``locator.evaluate`` on the replayer's root element, whose
``querySelectorAll`` stays inside that shadow root (``document.querySelector``
would not reach it). Waits use Playwright's retrying ``expect``: no timed
assertions.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tracer.read.captions import captions
from tracer.read.graph_layout import drawing, jump_steps, step_edges
from tracer.read.palette import colour_map
from tracer.read.steps import Replay
from tracer.replayer import is_error

ROOT = '[data-testid="lt-replayer"]'
ACTIONS = ("first", "prev", "play", "pause", "next", "last", "next-model", "next-tool",
           "next-error", "open-subagent")
SPEEDS = (0.5, 1, 2, 4)
MAX_CHIPS = 5  # the graph draws at most five tool-call chips ("+N more" after them)
_DRAWN = frozenset(str(n["id"]) for n in drawing()["nodes"])  # type: ignore[attr-defined]
_ANY = re.compile(r".+")

# Everything the replayer shows, read in one go from its root element.
STATE_JS = r"""
(root) => {
  const q = (sel) => [...root.querySelectorAll(sel)];
  const one = (sel) => root.querySelector(sel);
  const graph = one('[data-testid="lt-graph"]');
  const msgs = q('.lt-messages .lt-msg');
  const callColour = (e) => e.style.getPropertyValue('--call').trim().toLowerCase();
  const open = one('[data-action="open-subagent"]');
  const counter = one('.lt-counter');
  const scrub = one('input.lt-scrub');
  const caption = one('.lt-caption');
  const d = root.dataset;
  return {
    step: Number(d.step), steps: Number(d.steps), node: d.activeNode, kind: d.kind,
    playing: d.playing, run: d.run, speed: d.speed, jump: d.jump,
    messages: d.messages === undefined ? null : Number(d.messages),
    depth: d.depth === undefined ? null : d.depth,
    counter: counter ? counter.textContent.trim() : null,
    scrub: scrub ? Number(scrub.value) : null,
    scrub_max: scrub ? Number(scrub.max) : null,
    caption: caption ? caption.textContent : null,
    graph_step: graph ? Number(graph.dataset.step) : null,
    graph_node: graph ? graph.dataset.activeNode : null,
    active: q('g.node.active').map((e) => e.dataset.node),
    visited: q('g.node.visited').map((e) => e.dataset.node).sort(),
    error_nodes: q('g.node.error').map((e) => e.dataset.node),
    interrupt_nodes: q('g.node.interrupt').map((e) => e.dataset.node),
    edges: q('g.edge.taken').map((e) => e.dataset.edge).sort(),
    chips: q('g.chip[data-tool-call]').map((e) => ({
      id: e.dataset.toolCall,
      colour: (e.querySelector('rect').getAttribute('fill') || '').trim().toLowerCase()})),
    positions: msgs.map((e) => Number(e.dataset.position)),
    keys: msgs.map((e) => e.dataset.key),
    current: msgs.filter((e) => e.classList.contains('current')).map((e) => e.dataset.key),
    omitted: msgs.filter((e) => e.classList.contains('omitted')).map((e) => e.dataset.key),
    tool_colours: msgs.map((e) => e.classList.contains('lt-msg-tool') ? callColour(e) : null),
    calls: q('.lt-messages .lt-call[data-call-id]').filter((e) => e.dataset.callId)
      .map((e) => ({id: e.dataset.callId, colour: callColour(e),
                    pending: e.classList.contains('pending')})),
    pending: [...new Set(q('.lt-messages .lt-call.pending').map((e) => e.dataset.callId))].sort(),
    open: open ? {shown: !open.hidden, target: open.getAttribute('data-target'),
                  text: open.textContent} : null,
    buttons: Object.fromEntries(q('[data-action]').map((b) => [b.dataset.action, b.disabled])),
    pwned: typeof window.__pwned,
  };
}
"""

# Records the replayer's data-step values (every change, in order) and one snapshot per
# animation frame of what both panes show: window.__ltSteps, window.__ltFrames.
RECORD_JS = r"""
(root) => {
  const read = () => ({
    step: Number(root.dataset.step),
    graph: Number(root.querySelector('[data-testid="lt-graph"]').dataset.step),
    node: root.querySelector('[data-testid="lt-graph"]').dataset.activeNode,
    positions: [...root.querySelectorAll('.lt-messages .lt-msg')]
      .map((e) => Number(e.dataset.position)),
    connected: root.isConnected,
  });
  if (window.__ltObserver) window.__ltObserver.disconnect();
  window.__ltStop = false;
  window.__ltOld = [];
  window.__ltRoot = root;
  window.__ltObserver = new MutationObserver((records) => {
    for (const r of records) if (r.attributeName === 'data-step') window.__ltOld.push(r.oldValue);
  });
  window.__ltObserver.observe(root, {attributes: true, attributeOldValue: true,
                                     attributeFilter: ['data-step']});
  window.__ltFrames = [];
  let last = '';
  const tick = () => {
    const snap = read();
    const key = JSON.stringify(snap);
    if (key !== last) { last = key; window.__ltFrames.push(snap); }
    if (!window.__ltStop) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
"""


@dataclass(frozen=True)
class Expected:
    """What the replayer must show at step ``index`` of a replay (``expected``)."""

    index: int
    run: str
    steps: int
    node: str
    kind: str
    counter: str
    caption: str
    positions: list[int]
    keys: list[str]
    must_highlight: frozenset[str]  # the step's new messages that are shown
    may_highlight: frozenset[str]  # those and the messages replaced at this step
    pending: list[str]
    edges: list[str]
    chips: list[str]
    visited: list[str]
    error: bool
    interrupt: bool
    colours: dict[str, str]  # tool_call_id -> colour (tracer.read.palette)
    tool_call_ids: list[str | None]  # per shown message: the call a ToolMessage answers
    jump: bool = False  # an event says this step's move was a jump (drawn as one)


def run_colours(replay: Replay) -> dict[str, str]:
    """One colour per tool call of the run, as ``tracer.read.palette`` gives it."""
    return colour_map([*replay.run.messages, *replay.run.revisions])


def expected(replay: Replay, i: int) -> Expected:
    """What the page should show at step ``i``, from Python's ``tracer.read.steps``."""
    st = replay.steps[i]
    shown = replay.messages_at(i)
    keys = [m.key for m in shown]
    revised = {m.key for m in replay.run.revisions if m.seq == st.event.seq}
    new = set(st.new_keys)
    return Expected(
        index=i, run=replay.run.id, steps=len(replay), node=st.node, kind=st.kind,
        counter=f"Step {i + 1} / {len(replay)}", caption=captions(replay)[i],
        positions=[m.position for m in shown], keys=keys,
        must_highlight=frozenset(k for k in keys if k in new),
        may_highlight=frozenset(k for k in keys if k in new | revised),
        pending=sorted(replay.pending_calls(i)),
        edges=sorted(step_edges(replay, i)),
        chips=list(st.active_tools)[:MAX_CHIPS],
        visited=sorted(n for n in st.visited if n != st.node),
        error=is_error(replay, st), interrupt=st.kind == "interrupt",
        colours=run_colours(replay),
        tool_call_ids=[m.tool_call_id if m.type == "tool" else None for m in shown],
        jump=i in jump_steps(replay),
    )


class Replayer:
    """The replayer on ``page`` (inside ``scope``, a CSS selector, when given)."""

    def __init__(self, page: Page, scope: str | None = None) -> None:
        self.page = page
        self.scope = scope
        self.root: Locator = page.locator(f"{scope} {ROOT}" if scope else ROOT)

    # -- finding things ------------------------------------------------------------------
    def part(self, selector: str) -> Locator:
        """An element inside the replayer (the graph, a message, a button...)."""
        return self.root.locator(selector)

    @property
    def graph(self) -> Locator:
        return self.part('[data-testid="lt-graph"]')

    @property
    def counter(self) -> Locator:
        return self.part(".lt-counter")

    @property
    def messages(self) -> Locator:
        return self.part(".lt-messages")

    def message(self, position: int) -> Locator:
        return self.part(f'.lt-messages .lt-msg[data-position="{position}"]')

    def button(self, action: str) -> Locator:
        assert action in ACTIONS, action
        return self.part(f'button[data-action="{action}"]')

    def speed_button(self, x: float) -> Locator:
        return self.part(f'button[data-speed="{_num(x)}"]')

    # -- reading -------------------------------------------------------------------------
    def wait_ready(self, timeout: float = 30_000) -> None:
        """The replayer is on the page with a run loaded."""
        self.root.wait_for(timeout=timeout)
        expect(self.root).to_have_attribute("data-run", _ANY, timeout=timeout)

    def state(self) -> dict[str, Any]:
        """What the replayer shows now, read at once: the root's data attributes, the
        counter, the graph (active node, taken edges, chips), the message list
        (positions, highlighted keys, pending calls, call colours)."""
        return self.root.evaluate(STATE_JS)  # type: ignore[no-any-return]

    def step(self) -> int:
        return int(self.root.get_attribute("data-step") or -1)

    def run(self) -> str | None:
        return self.root.get_attribute("data-run")

    def colours(self) -> dict[str, set[str]]:
        """tool_call_id -> the colours shown for it now (chips, calls, tool results)."""
        return colours_of(self.state(), None)

    # -- driving -------------------------------------------------------------------------
    def press(self, key: str) -> None:
        """A key of the replay (ArrowRight, ArrowLeft, Space, Home, End) on the page."""
        self.page.keyboard.press(key)

    def click(self, action: str) -> None:
        """One of the replayer's buttons (``first``, ``prev``, ``play``, ``pause``,
        ``next``, ``last``, ``next-model``, ``next-tool``, ``next-error``,
        ``open-subagent``)."""
        self.button(action).click()

    def speed(self, x: float) -> None:
        """Choose a playback speed (0.5, 1, 2, 4) with its button."""
        self.speed_button(x).click()
        expect(self.speed_button(x)).to_have_attribute("aria-pressed", "true")
        expect(self.root).to_have_attribute("data-speed", _num(x))

    def seek(self, n: int) -> None:
        """Move the scrubber (a range input, 1-based: ``n`` is "Step n / M")."""
        scrub = self.part("input.lt-scrub")
        scrub.fill(str(n))
        scrub.evaluate("e => e.blur()")  # (keys typed in a range input move it natively)

    def play(self) -> None:
        self.click("play")
        self.wait_playing(True)

    def pause(self) -> int:
        """Pause (the button); the step it stopped on."""
        self.click("pause")
        self.wait_playing(False)
        return self.step()

    def wait_playing(self, playing: bool = True, timeout: float | None = None) -> None:
        expect(self.root).to_have_attribute("data-playing", "1" if playing else "0",
                                            timeout=timeout)
        # play and pause are one place: the one not applicable is hidden by CSS
        expect(self.button("pause" if playing else "play")).to_be_visible(timeout=timeout)
        expect(self.button("play" if playing else "pause")).to_be_hidden(timeout=timeout)

    def wait_step(self, i: int, timeout: float | None = None) -> None:
        """Wait until the replayer shows step index ``i`` (0-based)."""
        expect(self.root).to_have_attribute("data-step", str(i), timeout=timeout)

    def wait_run(self, run_id: str, timeout: float | None = None) -> None:
        expect(self.root).to_have_attribute("data-run", run_id, timeout=timeout)

    def wait_moved_past(self, here: int, timeout: float = 15_000) -> int:
        """While playing: wait until the step is past ``here``; the step then."""
        expect(self.root).not_to_have_attribute("data-step", str(here), timeout=timeout)
        return self.step()

    # -- recording playback --------------------------------------------------------------
    def record(self) -> None:
        """Start recording every data-step change and a snapshot per animation frame."""
        self.root.evaluate(RECORD_JS)

    def recorded(self) -> tuple[list[int], list[dict[str, Any]]]:
        """Stop recording: (every step shown, in order; the frames)."""
        out = self.page.evaluate("""() => {
          window.__ltStop = true;
          const r = window.__ltRoot, old = window.__ltOld || [];
          if (window.__ltObserver) window.__ltObserver.disconnect();
          const seen = old.length ? [...old, r.dataset.step] : [r.dataset.step];
          return {seen: seen.map(Number), frames: window.__ltFrames || []};
        }""")
        return out["seen"], out["frames"]

    # -- comparing with tracer.read.steps ------------------------------------------------------
    def assert_at(self, replay: Replay, i: int, *, extra_highlight: bool = False) -> dict[str, Any]:
        """The replayer shows step ``i`` of ``replay`` exactly as ``tracer.read.steps`` has it:
        the node, the counter, the caption, the messages (positions in order), the
        highlighted messages (at least the step's new ones), the pending calls, the
        taken edges, the chips, and one colour per tool call (``tracer.read.palette``).
        Returns the state read."""
        want = expected(replay, i)
        self.wait_run(replay.run.id)
        self.wait_step(i)
        expect(self.root).to_have_attribute("data-active-node", want.node)
        got = self.state()
        check(got, want, extra_highlight=extra_highlight)
        return got


def check(got: dict[str, Any], want: Expected, *, extra_highlight: bool = False) -> None:
    """Compare a state read from the page (``Replayer.state``) with ``expected``."""
    i = want.index
    where = f"step {i} of {want.run}"
    assert got["run"] == want.run, f"{where}: the page plays run {got['run']}"
    assert got["step"] == i and got["graph_step"] == i, f"{where}: page at {got}"
    assert got["steps"] == want.steps, f"{where}: data-steps {got['steps']}"
    assert got["node"] == want.node and got["graph_node"] == want.node, (
        f"{where}: active node {got['node']} / {got['graph_node']}, want {want.node}")
    assert got["active"] == [want.node] or want.node not in _DRAWN, (
        f"{where}: active nodes drawn {got['active']}")
    assert got["kind"] == want.kind, f"{where}: kind {got['kind']}, want {want.kind}"
    if got["counter"] is not None:
        assert got["counter"] == want.counter, f"{where}: counter {got['counter']!r}"
        assert got["scrub"] == i + 1, f"{where}: scrubber at {got['scrub']}"
        assert got["scrub_max"] == max(want.steps, 1)
    if got["caption"] is not None:
        assert got["caption"] == want.caption, f"{where}: caption {got['caption']!r}"
    assert got["visited"] == [n for n in want.visited if n in _DRAWN], (
        f"{where}: visited {got['visited']}, want {want.visited}")
    assert got["error_nodes"] == ([want.node] if want.error else []), (
        f"{where}: error nodes {got['error_nodes']}")
    assert got["interrupt_nodes"] == ([want.node] if want.interrupt else []), (
        f"{where}: interrupt nodes {got['interrupt_nodes']}")
    # the graph: edges just taken, tool calls in flight
    assert got["edges"] == want.edges, f"{where}: taken edges {got['edges']}, want {want.edges}"
    assert got["jump"] == ("1" if want.jump else "0"), f"{where}: data-jump {got['jump']}"
    chips = [c["id"] for c in got["chips"]]
    assert chips == want.chips, f"{where}: chips {chips}, want {want.chips}"
    # the messages
    assert got["positions"] == want.positions, (
        f"{where}: messages {got['positions']}, want {want.positions}")
    assert got["keys"] == want.keys, f"{where}: message keys differ"
    assert got["messages"] == len(want.positions)
    current = set(got["current"])
    assert want.must_highlight <= current, (
        f"{where}: highlighted {sorted(current)}, missing {sorted(want.must_highlight - current)}")
    if not extra_highlight:
        assert current <= want.may_highlight, (
            f"{where}: highlighted {sorted(current - want.may_highlight)} that this step "
            "neither added nor replaced")
    assert got["pending"] == want.pending, f"{where}: pending {got['pending']}, want {want.pending}"
    # one colour per tool call: chip, call, and the ToolMessage answering it
    for cid, colours in colours_of(got, want.tool_call_ids).items():
        assert colours == {want.colours.get(cid)}, (
            f"{where}: tool call {cid} shown in {sorted(colours)}, palette: "
            f"{want.colours.get(cid)}")
    assert got["pwned"] == "undefined", f"{where}: a script from the trace ran"


def colours_of(state: dict[str, Any], tool_call_ids: list[str | None] | None
               ) -> dict[str, set[str]]:
    """tool_call_id -> every colour ``state`` shows it in: its chip, its call in an AI
    message (``--call``), and (given the call each shown message answers) its
    ToolMessage (``--call``)."""
    out: dict[str, set[str]] = {}
    for c in state["chips"]:
        out.setdefault(c["id"], set()).add(c["colour"])
    for c in state["calls"]:
        out.setdefault(c["id"], set()).add(c["colour"])
    if tool_call_ids is not None:
        for cid, colour in zip(tool_call_ids, state["tool_colours"], strict=True):
            if cid and colour is not None:
                out.setdefault(cid, set()).add(colour)
    return out


def jump_target(replay: Replay, i: int, action: str) -> int | None:
    """Where ``next-model`` / ``next-tool`` / ``next-error`` goes from step ``i``: the next
    model call or tool call that is not an error, or the next error (``is_error``)."""
    kind = action.removeprefix("next-")
    for j in range(i + 1, len(replay)):
        st = replay.steps[j]
        if is_error(replay, st) if kind == "error" else (st.kind == kind and not is_error(replay, st)):
            return j
    return None


def steps_shown(seen: list[int]) -> list[int]:
    """The steps in the order shown, repeats dropped."""
    return [k for k, _ in itertools.groupby(seen)]


def assert_frames_agree(replay: Replay, frames: list[dict[str, Any]]) -> None:
    """In every recorded animation frame the graph and the message list show the same
    step, as ``tracer.read.steps`` has it."""
    for f in frames:
        i = f["step"]
        assert f["connected"], "the replayer was taken off the page while playing"
        assert f["graph"] == i, f"frame: graph at {f['graph']}, replayer at {i}"
        assert f["node"] == replay.steps[i].node, f"frame at step {i}: node {f['node']}"
        want = [m.position for m in replay.messages_at(i)]
        assert f["positions"] == want, f"frame at step {i}: messages {f['positions']} != {want}"


def _num(x: float) -> str:
    return f"{x:g}"

