"""The debugger in a real browser (Debian's Chromium, Playwright): an agent armed with
``TraceMiddleware(debug=["model:1", "tool:get_weather"])`` runs in a thread of the
test; the open Replay page of its run shows the first pause (at the model call), F8
continues it; the page follows the run to its next pause (the tool call), where the
test types a result (what is typed survives the page's reloads every 2 s) and clicks
Continue: the agent's final answer quotes it."""

from __future__ import annotations

import re
from pathlib import Path

from browser_support import RequestCounter, guard_network, streamlit_server, wait_connected
from debug_kit import Background, quoting_model, wait_paused
from playwright.sync_api import expect
from tracer_kit import get_weather, make_agent

from tracer import TraceMiddleware
from tracer.debug import channel

TYPED = "Snowing in Oslo, -5 C (typed in the debugger)"


def test_pause_key_type_a_tool_result_and_continue(browser, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                     artifacts: Path) -> None:
    db = tmp_path / "debug.db"
    trace = TraceMiddleware(db=db, run_name="weather", debug=["model:1", "tool:get_weather"])
    agent = make_agent(quoting_model(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))
    try:
        first = wait_paused(db, alive=bg.alive)[0]
        assert first["pending_kind"] == "model_request"
        run = first["run"]
        with streamlit_server(db) as url:
            context = browser.new_context(viewport={"width": 1400, "height": 1250},
                                          reduced_motion="reduce")
            page = context.new_page()
            page.goto(f"{url}/replay?run={run}")
            wait_connected(page, 60_000)
            panel = page.locator(".st-key-debug_pause")
            expect(panel).to_contain_text("Paused in the debugger", timeout=60_000)
            expect(panel).to_contain_text("breakpoint: model:1")
            expect(panel).to_contain_text("A model call waits")
            replayer = page.locator('[data-testid="lt-replayer"]')
            # the replay stands at the pause (data-step: the 0-based index)
            expect(replayer).to_have_attribute("data-step", str(first["step"] - 1),
                                               timeout=20_000)
            page.screenshot(path=str(artifacts / "debug-model-call.png"))

            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("F8")  # Continue
            # the agent goes on to the tool call; the page follows (its 2 s reload)
            expect(panel).to_contain_text("breakpoint: tool:get_weather", timeout=30_000)
            expect(panel).to_contain_text("A tool call waits to run: get_weather")
            second = channel.pending(db, run)
            expect(replayer).to_have_attribute("data-step", str(second["step"] - 1),
                                               timeout=20_000)
            # the header follows the pause too: at the first (the model call not yet
            # answered) the tokens were not reported and the cost unknown; here the model
            # has answered (it was "tokens not reported · cost $0" at both)
            header = page.locator('[data-testid="stText"]', has_text=run)
            expect(header).to_contain_text("19 tokens", timeout=20_000)
            expect(header).to_contain_text("cost unknown")
            page.screenshot(path=str(artifacts / "debug-tool-call.png"))

            result = page.locator(".st-key-dbg_text textarea")
            result.click()
            page.keyboard.type(TYPED[:10])
            page.wait_for_timeout(4500)  # (two of the page's reloads while typing)
            page.keyboard.type(TYPED[10:])
            expect(result).to_have_value(TYPED)  # (kept across the reloads)
            # (the keys are not heard while a text field has focus: click, or leave it)
            page.evaluate("document.activeElement && document.activeElement.blur()")
            # (docs/img/debug.png: taken between the page's reloads, not during one)
            page.wait_for_function(
                "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                timeout=20_000)
            page.screenshot(path=str(artifacts / "debug-typed.png"))
            page.locator(".st-key-debug_continue button:visible").click()
            out = bg.result(30)
            assert out["messages"][-1].content == f"It says: {TYPED}"
            # the page shows the run ended, the panel gone
            expect(panel).to_have_count(0, timeout=30_000)
            expect(page.get_by_text("completed").first).to_be_visible(timeout=30_000)
            context.close()
    finally:
        if bg.alive():
            for p in channel.list_paused(db):
                channel.answer(db, p["run"], "run")
            bg.result(30)
        trace.close()


def test_the_runs_page_leads_to_a_pause_and_its_text_stays_text(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A run paused at its model call, its question hostile (a markdown image and link to
    a counting server, HTML with a script): the Runs page says a run is paused and links
    to it; the panel shows the question as those characters; nothing is fetched."""
    with RequestCounter() as leak:
        hostile = (f"![x]({leak.url}/leak.png) [click me]({leak.url}/link) "
                   '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>')
        db = tmp_path / "debug.db"
        trace = TraceMiddleware(db=db, run_name="hostile", debug=["model:1"])
        agent = make_agent(quoting_model(), [get_weather], [trace])
        bg = Background(lambda: agent.invoke({"messages": [("user", hostile)]}))
        try:
            run = wait_paused(db, alive=bg.alive)[0]["run"]
            with streamlit_server(db) as url:
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                foreign = guard_network(context, url, let_through=(leak.url,))
                page = context.new_page()
                page.goto(url + "/")
                wait_connected(page, 60_000)
                banner = page.locator(".st-key-paused_runs")
                expect(banner).to_contain_text("1 run paused in the debugger", timeout=60_000)
                banner.get_by_role("link").filter(has_text=run[:8]).click()
                panel = page.locator(".st-key-debug_pause")
                expect(panel).to_contain_text("Paused in the debugger", timeout=60_000)
                expect(panel).to_contain_text(f"![x]({leak.url}/leak.png)")
                expect(panel).to_contain_text("<script>window.__pwned=2</script>")
                page.wait_for_load_state("networkidle")
                assert page.evaluate("typeof window.__pwned") == "undefined"
                # (the panel's own heading has an in-page anchor, '#...': none other)
                found = panel.locator('img, script, a[href]:not([href^="#"]), iframe')
                assert found.count() == 0, found.evaluate_all("els => els.map(e => e.outerHTML)")
                context.close()
            assert leak.requests == [], f"the trace made the page fetch: {leak.requests}"
            assert foreign == [], f"the page requested something outside the app: {foreign}"
        finally:
            if bg.alive():
                for p in channel.list_paused(db):
                    channel.answer(db, p["run"], "run")
                bg.result(30)
            trace.close()


def test_the_sidebar_run_picker_says_completed_after_continue(browser, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                              artifacts: Path) -> None:
    """The bug: after Continue (the panel's fragment reruns, sees the run's status
    change and reruns the page), the header read "completed" while the sidebar's Run
    picker still read "paused". Its value (the run id) stays, only its label changes,
    and the browser kept the label of a keyed selectbox whose value was not sent again."""
    db = tmp_path / "debug.db"
    trace = TraceMiddleware(db=db, run_name="weather", debug=["tool:get_weather"])
    agent = make_agent(quoting_model(), [get_weather], [trace])
    bg = Background(lambda: agent.invoke({"messages": [("user", "Weather in Oslo?")]}))
    try:
        run = wait_paused(db, alive=bg.alive)[0]["run"]
        with streamlit_server(db) as url:
            context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                          reduced_motion="reduce")
            page = context.new_page()
            page.goto(f"{url}/replay?run={run}")
            wait_connected(page, 60_000)
            panel = page.locator(".st-key-debug_pause")
            expect(panel).to_contain_text("A tool call waits to run: get_weather",
                                          timeout=60_000)
            picker = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]'
                                  ).get_by_role("combobox")
            expect(picker).to_have_value(re.compile(f"^weather · paused · {run[:12]}"),
                                         timeout=30_000)
            page.locator(".st-key-debug_continue button:visible").click()
            bg.result(30)
            expect(panel).to_have_count(0, timeout=30_000)
            # the header's status badge
            expect(page.get_by_role("main").get_by_text("completed", exact=True)).to_be_visible(
                timeout=30_000)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(artifacts / "debug-picker-after-continue.png"))
            expect(picker).to_have_value(re.compile(f"^weather · completed · {run[:12]}"),
                                         timeout=10_000)
            context.close()
    finally:
        if bg.alive():
            for p in channel.list_paused(db):
                channel.answer(db, p["run"], "run")
            bg.result(30)
        trace.close()
