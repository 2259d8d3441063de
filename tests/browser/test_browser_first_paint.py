"""The replay page's first visit in Chromium: the replayer first, then the whole page.

A session's first replay page is drawn lean (the run's header and the replayer:
``app/screens/replay/page.py``); the replayer says when it has painted the run and the app
draws the rest (the sidebar's run picker, the toggles, the step inspector, the
findings). What only a browser shows: the rest does arrive, the run's JSON is sent
once (not again for the whole page), the replayer is the same element throughout (not
mounted again: a remount would drop playback), and it steps and reports as before
(issue 29).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import collect_console_errors, streamlit_server, wait_connected
from playwright.sync_api import expect
from replayer_driver import Replayer

from tracer.read.loader import TraceDB

MARK = b"looptrace-replay"  # (the run's JSON: its "format")


@pytest.fixture(scope="module")
def app_url(sample_db: Path) -> Iterator[str]:
    with streamlit_server(sample_db) as url:
        yield url


def run_id(db: Path, name: str) -> str:
    with TraceDB(db) as t:
        return next(r.id for r in t.runs() if r.name == name)


def test_the_whole_page_follows_the_replayer_without_the_run_again(
        browser: Any, app_url: str, sample_db: Path) -> None:
    """shopping at step 3. Without the "painted" event the page stays lean (the run
    picker never shows); with the whole page's run not keeping what the browser holds,
    the run's JSON arrives twice."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, reduced_motion="reduce")
    page = ctx.new_page()
    errors = collect_console_errors(page)
    runs_sent: list[int] = []

    def on_ws(ws: Any) -> None:
        def frame(payload: Any) -> None:
            data = payload if isinstance(payload, bytes) else str(payload).encode()
            if MARK in data:
                runs_sent.append(len(data))
        ws.on("framereceived", frame)

    page.on("websocket", on_ws)
    try:
        page.goto(f"{app_url}/replay?run={run_id(sample_db, 'shopping')}&step=3")
        wait_connected(page, 60_000)
        r = Replayer(page)
        r.wait_ready(timeout=60_000)
        r.wait_step(2)
        r.root.evaluate("(el) => { el.__first = true; }")
        # The rest of the page, once the replayer has painted.
        expect(page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]')).to_be_visible(
            timeout=30_000)
        expect(page.locator('[data-testid="stMarkdownContainer"]',
                            has_text="Step inspector · step 3")).to_be_visible(timeout=30_000)
        expect(page.locator('[data-testid="stCheckbox"]').first).to_be_visible()
        expect(page.get_by_text("Findings", exact=False).first).to_be_visible()
        assert r.root.evaluate("(el) => el.__first === true && el.isConnected")  # not remounted
        assert r.step() == 2
        assert len(runs_sent) == 1, runs_sent
        # It steps and reports as ever: the inspector follows the step it settles on.
        r.press("ArrowRight")
        r.wait_step(3)
        expect(page.locator('[data-testid="stMarkdownContainer"]',
                            has_text="Step inspector · step 4")).to_be_visible(timeout=30_000)
        assert len(runs_sent) == 1, runs_sent
    finally:
        ctx.close()
    assert errors == []


class HeldSocket:
    """The app's websocket, routed through the test: once holding (``hold()``, or when
    the page sends a frame containing ``hold_on``), the server's frames wait, and what the
    page sends from then on is kept in ``sent``; ``release()`` delivers what waited, in
    order, and lets the rest through."""

    def __init__(self, page: Any, hold_on: bytes | None = None) -> None:
        self.on = self.started = False
        self.frames: list[Any] = []
        self.sent: list[bytes] = []
        self.hold_on = hold_on
        self.ws: Any = None
        page.route_web_socket(re.compile(r"/_stcore/stream"), self._route)

    def hold(self) -> None:
        self.on = self.started = True

    def release(self) -> None:
        self.on = False
        for message in self.frames:  # (in order; before any other frame)
            self.ws.send(message)
        self.frames = []

    def _route(self, ws: Any) -> None:
        server = ws.connect_to_server()
        self.ws = ws

        def to_server(message: Any) -> None:
            data = message if isinstance(message, bytes) else message.encode()
            if self.started:
                self.sent.append(data)
            if self.hold_on is not None and self.hold_on in data:
                self.hold()  # (the server's answer to it is held)
            server.send(message)

        def to_page(message: Any) -> None:
            if self.on:
                self.frames.append(message)
            else:
                ws.send(message)

        ws.on_message(to_server)
        server.on_message(to_page)


