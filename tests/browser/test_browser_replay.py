"""The replay app in a real browser (Debian's Chromium driven by Playwright).

One Streamlit server serves the whole module: a copy of the sample-trace
database plus a hostile-content run and a parallel-tool-call run recorded here
with the tracer and a scripted model. Every page is opened in a context that
records (and aborts) any request not addressed to the app itself, and every
test fails on such a request and on console errors (failed font fetches aside).

The replay page mounts the one replayer (``tracer/replayer``, the HTML export's
too) as a ``st.components.v2`` component; these tests drive and read it with the
same helpers as the export's (``tests/replayer_driver.py``), and compare what it
shows with ``tracer.read.steps`` for the same step. The browser steps and plays by
itself and reports the step it settles on; the server then writes the URL
(``?run=&step=``, 1-based) and draws the step inspector for that step.
"""

from __future__ import annotations

import itertools
import re
import shutil
import threading
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
from replayer_driver import (
    Replayer,
    assert_frames_agree,
    colours_of,
    expected,
    jump_target,
    run_colours,
    steps_shown,
)

from tracer.interop import html_export
from tracer.interop.exchange import read_trace, sample_files
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay

expect.set_options(timeout=10_000)

GRAPH = '[data-testid="lt-graph"]'
VIEWPORT = {"width": 1400, "height": 1000}


# -- the database and the server (one per module) ------------------------------------

def record_new_run(db: Path, model: Any, tools: list[Any], system_prompt: str, question: Any,
                   **trace_kwargs: Any) -> str:
    """Run a real ``create_agent`` traced (middleware and callbacks) into ``db``, which
    may hold other runs already; return the id of the one top-level run it added."""
    from langchain.agents import create_agent

    from tracer.record.middleware import TraceMiddleware

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
    """Every run of the app's database, as ``tracer.read.steps`` sees it: by run id, and
    each sample trace's root run by the sample's file name (``"shopping"``)."""
    out: dict[str, Replay] = {}
    with TraceDB(app_db[0]) as db:
        for r in db.runs():
            out[r.id] = build_replay(db.run(r.id))
    for path in sample_files():
        out[path.stem] = out[read_trace(path)[0]["root"]]
    return out



class Session:
    """A page of the app in its own browser context, with its network guard, and the
    replayer on it (``scope``: inside that container, e.g. the Presenter's)."""

    def __init__(self, page: Page, url: str, foreign: list[str], errors: list[str]) -> None:
        self.page, self.url, self.foreign, self.errors = page, url, foreign, errors
        self.replayer = Replayer(page)

    def open(self, run_id: str, step: int | str | None = None, *, page: str = "replay",
             expect_step: int | None = None) -> Replayer:
        """Open ``/<page>?run=...&step=...`` at step index ``step`` (an int: the link's
        ``step`` is the number the page shows, ``step + 1``), or with ``step`` (a str)
        as the link's ``step`` as it is; wait for step index ``expect_step``."""
        url_step = str(step + 1) if isinstance(step, int) else step
        q = f"?run={run_id}" + ("" if url_step is None else f"&step={url_step}")
        self.page.goto(f"{self.url}/{page}{q}")
        wait_connected(self.page)
        self.replayer = Replayer(self.page, ".st-key-presenter" if page == "presenter" else None)
        self.replayer.wait_ready()
        want = expect_step if expect_step is not None else (
            step if isinstance(step, int) else 0)
        self.replayer.wait_step(want, timeout=15_000)
        return self.replayer

    def button(self, key: str):  # type: ignore[no-untyped-def]
        """A Streamlit button of the page (outside the replayer) by its key."""
        return self.page.locator(f".st-key-{key} button:visible")

    def settled(self, rp: Replay, i: int, *, inspector: bool = True) -> None:
        """The server heard the browser's step: the URL names it (1-based), the step
        inspector shows it, and the replayer stayed there (nothing pulled it back)."""
        expect(self.page).to_have_url(re.compile(rf"[?&]run={rp.run.id}(&|$)"))
        expect(self.page).to_have_url(re.compile(rf"[?&]step={i + 1}(&|$)"))
        if inspector:
            expect(self.page.locator(".st-key-inspector").first).to_contain_text(
                f"Step inspector · step {i + 1}")
        self.replayer.assert_at(rp, i)


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


