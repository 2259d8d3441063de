"""The debugger's panel on the Replay page (``app/screens/replay/debug_pane.py``) in AppTest, driving a
real agent paused in a background thread (``tests/debug_kit.py``) through the trace
database, as a person in the app does: the panel shows what is pending, the replay
jumps to the pause, a control sends the answer and the agent goes on with the edit;
bad input is one error line and the pause stays open. The Runs page lists the paused
runs. The browser's side (typing, keys): tests/browser/test_browser_debug.py."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from app_kit import app_test, replayer, report_step, runs_table
from debug_kit import Background, quoting_model, wait_paused
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from streamlit.testing.v1 import AppTest
from tracer_kit import get_weather, make_agent

from tracer import TraceMiddleware
from tracer.debug import channel
from tracer.demo.models import ScriptedChatModel
from tracer.vocab.records import tool_name

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")

QUESTION = "Weather in Oslo?"


class Paused:
    """An agent running in a thread with ``TraceMiddleware(db, debug=breaks)``."""

    def __init__(self, db: Path, breaks: Any, question: str = QUESTION,
                 tools: list[Any] | None = None, model: Any = None) -> None:
        self.db = db
        self.trace = TraceMiddleware(db=db, debug=breaks)
        agent = make_agent(model or quoting_model(), tools or [get_weather], [self.trace])
        self.bg = Background(lambda: agent.invoke({"messages": [("user", question)]}))

    def wait(self) -> dict[str, Any]:
        return wait_paused(self.db, alive=self.bg.alive)[0]

    def finish(self) -> Any:
        """Answer any pause left with "run" (so the thread ends), then the final state."""
        end = time.monotonic() + 30
        while self.bg.alive() and time.monotonic() < end:
            for p in channel.list_paused(self.db):
                try:
                    channel.answer(self.db, p["run"], "run")
                except channel.NotPaused:
                    pass
            time.sleep(0.05)
        out = self.bg.result()
        self.trace.close()
        return out


@pytest.fixture
def agents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Paused]]:
    monkeypatch.setenv("LOOPTRACE_DB", str(tmp_path / "debug.db"))
    made: list[Paused] = []
    yield made
    for a in made:  # (a failed test leaves no thread waiting)
        if a.bg.alive():
            a.finish()


def start(agents: list[Paused], tmp_path: Path, breaks: Any, **kw: Any) -> Paused:
    a = Paused(tmp_path / "debug.db", breaks, **kw)
    agents.append(a)
    return a


def replay_page(run: str) -> AppTest:
    return app_test("replay", run=run).run()


def texts(at: AppTest) -> str:
    return "\n".join(str(t.value) for t in at.text)


def panel_shown(at: AppTest) -> bool:
    return any("Paused in the debugger" in str(m.value) for m in at.markdown)


def test_a_paused_tool_call_shows_and_a_typed_result_is_what_the_agent_gets(
        agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = replay_page(p["run"])
    assert not at.exception, at.exception
    assert panel_shown(at)
    shown = texts(at)
    assert "breakpoint: tool:get_weather" in shown
    assert "A tool call waits to run: get_weather (id c1)" in shown
    assert any('"city": "Oslo"' in str(c.value) for c in at.code)
    # the replay stands at the pause (1-based step p["step"] is index p["step"] - 1)
    assert replayer(at)["step"] == p["step"] - 1
    assert at.text_area(key="dbg_args").value == '{\n  "city": "Oslo"\n}'
    at.text_area(key="dbg_text").input("Snowing in Oslo, -5 C")
    at.button(key="debug_continue").click().run()
    assert not at.error, [e.value for e in at.error]
    out = a.bg.result(30)
    assert out["messages"][-1].content == "It says: Snowing in Oslo, -5 C"
    a.trace.close()


def test_the_panel_answers_a_pause_on_each_engine(store_db: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The app on a SQLite file, then on a PostgreSQL store: the pause shown, a typed
    result sent, the agent goes on with it (woken by NOTIFY on PostgreSQL)."""
    monkeypatch.setenv("LOOPTRACE_DB", store_db)
    a = Paused(store_db, ["tool:get_weather"])  # type: ignore[arg-type]
    try:
        p = a.wait()
        at = replay_page(p["run"])
        assert not at.exception, at.exception
        assert "A tool call waits to run: get_weather (id c1)" in texts(at)
        at.text_area(key="dbg_text").input("Hail in Oslo, 1 C")
        at.button(key="debug_continue").click().run()
        assert not at.error, [e.value for e in at.error]
        out = a.bg.result(30)
        assert out["messages"][-1].content == "It says: Hail in Oslo, 1 C"
    finally:
        if a.bg.alive():
            a.finish()
        a.trace.close()


def test_the_replay_jumps_to_the_pause(agents: list[Paused], tmp_path: Path) -> None:
    """Opened at another step (a link to step 1), the page moves the replay to the pause
    once; the person may then step elsewhere and is not pulled back."""
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = app_test("replay", run=p["run"], step="1").run()
    assert replayer(at)["step"] == p["step"] - 1
    report_step(at, 0)
    at.run()
    assert replayer(at)["step"] == 0
    a.finish()