def test_after_a_click_on_another_page_the_replayer_sends_nothing(
        browser: Any, app_url: str, sample_db: Path) -> None:
    """Streamlit keeps one pending rerun per session, and the newest wins, page and all:
    an event the replayer sends just after a click on another page (its "painted" as a
    newcomer clicks "Wire", a step report) took the user back to the replay (CI,
    tests/browser/test_browser_truth.py). The server's answer to the click is held back
    here, so that the replayer is still on the page; a step taken then reports nothing.
    Without ``leaving()`` in the replayer's send, the step report goes out (the first
    assertion fails)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, reduced_motion="reduce")
    page = ctx.new_page()
    errors = collect_console_errors(page)
    socket = HeldSocket(page)

    try:
        page.goto(f"{app_url}/replay?run={run_id(sample_db, 'shopping')}&step=3")
        wait_connected(page, 60_000)
        r = Replayer(page)
        r.wait_ready(timeout=60_000)
        expect(page.locator('[data-testid="stMarkdownContainer"]',
                            has_text="Step inspector · step 3")).to_be_visible(timeout=30_000)
        socket.hold()
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Wire").first.click()
        r.click("next")  # (the replayer is still there: the server's answer is held)
        r.wait_step(3)
        page.wait_for_timeout(1_000)  # (a step report goes out 150 ms after the step)
        events = [m for m in socket.sent if b'"event"' in m]
        assert events == [], events
        assert len(socket.sent) >= 1  # (the click's own rerun)
        socket.release()
        expect(page).to_have_url(re.compile(r"/wire"), timeout=30_000)
    finally:
        ctx.close()
    assert errors == []


def test_what_the_replayer_says_before_the_whole_page_waits_for_it(
        browser: Any, app_url: str, sample_db: Path) -> None:
    """Between its "painted" and the whole page, an event of the replayer (a speed picked,
    a step) would rerun the replay's fragment while the whole page is drawn, and
    Streamlit then drops the fragment's part of that page: on a busy machine the
    replayer was taken off the page and mounted again mid-playback (CI,
    tests/browser/test_browser_replay.py). The server's answer to "painted" is held back
    here: a speed picked meanwhile goes out once the whole page is there, and the
    replayer is the same element throughout. Without the wait the speed goes out at once
    (the first assertion fails)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, reduced_motion="reduce")
    page = ctx.new_page()
    errors = collect_console_errors(page)
    socket = HeldSocket(page, hold_on=b'"painted"')

    try:
        page.goto(f"{app_url}/replay?run={run_id(sample_db, 'shopping')}")
        wait_connected(page, 60_000)
        r = Replayer(page)
        r.wait_ready(timeout=60_000)
        for _ in range(300):
            if socket.on:
                break
            page.wait_for_timeout(100)
        assert socket.on, "the replayer never said it had painted"
        r.root.evaluate("(el) => { el.__first = true; }")
        r.speed(4)  # (the browser's own: the app hears of it later)
        page.wait_for_timeout(1_000)
        assert [m for m in socket.sent if b'"event"' in m] == []  # (after "painted")
        socket.release()
        expect(page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]')).to_be_visible(
            timeout=30_000)
        for _ in range(100):
            if any(b'"speed"' in m for m in socket.sent):
                break
            page.wait_for_timeout(100)
        assert any(b'"speed"' in m for m in socket.sent), "the speed never reached the app"
        assert r.root.evaluate("(el) => el.__first === true && el.isConnected")  # not remounted
        expect(r.root).to_have_attribute("data-speed", "4")
    finally:
        ctx.close()
    assert errors == []
