"""The replay app in a real browser (Debian's Chromium driven by Playwright).

One Streamlit server serves the whole module: a copy of the sample-trace
database plus a hostile-content run recorded here with the tracer and a
scripted model. Every page is opened in a context that records (and aborts)
any request not addressed to the app itself, and every test fails on such a
request and on console errors (failed font fetches aside).

What is on the page is compared with ``tracer.replay`` for the same step: the
graph's ``data-step`` / ``data-active-node`` and the message pane's
``.st-key-msg-<position>`` containers (see app/replay_view.py, graph_component.py,
messages_pane.py for these hooks).
"""

from __future__ import annotations

import itertools
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import (
    RequestCounter,
    collect_console_errors,
    guard_network,
    streamlit_server,
    wait_connected,
)
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tracer.exchange import read_trace, sample_files
from tracer.loader import TraceDB
from tracer.replay import Replay, build_replay

expect.set_options(timeout=10_000)

WINDOW = 40  # the message pane shows the newest 40 messages (app/state.py DEFAULT_WINDOW)
# Live elements only: during a rerun Streamlit keeps the previous element (stale) on the page.
GRAPH = '[data-stale="false"] [data-testid="lt-graph"]'
MSGS = '.st-key-messages [class*="st-key-msg-"]'
VIEWPORT = {"width": 1400, "height": 1000}


# -- the database and the server (one per module) ------------------------------------

def record_new_run(db: Path, model: Any, tools: list[Any], system_prompt: str, question: Any,
                   **trace_kwargs: Any) -> str:
    """Run a real ``create_agent`` traced (middleware and callbacks) into ``db``, which
    may hold other runs already; return the id of the one top-level run it added."""
    from langchain.agents import create_agent

    from tracer.middleware import TraceMiddleware

    with TraceDB(db) as tdb:
        before = {r.id for r in tdb.runs()}
    tm = TraceMiddleware(db=db, **trace_kwargs)
    agent = tm.attach(create_agent(model, tools=tools, middleware=[tm],
                                   system_prompt=system_prompt))
    agent.invoke({"messages": [question]})
    tm.flush()
    tm.close()
    with TraceDB(db) as tdb:
        new = [r.id for r in tdb.runs() if r.id not in before and not r.parent_id]
    assert len(new) == 1, new
    return new[0]