# -- the tests ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def playback(browser: Any, app_url: str, replays: dict[str, Replay]) -> dict[str, Any]:
    """Play the shopping sample at 4x from step 0, recording every step shown and both
    panes on every animation frame, until step 6 was shown; then pause."""
    rp = replays["shopping"]
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    foreign = guard_network(context, app_url)
    page = context.new_page()
    errors = collect_console_errors(page)
    s = Session(page, app_url, foreign, errors)
    target = min(6, len(rp) - 1)
    try:
        r = s.open(rp.run.id, 0)
        r.assert_at(rp, 0)
        r.speed(4)
        r.record()
        r.play()
        expect(r.root).to_have_attribute("data-step", re.compile(
            "^(" + "|".join(str(k) for k in range(target, len(rp))) + ")$"), timeout=25_000)
        stopped = r.pause()
        # Paused: the server hears the step and the page stays there, both panes in sync.
        s.settled(rp, stopped)
        seen, frames = r.recorded()
    finally:
        context.close()
    assert foreign == [], f"the page requested something outside the app: {foreign}"
    assert errors == [], f"console errors: {errors}"
    return {"replay": rp, "frames": frames, "seen": seen, "target": target, "stopped": stopped}


def test_play_advances_graph_and_messages_together(playback: dict[str, Any]) -> None:
    """Press play: the active node and the message list advance together, in every
    frame the step tracer.read.steps gives, with no step skipped."""
    rp, frames, seen, target = (playback[k] for k in ("replay", "frames", "seen", "target"))
    assert playback["stopped"] >= target
    shown = steps_shown(seen)
    skipped = sorted(set(range(target + 1)) - set(shown))
    assert not skipped, f"playback skipped steps {skipped}: steps shown {shown}"
    assert frames, "no animation frame recorded"
    assert_frames_agree(rp, frames)


def test_playback_never_steps_back(playback: dict[str, Any]) -> None:
    """While playing, when pausing and once the server heard the step, the shown step
    only moves forward."""
    shown = steps_shown(playback["seen"])
    backwards = [(a, b) for a, b in itertools.pairwise(shown) if b < a]
    assert not backwards, f"playback went back {backwards} (steps shown: {shown})"
    assert shown[-1] == playback["stopped"]


@pytest.mark.parametrize("page", ["replay", "presenter"])
def test_pause_and_play_again_many_times(session: Session, replays: dict[str, Replay],
                                         page: str) -> None:
    """Pausing at any moment of playback stops it on a step where both panes agree;
    the server follows (URL, inspector) without pulling the replay back; playing on
    continues from there."""
    rp = replays["shopping"]
    s = session
    r = s.open(rp.run.id, 0, page=page)
    r.speed(4)
    r.record()
    here = 0
    for k in range(6):
        r.press("Space")  # play
        r.wait_playing(True)
        r.wait_moved_past(here)
        if k % 2:  # pause at a different moment of a step each time (not an assertion)
            s.page.wait_for_timeout(70 * k)
        r.press("Space")  # pause
        r.wait_playing(False)
        stopped = r.step()
        assert stopped > here, f"round {k}: playback went from {here} to {stopped}"
        s.settled(rp, stopped, inspector=page == "replay")
        here = stopped
        if here >= len(rp) - 2:
            break
    seen, frames = r.recorded()
    shown = steps_shown(seen)
    assert shown == sorted(shown), f"the replay went back: steps shown {shown}"
    assert shown == list(range(shown[0], shown[-1] + 1)), f"steps skipped: {shown}"
    assert_frames_agree(rp, frames)


# Controls whose text is wider than their box: [what, content width, box width].
OVERFLOW_JS = r"""
(root) => {
  const out = [];
  for (const el of root.querySelectorAll('.lt-bar > *, .lt-bar .lt-speed > *')) {
    if (el.offsetParent !== null && el.scrollWidth > el.clientWidth + 1)
      out.push([el.className + ' ' + (el.dataset.action || el.dataset.speed || ''),
                el.scrollWidth, el.clientWidth]);
  }
  return out;
}
"""


