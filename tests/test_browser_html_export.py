"""The self-contained HTML replay (``tracer.html_export``) in a real browser.

Every sample trace is exported, opened from disk (file://) in Debian's Chromium
with every request other than the file itself recorded and aborted (there must
be none), and stepped through with the keyboard and the buttons; at each step
the active node, the step counter and the message list are compared with
``tracer.replay`` for the same step index. Hooks: see the docstring of
tracer/html_export.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import collect_console_errors
from playwright.sync_api import Page, expect

from tracer import html_export  # (a dev dependency and a module: never skipped)
from tracer.exchange import read_trace, sample_files
from tracer.loader import TraceDB
from tracer.replay import Replay, build_replay

SAMPLES = sample_files()
ROOT = "#replay"


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

    def __init__(self, browser: Any, html: Path, fragment: str = "") -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900},
                                           reduced_motion="reduce")
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
        self.page.on("request", lambda req: req.url.split("#")[0] != self.url
                     and self.requests.append(req.url))
        self.errors = collect_console_errors(self.page)
        self.page.goto(self.url + fragment)

    def close(self) -> None:
        self.context.close()
        assert self.requests == [], f"the exported page made requests: {self.requests}"
        assert self.errors == [], f"console errors: {self.errors}"


@pytest.fixture
def offline(browser: Any) -> Iterator[Any]:
    opened: list[Offline] = []

    def open_(html: Path, fragment: str = "") -> Offline:
        o = Offline(browser, html, fragment)
        opened.append(o)
        return o

    yield open_
    for o in opened:
        o.close()


def state(page: Page) -> dict[str, Any]:
    """The page's step, active node, counter and message positions, read at once."""
    return page.evaluate("""() => {
      const r = document.querySelector('#replay');
      return {step: Number(r.dataset.step), node: r.dataset.activeNode, run: r.dataset.run,
              counter: document.querySelector('#counter').textContent.trim(),
              msgs: [...document.querySelectorAll('#messages .msg')]
                      .map(e => Number(e.dataset.position)),
              current: [...document.querySelectorAll('#messages .msg.current')]
                      .map(e => Number(e.dataset.position)),
              pwned: typeof window.__pwned};
    }""")


def assert_at(page: Page, rp: Replay, i: int) -> None:
    expect(page.locator(ROOT)).to_have_attribute("data-step", str(i))
    expect(page.locator(ROOT)).to_have_attribute("data-active-node", rp.steps[i].node)
    got = state(page)
    want_msgs = [m.position for m in rp.messages_at(i)]
    new = set(rp.steps[i].new_keys)
    want_current = [m.position for m in rp.messages_at(i) if m.key in new]
    assert got["run"] == rp.run.id
    assert got["counter"] == f"Step {i + 1} / {len(rp)}", got
    assert got["msgs"] == want_msgs, f"step {i}: messages {got['msgs']} != {want_msgs}"
    assert got["current"] == want_current, f"step {i}: highlighted {got['current']}"
    assert got["pwned"] == "undefined"


@pytest.mark.parametrize("sample", [p.stem for p in SAMPLES])
def test_step_through_every_sample_offline(exported: dict[str, Any], offline: Any,
                                           sample: str) -> None:
    """Forward through every step alternating the right arrow and the Forward
    button, back a few with the left arrow and Back, then End / Home."""
    html, rp, _ = exported[sample]
    o = offline(html)
    page = o.page
    assert len(rp) > 1
    assert_at(page, rp, 0)
    for i in range(1, len(rp)):
        if i % 2:
            page.keyboard.press("ArrowRight")
        else:
            page.locator("#next").click()
        assert_at(page, rp, i)
    last = len(rp) - 1
    page.keyboard.press("ArrowRight")  # past the end: stays on the last step
    assert_at(page, rp, last)
    for i in range(last - 1, max(-1, last - 5), -1):
        if i % 2:
            page.keyboard.press("ArrowLeft")
        else:
            page.locator("#prev").click()
        assert_at(page, rp, i)
    page.keyboard.press("Home")
    assert_at(page, rp, 0)
    page.keyboard.press("End")
    assert_at(page, rp, last)
    page.locator("#first").click()
    assert_at(page, rp, 0)


def test_play_and_pause(exported: dict[str, Any], offline: Any) -> None:
    html, rp, _ = exported["shopping"]
    o = offline(html)
    page = o.page
    assert_at(page, rp, 0)
    page.locator("#speed").select_option("4")
    page.keyboard.press("Space")
    expect(page.locator(ROOT)).to_have_attribute("data-playing", "1")
    page.wait_for_function("() => Number(document.querySelector('#replay').dataset.step) >= 4")
    page.locator("#pause").click()
    expect(page.locator(ROOT)).to_have_attribute("data-playing", "0")
    stopped = state(page)["step"]
    assert_at(page, rp, stopped)
    page.locator("#play").click()
    expect(page.locator(ROOT)).to_have_attribute("data-playing", "1")
    page.keyboard.press("Space")
    expect(page.locator(ROOT)).to_have_attribute("data-playing", "0")
    assert_at(page, rp, state(page)["step"])


def test_deep_link_fragment_opens_that_step(exported: dict[str, Any], offline: Any) -> None:
    html, rp, _ = exported["shopping"]
    o = offline(html, "#step=8")  # the page's own count, from 1: the eighth step
    assert_at(o.page, rp, 7)
    o0 = offline(html, "#step=0")  # below the first: the first
    assert_at(o0.page, rp, 0)
    o2 = offline(html, "#step=99999")
    assert_at(o2.page, rp, len(rp) - 1)


def test_subagent_run_opens_inside_the_file(exported: dict[str, Any], offline: Any) -> None:
    html, rp, by_id = exported["deep-agent"]
    assert rp.run.children
    child = rp.run.children[0]
    sub = by_id[child.id]
    at = next(st.index for st in rp.steps if st.event.tool_call_id == child.parent_tool_call_id)
    o = offline(html, f"#step={at + 1}")
    page = o.page
    assert_at(page, rp, at)
    page.locator("#open-subagent").click()
    expect(page.locator(ROOT)).to_have_attribute("data-run", child.id)
    assert_at(page, sub, 0)
    page.keyboard.press("End")
    assert_at(page, sub, len(sub) - 1)
    page.locator("#back-to-parent").click()
    expect(page.locator(ROOT)).to_have_attribute("data-run", rp.run.id)
    assert_at(page, rp, at)


def test_hostile_sample_shows_text_and_loads_nothing(exported: dict[str, Any],
                                                     offline: Any) -> None:
    html, rp, _ = exported["hostile-content"]
    o = offline(html)
    page = o.page
    page.keyboard.press("End")
    assert_at(page, rp, len(rp) - 1)
    box = page.locator("#messages")
    expect(box).to_contain_text("<script>")
    expect(box).to_contain_text("onerror=")
    expect(box).to_contain_text("![")
    assert page.locator("#messages img, #messages script, #messages a[href]").count() == 0
    page.wait_for_load_state("networkidle")
    assert page.evaluate("typeof window.__pwned") == "undefined"