def test_the_fields_are_filled_again_after_another_page(agents: list[Paused],
                                                        tmp_path: Path) -> None:
    """Streamlit drops a widget's value when a page without it is drawn: back on the
    pause after another run, its fields hold what is pending again (an empty arguments
    field was a JSON error on Continue)."""
    other = TraceMiddleware(db=tmp_path / "debug.db", run_name="other")
    make_agent(quoting_model(), [get_weather], [other]).invoke({"messages": [("user", "hi")]})
    other.close()
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = replay_page(p["run"])
    assert at.text_area(key="dbg_args").value
    ids = list(at.selectbox(key="run_pick").options)
    assert len(ids) == 2
    done = next(r for r in channel_runs(a.db) if r != p["run"])
    at.selectbox(key="run_pick").set_value(done).run()  # (no panel drawn: its fields dropped)
    assert not panel_shown(at)
    at.selectbox(key="run_pick").set_value(p["run"]).run()
    assert panel_shown(at)
    assert at.text_area(key="dbg_args").value == '{\n  "city": "Oslo"\n}'
    at.button(key="debug_continue").click().run()
    assert not at.error, [e.value for e in at.error]
    assert a.bg.result(30)["messages"][-1].content == "It says: Sunny in Oslo, 21 C"
    a.trace.close()