def test_control_bar_labels_fit(session: Session, replays: dict[str, Replay]) -> None:
    """At 1400 px every control of the bar shows its whole label, playing or paused."""
    rp = replays["shopping"]
    r = session.open(rp.run.id, 12)
    assert r.root.evaluate(OVERFLOW_JS) == []
    r.play()
    assert r.root.evaluate(OVERFLOW_JS) == []
    r.pause()


def test_keyboard_steps(session: Session, replays: dict[str, Replay]) -> None:
    rp = replays["shopping"]
    s = session
    r = s.open(rp.run.id, 5)
    r.assert_at(rp, 5)
    r.press("ArrowRight")
    r.assert_at(rp, 6)
    r.press("ArrowRight")
    r.assert_at(rp, 7)
    r.press("ArrowLeft")
    r.assert_at(rp, 6)
    s.settled(rp, 6)
    r.press("End")
    r.assert_at(rp, len(rp) - 1)
    r.press("Home")
    r.assert_at(rp, 0)
    # Space plays, space again pauses; the URL follows the step.
    r.press("Space")
    r.wait_playing(True)
    r.wait_moved_past(0)
    r.press("Space")
    r.wait_playing(False)
    here = r.step()
    assert here > 0
    s.settled(rp, here)


def test_url_and_inspector_follow_the_step(session: Session, replays: dict[str, Replay]) -> None:
    """Whatever moves the replay (a key, a button, the scrubber, a jump), the server
    hears the step it settles on: the URL names it (as shown, 1-based) and the step
    inspector shows it."""
    rp = replays["shopping"]
    s = session
    r = s.open(rp.run.id, 2)
    s.settled(rp, 2)
    r.press("ArrowRight")
    s.settled(rp, 3)
    for _ in range(4):  # several quick keys: the settled step is reported
        r.press("ArrowRight")
    s.settled(rp, 7)
    r.click("prev")
    s.settled(rp, 6)
    r.seek(20)
    s.settled(rp, 19)
    tool = jump_target(rp, 19, "next-tool")
    assert tool is not None
    r.click("next-tool")
    s.settled(rp, tool)
    r.click("last")
    s.settled(rp, len(rp) - 1)


def test_deep_link_lands_on_that_step(session: Session,
                                      replays: dict[str, Replay]) -> None:
    """A link's ``step`` is the number the page shows: ``step=10`` is "Step 10 / N"."""
    rp = replays["shopping"]
    s = session
    r = s.open(rp.run.id, "10", expect_step=9)
    r.assert_at(rp, 9)
    expect(r.counter).to_have_text(f"Step 10 / {len(rp)}")
    s.settled(rp, 9)
    last = len(rp) - 1
    r = s.open(rp.run.id, "99999", expect_step=last)
    r.assert_at(rp, last)
    s.settled(rp, last)
    # No "Deploy" button in the toolbar (app/.streamlit/config.toml: a viewer's toolbar).
    expect(s.page.locator('[data-testid="stAppDeployButton"]')).to_have_count(0)


def test_bad_deep_links_are_clamped_or_explained(session: Session,
                                                 replays: dict[str, Replay]) -> None:
    rp = replays["shopping"]
    s = session
    for bad in ("-4", "abc", "0"):  # (an old 0-based link's step=0: the first step too)
        r = s.open(rp.run.id, bad, expect_step=0)
        r.assert_at(rp, 0)
        s.settled(rp, 0)
    # A run id that does not exist: a clear message, not a traceback.
    s.page.goto(s.url + "/replay?run=no-such-run&step=3")
    wait_connected(s.page)
    expect(s.page.get_by_text("no run 'no-such-run'")).to_be_visible()
    expect(s.page.locator('[data-testid="stException"]')).to_have_count(0)


