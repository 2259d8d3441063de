"""A plain ``create_agent`` with no middleware, recorded under ``looptrace run`` (the
callback handler through LangChain's configure hook, no code change), is drawn in the
app's Replay page as the agent graph it is, not as a hand-rolled loop (issue 39 item 10).
Debian's Chromium driven by Playwright; the script runs in a child process, as a user's
would."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from browser_support import collect_console_errors, guard_network, streamlit_server
from playwright.sync_api import expect
from replayer_driver import Replayer

from tracer.read.graph_layout import shape
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay

ROOT = Path(__file__).resolve().parents[2]

AGENT = """
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from tracer.demo.models import ScriptedChatModel, call, turn_script


@tool
def get_weather(city: str) -> str:
    \"\"\"Get the weather for a city.\"\"\"
    return f"Sunny in {city}"


model = ScriptedChatModel(script=turn_script([
    AIMessage("", tool_calls=[call("get_weather", {"city": "Oslo"}, "call_1")]),
    AIMessage("It is sunny in Oslo."),
]))
agent = create_agent(model, tools=[get_weather])
print(agent.invoke({"messages": [("user", "Weather in Oslo?")]})["messages"][-1].content)
"""


def test_a_plain_create_agent_under_looptrace_run_is_drawn_as_the_agent_graph(
        browser: Any, tmp_path: Path, artifacts: Path) -> None:
    (tmp_path / "agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    db = tmp_path / "run.db"
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("LOOPTRACE_") or k == "LOOPTRACE_CACHE_DIR"}
    e["PYTHONPATH"] = str(ROOT)  # (the script imports tracer.demo's scripted model)
    done = subprocess.run([sys.executable, "-m", "tracer", "run", "--db", str(db), "--",
                           sys.executable, "agent.py"], capture_output=True, text=True,
                          cwd=tmp_path, env=e, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is sunny in Oslo."
    with TraceDB(db) as t:
        (summary,) = t.runs()
        rp = build_replay(t.run(summary.id))
    assert summary.source == "callbacks"
    assert not any(ev.middleware for ev in rp.run.events)  # no middleware hook at all
    assert shape(rp) == "agent"
    tool_step = next(s.index for s in rp.steps if s.node == "tools")

    with streamlit_server(db) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                      reduced_motion="reduce")
        blocked = guard_network(context, url)
        page = context.new_page()
        errors = collect_console_errors(page)
        page.goto(f"{url}/replay?run={summary.id}")
        r = Replayer(page)
        r.wait_ready(60_000)
        expect(r.graph).to_have_attribute("data-shape", "agent")
        for node in ("before_agent", "before_model", "model", "after_model", "tools",
                     "after_agent"):
            expect(r.part(f'g.node[data-node="{node}"]')).to_have_count(1)
        r.seek(tool_step + 1)
        r.wait_step(tool_step)
        expect(r.graph).to_have_attribute("data-active-node", "tools")
        page.screenshot(path=str(artifacts / "autotrace-plain-agent.png"), full_page=True)
        context.close()
    assert not blocked and not errors, (blocked, errors)