def test_changed_arguments_go_to_the_tool(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = replay_page(p["run"])
    at.text_area(key="dbg_args").input('{"city": "Bergen"}')
    at.button(key="debug_continue").click().run()
    out = a.bg.result(30)
    assert out["messages"][-1].content == "It says: Sunny in Bergen, 21 C"
    a.trace.close()


@pytest.mark.parametrize(("args", "result", "said"), [
    ('{"city": "Oslo"', "", "the arguments are not valid JSON"),
    ('["Oslo"]', "", "the tool_args edit needs args: an object"),
    ('{"city": "Bergen"}', "Rain", "give the result or change the arguments, not both"),
])
def test_bad_input_is_one_error_line_and_the_run_stays_paused(
        agents: list[Paused], tmp_path: Path, args: str, result: str, said: str) -> None:
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = replay_page(p["run"])
    at.text_area(key="dbg_args").input(args)
    if result:
        at.text_area(key="dbg_text").input(result)
    at.button(key="debug_continue").click().run()
    shown = [str(e.value).replace("\\", "") for e in at.error]  # (escaped: app/kit/safe.py)
    assert len(shown) == 1 and said in shown[0] and "\n" not in shown[0]
    assert panel_shown(at)  # still paused: nothing was sent
    assert [q["run"] for q in channel.list_paused(a.db)] == [p["run"]]
    time.sleep(0.2)
    assert a.bg.alive()
    # put right, it goes on
    at.text_area(key="dbg_args").input('{"city": "Oslo"}')
    at.text_area(key="dbg_text").input("")
    at.button(key="debug_continue").click().run()
    assert not at.error
    assert a.bg.result(30)["messages"][-1].content == "It says: Sunny in Oslo, 21 C"
    a.trace.close()


def test_at_a_model_call_answer_it_yourself(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["model:2"])
    p = a.wait()
    assert p["pending_kind"] == "model_request"
    at = replay_page(p["run"])
    shown = texts(at)
    assert "A model call waits" in shown and "3 messages" in shown
    assert "[0] human" in shown and "[2] tool" in shown  # the request's messages, by position
    at.selectbox(key="dbg_change").select("answer it yourself").run()
    at.text_area(key="dbg_text").input("Answered by hand.")
    at.button(key="debug_continue").click().run()
    out = a.bg.result(30)
    assert out["messages"][-1].content == "Answered by hand."
    a.trace.close()


def test_at_a_model_call_a_message_edit_and_the_system_prompt(agents: list[Paused],
                                                               tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["model:1"])
    p = a.wait()
    at = replay_page(p["run"])
    at.selectbox(key="dbg_change").select("a message's text").run()
    assert at.text_area(key="dbg_text").value == QUESTION  # (filled with the message's text)
    at.text_area(key="dbg_text").input("Weather in Tromsø?")
    at.button(key="debug_step").click().run()  # and pause at the next hook
    q = a.wait()
    assert q["step"] > p["step"]
    at.run()
    assert panel_shown(at)
    assert replayer(at)["step"] == q["step"] - 1  # the replay followed the new pause
    at.button(key="debug_run").click().run()
    a.bg.result(30)
    a.trace.close()
    rows = sqlite3.connect(a.db).execute(
        "SELECT payload FROM events WHERE phase = 'debug' ORDER BY seq").fetchall()
    assert '"kind":"message"' in rows[0][0] and "Tromsø" in rows[0][0]


def test_after_the_model_the_reply_is_edited(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["hook:wrap_model_call:after"])
    p = a.wait()
    assert p["pending_kind"] == "model_reply"
    at = replay_page(p["run"])
    # drop the tool call: the agent ends at once with this text
    at.text_area(key="dbg_calls").input("[]")
    at.text_area(key="dbg_text").input("No need to look.")
    at.button(key="debug_run").click().run()
    out = a.bg.result(30)
    assert out["messages"][-1].content == "No need to look."
    assert not out["messages"][-1].tool_calls
    a.trace.close()


def test_after_a_tool_its_message_is_edited(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["hook:wrap_tool_call:after"])
    p = a.wait()
    assert p["pending_kind"] == "tool_result"
    at = replay_page(p["run"])
    assert at.text_area(key="dbg_text").value == "Sunny in Oslo, 21 C"
    at.text_area(key="dbg_text").input("Hail in Oslo")
    at.button(key="debug_continue").click().run()
    assert a.bg.result(30)["messages"][-1].content == "It says: Hail in Oslo"
    a.trace.close()


def test_abort_ends_the_run_as_an_error(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = replay_page(p["run"])
    at.button(key="debug_abort").click().run()
    a.bg.thread.join(30)
    assert a.bg.error is not None and "aborted in the debugger" in str(a.bg.error)
    a.trace.close()


HOSTILE = "![x](http://127.0.0.1:9/leak.png) <img src=x onerror=alert(1)> **bold** $x^2$"


def test_hostile_text_is_shown_as_text(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["model:1"], question=HOSTILE)
    p = a.wait()
    at = replay_page(p["run"])
    assert panel_shown(at)
    assert any(HOSTILE in str(c.value) for c in at.code)  # as text, whole
    markdownish = [str(m.value) for m in [*at.markdown, *at.caption, *at.warning, *at.error]]
    assert not any("leak.png" in m or "onerror" in m for m in markdownish)
    channel.answer(a.db, p["run"], "run")
    a.bg.result(30)
    a.trace.close()


def test_the_runs_page_lists_the_paused_runs(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = app_test("runs").run()
    assert any("1 run paused in the debugger" in str(w.value) for w in at.warning)
    links = [el for el in at.get("page_link")]
    assert any(p["run"][:12] in str(el.proto.label) for el in links)
    a.finish()


def test_a_running_run_is_paused_from_the_app(agents: list[Paused], tmp_path: Path) -> None:
    """"Pause at the next hook" on a run that runs (armed with a debugger, no breakpoint):
    the agent pauses at its next hook firing; answering it in the app clears what the
    app armed, so the run then ends without pausing again (armed "step" would pause it
    at every hook). "Clear" takes back what was armed."""
    gate = threading.Event()

    @tool
    def get_weather(city: str) -> str:  # (a slow twin of the kit's tool)
        """Weather for a city."""
        gate.wait(30)
        return f"Sunny in {city}, 21 C"

    a = start(agents, tmp_path, True, tools=[get_weather])
    end = time.monotonic() + 30
    run_id = None
    while run_id is None and time.monotonic() < end:
        if a.db.exists():
            with sqlite3.connect(a.db) as c:
                row = c.execute("SELECT id FROM runs").fetchone()
            run_id = row[0] if row else None
        time.sleep(0.05)
    assert run_id is not None
    at = replay_page(run_id)
    assert not panel_shown(at)

    def armed() -> str:
        return "\n".join(str(c.value) for c in at.caption).replace("\\", "")

    at.button(key="debug_arm_model").click().run()
    assert "Armed for this run: model" in armed()
    assert channel.armed_breaks(sqlite3.connect(a.db))[0][1:3] == ("model", run_id)
    at.button(key="debug_arm_clear").click().run()
    assert "Armed" not in armed() and not channel.armed_breaks(sqlite3.connect(a.db))
    at.button(key="debug_arm_step").click().run()
    assert "Armed for this run: step" in armed()
    # what was armed from outside applies at the agent's next hook firing (no wait:
    # tracer.debug.session reads the breakpoints again whenever the file changed)
    gate.set()  # the tool returns: the next hook firing pauses
    p = a.wait()
    assert p["run"] == run_id and p["reason"] == "step"
    at.run()
    assert panel_shown(at)
    at.button(key="debug_continue").click().run()
    out = a.bg.result(15)  # no second pause: the app's breakpoint was cleared
    assert out["messages"][-1].content == "It says: Sunny in Oslo, 21 C"
    assert not channel.armed_breaks(sqlite3.connect(a.db))
    a.trace.close()


def test_a_pause_in_a_subagent_shows_under_its_parent(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A Deep Agents subagent paused at its tool call: the parent's page says where and
    opens the subagent's run at its pause, where the panel answers it."""
    import deepagents
    from langchain_core.messages import AIMessage, SystemMessage

    from tracer.demo.models import ScriptedChatModel, call, last_tool_results

    @tool
    def lookup_fact(topic: str) -> str:
        """Look a fact up."""
        return "Oslo, about 720,000 people"

    def script(messages: Any) -> AIMessage:
        system = " ".join(str(m.content) for m in messages if isinstance(m, SystemMessage))
        n_ai = sum(1 for m in messages if isinstance(m, AIMessage))
        if "RESEARCHER" in system:
            if n_ai == 0:
                return AIMessage("", tool_calls=[call("lookup_fact", {"topic": "Norway"}, "c1")])
            return AIMessage(f"Found: {last_tool_results(messages)[-1].content}")
        if n_ai == 0:
            return AIMessage("Delegating.", tool_calls=[call(
                "task", {"description": "Find the capital of Norway.",
                         "subagent_type": "researcher"}, "c_task")])
        return AIMessage(f"Researcher says: {last_tool_results(messages)[-1].content}")

    db = tmp_path / "deep.db"
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    model = ScriptedChatModel(script=script, model_name="scripted-deep")
    trace = TraceMiddleware(db=db, debug=["tool:lookup_fact"])
    researcher = {"name": "researcher", "description": "Looks facts up.",
                  "system_prompt": "You are the RESEARCHER.", "tools": [lookup_fact],
                  "model": model, "middleware": [trace]}  # (its hooks: where it pauses)
    agent = trace.attach(deepagents.create_deep_agent(
        model=model, tools=[], middleware=[trace], subagents=[researcher], name="coordinator",
        system_prompt="Delegate with task."))
    bg = Background(lambda: agent.invoke({"messages": [("user", "Capital of Norway?")]}))
    try:
        p = wait_paused(db, alive=bg.alive)[0]
        parent = p["parent_run"]
        assert parent is not None and p["run"] != parent
        at = replay_page(parent)
        assert not panel_shown(at)  # (the parent waits on its task call: not paused itself)
        said = [str(w.value).replace("\\", "") for w in at.warning]
        assert any("Paused in subagent researcher" in w and p["run"][:12] in w for w in said), said
        at.button(key="debug_open_0").click().run()
        assert replayer(at)["run"]["run"]["id"] == p["run"]
        assert panel_shown(at) and "breakpoint: tool:lookup_fact" in texts(at)
        at.text_area(key="dbg_text").input("Bergen, they say")
        at.button(key="debug_continue").click().run()
        out = bg.result(30)
        assert out["messages"][-1].content == "Researcher says: Found: Bergen, they say"
    finally:
        if bg.alive():
            for q in channel.list_paused(db):
                channel.answer(db, q["run"], "run")
            bg.result(30)
        trace.close()


def channel_runs(db: Path) -> list[str]:
    return [r[0] for r in sqlite3.connect(db).execute("SELECT id FROM runs")]


def debug_events(db: Path) -> list[str]:
    return [r[0] for r in sqlite3.connect(db).execute(
        "SELECT payload FROM events WHERE phase = 'debug' ORDER BY seq")]


@pytest.mark.parametrize(("change", "text", "recorded"), [
    ("drop a message", None, '"kind":"drop","position":0'),
    ("the system prompt", "Answer in French.", '"kind":"system","text":"Answer in French."'),
])
def test_at_a_model_call_drop_a_message_or_set_the_system_prompt(
        agents: list[Paused], tmp_path: Path, change: str, text: str | None,
        recorded: str) -> None:
    a = start(agents, tmp_path, ["model:1"])
    p = a.wait()
    at = replay_page(p["run"])
    at.selectbox(key="dbg_change").select(change).run()
    if change == "drop a message":
        assert at.selectbox(key="dbg_position").value == 0
    if text is not None:
        at.text_area(key="dbg_text").input(text)
    at.button(key="debug_run").click().run()
    assert not at.error
    a.bg.result(30)
    a.trace.close()
    assert recorded in debug_events(a.db)[0]


def test_a_node_hook_pause_shows_the_state_and_goes_on(agents: list[Paused],
                                                       tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["hook:before_model"])
    p = a.wait()
    assert p["pending_kind"] == "state"
    at = replay_page(p["run"])
    assert "The hook before_model fires (1 message" in texts(at)
    assert not [t for t in at.text_area if str(t.key).startswith("dbg_")]  # nothing to change
    at.button(key="debug_run").click().run()
    assert a.bg.result(30)["messages"][-1].content == "It says: Sunny in Oslo, 21 C"
    a.trace.close()


def test_a_graph_node_pause_shows_its_input_and_a_state_edit_goes_through_the_reducer(
        agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["node:model"])
    p = a.wait()
    assert p["pending_kind"] == "node"
    at = replay_page(p["run"])
    assert not at.exception, at.exception
    assert "The graph node model, before it runs: the state it will receive:" in texts(at)
    assert any('"text": "Weather in Oslo?"' in str(c.value) for c in at.code)
    at.text_area(key="dbg_text").input('{"messages": [{"role": "user", "content": "And Bergen?"}]}')
    at.button(key="debug_continue").click().run()
    assert not at.error, [e.value for e in at.error]
    nxt = a.wait()  # (the model node runs again after the tool: paused there too)
    channel.answer(a.db, nxt["run"], "run")
    out = a.bg.result(30)
    a.trace.close()
    # add_messages appended the edit to what the model node received, and kept it
    assert [m.content for m in out["messages"]][:2] == ["Weather in Oslo?", "And Bergen?"]


def test_at_an_error_a_result_instead(agents: list[Paused], tmp_path: Path) -> None:
    @tool
    def get_weather(city: str) -> str:  # (a tool that raises)
        """Weather for a city."""
        raise RuntimeError("the weather service is down")

    a = start(agents, tmp_path, ["error"], tools=[get_weather])
    p = a.wait()
    assert p["pending_kind"] == "error"
    at = replay_page(p["run"])
    assert "The call raised (a tool):" in texts(at)
    # the exception's type and message, then this file's frame (issue 44 item 11)
    shown = next(str(c.value) for c in at.code if "the weather service is down" in str(c.value))
    assert shown.splitlines()[:2] == ["RuntimeError: the weather service is down",
                                      "Traceback (your code, most recent call last):"]
    assert f'File "{Path(__file__).resolve()}", line ' in shown
    assert shown.splitlines()[-1] == '    raise RuntimeError("the weather service is down")'
    at.text_area(key="dbg_text").input("Fog in Oslo")
    at.button(key="debug_continue").click().run()
    assert a.bg.result(30)["messages"][-1].content == "It says: Fog in Oslo"
    a.trace.close()


# -- the less common edits ("More changes", "More: make the call raise") -----------------
def seeing_model(seen: list[dict[str, Any]]) -> ScriptedChatModel:
    """``quoting_model`` that notes what each call was given: its messages (type, text),
    the tools bound and the settings (create_agent binds them with the tools)."""
    script = quoting_model().script

    class Seeing(ScriptedChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            seen.append({"tools": [tool_name(t) for t in tools], "settings": kw})
            return self

        def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                      run_manager: Any = None, **kw: Any) -> ChatResult:
            seen[-1]["messages"] = [(m.type, m.content) for m in messages]
            return super()._generate(messages, stop, run_manager, **kw)

    return Seeing(script=script)


@tool
def get_time(city: str) -> str:
    """The time in a city."""
    return f"12:00 in {city}"


def debug_records(db: Path) -> list[dict[str, Any]]:
    return [json.loads(p) for p in debug_events(db)]


def more_request(agents: list[Paused], tmp_path: Path,
                 seen: list[dict[str, Any]]) -> tuple[Paused, AppTest]:
    """Paused before the first model call (tools get_weather and get_time offered), the
    page open at it and its "More changes" filled as the pause is."""
    a = start(agents, tmp_path, ["model:1"], model=seeing_model(seen),
              tools=[get_weather, get_time])
    p = a.wait()
    at = replay_page(p["run"])
    assert panel_shown(at)
    assert any("More changes" in str(e.label) for e in at.expander)
    assert at.text_area(key="dbg_insert").value == ""
    assert at.number_input(key="dbg_insert_at").value == 1  # (at the end)
    assert at.multiselect(key="dbg_tools").value == ["get_weather", "get_time"]
    assert at.text_area(key="dbg_settings").value == "{}"
    assert at.text_input(key="dbg_model").value == ""
    return a, at


def test_more_insert_a_message_before_the_first(agents: list[Paused], tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    a, at = more_request(agents, tmp_path, seen)
    at.text_area(key="dbg_insert").input("Answer in French.")
    at.number_input(key="dbg_insert_at").set_value(0)
    at.selectbox(key="dbg_insert_role").select("system")
    at.button(key="debug_run").click().run()
    assert not at.error, [e.value for e in at.error]
    a.bg.result(30)
    a.trace.close()
    assert seen[0]["messages"] == [("system", "Answer in French."), ("human", QUESTION)]
    assert seen[1]["messages"][0] == ("human", QUESTION)  # (this call's request only)
    rec = debug_records(a.db)[0]
    assert rec["outcome"] == "edited"
    assert rec["edit"] == {"kind": "insert", "position": 0, "text": "Answer in French.",
                           "role": "system"}
    assert rec["before"]["messages"] == 1 and rec["after"]["messages"] == 2
    assert rec["after"]["message"]["text"] == "Answer in French."


def test_more_the_tools_offered(agents: list[Paused], tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    a, at = more_request(agents, tmp_path, seen)
    at.multiselect(key="dbg_tools").unselect("get_time")
    at.button(key="debug_run").click().run()
    assert not at.error, [e.value for e in at.error]
    a.bg.result(30)
    a.trace.close()
    assert seen[0]["tools"] == ["get_weather"]
    assert seen[1]["tools"] == ["get_weather", "get_time"]  # (the next call: all again)
    rec = debug_records(a.db)[0]
    assert rec["edit"] == {"kind": "tools", "names": ["get_weather"]}
    assert rec["before"] == {"tools": ["get_weather", "get_time"]}
    assert rec["after"] == {"tools": ["get_weather"]}


def test_more_the_model_settings(agents: list[Paused], tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    a, at = more_request(agents, tmp_path, seen)
    at.text_area(key="dbg_settings").input('{"temperature": 0.2}')
    at.button(key="debug_run").click().run()
    assert not at.error, [e.value for e in at.error]
    a.bg.result(30)
    a.trace.close()
    assert seen[0]["settings"].get("temperature") == 0.2
    assert "temperature" not in seen[1]["settings"]
    rec = debug_records(a.db)[0]
    assert rec["edit"] == {"kind": "settings", "settings": {"temperature": 0.2}}
    assert rec["before"] == {"settings": {}} and rec["after"] == {"settings": {"temperature": 0.2}}


def test_more_another_model_offline(agents: list[Paused], tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    a, at = more_request(agents, tmp_path, seen)
    at.text_input(key="dbg_model").input("offline")
    at.button(key="debug_run").click().run()
    assert not at.error, [e.value for e in at.error]
    out = a.bg.result(30)
    a.trace.close()
    assert out["messages"][-1].content == "(offline: no model was asked)"
    assert seen == []  # the scripted model was not asked
    rec = debug_records(a.db)[0]
    assert rec["edit"] == {"kind": "model", "model": "offline"}
    assert rec["before"] == {"model": "scripted-model"}
    assert rec["after"]["model"] != "scripted-model"


@pytest.mark.parametrize(("fill", "said"), [
    ({"dbg_settings": '{"temperature": '}, "the model settings are not valid JSON"),
    ({"dbg_settings": "[1]"}, "the settings edit needs settings: an object"),
    ({"dbg_settings": '{"temperature": 0}', "dbg_model": "offline"},
     "one change at a time: settings and model"),
    ({"dbg_insert": "Hi", "dbg_change": "the system prompt"},
     "one change at a time: system and insert"),
])
def test_more_bad_input_is_one_error_line_and_nothing_is_sent(
        agents: list[Paused], tmp_path: Path, fill: dict[str, str], said: str) -> None:
    seen: list[dict[str, Any]] = []
    a, at = more_request(agents, tmp_path, seen)
    p = channel.list_paused(a.db)[0]
    for key, value in fill.items():
        if key == "dbg_change":
            at.selectbox(key=key).select(value).run()
        elif key == "dbg_model":
            at.text_input(key=key).input(value)
        else:
            at.text_area(key=key).input(value)
    at.button(key="debug_continue").click().run()
    shown = [str(e.value).replace("\\", "") for e in at.error]
    assert len(shown) == 1 and said in shown[0] and "\n" not in shown[0], shown
    assert panel_shown(at)
    assert [q["run"] for q in channel.list_paused(a.db)] == [p["run"]]
    time.sleep(0.2)
    assert a.bg.alive() and seen == []
    a.finish()
    assert debug_records(a.db)[0]["outcome"] == "continued"  # (no edit was ever sent)


def test_more_a_tool_call_made_to_raise(agents: list[Paused], tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = replay_page(p["run"])
    assert any("make the call raise" in str(e.label) for e in at.expander)
    assert at.checkbox(key="dbg_raise").value is False
    at.checkbox(key="dbg_raise").check()
    at.text_input(key="dbg_raise_text").input("the weather service is down")
    at.button(key="debug_continue").click().run()
    assert not at.error, [e.value for e in at.error]
    a.bg.thread.join(30)
    assert a.bg.error is not None and "the weather service is down" in str(a.bg.error)
    a.trace.close()
    rec = debug_records(a.db)[0]
    assert rec["outcome"] == "edited"
    assert rec["edit"] == {"kind": "raise", "text": "the weather service is down"}
    errors = [r[0] for r in sqlite3.connect(a.db).execute(
        "SELECT payload FROM events WHERE hook = 'wrap_tool_call' AND phase = 'error'")]
    assert len(errors) == 1 and "the weather service is down" in errors[0]


def test_more_raise_and_a_result_at_once_is_refused(agents: list[Paused],
                                                     tmp_path: Path) -> None:
    a = start(agents, tmp_path, ["tool:get_weather"])
    p = a.wait()
    at = replay_page(p["run"])
    at.checkbox(key="dbg_raise").check()
    at.text_area(key="dbg_text").input("Rain")
    at.button(key="debug_continue").click().run()
    shown = [str(e.value).replace("\\", "") for e in at.error]
    assert len(shown) == 1 and "not two" in shown[0], shown
    assert [q["run"] for q in channel.list_paused(a.db)] == [p["run"]]
    at.checkbox(key="dbg_raise").uncheck()
    at.button(key="debug_continue").click().run()
    assert not at.error
    assert a.bg.result(30)["messages"][-1].content == "It says: Rain"
    a.trace.close()


# -- a paused run's status: "paused", "paused at an error" (not "running", "error") ------
@tool("get_weather")
def failing_weather(city: str) -> str:
    """Weather for a city."""
    raise RuntimeError("the weather service is down")


@pytest.mark.parametrize(("breaks", "tools", "said", "recorded"), [
    (["tool:get_weather"], [get_weather], "paused", "running"),
    (["error"], [failing_weather], "paused at an error", "error"),
])
def test_a_paused_run_reads_paused_in_the_app_and_in_looptrace_runs(
        agents: list[Paused], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        breaks: list[str], tools: list[Any], said: str, recorded: str) -> None:
    from hostile_kit import cli

    a = start(agents, tmp_path, breaks, tools=tools)
    p = a.wait()
    rid = p["run"]
    rows = runs_table(app_test("runs").run())
    assert list(rows.loc[rows["id"] == rid, "status"]) == [said]
    at = replay_page(rid)
    badges = " ".join(str(m.value) for m in at.markdown)
    assert f"-badge[{said}]" in badges and f"-badge[{recorded}]" not in badges
    code, out, _ = cli(capsys, "runs", "--db", str(a.db))
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith(rid[:12]))
    assert f"  {said}  " in line and f"  {recorded}  " not in line
    code, out, _ = cli(capsys, "runs", "--db", str(a.db), "--json")
    (row,) = json.loads(out)
    assert (row["status"], row["paused"]) == (recorded, said)  # (the status recorded stays)
    # it goes on: the status recorded again, nothing paused
    at.text_area(key="dbg_text").input("Fog in Oslo")
    at.button(key="debug_continue").click().run()
    assert a.bg.result(30)["messages"][-1].content == "It says: Fog in Oslo"
    a.trace.close()
    code, out, _ = cli(capsys, "runs", "--db", str(a.db), "--json")
    assert [(r["status"], r["paused"]) for r in json.loads(out)] == [("completed", None)]
    rows = runs_table(app_test("runs").run())
    assert list(rows["status"]) == ["completed"]


def test_more_a_model_that_cannot_be_made_pauses_again_and_says_why(
        agents: list[Paused], tmp_path: Path) -> None:
    """A model name that passes the check (text) but that init_chat_model cannot make, in
    the agent's process: the edit is recorded as rejected, the run pauses again at the same
    call, and the panel says why; set back, it goes on with the scripted model."""
    seen: list[dict[str, Any]] = []
    a, at = more_request(agents, tmp_path, seen)
    first = channel.list_paused(a.db)[0]
    at.text_input(key="dbg_model").input("no-such-provider:no-model")
    at.button(key="debug_continue").click().run()
    assert not at.error, [e.value for e in at.error]
    end = time.monotonic() + 30
    while time.monotonic() < end:
        again = channel.list_paused(a.db)
        if again and again[0]["paused_at"] != first["paused_at"]:
            break
        time.sleep(0.05)
    assert again[0]["reason"].startswith("the edit could not be made")
    at.run()
    assert panel_shown(at)
    assert "breakpoint: the edit could not be made" in texts(at)
    assert at.text_input(key="dbg_model").value == ""  # (the fields filled again)
    at.button(key="debug_run").click().run()
    assert a.bg.result(30)["messages"][-1].content == "It says: Sunny in Oslo, 21 C"
    a.trace.close()
    assert [r["outcome"] for r in debug_records(a.db)] == ["rejected", "continued"]
    assert debug_records(a.db)[0]["edit"] == {"kind": "model", "model": "no-such-provider:no-model"}


def test_parallel_pauses_are_listed_and_the_one_picked_is_answered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three parallel tool calls paused at once: the panel lists them, and its controls
    answer the one picked (before: the panel answered the run's latest pause, whichever
    it showed)."""
    from langchain_core.messages import AIMessage, ToolMessage

    from tracer.demo.models import call, turn_script

    @tool
    async def fetch_price(item: str) -> str:
        """Price of an item."""
        return f"{item}: 10 EUR"

    def by_call(msgs: Any) -> AIMessage:
        got = sorted((m.tool_call_id, m.content) for m in msgs if isinstance(m, ToolMessage))
        return AIMessage("; ".join(f"{k}={v}" for k, v in got))

    db = tmp_path / "debug.db"
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    calls = [call("fetch_price", {"item": f"item{i}"}, f"p{i}") for i in (1, 2, 3)]
    model = ScriptedChatModel(script=turn_script([AIMessage("", tool_calls=calls), by_call]))
    trace = TraceMiddleware(db=db, debug=["tool:fetch_price"])
    agent = make_agent(model, [fetch_price], [trace])
    bg = Background(lambda: agent.ainvoke({"messages": [("user", "Prices?")]}), is_async=True)
    try:
        got = wait_paused(db, n=3, alive=bg.alive)
        ids = {p["tool_call_id"]: p["pause"] for p in got}
        at = replay_page(got[0]["run"])
        assert not at.exception, at.exception
        pick = at.radio(key="lt_debug_pick")
        assert list(pick.options) == [  # (by pause id: the order the calls paused in)
            f'pause {i} · wrap_tool_call before the call: fetch_price {{"item": "item{k[1]}"}}'
            for i, k in sorted((i, k) for k, i in ids.items())]
        pick.set_value(ids["p2"]).run()
        assert "A tool call waits to run: fetch_price (id p2)" in texts(at)
        at.text_area(key="dbg_text").input("two")
        at.button(key="debug_continue").click().run()
        assert not at.error, [e.value for e in at.error]
        with sqlite3.connect(db) as c:
            answered = c.execute("SELECT id, edit FROM debug_pauses WHERE command IS NOT NULL"
                                 ).fetchall()
        assert answered == [(ids["p2"], json.dumps({"kind": "tool_result", "text": "two"}))]
    finally:
        for p in channel.list_paused(db):
            channel.answer(db, p["run"], "continue", pause=p["pause"])
        out = bg.result(30)
        trace.close()
    assert out["messages"][-1].content == "p1=item1: 10 EUR; p2=two; p3=item3: 10 EUR"


# -- the page around a pause agrees with it (issue 44 item 9) -----------------------------
def picker_label(at: AppTest, run_id: str) -> str:
    from app.kit import state

    pick = at.selectbox(key=state.RUN_PICK)
    return next(str(o) for o in pick.options if run_id[:12] in str(o))


def test_the_run_picker_says_paused_with_the_header_and_completed_after(
        agents: list[Paused], tmp_path: Path) -> None:
    """The sidebar's Run picker said "running" beside a "paused" header (its label read
    the status recorded), and still "running" once the run had completed."""
    a = start(agents, tmp_path, ["tool:get_weather"])
    rid = a.wait()["run"]
    at = replay_page(rid)
    at.run()  # (the first page is lean: the picker comes with the full page)
    assert "-badge[paused]" in " ".join(str(m.value) for m in at.markdown)
    assert " · paused · " in picker_label(at, rid)
    at.text_area(key="dbg_text").input("Fog in Oslo")
    at.button(key="debug_continue").click().run()
    assert a.bg.result(30)["messages"][-1].content == "It says: Fog in Oslo"
    a.trace.close()
    at.run()
    assert "-badge[completed]" in " ".join(str(m.value) for m in at.markdown)
    assert " · completed · " in picker_label(at, rid)


def test_a_run_paused_at_its_first_model_call_has_cost_unknown_not_0(
        agents: list[Paused], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Paused at its first model call (entered, not answered), the run's header read
    "tokens not reported · cost $0": the call waiting was not counted, so the cost of no
    call was $0. A call with no answer recorded has a cost unknown, in the header, in
    ``looptrace runs`` (and its JSON, read by MCP's list_runs) and ``show``."""
    from hostile_kit import cli

    a = start(agents, tmp_path, ["model:1"])
    rid = a.wait()["run"]
    at = replay_page(rid)
    at.run()  # (the first page is lean: the cost comes with the full page)
    header = next(t for t in texts(at).splitlines() if rid in t)
    assert header.endswith("tokens not reported  ·  cost unknown"), header
    code, out, _ = cli(capsys, "runs", "--db", str(a.db))
    line = next(x for x in out.splitlines() if x.startswith(rid[:12]))
    assert "$0" not in line and line.split()[-1] == "unknown", line
    code, out, _ = cli(capsys, "runs", "--db", str(a.db), "--json")
    (row,) = json.loads(out)
    assert row["cost_usd"] is None
    assert (row["cost"]["calls"], row["cost"]["priced_calls"]) == (1, 0)
    code, out, _ = cli(capsys, "show", rid, "--db", str(a.db))
    assert "  cost unknown" in out.splitlines() and "$0" not in out


def test_a_typed_tool_result_is_marked_given_in_the_debugger(
        agents: list[Paused], tmp_path: Path) -> None:
    """The ToolMessage card of a result typed in the debugger says so (``given``); the
    tool's own results do not. Its text, hostile or not, is data (the replayer sets it
    as text)."""
    a = start(agents, tmp_path, ["tool:get_weather"])
    rid = a.wait()["run"]
    at = replay_page(rid)
    at.text_area(key="dbg_text").input("<b>Fog</b> in Oslo")
    at.button(key="debug_continue").click().run()
    a.bg.result(30)
    a.trace.close()
    at.run()
    rows = replayer(at)["run"]["messages"]
    tool_rows = [(r["tcid"], r.get("given"), r["text"]) for r in rows if r["type"] == "tool"]
    assert tool_rows == [("c1", 1, "<b>Fog</b> in Oslo")]
    # a run the debugger did not touch: no mark
    b = start(agents, tmp_path, [])
    b.bg.result(30)
    b.trace.close()
    other = next(r.id for r in __import__("tracer").TraceDB(a.db).runs() if r.id != rid)
    rows = replayer(replay_page(other))["run"]["messages"]
    assert [(r["tcid"], r.get("given")) for r in rows if r["type"] == "tool"] == [("c1", None)]


def test_parallel_calls_beside_an_error_pause_read_as_waiting_not_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Paused at the error of one of three parallel calls (the run's recorded status is
    ``error`` meanwhile), the replayer was told the run had ended, and marked the other
    calls "no result: the run ended". It is told "paused at an error"; once answered, the
    run's own status again."""
    from langchain_core.messages import AIMessage, ToolMessage

    from tracer.demo.models import call, turn_script

    @tool
    async def fetch_price(item: str) -> str:
        """Price of an item."""
        if item == "item2":
            raise RuntimeError("no price for item2")
        return f"{item}: 10 EUR"

    def by_call(msgs: Any) -> AIMessage:
        got = sorted((m.tool_call_id, m.content) for m in msgs if isinstance(m, ToolMessage))
        return AIMessage("; ".join(f"{k}={v}" for k, v in got))

    db = tmp_path / "debug.db"
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    calls = [call("fetch_price", {"item": f"item{i}"}, f"p{i}") for i in (1, 2, 3)]
    model = ScriptedChatModel(script=turn_script([AIMessage("", tool_calls=calls), by_call]))
    trace = TraceMiddleware(db=db, debug=["error"])
    agent = make_agent(model, [fetch_price], [trace])
    bg = Background(lambda: agent.ainvoke({"messages": [("user", "Prices?")]}), is_async=True)
    try:
        (p,) = wait_paused(db, alive=bg.alive)
        at = replay_page(p["run"])
        assert not at.exception, at.exception
        assert replayer(at)["run"]["run"]["status"] == "paused at an error"
        at.text_area(key="dbg_text").input("two")
        at.button(key="debug_continue").click().run()
        out = bg.result(30)
        trace.close()
        at.run()
        assert replayer(at)["run"]["run"]["status"] == "completed"
    finally:
        for q in channel.list_paused(db):
            channel.answer(db, q["run"], "continue", pause=q["pause"])
        if bg.alive():
            bg.result(30)
        trace.close()
    assert out["messages"][-1].content == "p1=item1: 10 EUR; p2=two; p3=item3: 10 EUR"


def test_step_into_a_subagent_and_step_out_from_the_panel(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Step at a Deep Agents task call opens nothing by itself: the subagent's run pauses
    at its first hook, its panel names the subagent, the parent run and the call, and its
    Step out pauses the parent after the call (a top-level pause has no Step out)."""
    from subagent_kit import Deep

    monkeypatch.setenv("LOOPTRACE_DB", str(tmp_path / "deep.db"))
    d = Deep(tmp_path)
    try:
        top = d.next()[0]
        at = replay_page(top["run"])
        assert panel_shown(at)
        keys = [b.key for b in at.button]
        assert "debug_step" in keys and "debug_out" not in keys  # (nothing to step out of)
        at.button(key="debug_step").click().run()
        into = d.next()[0]
        assert (into["run_name"], into["parent_run"]) == ("researcher", top["run"])
        at = replay_page(into["run"])
        shown = texts(at)
        assert (f"Stepped into subagent researcher, from run {top['run'][:12]}'s task call "
                "c_no") in shown
        assert "breakpoint: step into researcher" in shown
        at.button(key="debug_out").click().run()
        back = d.next()[0]
        assert (back["run"], back["hook"], back["at"], back["reason"]) == (
            top["run"], "wrap_tool_call", "after", "step out of researcher")
        at = replay_page(top["run"])
        assert "breakpoint: step out of researcher" in texts(at)
        at.button(key="debug_continue").click().run()
        out = d.finish()
        assert out["messages"][-1].content == (
            "Researcher says: Found: Norway: the capital is Oslo.")
    finally:
        if d.bg.alive():
            for q in channel.list_paused(d.db):
                channel.answer(d.db, q["run"], "run")
            d.finish()