def test_open_subagent_run(session: Session, replays: dict[str, Replay]) -> None:
    """The Deep Agents sample: at the task call, the replayer's "Open subagent" opens
    the subagent's own replay (an event to the server, which switches the run); the
    server's "Back to the parent run" (``to_parent``) returns to that call; the
    header's list of subagent runs (``open_child_<i>``) opens it too."""
    parent = replays["deep-agent"]
    assert parent.run.children, "the Deep Agents sample has a subagent run"
    child = parent.run.children[0]
    sub = replays[child.id]
    call_step = next(st.index for st in parent.steps
                     if st.event.tool_call_id == child.parent_tool_call_id)
    s = session
    r = s.open(parent.run.id, call_step)
    r.assert_at(parent, call_step)
    s.settled(parent, call_step)
    expect(r.button("open-subagent")).to_be_visible()
    expect(r.button("open-subagent")).to_have_attribute("data-target", child.id)
    expect(r.button("open-subagent")).to_contain_text(child.name or child.id)
    r.click("open-subagent")
    r.wait_run(child.id)
    expect(s.page).to_have_url(re.compile(rf"run={child.id}"))
    expect(s.page.get_by_text(child.id, exact=False).first).to_be_visible()
    r.assert_at(sub, 0)
    s.settled(sub, 0)
    r.press("End")
    s.settled(sub, len(sub) - 1)
    s.button("to_parent").click()
    r.wait_run(parent.run.id)
    expect(s.page).to_have_url(re.compile(rf"run={parent.run.id}"))
    s.settled(parent, call_step)
    expect(s.button("to_parent")).to_have_count(0)
    # Not at a step of that call: no "Open subagent".
    r.press("Home")
    s.settled(parent, 0)
    expect(r.button("open-subagent")).to_be_hidden()
    # The header's list of subagent runs opens it too.
    s.button("open_child_0").click()
    r.wait_run(child.id)
    expect(s.page).to_have_url(re.compile(rf"run={child.id}"))
    s.settled(sub, 0)


def test_open_subagent_right_after_a_step(session: Session, replays: dict[str, Replay]) -> None:
    """A step, then "Open subagent" before the step was reported (150 ms): the step
    report that follows names the parent run and must not move the subagent's replay
    (nor the URL, nor the inspector) off its first step."""
    parent = replays["deep-agent"]
    child = parent.run.children[0]
    sub = replays[child.id]
    call_steps = [st.index for st in parent.steps
                  if child.parent_tool_call_id in (st.event.tool_call_id, *st.active_tools)]
    first, last = call_steps[0], call_steps[-1]
    assert last > first, "the task call spans several steps"
    s = session
    r = s.open(parent.run.id, first)
    s.settled(parent, first)
    r.press("ArrowRight")
    r.click("open-subagent")
    r.wait_run(child.id)
    s.settled(sub, 0)
    r.press("ArrowRight")  # the subagent's replay is the browser's own
    s.settled(sub, 1)
    s.button("to_parent").click()
    r.wait_run(parent.run.id)
    back = r.step()
    assert back in call_steps, f"back in the parent at step {back}, not at the call"
    s.settled(parent, back)


