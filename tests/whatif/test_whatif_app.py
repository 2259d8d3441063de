"""What if in the app: a run's replays and forks, and "Fork here" on the Replay page.

``tracer.read.fork_links`` finds a run's replays and forks from their metadata,
``app.data.forks.fork_argv`` builds the ``looptrace rerun`` command; the Replay page lists them with links to Compare at
the fork's row, shows the command for an edit at the current step, and, when the app
was started with ``--agent``, runs the fork and links it.
"""

from __future__ import annotations

import sqlite3
import sys
import time
import uuid
from pathlib import Path

import pytest
from app_kit import app_test, runs_table
from whatif_kit import root_run

from app.kit import state
from app.panes.wire_pane import import_adapters
from app.data.forks import fork_argv
from tracer.read.fork_links import forks_of, origin_of
from tracer.read.loader import TraceDB
from tracer.whatif.rerun import Edit, rerun

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")

# The Replay page warms the provider adapters up in a thread a few seconds after it
# renders (``app.panes.wire_pane.warm_up``): that thread, still importing
# ``langchain_anthropic`` while the next test's Deep Agents run reads it from
# ``sys.modules`` half made, failed that run. Imported here first, it has nothing to do.
import_adapters()

AGENT_MODULE = '''
import os
from tracer.demo.scenarios import weather_agent

make_agent = weather_agent(os.environ["LOOPTRACE_DB"]).factory
'''


@pytest.fixture
def weather(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str, object]:
    from tracer.demo.scenarios import weather_agent

    db = tmp_path / "trace.db"
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    demo = weather_agent(str(db))
    demo.record()
    return db, root_run(db), demo.factory


def test_forks_of_a_run_and_the_command(weather: tuple[Path, str, object]) -> None:
    db, run_id, factory = weather
    replay = rerun(run_id, agent=factory, db=db)
    fork = rerun(run_id, agent=factory, db=db, at=8,
                      edit=Edit("tool_result", text="Heavy rain"))
    with TraceDB(db) as t:
        found = forks_of(t, run_id)
        assert forks_of(t, fork.run_id) == []
        assert origin_of(t.run(fork.run_id).metadata) == (run_id, 8)
        assert origin_of(t.run(replay.run_id).metadata) == (run_id, None)
        assert origin_of(t.run(run_id).metadata) is None
    assert [(f.run_id, f.step, f.edit) for f in found] == [
        (replay.run_id, None, None),
        (fork.run_id, 8, {"kind": "tool_result", "text": "Heavy rain"})]
    assert fork_argv(run_id, 10, {"kind": "message", "position": 0, "text": "In Bergen?"},
                     agent="my_agent:make_agent", db="t.db") == [
        "looptrace", "rerun", run_id, "--agent", "my_agent:make_agent", "--db", "t.db",
        "--at", "10", "--message", "0=In Bergen?"]


def test_fork_here_shows_the_command_then_runs_it(
        tmp_path: Path, weather: tuple[Path, str, object],
        monkeypatch: pytest.MonkeyPatch) -> None:
    db, run_id, _ = weather
    # (a run no demo agent recorded, by its name: the app knows no factory for it; a demo
    # run's is test_fork_here_runs_on_a_bundled_sample_through_the_demo_factory)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET name = 'my-weather' WHERE id = ?", [run_id])
    conn.close()
    at = app_test("replay", timeout=60, run=run_id, step="8").run()
    assert not at.exception
    at.toggle(key=state.FORK_TOGGLE).set_value(True).run()
    assert at.radio(key="fork_kind").value == "tool result"  # step 8 is the tool's result
    at.text_area(key="fork_result").input("Heavy rain, 9°C").run()
    codes = [c.value for c in at.code]
    assert (f"looptrace rerun {run_id} --agent MODULE:FACTORY --db {db} --at 8 "
            "--tool-result 'Heavy rain, 9°C'") in codes
    assert not [b for b in at.button if b.key == "fork_run"]  # no agent named: no button

    name = f"agent_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(AGENT_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPTRACE_AGENT", f"{name}:make_agent")
    try:
        at.run()
        at.button(key="fork_run").click().run(timeout=300)
    finally:
        sys.modules.pop(name, None)
    assert not at.exception
    with TraceDB(db) as t:
        (started,) = forks_of(t, run_id)
    # the fork runs in the background: the page has opened its run already
    assert at.session_state["lt_run"] == started.run_id
    ended = wait_ended(db, started.run_id)
    with TraceDB(db) as t:
        (fork,) = forks_of(t, run_id)
        last = t.run(fork.run_id).messages
    assert ended == "completed"
    assert fork.step == 8 and fork.edit == {"kind": "tool_result", "text": "Heavy rain, 9°C"}
    assert [m.text for m in last if m.type == "tool"] == ["Heavy rain, 9°C"]
    at.run()
    assert not at.exception
    links = [str(e.proto) for e in at.get("page_link")]
    assert any(f"Compare with run {run_id[:12]}" in x and f"b={fork.run_id}" in x
               for x in links), links


