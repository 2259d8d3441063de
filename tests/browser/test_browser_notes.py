"""Notes in the self-contained HTML replay, in Debian's Chromium: a workshop's talking
points travel with the file. The notes are listed under the replay (``#notes``), each
step's note has a button that opens its step and is marked ``current`` there, a hostile
note is text, never HTML, and nothing is fetched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from tracer_kit import record_weather_run

from tracer.db.notes import add_note
from tracer.interop.html_export import export_html

expect.set_options(timeout=10_000)

HOSTILE = '<img src=x onerror="document.title=\'pwned\'"> **bold** ![x](http://evil.example/x.png)'


def test_the_export_lists_the_notes_and_opens_their_steps(browser: Any, tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    rid = record_weather_run(db)
    add_note(db, rid, "the tool call goes out here", step=3, tags=["workshop"], author="ann")
    add_note(db, rid, HOSTILE, step=9, tags=["bug"])
    add_note(db, rid, "a run that answers in two laps", tags=["good-example"])
    html = export_html(db, rid, tmp_path / "run.html")
    context = browser.new_context(reduced_motion="reduce")
    asked: list[str] = []
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                  else (asked.append(r.request.url), r.abort()))
    page = context.new_page()
    try:
        page.goto(html.resolve().as_uri())
        root = page.locator('[data-testid="lt-replayer"]')
        expect(root).to_have_attribute("data-step", "0")
        expect(page.locator("#notes")).to_be_visible()
        expect(page.locator("#notes-title")).to_have_text("Notes (3)")
        items = page.locator("li.lt-note")
        expect(items).to_have_count(3)
        # the run's note first, then by step (as looptrace note lists them)
        expect(items.nth(0).locator(".lt-note-text")).to_have_text(
            "a run that answers in two laps")
        expect(items.nth(2).locator(".lt-note-text")).to_have_text(HOSTILE)
        expect(items.nth(1)).to_contain_text("workshop · by ann")
        page.locator('li.lt-note[data-step="3"] button').click()
        expect(root).to_have_attribute("data-step", "2")
        expect(page.locator('li.lt-note[data-step="3"]')).to_have_class("lt-note current")
        page.locator('li.lt-note[data-step="9"] button').click()
        expect(root).to_have_attribute("data-step", "8")
        expect(page.locator('li.lt-note[data-step="3"]')).to_have_class("lt-note")
        assert page.locator("#notes img").count() == 0
        assert page.title() != "pwned"
        assert asked == []
    finally:
        context.close()


def test_the_inspector_box_writes_a_note_in_the_app(browser: Any, tmp_path: Path) -> None:
    """The app in Chromium: a note typed in the step inspector's box and added is in the
    file, listed as text on the page at once (a hostile note: no image, no markup)."""
    from browser_support import streamlit_server, wait_connected
    from tracer_kit import rows

    db = tmp_path / "t.db"
    rid = record_weather_run(db)
    with streamlit_server(db) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        try:
            page.goto(f"{url}/replay?run={rid}&step=3")
            wait_connected(page, 60_000)
            box = page.locator(".st-key-notes")
            box.wait_for(timeout=60_000)
            box.get_by_label("Add a note").fill(HOSTILE)
            box.get_by_label("Tags").fill("bug workshop")
            box.locator("button:visible", has_text="Add note").click()
            expect(box).to_contain_text("added on step 3 [bug, workshop]", timeout=30_000)
            expect(box).to_contain_text(HOSTILE)
            assert box.locator("img").count() == 0 and box.locator("strong").count() == 0
            assert rows(db, "SELECT seq, text, tags FROM notes") == [
                (2, HOSTILE, '["bug", "workshop"]')]
        finally:
            page.close()