def test_hostile_content_is_text_and_fetches_nothing(browser: Any, app_url: str,
                                                     app_db: tuple[Path, str, str],
                                                     leak: RequestCounter,
                                                     replays: dict[str, Replay]) -> None:
    rp = replays[app_db[1]]
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
        r = s.open(rp.run.id, step)
        r.assert_at(rp, step)
        box = r.message(tool_msg.position)
        for literal in ("<script>window.__pwned=1</script>",
                        '<img src=x onerror="window.__pwned=2">',
                        f"![x]({leak.url}/leak.png)", f"[click me]({leak.url}/link)"):
            expect(box).to_contain_text(literal)
        # The final answer (markdown image and link in AI text) as well.
        r.press("End")
        r.assert_at(rp, len(rp) - 1)
        final = rp.messages_at(len(rp) - 1)[-1]
        expect(r.message(final.position)).to_contain_text(f"![reply]({leak.url}/reply.png)")
        s.settled(rp, len(rp) - 1)  # (the inspector draws the messages too)
        page.wait_for_load_state("networkidle")
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert r.part("img, script, a[href], iframe, object").count() == 0
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
    pending in the message list; each answer then removes one."""
    rp = replays[app_db[2]]
    both = next(st.index for st in rp.steps if len(st.active_tools) == 2)
    r = session.open(rp.run.id, both)
    got = r.assert_at(rp, both)
    expect(r.part("g.chip")).to_have_count(2)
    assert len(got["pending"]) == 2
    expect(r.part(".lt-call.pending")).to_have_count(2)
    r.click("next")
    r.assert_at(rp, both + 1)
    nxt = next(st.index for st in rp.steps[both + 1:] if st.kind == "model")
    r.click("next-model")
    r.assert_at(rp, nxt)
    expect(r.part("g.chip")).to_have_count(0)
    expect(r.part(".lt-call.pending")).to_have_count(0)
    session.settled(rp, nxt)


def test_one_colour_per_call_same_in_app_and_export(session: Session, browser: Any,
                                                    replays: dict[str, Replay],
                                                    app_db: tuple[Path, str, str],
                                                    tmp_path: Path) -> None:
    """Each tool call has one colour, the palette's (``tracer.read.palette.colour_map``):
    its chip on the graph, its call in the AI message and the ToolMessage answering it;
    and the app shows the same colours as the run's HTML export."""
    rp = replays[app_db[2]]
    both = next(st.index for st in rp.steps if len(st.active_tools) == 2)
    palette = run_colours(rp)
    assert len(set(palette.values())) == len(palette) == 2
    html = html_export.export_html(app_db[0], rp.run.id, tmp_path / "parallel.html")

    def read(r: Replayer) -> dict[str, set[str]]:
        shown: dict[str, set[str]] = {}
        for i in (both, len(rp) - 1):  # two chips in flight; then every answer
            if i == both:
                r.press("Home")
                r.seek(both + 1)
            else:
                r.press("End")
            got = r.assert_at(rp, i)  # (each colour shown == the palette's)
            for cid, colours in colours_of(got, expected(rp, i).tool_call_ids).items():
                shown.setdefault(cid, set()).update(colours)
        return shown

    app = read(session.open(rp.run.id, 0))
    # Chips, calls and answers all drawn: every part of a call shows its one colour.
    got = session.replayer.state()
    assert len([c for c in got["tool_colours"] if c]) == 2
    context = browser.new_context(viewport=VIEWPORT, reduced_motion="reduce")
    try:
        page = context.new_page()
        errors = collect_console_errors(page)
        page.goto(html.resolve().as_uri())
        export = Replayer(page)
        export.wait_ready()
        exported = read(export)
        assert errors == []
    finally:
        context.close()
    want = {cid: {colour} for cid, colour in palette.items()}
    assert app == want, f"app colours {app}, palette {palette}"
    assert exported == app, f"export colours {exported}, app colours {app}"