def wait_ended(db: Path, run_id: str, timeout: float = 300) -> str:
    """The status of ``run_id`` once it is no longer running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with TraceDB(db) as t:
            status = t.run(run_id).summary.status
        if status != "running":
            return status
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} still running after {timeout} s")


def test_runs_page_nests_forks_and_reruns_under_their_run(
        weather: tuple[Path, str, object]) -> None:
    db, run_id, factory = weather
    replay = rerun(run_id, agent=factory, db=db)
    fork = rerun(run_id, agent=factory, db=db, at=8,
                      edit=Edit("tool_result", text="Heavy rain, 9°C"))
    again = rerun(fork.run_id, agent=factory, db=db, at=4,  # a fork of the fork
                       edit=Edit("message", position=0, text="And in Bergen?"))
    at = app_test("runs", timeout=60).run()
    assert not at.exception
    df = runs_table(at)
    rows = list(df["id"])
    # the original, then its replay and fork (oldest first), the fork's own fork under it
    assert rows == [run_id, replay.run_id, fork.run_id, again.run_id]
    depth = dict(zip(df["id"], df["depth"], strict=True))
    assert [depth[r] for r in rows] == [0, 1, 1, 2]
    run_col = dict(zip(df["id"], df["run"], strict=True))
    what = dict(zip(df["id"], df["what_if"], strict=True))
    assert run_col[fork.run_id].strip().startswith("↳ fork @ step 8:")
    assert run_col[replay.run_id].strip().startswith("↳ rerun:")
    assert what[fork.run_id] == (f"fork of {run_id[:12]} at step 8: tool result → "
                                 "Heavy rain, 9°C")
    assert what[again.run_id] == (f"fork of {fork.run_id[:12]} at step 4: message 0 → "
                                  "And in Bergen?")
    assert what[replay.run_id] == f"rerun of {run_id[:12]}" and what[run_id] == ""


def test_fork_here_runs_on_a_bundled_sample_through_the_demo_factory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39, item 16: on a sample run, with no ``--agent`` given to the app, "Fork
    here" names the demo's factory (``tracer.demo.factories``) and runs the fork."""
    from tracer.cli import main

    monkeypatch.delenv("LOOPTRACE_AGENT", raising=False)
    db = tmp_path / "samples.db"
    sample = Path(__file__).resolve().parents[2] / "sample_traces" / "weather.jsonl"
    assert main(["import", str(sample), "--db", str(db)]) == 0
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    run_id = root_run(db)
    at = app_test("replay", timeout=60, run=run_id, step="8").run()
    assert not at.exception
    at.toggle(key=state.FORK_TOGGLE).set_value(True).run()
    at.text_area(key="fork_result").input("Heavy rain, 9°C").run()
    codes = [c.value for c in at.code]
    assert (f"looptrace rerun {run_id} --agent tracer.demo.factories:weather --db {db} "
            "--at 8 --tool-result 'Heavy rain, 9°C'") in codes
    at.button(key="fork_run").click().run(timeout=300)
    assert not at.exception
    with TraceDB(db) as t:
        (started,) = forks_of(t, run_id)
    assert wait_ended(db, started.run_id) == "completed"
    with TraceDB(db) as t:
        last = t.run(started.run_id).messages
    assert [m.text for m in last if m.type == "tool"] == ["Heavy rain, 9°C"]
    assert last[-1].type == "ai"
