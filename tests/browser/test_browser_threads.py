"""Conversations in Debian's Chromium (issue 37): the app's Conversations page shows a
three-turn thread and a HITL thread (real agents with scripted models, a real SQLite
file) as turns in order, with the interrupt and the decision; the Runs page's "Group
by thread" toggle lists the conversations and its link opens one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browser_support import streamlit_server, wait_connected
from playwright.sync_api import expect
from tracer_kit import record_hitl_thread, record_three_turn_thread

expect.set_options(timeout=30_000)


def test_a_three_turn_thread_and_a_hitl_thread_as_conversations(browser: Any,
                                                                 tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    record_three_turn_thread(db)
    record_hitl_thread(db)
    with streamlit_server(db) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        try:
            page.goto(f"{url}/threads?thread=trip")
            wait_connected(page, 60_000)
            turns = page.locator('[class*="st-key-turn_"]')
            expect(turns).to_have_count(3, timeout=60_000)
            for i, (asked, answer) in enumerate([
                    ("Weather in Oslo?", "Sunny in Oslo."),
                    ("Sunglasses?", "Yes, take sunglasses."),
                    ("Weather in Oslo?", "Still sunny in Oslo.")], 1):
                box = page.locator(f".st-key-turn_{i}")
                expect(box).to_contain_text(f"Turn {i}")
                expect(box).to_contain_text(asked)
                expect(box).to_contain_text(answer)
            expect(page.locator(".st-key-thread_repeats")).to_contain_text(
                "turn 3 asks again what turn 1 asked")

            page.goto(f"{url}/threads?thread=truth-hitl")
            wait_connected(page, 60_000)
            box = page.locator(".st-key-turn_1")
            expect(box).to_contain_text("Interrupted: asked a person to decide", timeout=60_000)
            expect(box).to_contain_text('send_email({"body": "Draft.", "subject": "Q3"')
            expect(box).to_contain_text("ran edited: send_email(")
            expect(box).to_contain_text("Edited by a human.")
            expect(page.locator('[class*="st-key-turn_"]')).to_have_count(1)

            page.goto(f"{url}/runs")
            wait_connected(page, 60_000)
            toggle = page.locator(".st-key-group_threads")
            toggle.wait_for(timeout=60_000)
            toggle.get_by_text("Group by thread").click()
            expect(page.get_by_text("2 conversations")).to_be_visible()
            page.get_by_role("link", name="Open conversation").click()
            expect(page).to_have_url(f"{url}/threads?thread=truth-hitl")
            expect(page.locator(".st-key-turn_1")).to_contain_text(
                "Email the Q3 draft to the team.")
        finally:
            page.close()
