"""The self-contained HTML replay (``tracer.interop.html_export``) in a real browser.

Every sample trace is exported, opened from disk (file://) in Debian's Chromium
with every request other than the file itself recorded and aborted (there must
be none), and stepped through with the keyboard, the buttons and the scrubber.
The page plays the run with the one replayer (``tracer/replayer``), the one the
app's replay page mounts too, and is driven and read by the same helpers as the
app's browser tests (``tests/replayer_driver.py``): at each step the active node,
the counter, the message list, the highlighted and pending messages, the taken
edges, the tool-call chips and their colours are compared with ``tracer.read.steps``
for the same step index. Hooks: the replayer's (top of replayer.js) and the
page's header (docstring of tracer/interop/html_export.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import collect_console_errors
from playwright.sync_api import Page, expect
from replayer_driver import (
    Replayer,
    assert_frames_agree,
    jump_target,
    run_colours,
    steps_shown,
)

from tracer.interop import html_export  # (a dev dependency and a module: never skipped)
from tracer.interop.exchange import read_trace, sample_files
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay

expect.set_options(timeout=10_000)

SAMPLES = sample_files()


@pytest.fixture(scope="module")
def exported(sample_db: Path, tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, tuple[Path, Replay, dict[str, Replay]]]:
    """sample name -> (exported HTML file, its replay, every run's replay by id)."""
    out_dir = tmp_path_factory.mktemp("html")
    out = {}
    with TraceDB(sample_db) as db:
        by_id = {r.id: build_replay(db.run(r.id)) for r in db.runs()}
    for path in SAMPLES:
        root = read_trace(path)[0]["root"]
        html = html_export.export_html(sample_db, root, out_dir / f"{path.stem}.html")
        out[path.stem] = (html, by_id[root], by_id)
    return out


class Offline:
    """A page opened from disk; every other request is recorded and aborted."""

    def __init__(self, browser: Any, html: Path, fragment: str = "", **context: Any) -> None:
        self.context = browser.new_context(**{"viewport": {"width": 1300, "height": 900},
                                              "reduced_motion": "reduce", **context})
        self.url = html.resolve().as_uri()
        self.requests: list[str] = []

        def route(r) -> None:  # type: ignore[no-untyped-def]
            if r.request.url.split("#")[0] == self.url:
                r.continue_()
            else:
                self.requests.append(r.request.url)
                r.abort()

        self.context.route("**/*", route)
        self.page: Page = self.context.new_page()

        def request(req) -> None:  # type: ignore[no-untyped-def]
            if req.url.split("#")[0] != self.url:
                self.requests.append(req.url)

        self.page.on("request", request)
        self.errors = collect_console_errors(self.page)
        self.page.goto(self.url + fragment)
        self.replayer = Replayer(self.page)
        self.replayer.wait_ready()

    def close(self) -> None:
        self.context.close()
        assert self.requests == [], f"the exported page made requests: {self.requests}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture
def offline(browser: Any) -> Iterator[Any]:
    opened: list[Offline] = []

    def open_(html: Path, fragment: str = "", **context: Any) -> Offline:
        o = Offline(browser, html, fragment, **context)
        opened.append(o)
        return o

    yield open_
    for o in opened:
        o.close()


@pytest.mark.parametrize("sample", [p.stem for p in SAMPLES])
def test_step_through_every_sample_offline(exported: dict[str, Any], offline: Any,
                                           sample: str) -> None:
    """Forward through every step alternating the right arrow and the Forward
    button, back a few with the left arrow and Back, then End / Home, the First
    button and the scrubber; every jump button up to the end."""
    html, rp, _ = exported[sample]
    r = offline(html).replayer
    assert len(rp) > 1
    r.assert_at(rp, 0)
    for i in range(1, len(rp)):
        if i % 2:
            r.press("ArrowRight")
        else:
            r.click("next")
        r.assert_at(rp, i)
    last = len(rp) - 1
    r.press("ArrowRight")  # past the end: stays on the last step
    r.assert_at(rp, last)
    expect(r.button("next")).to_be_disabled()
    expect(r.button("last")).to_be_disabled()
    for i in range(last - 1, max(-1, last - 5), -1):
        if i % 2:
            r.press("ArrowLeft")
        else:
            r.click("prev")
        r.assert_at(rp, i)
    r.press("Home")
    r.assert_at(rp, 0)
    expect(r.button("prev")).to_be_disabled()
    expect(r.button("first")).to_be_disabled()
    r.press("End")
    r.assert_at(rp, last)
    r.click("first")
    r.assert_at(rp, 0)
    r.seek(len(rp) // 2 + 1)  # the scrubber is 1-based, like the counter
    r.assert_at(rp, len(rp) // 2)
    r.seek(len(rp))
    r.assert_at(rp, last)
    for action in ("next-model", "next-tool", "next-error"):
        r.click("first")
        r.assert_at(rp, 0)
        i = 0
        while (j := jump_target(rp, i, action)) is not None:
            r.click(action)
            r.assert_at(rp, j)
            i = j
        expect(r.button(action)).to_be_disabled()


def test_play_and_pause(exported: dict[str, Any], offline: Any) -> None:
    """Play at 4x (the speed buttons), pause with the button, play on, pause with
    Space: playback never steps back or skips a step, and in every frame the graph
    and the message list show the same step."""
    html, rp, _ = exported["shopping"]
    r = offline(html).replayer
    r.assert_at(rp, 0)
    expect(r.speed_button(1)).to_have_attribute("aria-pressed", "true")
    r.speed(4)
    for other in (0.5, 1, 2):
        expect(r.speed_button(other)).to_have_attribute("aria-pressed", "false")
    r.record()
    r.press("Space")
    r.wait_playing(True)
    expect(r.root).not_to_have_attribute("data-step", re.compile(r"^[0-3]$"), timeout=15_000)
    stopped = r.pause()
    assert stopped >= 4
    r.assert_at(rp, stopped)
    r.play()
    r.wait_moved_past(stopped)
    r.press("Space")
    r.wait_playing(False)
    again = r.step()
    assert again > stopped
    r.assert_at(rp, again)
    seen, frames = r.recorded()
    shown = steps_shown(seen)
    assert shown == list(range(shown[0], shown[-1] + 1)), f"skipped or went back: {shown}"
    assert shown[0] == 0 and shown[-1] == again
    assert_frames_agree(rp, frames)


def test_playback_stops_at_the_end_and_play_starts_over(exported: dict[str, Any],
                                                        offline: Any) -> None:
    html, rp, _ = exported["sdk-loop"]
    r = offline(html).replayer
    r.speed(4)
    r.play()
    r.wait_playing(False, timeout=20_000)  # it pauses by itself at the last step
    r.assert_at(rp, len(rp) - 1)
    expect(r.root).to_have_attribute("data-speed", "4")
    r.record()
    r.play()  # at the last step: from the first again
    r.wait_moved_past(len(rp) - 1)
    r.pause()
    seen, _ = r.recorded()
    assert steps_shown(seen)[:2] == [len(rp) - 1, 0], seen
    r.assert_at(rp, r.step())


def test_deep_link_fragment_opens_that_step(exported: dict[str, Any], offline: Any) -> None:
    """``#step=N`` counts from 1, like the counter and the app's links; out of range
    or junk: clamped."""
    html, rp, _ = exported["shopping"]
    o = offline(html, "#step=8")  # the eighth step
    o.replayer.assert_at(rp, 7)
    expect(o.replayer.counter).to_have_text(f"Step 8 / {len(rp)}")
    for bad in ("#step=0", "#step=-4", "#step=abc"):
        offline(html, bad).replayer.assert_at(rp, 0)
    offline(html, "#step=99999").replayer.assert_at(rp, len(rp) - 1)


def test_the_url_follows_the_step(exported: dict[str, Any], offline: Any) -> None:
    html, rp, _ = exported["shopping"]
    o = offline(html)
    r = o.replayer
    for _ in range(3):
        r.press("ArrowRight")
    r.assert_at(rp, 3)
    expect(o.page).to_have_url(re.compile(r"#step=4$"))
    r.press("End")
    expect(o.page).to_have_url(re.compile(rf"#step={len(rp)}$"))


def test_the_step_inspector_follows_the_step(exported: dict[str, Any], offline: Any) -> None:
    html, rp, _ = exported["shopping"]
    o = offline(html, "#step=5")
    r = o.replayer
    r.assert_at(rp, 4)
    r.part(".lt-inspector summary").click()
    inspector = r.part(".lt-inspector pre")
    expect(inspector).to_contain_text('"step": 5')
    expect(inspector).to_contain_text(f'"hook": "{rp.steps[4].event.hook}"')
    r.press("ArrowRight")
    r.assert_at(rp, 5)
    expect(inspector).to_contain_text('"step": 6')
    expect(inspector).to_contain_text(f'"hook": "{rp.steps[5].event.hook}"')


def test_subagent_run_opens_inside_the_file(exported: dict[str, Any], offline: Any) -> None:
    html, rp, by_id = exported["deep-agent"]
    assert rp.run.children
    child = rp.run.children[0]
    sub = by_id[child.id]
    at = next(st.index for st in rp.steps if st.event.tool_call_id == child.parent_tool_call_id)
    o = offline(html, f"#step={at + 1}")
    page, r = o.page, o.replayer
    r.assert_at(rp, at)
    expect(r.root).to_have_attribute("data-depth", "0")
    expect(page.locator("#back-to-parent")).to_be_hidden()
    expect(page.locator("#run-name")).to_have_text(rp.run.summary.name or rp.run.id)
    expect(r.button("open-subagent")).to_be_visible()
    expect(r.button("open-subagent")).to_have_attribute("data-target", child.id)
    r.click("open-subagent")
    r.assert_at(sub, 0)
    expect(r.root).to_have_attribute("data-depth", "1")
    expect(page.locator("#run-meta")).to_contain_text(f"subagent run {child.id}")
    expect(page.locator("#run-name")).to_contain_text(sub.run.summary.name or sub.run.id)
    r.press("End")
    r.assert_at(sub, len(sub) - 1)
    expect(page).to_have_url(re.compile(rf"#run={child.id}&step={len(sub)}$"))
    page.locator("#back-to-parent").click()
    r.assert_at(rp, at)
    expect(r.root).to_have_attribute("data-depth", "0")
    expect(page.locator("#back-to-parent")).to_be_hidden()
    # A link into the subagent run: #run=ID&step=N (and back to the parent at its call).
    o2 = offline(html, f"#run={child.id}&step=3")
    o2.replayer.assert_at(sub, 2)
    expect(o2.page.locator("#back-to-parent")).to_be_visible()
    o2.page.locator("#back-to-parent").click()
    o2.replayer.assert_at(rp, at)


def test_hostile_sample_shows_text_and_loads_nothing(exported: dict[str, Any],
                                                     offline: Any) -> None:
    html, rp, _ = exported["hostile-content"]
    o = offline(html)
    page, r = o.page, o.replayer
    r.press("End")
    r.assert_at(rp, len(rp) - 1)
    box = r.messages
    expect(box).to_contain_text("<script>")
    expect(box).to_contain_text("onerror=")
    expect(box).to_contain_text("![")
    assert r.part("img, script, a[href], iframe, object").count() == 0
    assert page.locator("#run-name img, #run-meta img").count() == 0
    page.wait_for_load_state("networkidle")
    assert page.evaluate("typeof window.__pwned") == "undefined"


def test_one_colour_per_tool_call(exported: dict[str, Any], offline: Any) -> None:
    """Two tool calls in flight: each chip, each call in the AI message and the
    ToolMessage answering it share one colour, the palette's (tracer.read.palette), and
    the two calls' colours differ."""
    html, rp, _ = exported["shopping"]
    both = next(st.index for st in rp.steps if len(st.active_tools) == 2)
    o = offline(html, f"#step={both + 1}")
    r = o.replayer
    got = r.assert_at(rp, both)  # (checks every colour shown against the palette)
    palette = run_colours(rp)
    chips = {c["id"]: c["colour"] for c in got["chips"]}
    assert set(chips) == set(rp.steps[both].active_tools)
    assert chips == {cid: palette[cid] for cid in chips}
    assert len(set(chips.values())) == 2
    calls = {c["id"]: c["colour"] for c in got["calls"]}
    assert {cid: calls[cid] for cid in chips} == chips
    r.press("End")
    got = r.assert_at(rp, len(rp) - 1)
    answers = [c for c in got["tool_colours"] if c]
    assert answers, "no ToolMessage shown at the last step"
    for cid, colour in chips.items():
        tool_msg = next(m for m in rp.messages_at(len(rp) - 1) if m.tool_call_id == cid)
        el = r.message(tool_msg.position)
        assert el.evaluate("e => e.style.getPropertyValue('--call').trim()") == colour
        call_el = r.part(f'.lt-call[data-call-id="{cid}"]').first
        assert call_el.evaluate("e => e.style.getPropertyValue('--call').trim()") == colour


def _luminance(css: str) -> float:
    nums = [float(x) for x in re.findall(r"[\d.]+", css)[:3]]
    r, g, b = (v / 255 for v in nums)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_screenshot_in_each_theme(exported: dict[str, Any], offline: Any, artifacts: Path,
                                  theme: str) -> None:
    """The export in the browser's light and dark colour scheme, saved to
    test-artifacts/export-<theme>.png."""
    html, rp, _ = exported["shopping"]
    both = next(st.index for st in rp.steps if len(st.active_tools) == 2)
    o = offline(html, f"#step={both + 1}", color_scheme=theme,
                viewport={"width": 1400, "height": 1100})
    page, r = o.page, o.replayer
    r.assert_at(rp, both)
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    lum = _luminance(bg)
    assert (lum > 0.8) if theme == "light" else (lum < 0.2), f"{theme} background {bg}"
    fill = r.part('g.node[data-node="before_agent"] text').evaluate(
        "e => getComputedStyle(e).fill")
    assert abs(_luminance(fill) - lum) > 0.5, f"node label {fill} on background {bg}"
    out = artifacts / f"export-{theme}.png"
    page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 20_000


def test_next_error_says_why_it_is_off(exported: dict[str, Any], offline: Any) -> None:
    """footgun-wrong-id's health reads errors (findings of the checks), yet nothing in it
    raised or answered with an error: "Next error" is off, and its title says so and
    where the findings are (issue 39 item 9). A run with errors has no such title."""
    html, _, _ = exported["footgun-wrong-id"]
    r = offline(html).replayer
    off = r.button("next-error")
    expect(off).to_be_disabled()
    expect(off).to_have_attribute("title", re.compile(r"^No error in this run .*Findings"))
    html, rp, _ = exported["footgun-no-bound"]
    r = offline(html).replayer
    on = r.button("next-error")
    expect(on).to_be_enabled()
    expect(on).to_have_attribute("title", "Jump to the next error")
    r.press("End")
    r.assert_at(rp, len(rp) - 1)
    expect(on).not_to_have_attribute("title", re.compile("^No error in this run"))