def record_hostile_run(db: Path, leak_url: str) -> str:
    """Record, with the real tracer and a scripted model, a run whose tool result
    (and final answer) holds script, an onerror image, a markdown image pointing at
    ``leak_url`` and a markdown link. Returns the run id."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from tracer.demo.models import ScriptedChatModel, call, turn_script

    page = hostile_text(leak_url)

    @tool
    def fetch_page(url: str) -> str:
        """Fetch a web page and return its text."""
        return page

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("fetch_page", {"url": "http://example.test/"},
                                       "call_hostile_1")]),
        AIMessage(f"Summary: ![reply]({leak_url}/reply.png) <b>bold</b> "
                  f"[see here]({leak_url}/reply-link)"),
    ]))
    return record_new_run(db, model, [fetch_page], "Summarise web pages.",
                          HumanMessage("Summarise http://example.test/"),
                          run_name="hostile-browser")


def record_parallel_run(db: Path) -> str:
    """Record a run whose model asks for two tool calls that are in flight at the same
    time (a barrier holds each until the other has started). Returns the run id."""
    import threading

    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from tracer.demo.models import ScriptedChatModel, call, turn_script

    barrier = threading.Barrier(2, timeout=20)

    @tool
    def lookup(city: str) -> str:
        """Look up the weather of a city."""
        barrier.wait()
        return f"{city}: sunny, 21 C"

    model = ScriptedChatModel(script=turn_script([
        AIMessage("Looking up both cities at once.",
                  tool_calls=[call("lookup", {"city": "Oslo"}, "call_par_oslo"),
                              call("lookup", {"city": "Rome"}, "call_par_rome")]),
        AIMessage("Sunny in both Oslo and Rome."),
    ]))
    return record_new_run(db, model, [lookup], "Answer with the tools.",
                          HumanMessage("Weather in Oslo and Rome?"))


def hostile_text(leak_url: str) -> str:
    return ("<script>window.__pwned=1</script>\n"
            '<img src=x onerror="window.__pwned=2">\n'
            f"![x]({leak_url}/leak.png)\n"
            f"[click me]({leak_url}/link)\n")


@pytest.fixture(scope="module")
def leak() -> Iterator[RequestCounter]:
    with RequestCounter() as server:
        yield server


@pytest.fixture(scope="module")
def served(sample_db: Path, leak: RequestCounter, browser: Any,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, str, str]]:
    """(app URL, database, hostile run id, parallel run id): one Streamlit server over a
    copy of the samples plus two runs recorded here while the server warms up."""
    db = tmp_path_factory.mktemp("browser") / "replay.db"
    shutil.copy(sample_db, db)
    first = read_trace(sample_files()[0])[0]["root"]
    with streamlit_server(db) as url:
        # Warm the server (its first script run imports the tracer and LangChain) while
        # this process records the two runs; each test then meets a warm app.
        page = browser.new_page()
        try:
            page.goto(url + "/replay?run=" + first)
            wait_connected(page)
            hostile = record_hostile_run(db, leak.url)
            parallel = record_parallel_run(db)
            expect(page.locator(GRAPH)).to_have_attribute("data-step", "0", timeout=60_000)
        finally:
            page.close()
        yield url, db, hostile, parallel


@pytest.fixture(scope="module")
def app_db(served: tuple[str, Path, str, str]) -> tuple[Path, str, str]:
    """(database, hostile run id, parallel run id)."""
    return served[1], served[2], served[3]


@pytest.fixture(scope="module")
def app_url(served: tuple[str, Path, str, str]) -> str:
    return served[0]


@pytest.fixture(scope="module")
def replays(app_db: tuple[Path, str, str]) -> dict[str, Replay]:
    """Every run of the app's database, as ``tracer.replay`` sees it: by run id, and
    each sample trace's root run by the sample's file name (``"shopping"``)."""
    out: dict[str, Replay] = {}
    with TraceDB(app_db[0]) as db:
        for r in db.runs():
            out[r.id] = build_replay(db.run(r.id))
    for path in sample_files():
        out[path.stem] = out[read_trace(path)[0]["root"]]
    return out


class Session:
    """A page of the app in its own browser context, with its network guard."""

    def __init__(self, page: Page, url: str, foreign: list[str], errors: list[str]) -> None:
        self.page, self.url, self.foreign, self.errors = page, url, foreign, errors

    def open(self, run_id: str, step: int | str | None = None, *,
             expect_step: int | None = None) -> None:
        """Open ``/replay?run=...&step=...`` at step index ``step`` (an int: the link's
        ``step`` is the number the page shows, ``step + 1``), or with ``step`` (a str)
        as the link's ``step`` as it is; wait for step index ``expect_step``."""
        url_step = str(step + 1) if isinstance(step, int) else step
        q = f"?run={run_id}" + ("" if url_step is None else f"&step={url_step}")
        self.page.goto(self.url + "/replay" + q)
        wait_connected(self.page)
        want = expect_step if expect_step is not None else (
            step if isinstance(step, int) else 0)
        expect(self.graph).to_have_attribute("data-step", str(want), timeout=15_000)

    @property
    def graph(self):  # type: ignore[no-untyped-def]
        return self.page.locator(GRAPH)

    def button(self, key: str):  # type: ignore[no-untyped-def]
        return self.page.locator(f".st-key-{key} button:visible")


