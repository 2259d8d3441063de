""""Fork here" in a real browser: the app started with the agent named starts the fork
at the open step with the edit typed in, in the background, opens the fork's run at
once, and follows it live as it records, to its end (Debian's Chromium driven by
Playwright).

The agent's tool waits for a gate file the test creates: the fork's run is seen
waiting in its live tool call (still running, some steps in), then grows and ends.
"""

from __future__ import annotations

import importlib
import sys
import time
import uuid
from pathlib import Path

import pytest
from browser_support import streamlit_server, wait_connected
from langchain_core.messages import HumanMessage
from playwright.sync_api import expect
from replayer_driver import Replayer
from whatif_kit import root_run

from tracer.read.fork_links import forks_of
from tracer.read.loader import TraceDB
from tracer.read.steps import Replay, build_replay
from tracer.vocab.records import TOOL_HOOKS

AGENT_MODULE = '''
import os
import time
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from tracer import TraceMiddleware
from tracer.demo.models import ScriptedChatModel, call, turn_script

GATES = Path(os.environ["FORK_GATES"])


@tool
def gated_lookup(city: str) -> str:
    """Look up the weather of a city (waits until the test lets it answer)."""
    deadline = time.monotonic() + 120
    while not (GATES / city).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"{city}: sunny"


model = ScriptedChatModel(model_name="scripted-gated", script=turn_script([
    AIMessage("", tool_calls=[call("gated_lookup", {"city": "Oslo"}, "call_gated_1")]),
    AIMessage("", tool_calls=[call("gated_lookup", {"city": "Rome"}, "call_gated_2")]),
    AIMessage("Sunny in Oslo and Rome."),
]))
tm = TraceMiddleware(db=os.environ["LOOPTRACE_DB"], run_name="gated")


def make_agent(middleware=(tm,)):
    return tm.attach(create_agent(model, tools=[gated_lookup], middleware=list(middleware),
                                  name="gated"))
'''


def recorded(db: Path, run_id: str) -> Replay:
    with TraceDB(db) as t:
        return build_replay(t.run(run_id))


def waiting_in(db: Path, run_id: str, call_id: str) -> Replay:
    """The fork's run once its tool call ``call_id`` started and the run stopped growing
    (polling the database: setting up, not asserting)."""
    deadline = time.monotonic() + 120
    last = -1
    while time.monotonic() < deadline:
        with TraceDB(db) as t:
            found = [f.run_id for f in forks_of(t, run_id)]
        if found:
            rp = recorded(db, found[0])
            seen = any(s.event.tool_call_id == call_id for s in rp.steps)
            if seen and len(rp) == last:
                return rp
            last = len(rp) if seen else -1
        time.sleep(0.5)
    pytest.fail(f"the fork never waited in {call_id}")


def test_fork_here_starts_the_fork_and_follows_it_live(  # type: ignore[no-untyped-def]
        browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "trace.db"
    gates = tmp_path / "gates"
    gates.mkdir()
    name = f"agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(AGENT_MODULE)
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    monkeypatch.setenv("FORK_GATES", str(gates))
    monkeypatch.syspath_prepend(str(tmp_path))
    for city in ("Oslo", "Rome"):  # the record runs through
        (gates / city).touch()
    try:
        agent = importlib.import_module(name)
        agent.make_agent().invoke({"messages": [HumanMessage("Weather in Oslo, then Rome?")]})
        agent.tm.close()
    finally:
        sys.modules.pop(name, None)
    (gates / "Rome").unlink()  # the fork's live tool call waits
    run_id = root_run(db)
    original = recorded(db, run_id)
    step = 1 + next(i for i, s in enumerate(original.steps)
                    if s.event.hook in TOOL_HOOKS and s.event.tool_call_id == "call_gated_1")
    env = {"LOOPTRACE_AGENT": f"{name}:make_agent", "PYTHONPATH": str(tmp_path),
           "FORK_GATES": str(gates)}
    with streamlit_server(db, env=env) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/replay?run={run_id}&step={step}")
        wait_connected(page, 60_000)
        page.get_by_text("Fork here (what if)").click()
        box = page.get_by_label("The tool's new result")
        box.fill("Oslo: heavy rain")
        box.press("Control+Enter")
        expect(page.get_by_text("--tool-result 'Oslo: heavy rain'")).to_be_visible(
            timeout=60_000)
        page.get_by_role("button", name="Run the fork").click()
        # the fork's run opens at once, while it records: it forks the run, it is running
        expect(page.get_by_text(f"This run forks run {run_id[:12]} at step {step}.")
               ).to_be_visible(timeout=120_000)
        first = waiting_in(db, run_id, "call_gated_2")
        assert first.run.summary.status == "running"
        r = Replayer(page)
        r.wait_ready()
        expect(r.root).to_have_attribute("data-run", first.run.id, timeout=15_000)
        running = page.locator('[data-testid="stMarkdownContainer"]', has_text="running")
        expect(running.first).to_be_visible(timeout=15_000)
        expect(r.root).to_have_attribute("data-steps", str(len(first)), timeout=15_000)
        expect(r.root).to_have_attribute("data-step", str(len(first) - 1), timeout=15_000)
        # let the live tool call answer: the run grows and ends, the page follows it
        (gates / "Rome").touch()
        deadline = time.monotonic() + 60
        while recorded(db, first.run.id).run.summary.status == "running":
            assert time.monotonic() < deadline, "the fork never ended"
            time.sleep(0.2)
        done = recorded(db, first.run.id)
        assert done.run.summary.status == "completed" and len(done) > len(first)
        expect(page.locator('[data-testid="stMarkdownContainer"]', has_text="completed")
               .first).to_be_visible(timeout=15_000)
        expect(r.root).to_have_attribute("data-steps", str(len(done)), timeout=15_000)
        expect(r.root).to_have_attribute("data-step", str(len(done) - 1), timeout=15_000)
        page.close()
    with TraceDB(db) as t:
        (fork,) = forks_of(t, run_id)
        tools = [m.text for m in t.run(fork.run_id).messages if m.type == "tool"]
    assert fork.step == step and tools == ["Oslo: heavy rain", "Rome: sunny"]
