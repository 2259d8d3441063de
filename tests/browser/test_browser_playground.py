"""The Playground page in a real browser (Debian's Chromium driven by Playwright): deep-
linked to the second model call of a sample run, the system prompt edited with the
debugger's form, sent offline; the recorded answer and the offline one side by side,
the request in OpenAI, Anthropic and Ollama form in tabs; no request leaves the app."""

from __future__ import annotations

import shutil
from pathlib import Path

from browser_support import collect_console_errors, guard_network, streamlit_server, wait_connected
from playwright.sync_api import expect

from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.wire.render import model_call_events


def test_playground_page_in_a_browser(browser, sample_db: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                      artifacts: Path) -> None:
    db = tmp_path / "samples.db"
    shutil.copy(sample_db, db)
    with TraceDB(db) as t:
        rid = next(r.id for r in t.runs() if r.name == "openai-weather")
        run = t.run(rid)
    second = model_call_events(run)[1]
    step = next(s.index for s in build_replay(run).steps if s.event.seq == second.seq) + 1
    with streamlit_server(db) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1600})
        blocked = guard_network(context, url)
        page = context.new_page()
        errors = collect_console_errors(page)
        page.goto(f"{url}/playground?run={rid}&step={step}")
        wait_connected(page, 60_000)
        pane = page.locator(".st-key-playground")
        expect(pane).to_contain_text("Model call 2", timeout=90_000)
        change = page.locator('[data-testid="stSelectbox"]').filter(
            has_text="Change before the call").first.locator('input[role="combobox"]')
        change.click()
        page.locator('[role="option"]').filter(has_text="the system prompt").first.click()
        text = page.locator(".st-key-dbg_text textarea")
        expect(text).to_be_visible(timeout=30_000)
        text.fill("Be brief.")
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.locator(".st-key-play_send button").click()
        result = page.locator(".st-key-play_result")
        expect(result).to_contain_text("[offline] No model was asked", timeout=60_000)
        expect(page.locator(".st-key-play_recorded")).to_contain_text("Here is the weather")
        tabs = result.locator('[role="tab"]')
        expect(tabs).to_have_text(["OpenAI", "Anthropic", "Ollama"])
        tabs.filter(has_text="Anthropic").click()
        expect(result.locator('[role="tabpanel"]:visible')).to_contain_text(
            '"system": "Be brief."')
        pane.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "playground.png"))  # (the form, the answers)
        result.screenshot(path=str(artifacts / "playground-result.png"))
        assert blocked == [], blocked
        assert errors == [], errors
        context.close()