@pytest.fixture
def session(browser: Any, app_url: str) -> Iterator[Session]:
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    foreign = guard_network(context, app_url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors = collect_console_errors(page)
    try:
        yield Session(page, app_url, foreign, errors)
    finally:
        context.close()
    assert foreign == [], f"the page requested something outside the app: {foreign}"
    assert errors == [], f"console errors: {errors}"


# -- what the page should show at a step ---------------------------------------------

def expected_positions(rp: Replay, i: int) -> list[int]:
    return [m.position for m in rp.messages_at(i)][-WINDOW:]


def first_line(content: Any) -> str:
    if not isinstance(content, str):
        return ""
    lines = [ln.strip() for ln in content.splitlines() if ln.strip()]
    return lines[0][:40] if lines else ""


def assert_step_shown(s: Session, rp: Replay, i: int) -> None:
    """Graph, step counter and message pane all show step ``i`` of ``rp``."""
    step = rp.steps[i]
    expect(s.graph).to_have_attribute("data-step", str(i))
    expect(s.graph).to_have_attribute("data-active-node", step.node)
    expect(s.page.get_by_text(f"Step {i + 1} / {len(rp)}", exact=True)).to_be_visible()
    positions = expected_positions(rp, i)
    msgs = s.page.locator(MSGS)
    if positions:
        expect(msgs).to_have_class([re.compile(rf"(^|\s)st-key-msg-{p}(\s|$)")
                                    for p in positions])
    else:
        expect(msgs).to_have_count(0)
    # Tool calls in flight are chips on the graph; calls not answered yet are pending.
    chips = s.page.locator(f"{GRAPH} g.chip[data-tool-call]")
    expect(chips).to_have_count(min(5, len(step.active_tools)))
    for call_id in step.active_tools[:5]:
        expect(s.page.locator(f'{GRAPH} g.chip[data-tool-call="{call_id}"]')).to_have_count(1)
    pending = rp.pending_calls(i)
    n_pending = sum(1 for m in rp.messages_at(i)[-WINDOW:] for c in m.tool_calls
                    if c.get("id") in pending)
    expect(s.page.locator('.st-key-messages [class*="st-key-tc-"]').filter(
        has_text="pending: no result yet")).to_have_count(n_pending)
    # The messages this step added are marked with the step number and show their text.
    shown = set(positions)
    for m in rp.run.messages:
        if m.key in step.new_keys and m.position in shown:
            box = s.page.locator(f".st-key-msg-{m.position}")
            expect(box).to_contain_text(f"step {i + 1}")
            if first_line(m.content):
                expect(box).to_contain_text(first_line(m.content))
            if m.tool_call_id:
                expect(box).to_contain_text(f"answers tool_call_id {m.tool_call_id}")


# A snapshot of both panes taken in one animation frame, recorded on every change.
SNAPSHOT_JS = """
() => {
  window.__snaps = [];
  let host = null, last = '';
  const findGraph = (root) => {
    const r = root.querySelector('[data-testid="lt-graph"]');
    if (r) return r;
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) { const x = findGraph(el.shadowRoot); if (x) return x; }
    }
    return null;
  };
  const tick = () => {
    if (!host || !host.isConnected) host = findGraph(document);
    const msgs = [...document.querySelectorAll('.st-key-messages [class*="st-key-msg-"]')]
      .filter(e => !e.closest('[data-stale="true"]'))
      .map(e => Number((e.className.match(/st-key-msg-(\\d+)/) || [])[1]));
    const snap = {step: host ? Number(host.getAttribute('data-step')) : -1,
                  node: host ? host.getAttribute('data-active-node') : null, msgs};
    const key = JSON.stringify(snap);
    if (key !== last) { last = key; snap.t = performance.now(); window.__snaps.push(snap); }
    if (!window.__stopSnaps) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
"""


# The step the page settled on: the graph and the "Step N / M" counter agree.
SETTLED_JS = r"""
() => {
  const findGraph = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.matches('[data-testid="lt-graph"]') && !el.getRootNode().host?.closest(
          '[data-stale="true"]')) return el;
      if (el.shadowRoot) { const x = findGraph(el.shadowRoot); if (x) return x; }
    }
    return null;
  };
  const g = findGraph(document);
  const counter = [...document.querySelectorAll('[data-testid="stMarkdownContainer"]')]
    .map(e => e.textContent.trim().match(/^Step (\d+) \/ \d+$/)).find(Boolean);
  const step = g && counter && Number(g.getAttribute('data-step')) + 1 === Number(counter[1])
    ? Number(g.getAttribute('data-step')) : null;
  const st = window.__settle || (window.__settle = {step: null, frames: 0});
  if (step === null || step !== st.step) { st.step = step; st.frames = 0; return null; }
  st.frames += 1;
  return st.frames >= 30 ? step : null;
}
"""


def settled_step(s: Session) -> int:
    """After pausing: the step the page rests on (the graph and the step counter agree
    for 30 animation frames in a row; the reruns after a pause can still move it)."""
    s.page.evaluate("window.__settle = null")
    try:
        return int(s.page.wait_for_function(SETTLED_JS, timeout=15_000).json_value())
    except PlaywrightTimeout:
        pytest.fail(f"the page did not settle on a step: {s.page.evaluate(PANES_JS)}")


# The step the graph shows (-1: no graph yet), stale or not: while playing fast, the
# fragment reruns back to back and Streamlit marks its elements stale meanwhile.
SHOWN_STEP_JS = r"""
() => {
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.matches('[data-testid="lt-graph"]')) return el;
      if (el.shadowRoot) { const x = walk(el.shadowRoot); if (x) return x; }
    }
    return null;
  };
  const g = walk(document);
  return g ? Number(g.getAttribute('data-step')) : -1;
}
"""
# Whether the graph shows a step other than ``here``.
MOVED_JS = f"(here) => {{ const s = ({SHOWN_STEP_JS.strip()})(); return s >= 0 && s !== here; }}"


def wait_moved_past(s: Session, here: int) -> None:
    try:
        s.page.wait_for_function(MOVED_JS, arg=here, timeout=15_000)
    except PlaywrightTimeout:
        pytest.fail(f"playback did not move past step {here}: {s.page.evaluate(PANES_JS)}")


# What the graph(s) and the step counter(s) show, for a failure message.
PANES_JS = r"""
() => {
  const out = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.matches('[data-testid="lt-graph"]')) out.push({graph: el.getAttribute('data-step'),
        stale: !!el.getRootNode().host?.closest('[data-stale="true"]')});
      if (el.shadowRoot) walk(el.shadowRoot);
    }
  };
  walk(document);
  for (const e of document.querySelectorAll('[data-testid="stMarkdownContainer"]')) {
    const m = e.textContent.trim().match(/^Step \d+ \/ \d+$/);
    if (m) out.push({counter: m[0], stale: !!e.closest('[data-stale="true"]')});
  }
  return out;
}
"""


# -- the tests ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def playback(browser: Any, app_url: str, replays: dict[str, Replay]) -> dict[str, Any]:
    """Play the shopping sample at 4x from step 0 and record both panes on every
    animation frame until step 6 was shown, then pause."""
    rp = replays["shopping"]
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    foreign = guard_network(context, app_url)
    page = context.new_page()
    errors = collect_console_errors(page)
    s = Session(page, app_url, foreign, errors)
    target = min(6, len(rp) - 1)
    try:
        s.open(rp.run.id, 0)
        assert_step_shown(s, rp, 0)
        page.locator(".st-key-speed button:visible", has_text="4x").click()
        page.evaluate(SNAPSHOT_JS)
        s.button("play").click()
        expect(s.button("pause")).to_be_visible()
        # Wait on the recorded snapshots (taken every animation frame), not on the live
        # attribute, which playback moves past between two polls of `expect`.
        try:
            page.wait_for_function(f"window.__snaps.some(x => x.step >= {target})",
                                   timeout=25_000)
        except PlaywrightTimeout:
            steps = [x["step"] for x in page.evaluate("window.__snaps")]
            pytest.fail(f"playback did not reach step {target}: steps shown {steps}")
        s.button("pause").click()
        expect(s.button("play")).to_be_visible()
        stopped = settled_step(s)
        page.evaluate("window.__stopSnaps = true")
        snaps: list[dict[str, Any]] = page.evaluate("window.__snaps")
        # Paused: it stays where it stopped, both panes in sync.
        assert_step_shown(s, rp, stopped)
    finally:
        context.close()
    assert foreign == [], f"the page requested something outside the app: {foreign}"
    assert errors == [], f"console errors: {errors}"
    seen = [snap["step"] for snap in snaps if snap["step"] >= 0]
    return {"replay": rp, "snaps": snaps, "seen": seen, "target": target, "stopped": stopped}


def test_play_advances_graph_and_messages_together(playback: dict[str, Any]) -> None:
    """Press play: the active node and the message pane advance together. In every
    frame the graph's node is the node tracer.replay gives for the step it shows, and
    the message pane holds the messages of that step or of a neighbouring one (one
    rerun paints the message pane just before the graph). Once paused, both agree
    exactly (checked in the fixture)."""
    rp, snaps, seen, target = (playback[k] for k in ("replay", "snaps", "seen", "target"))
    assert playback["stopped"] >= target
    changes = [b for a, b in itertools.pairwise(seen) if a != b]
    shown = sorted(set(seen) - {0})
    # The graph asks for the next step only once it shows a step: none is skipped.
    skipped = sorted(set(range(1, target + 1)) - set(shown))
    assert not skipped, f"playback skipped steps {skipped}: steps shown {changes}"
    # The graph's steps in the order shown; each frame's messages must be those of a
    # step between the graph's previous and next step (the panes are at most one
    # rerun apart: a rerun cut short by the next tick may paint only its messages).
    frames = [x for x in snaps if x["step"] >= 0]
    for k, snap in enumerate(frames):
        i = snap["step"]
        assert snap["node"] == rp.steps[i].node, f"step {i}: graph shows {snap['node']}"
        before = next((x["step"] for x in reversed(frames[:k]) if x["step"] != i), i)
        after = next((x["step"] for x in frames[k:] if x["step"] != i), i)
        lo, hi = min(before, i, after), max(before, i, after)
        near = [j for j in range(lo, hi + 1) if expected_positions(rp, j) == snap["msgs"]]
        assert near, (f"graph at step {i} (between {before} and {after}) while the message "
                      f"pane shows {snap['msgs']}, the messages of no step in between; "
                      f"frames (step, messages): {[(x['step'], len(x['msgs'])) for x in frames]}")
    exact = [i for i in shown if any(x["step"] == i and x["msgs"] == expected_positions(rp, i)
                                     for x in snaps)]
    lags = []
    for i in shown:
        # How long the graph trailed the message pane at a step that added a message.
        positions = expected_positions(rp, i)
        if positions != expected_positions(rp, i - 1):
            t_msgs = min(x["t"] for x in snaps if x["msgs"] == positions)
            t_graph = min(x["t"] for x in snaps if x["step"] == i)
            lags.append(t_graph - t_msgs)
    print(f"\nplayback: {target} of {target} steps shown; "
          f"{len(exact)} of {len(shown)} painted with both panes exactly on the step; "
          f"graph behind the message pane: max {max(lags, default=0):.0f} ms, "
          f"mean {sum(lags) / max(1, len(lags)):.0f} ms")


def test_playback_never_steps_back(playback: dict[str, Any]) -> None:
    """While playing (and when pausing), the shown step only moves forward."""
    seen = playback["seen"]
    changes = [b for a, b in itertools.pairwise(seen) if a != b]
    backwards = [(a, b) for a, b in itertools.pairwise(seen) if b < a]
    assert not backwards, (
        f"playback went back {backwards} (steps shown: {changes}). Seen in the app: the "
        "scrubber slider's on_change (_on_scrub) fires during playback with the value the "
        "browser still holds from the previous step, and moves the step back by one.")


@pytest.mark.parametrize("page", ["replay", "presenter"])
def test_pause_and_play_again_many_times(session: Session, replays: dict[str, Replay],
                                         page: str) -> None:
    """Pausing at any moment of playback stops it on a step where both panes agree,
    and playing on continues from there. (Seen before playback moved into the graph
    component: about one pause in ten blanked Streamlit's page, "Bad delta path
    index", when the fragment's timer was switched off while it fired.)"""
    rp = replays["shopping"]
    s = session
    s.page.goto(f"{s.url}/{page}?run={rp.run.id}&step=1")
    wait_connected(s.page)
    expect(s.graph).to_have_attribute("data-step", "0", timeout=15_000)
    if page == "replay":
        s.page.locator(".st-key-speed button:visible", has_text="4x").click()
    here = 0
    for k in range(6 if page == "replay" else 3):  # the Presenter plays at 1x
        s.page.keyboard.press("Space")  # play
        if page == "replay":
            expect(s.button("pause")).to_be_visible()
        wait_moved_past(s, here)
        time.sleep(0.15 * k)  # pause at a different moment of a step each time
        s.page.keyboard.press("Space")  # pause
        if page == "replay":
            expect(s.button("play")).to_be_visible()
        stopped = settled_step(s)
        assert stopped > here, f"round {k}: playback went from {here} to {stopped}"
        if page == "replay":
            assert_step_shown(s, rp, stopped)
        else:
            counter = s.page.locator(".st-key-counter")
            expect(counter).to_have_text(f"Step {stopped + 1} / {len(rp)}")
        here = stopped
        if here >= len(rp) - 2:
            break
    assert s.errors == []


# Controls whose text is wider than its box (a label cut to "Pa…", a speed control
# clipped at its column's edge): [key, what overflows, content width, box width].
# (Icons are left out: Streamlit draws each as a ligature wider than its box.)
OVERFLOW_JS = r"""
(keys) => {
  const out = [];
  for (const key of keys) {
    const box = document.querySelector('.st-key-' + key);
    if (!box) { out.push([key, 'missing', 0, 0]); continue; }
    const texts = box.querySelectorAll('p, [data-testid="stMarkdownContainer"], [role="radiogroup"]');
    for (const el of [box, ...texts]) {
      if (el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1)
        out.push([key, el.tagName + '.' + el.className, el.scrollWidth, el.clientWidth]);
    }
  }
  return out;
}
"""


def test_control_bar_labels_fit(session: Session, replays: dict[str, Replay]) -> None:
    """At 1400 px every control of the bar shows its whole label, playing or paused."""
    rp = replays["shopping"]
    s = session
    s.open(rp.run.id, 12)
    keys = ["first", "step_prev", "play", "step_next", "last", "next_model", "next_tool",
            "next_error", "speed"]
    assert s.page.evaluate(OVERFLOW_JS, keys) == []
    s.button("play").click()
    expect(s.button("pause")).to_be_visible()
    keys[2] = "pause"
    assert s.page.evaluate(OVERFLOW_JS, keys) == []
    s.button("pause").click()
    expect(s.button("play")).to_be_visible()


def test_keyboard_steps(session: Session, replays: dict[str, Replay]) -> None:
    rp = replays["shopping"]
    s = session
    s.open(rp.run.id, 5)
    assert_step_shown(s, rp, 5)
    s.page.keyboard.press("ArrowRight")
    assert_step_shown(s, rp, 6)
    s.page.keyboard.press("ArrowRight")
    assert_step_shown(s, rp, 7)
    s.page.keyboard.press("ArrowLeft")
    assert_step_shown(s, rp, 6)
    s.page.keyboard.press("End")
    assert_step_shown(s, rp, len(rp) - 1)
    s.page.keyboard.press("Home")
    assert_step_shown(s, rp, 0)
    # Space plays, space again pauses; the URL follows the step.
    s.page.keyboard.press("Space")
    expect(s.button("pause")).to_be_visible()
    wait_moved_past(s, 0)
    s.page.keyboard.press("Space")
    expect(s.button("play")).to_be_visible()
    here = settled_step(s)
    assert here > 0
    assert_step_shown(s, rp, here)
    expect(s.page).to_have_url(re.compile(rf"[?&]step={here + 1}(&|$)"))  # as shown


def test_deep_link_lands_on_that_step(session: Session,
                                      replays: dict[str, Replay]) -> None:
    """A link's ``step`` is the number the page shows: ``step=10`` is "Step 10 / N"."""
    rp = replays["shopping"]
    s = session
    s.open(rp.run.id, "10", expect_step=9)
    assert_step_shown(s, rp, 9)
    expect(s.page.get_by_text(f"Step 10 / {len(rp)}", exact=True)).to_be_visible()
    expect(s.page).to_have_url(re.compile(rf"run={rp.run.id}.*step=10(&|$)"))
    last = len(rp) - 1
    s.open(rp.run.id, "99999", expect_step=last)
    assert_step_shown(s, rp, last)
    expect(s.page).to_have_url(re.compile(rf"[?&]step={len(rp)}(&|$)"))
    # No "Deploy" button in the toolbar (app/.streamlit/config.toml: a viewer's toolbar).
    expect(s.page.locator('[data-testid="stAppDeployButton"]')).to_have_count(0)


def test_bad_deep_links_are_clamped_or_explained(session: Session,
                                                 replays: dict[str, Replay]) -> None:
    rp = replays["shopping"]
    s = session
    for bad in ("-4", "abc", "0"):  # (an old 0-based link's step=0: the first step too)
        s.open(rp.run.id, bad, expect_step=0)
        assert_step_shown(s, rp, 0)
        expect(s.page).to_have_url(re.compile(r"[?&]step=1(&|$)"))
    # A run id that does not exist: a clear message, not a traceback.
    s.page.goto(s.url + "/replay?run=no-such-run&step=3")
    wait_connected(s.page)
    expect(s.page.get_by_text("no run 'no-such-run'")).to_be_visible()
    expect(s.page.locator('[data-testid="stException"]')).to_have_count(0)


def test_open_subagent_run(session: Session, replays: dict[str, Replay]) -> None:
    """The Deep Agents sample: at the task call, open the subagent's own replay and
    come back to the parent at that call."""
    parent = replays["deep-agent"]
    assert parent.run.children, "the Deep Agents sample has a subagent run"
    child = parent.run.children[0]
    sub = next(rp for rp in replays.values() if rp.run.id == child.id)
    call_step = next(st.index for st in parent.steps
                     if st.event.tool_call_id == child.parent_tool_call_id)
    s = session
    s.open(parent.run.id, call_step)
    assert_step_shown(s, parent, call_step)
    s.button("open_subagent").click()
    expect(s.page).to_have_url(re.compile(rf"run={child.id}"))
    expect(s.page.get_by_text(child.id, exact=False).first).to_be_visible()
    assert_step_shown(s, sub, 0)
    s.page.keyboard.press("End")
    assert_step_shown(s, sub, len(sub) - 1)
    s.button("to_parent").click()
    expect(s.page).to_have_url(re.compile(rf"run={parent.run.id}"))
    assert_step_shown(s, parent, call_step)
    # The header's list of subagent runs opens it too.
    s.button("open_child_0").click()
    expect(s.page).to_have_url(re.compile(rf"run={child.id}"))
    assert_step_shown(s, sub, 0)


def test_hostile_content_is_text_and_fetches_nothing(browser: Any, app_url: str,
                                                     app_db: tuple[Path, str, str],
                                                     leak: RequestCounter,
                                                     replays: dict[str, Replay]) -> None:
    rp = next(r for r in replays.values() if r.run.id == app_db[1])
    tool_msg = next(m for m in rp.run.messages if m.tool_call_id == "call_hostile_1")
    step = next(st.index for st in rp.steps if tool_msg.key in st.new_keys)
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    # Anything not addressed to the app is recorded; requests to the counting server are
    # let through so that it would see them too.
    foreign = guard_network(context, app_url, let_through=(leak.url,))
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors = collect_console_errors(page)
    s = Session(page, app_url, foreign, errors)
    try:
        s.open(rp.run.id, step)
        assert_step_shown(s, rp, step)
        box = page.locator(f".st-key-msg-{tool_msg.position}")
        for literal in ("<script>window.__pwned=1</script>",
                        '<img src=x onerror="window.__pwned=2">',
                        f"![x]({leak.url}/leak.png)", f"[click me]({leak.url}/link)"):
            expect(box).to_contain_text(literal)
        # The final answer (markdown image and link in AI text) as well.
        page.keyboard.press("End")
        assert_step_shown(s, rp, len(rp) - 1)
        final = rp.messages_at(len(rp) - 1)[-1]
        expect(page.locator(f".st-key-msg-{final.position}")).to_contain_text(
            f"![reply]({leak.url}/reply.png)")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator(f'img[src="x"], img[src^="{leak.url}"]').count() == 0
        assert page.locator(f'a[href^="{leak.url}"]').count() == 0
    finally:
        context.close()
    assert leak.requests == [], f"the trace made the page fetch: {leak.requests}"
    assert foreign == [], f"the page requested something outside the app: {foreign}"
    assert errors == [], f"console errors: {errors}"


def test_parallel_tool_calls_in_flight_together(session: Session,
                                                replays: dict[str, Replay],
                                                app_db: tuple[Path, str, str]) -> None:
    """Two tool calls running at once: both are chips on the graph and both calls are
    pending in the message pane; each answer then removes one."""
    rp = replays[app_db[2]]
    both = next(st.index for st in rp.steps if len(st.active_tools) == 2)
    s = session
    s.open(rp.run.id, both)
    assert_step_shown(s, rp, both)
    expect(s.page.locator(f"{GRAPH} g.chip")).to_have_count(2)
    s.button("step_next").click()
    assert_step_shown(s, rp, both + 1)
    s.button("next_model").click()
    nxt = rp.find(both + 1, "model")
    assert nxt is not None
    assert_step_shown(s, rp, nxt)
    expect(s.page.locator(f"{GRAPH} g.chip")).to_have_count(0)


def test_a_run_being_recorded_follows_and_ends(session: Session,
                                              app_db: tuple[Path, str, str]) -> None:
    """Watching a run while it is recorded: the page opens it at its newest step,
    reloads it (the graph component's reload timer), follows its new steps, and
    shows it completed when it ends."""
    import threading

    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from tracer.demo.models import ScriptedChatModel, call, turn_script
    from tracer.middleware import TraceMiddleware

    db = app_db[0]
    release = threading.Event()

    @tool
    def slow_lookup(city: str) -> str:
        """Look up the weather of a city (waits until the test lets it answer)."""
        release.wait(60)
        return f"{city}: sunny"

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("slow_lookup", {"city": "Oslo"}, "call_live_1")]),
        AIMessage("Sunny in Oslo."),
    ]))
    tm = TraceMiddleware(db=db, run_name="live-browser")
    agent = create_agent(model, tools=[slow_lookup], middleware=[tm])
    worker = threading.Thread(
        target=lambda: agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]}))
    worker.start()
    try:
        deadline = time.monotonic() + 20
        run_id = None
        while run_id is None and time.monotonic() < deadline:
            with TraceDB(db) as tdb:
                run_id = next((r.id for r in tdb.runs() if r.name == "live-browser"), None)
            time.sleep(0.1)
        assert run_id, "the live run was not recorded"
        s = session
        s.page.goto(f"{s.url}/replay?run={run_id}")
        wait_connected(s.page)
        badge = s.page.locator('[data-testid="stMarkdownContainer"]', has_text="running")
        expect(badge.first).to_be_visible(timeout=15_000)
        with TraceDB(db) as tdb:
            before = len(build_replay(tdb.run(run_id)))
        # Opened without a step, a live run shows its newest step.
        expect(s.graph).to_have_attribute("data-step", str(before - 1), timeout=15_000)
        release.set()
        worker.join(30)
        tm.flush()
        with TraceDB(db) as tdb:
            rp = build_replay(tdb.run(run_id))
        assert rp.run.summary.status == "completed" and len(rp) > before
        expect(s.page.locator('[data-testid="stMarkdownContainer"]', has_text="completed")
               .first).to_be_visible(timeout=15_000)
        expect(s.graph).to_have_attribute("data-step", str(len(rp) - 1), timeout=15_000)
        assert_step_shown(s, rp, len(rp) - 1)
    finally:
        release.set()
        worker.join(30)
        tm.close()


