"""The Wire page in a real browser (Debian's Chromium driven by Playwright).

A run recorded through the real ChatAnthropic adapter and the emulator; the
page deep-linked to its second model call shows the three providers side by
side (Anthropic captured, the others rendered), switches to the responses, and
makes no request outside the app.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import collect_console_errors, guard_network, streamlit_server, wait_connected
from playwright.sync_api import expect

from tracer.demo.providers import record_provider_demos
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.wire.render import model_call_events

# Elements inside the given containers that scroll on their own (vertically)
SCROLLING_INSIDE = """sels => sels.flatMap(sel => [...document.querySelectorAll(sel + ' *')]
  .filter(e => e.scrollHeight > e.clientHeight + 1
               && ['auto', 'scroll'].includes(getComputedStyle(e).overflowY))
  .map(e => sel + ' ' + e.tagName + ' ' + e.scrollHeight + '>' + e.clientHeight))"""
# Elements inside the container wider than their box (text cut, or a sideways scroll)
SCROLLING_SIDEWAYS = """sel => [...document.querySelectorAll(sel + ', ' + sel + ' *')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => e.tagName + '.' + e.className + ' ' + e.scrollWidth + '>' + e.clientWidth)"""


@pytest.mark.parametrize("width", [1500, 1100])  # (a laptop's window: the tabs were cut)
def test_wire_page_in_a_browser(browser, tmp_path: Path, artifacts: Path, width: int) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "wire.db"
    (rid, _) = record_provider_demos(db, providers=("anthropic",))
    with TraceDB(db) as t:
        run = t.run(rid)
    second = model_call_events(run)[1]
    step = next(s.index for s in build_replay(run).steps if s.event.seq == second.seq)
    with streamlit_server(db) as url:
        context = browser.new_context(viewport={"width": width, "height": 1100})
        blocked = guard_network(context, url)
        page = context.new_page()
        errors = collect_console_errors(page)
        page.goto(f"{url}/wire?run={rid}&step={step + 1}")  # (the step as the replay shows it)
        wait_connected(page, 60_000)
        anthropic = page.locator(".st-key-wire-anthropic-request")
        expect(anthropic).to_contain_text("captured", timeout=90_000)
        expect(anthropic).to_contain_text("// system prompt: top-level `system`")
        expect(page.locator(".st-key-wire-openai-request")).to_contain_text("rendered")
        expect(page.locator(".st-key-wire-openai-request")).to_contain_text(
            "// arguments are a JSON-encoded STRING")
        expect(page.locator(".st-key-wire-ollama-request")).to_contain_text(
            "// one role:\"tool\" message per result, with NO call id")
        # every part's tab shows its whole label (issue 39, item 21: "Heade…" was cut off)
        expect(page.locator(".st-key-wire_part_page button")).to_have_count(4)
        cut = page.eval_on_selector_all(
            ".st-key-wire_part_page button",
            "bs => bs.map(b => [b.innerText.trim(), [b, ...b.querySelectorAll('*')].some("
            "e => e.scrollWidth > e.clientWidth + 1)])")
        assert [label for label, _ in cut] == ["Request", "Response", "Chunks", "Headers"]
        assert [label for label, clipped in cut if clipped] == []
        bar = page.locator(".st-key-wire_part_page").bounding_box()
        last = page.locator(".st-key-wire_part_page button", has_text="Headers").bounding_box()
        assert bar and last and last["x"] + last["width"] <= bar["x"] + bar["width"] + 1
        # one scroll for the page (issue 39, item 21: each of the four columns scrolled on
        # its own): no body scrolls inside, and two bodies a row, each wide enough to read
        bodies = [f".st-key-wire-{p}-request" for p in ("langchain", "openai", "anthropic",
                                                          "ollama")]
        for sel in bodies:
            expect(page.locator(sel)).to_be_visible()
        inner = page.evaluate(SCROLLING_INSIDE, bodies)
        assert inner == [], inner
        boxes = [page.locator(sel).bounding_box() for sel in bodies]
        assert all(b is not None for b in boxes)
        rows = sorted({round(b["y"]) for b in boxes if b})
        assert len(rows) == 2, boxes  # (two rows of two)
        assert min(b["width"] for b in boxes if b) >= 0.4 * (width - 400), boxes
        # the differences that matter: every form's column within the page, the text
        # wrapped in its cell, nothing to scroll sideways to
        page.get_by_text("The differences that matter").click()
        table = page.locator(".st-key-wire_aspects_page")
        expect(table).to_contain_text("Ollama")
        table.scroll_into_view_if_needed()
        sideways = page.evaluate(SCROLLING_SIDEWAYS, ".st-key-wire_aspects_page")
        assert sideways == [], sideways
        ollama = table.get_by_text("Ollama", exact=True).bounding_box()
        main = page.locator('[data-testid="stMain"]').bounding_box()
        assert ollama and main and ollama["x"] + ollama["width"] <= main["x"] + main["width"]
        page.screenshot(path=str(artifacts / f"wire-page-differences-{width}.png"),
                        full_page=True)
        page.locator(".st-key-wire_part_page button", has_text="Response").click()
        expect(page.locator(".st-key-wire-anthropic-response")).to_contain_text(
            "// stop reason top-level: stop_reason")
        expect(page.locator(".st-key-wire-ollama-response")).to_contain_text("done_reason")
        page.screenshot(path=str(artifacts / f"wire-page-{width}.png"))
        assert "step=" in page.url and rid in page.url
        context.close()
    assert blocked == []
    assert errors == []