def test_a_run_being_recorded_follows_and_ends(session: Session,
                                              app_db: tuple[Path, str, str]) -> None:
    """Watching a run while it is recorded: the page opens it at its newest step,
    reloads it (the replayer asks the server every 2 s), follows its new steps while
    it is still running, and shows it completed, at its last step, when it ends."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from tracer.demo.models import ScriptedChatModel, call, turn_script
    from tracer.record.middleware import TraceMiddleware

    db = app_db[0]
    gates = {"Oslo": threading.Event(), "Rome": threading.Event()}

    @tool
    def slow_lookup(city: str) -> str:
        """Look up the weather of a city (waits until the test lets it answer)."""
        gates[city].wait(60)
        return f"{city}: sunny"

    model = ScriptedChatModel(script=turn_script([
        AIMessage("", tool_calls=[call("slow_lookup", {"city": "Oslo"}, "call_live_1")]),
        AIMessage("", tool_calls=[call("slow_lookup", {"city": "Rome"}, "call_live_2")]),
        AIMessage("Sunny in Oslo and Rome."),
    ]))
    tm = TraceMiddleware(db=db, run_name="live-browser")
    agent = create_agent(model, tools=[slow_lookup], middleware=[tm])
    worker = threading.Thread(
        target=lambda: agent.invoke({"messages": [HumanMessage("Weather in Oslo, then Rome?")]}))

    def recorded(run_id: str) -> Replay:
        with TraceDB(db) as tdb:
            return build_replay(tdb.run(run_id))

    def blocked_in(run_id: str, call_id: str) -> Replay:
        """The run as recorded once the tool call ``call_id`` started and is waiting
        (polling the database: setting up, not asserting)."""
        deadline = time.monotonic() + 30
        last = -1
        while time.monotonic() < deadline:
            rp = recorded(run_id)
            if any(st.event.tool_call_id == call_id for st in rp.steps) and len(rp) == last:
                return rp
            last = len(rp) if any(st.event.tool_call_id == call_id for st in rp.steps) else -1
            time.sleep(0.5)
        pytest.fail(f"the live run never waited in {call_id}")

    worker.start()
    try:
        deadline = time.monotonic() + 20
        run_id = None
        while run_id is None and time.monotonic() < deadline:
            with TraceDB(db) as tdb:
                run_id = next((r.id for r in tdb.runs() if r.name == "live-browser"), None)
            time.sleep(0.1)
        assert run_id, "the live run was not recorded"
        first = blocked_in(run_id, "call_live_1")
        s = session
        s.page.goto(f"{s.url}/replay?run={run_id}")
        wait_connected(s.page)
        r = s.replayer
        r.wait_ready()
        running = s.page.locator('[data-testid="stMarkdownContainer"]', has_text="running")
        expect(running.first).to_be_visible(timeout=15_000)
        # Opened without a step, a live run shows its newest step.
        r.wait_step(len(first) - 1, timeout=15_000)
        r.assert_at(first, len(first) - 1)
        # It grows while still running: the page, at its last step, follows.
        gates["Oslo"].set()
        second = blocked_in(run_id, "call_live_2")
        assert second.run.summary.status == "running" and len(second) > len(first)
        expect(r.root).to_have_attribute("data-steps", str(len(second)), timeout=15_000)
        r.assert_at(second, len(second) - 1)
        s.settled(second, len(second) - 1)
        expect(running.first).to_be_visible()
        # It ends: completed, at its last step.
        gates["Rome"].set()
        worker.join(30)
        tm.flush()
        rp = recorded(run_id)
        assert rp.run.summary.status == "completed" and len(rp) > len(second)
        expect(s.page.locator('[data-testid="stMarkdownContainer"]', has_text="completed")
               .first).to_be_visible(timeout=15_000)
        expect(r.root).to_have_attribute("data-steps", str(len(rp)), timeout=15_000)
        r.assert_at(rp, len(rp) - 1)
        s.settled(rp, len(rp) - 1)
    finally:
        for gate in gates.values():
            gate.set()
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
    # Two tool calls in flight: chips on the graph, pending calls in the message list.
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
        r = s.open(rp.run.id, i)
        r.assert_at(rp, i)
        s.settled(rp, i)
        bg = page.evaluate(
            "getComputedStyle(document.querySelector('[data-testid=stApp]')).backgroundColor")
        lum = _luminance(bg)
        assert (lum > 0.8) if theme == "light" else (lum < 0.2), f"{theme} theme background {bg}"
        # The graph's node labels and the message text contrast with the page in this theme.
        fill = r.part('g.node[data-node="before_agent"] text').evaluate(
            "e => getComputedStyle(e).fill")
        assert abs(_luminance(fill) - lum) > 0.5, f"node label {fill} on background {bg}"
        text = r.part(".lt-msg .lt-text").first.evaluate("e => getComputedStyle(e).color")
        assert abs(_luminance(text) - lum) > 0.5, f"message text {text} on background {bg}"
        page.wait_for_load_state("networkidle")
        out = artifacts / f"replay-{theme}.png"
        page.screenshot(path=str(out), full_page=True)
        assert out.stat().st_size > 20_000
    finally:
        context.close()
    assert foreign == [], f"the page requested something outside the app: {foreign}"
    assert errors == [], f"console errors: {errors}"