def _luminance(css: str) -> float:
    nums = [float(x) for x in re.findall(r"[\d.]+", css)[:3]]
    r, g, b = (v / 255 for v in nums)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_screenshot_in_each_theme(browser: Any, app_url: str, artifacts: Path,
                                  replays: dict[str, Replay], app_db: tuple[Path, str, str],
                                  theme: str) -> None:
    """The replay in the light and the dark theme (the browser's colour scheme),
    saved to test-artifacts/replay-<theme>.png."""
    # Two tool calls in flight: chips on the graph, pending calls in the message pane.
    rp = replays[app_db[2]]
    i = next(st.index for st in rp.steps if len(st.active_tools) == 2)
    context = browser.new_context(viewport={"width": 1500, "height": 1150},
                                  reduced_motion="reduce", color_scheme=theme)
    foreign = guard_network(context, app_url)
    page = context.new_page()
    page.set_default_timeout(10_000)
    errors = collect_console_errors(page)
    s = Session(page, app_url, foreign, errors)
    try:
        s.open(rp.run.id, i)
        assert_step_shown(s, rp, i)
        bg = page.evaluate(
            "getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor")
        lum = _luminance(bg)
        assert (lum > 0.8) if theme == "light" else (lum < 0.2), f"{theme} theme background {bg}"
        # The graph's node labels contrast with the page in this theme.
        fill = page.locator(f'{GRAPH} g.node[data-node="before_agent"] text').evaluate(
            "e => getComputedStyle(e).fill")
        assert abs(_luminance(fill) - lum) > 0.5, f"node label {fill} on background {bg}"
        page.wait_for_load_state("networkidle")
        time.sleep(0.3)  # let fonts and icons settle before the picture (not an assertion)
        out = artifacts / f"replay-{theme}.png"
        page.screenshot(path=str(out), full_page=True)
        assert out.stat().st_size > 20_000
    finally:
        context.close()
    assert foreign == [], f"the page requested something outside the app: {foreign}"
    assert errors == [], f"console errors: {errors}"
