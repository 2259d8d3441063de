""""Fork here" in a real browser: the app started with the agent named forks the run
at the open step with the edit typed in, and links the fork (Debian's Chromium driven
by Playwright)."""

from __future__ import annotations

import uuid
from pathlib import Path

from browser_support import streamlit_server, wait_connected
from playwright.sync_api import expect
from whatif_kit import root_run

from tracer.demo.scenarios import weather_agent
from tracer.fork_links import forks_of
from tracer.loader import TraceDB

AGENT_MODULE = '''
import os
from tracer.demo.scenarios import weather_agent

make_agent = weather_agent(os.environ["LOOPTRACE_DB"]).factory
'''


def test_fork_here_runs_the_fork(browser, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "trace.db"
    weather_agent(str(db)).record()
    run_id = root_run(db)
    name = f"agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(AGENT_MODULE)
    env = {"LOOPTRACE_AGENT": f"{name}:make_agent", "PYTHONPATH": str(tmp_path)}
    with streamlit_server(db, env=env) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/replay?run={run_id}&step=8")
        wait_connected(page, 60_000)
        page.get_by_text("Fork here (what if)").click()
        box = page.get_by_label("The tool's new result")
        box.fill("Heavy rain, 9°C")
        box.press("Control+Enter")
        expect(page.get_by_text("--tool-result 'Heavy rain, 9°C'")).to_be_visible(
            timeout=60_000)
        page.get_by_role("button", name="Run the fork").click()
        link = page.get_by_text("Compare with the fork")
        expect(link).to_be_visible(timeout=240_000)
        page.close()
    with TraceDB(db) as t:
        (fork,) = forks_of(t, run_id)
        tools = [m.text for m in t.run(fork.run_id).messages if m.type == "tool"]
    assert fork.step == 8 and tools == ["Heavy rain, 9°C"]
