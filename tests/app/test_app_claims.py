"""The README's claims about the app, against values written out by hand from what
the bundled demo scenarios do (README "Demo agents and sample traces"), never from
the calls the pages themselves make.

Runs page: search, the status and agent filters, health values, runs recorded
meanwhile; replay (as the replayer component is given it): the next error, 0.5x,
the tick strip's kinds and colours; the inspector's content; the wire pane really
drawn; `looptrace ui` with no database opens the bundled samples.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from app_kit import MAIN, browser_sends, report_step, runs_grid
from app_kit import runs_table as table_of
from streamlit.testing.v1 import AppTest
from test_app_pages import graph, open_page, problems, replay_of, run_named
from test_replayer_data import find_next as next_of  # (replayer.js find)

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")

# Every sample run that has a name, by scenario (README: "Demo agents and sample
# traces"); the sdk-loop runs are named after their first user message.
SHOPPING_RUNS = {"shopping", "openai-shopping", "anthropic-shopping", "ollama-shopping"}


@pytest.fixture
def samples(sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    return sample_db


def runs_table(at: AppTest) -> Any:
    assert not problems(at), problems(at)
    return table_of(at)


def names(at: AppTest) -> set[str]:
    return set(runs_table(at)["name"])


# -- Runs page --------------------------------------------------------------------------
def test_search_finds_the_runs_whose_messages_hold_the_text(samples: Path) -> None:
    """"unicorn" is the unknown product of the shopping scenario, recorded four times
    (scripted, and through the OpenAI, Anthropic and Ollama adapters)."""
    at = open_page("runs")
    every = names(at)
    assert SHOPPING_RUNS < every and "weather" in every
    at.text_input(key="search").input("unicorn").run()
    assert names(at) == SHOPPING_RUNS
    at.text_input(key="search").input("no message says this").run()
    assert not problems(at) and runs_grid(at) is None
    assert [i.value for i in at.info] == ["No runs match."]
    at.text_input(key="search").input("").run()
    assert names(at) == every


def test_status_and_agent_filters(samples: Path) -> None:
    at = open_page("runs")
    at.pills(key="status_filter").select("error").run()
    df = runs_table(at)
    assert set(df["status"]) == {"error"}
    # the anthropic SDK loop that sends back only one of two parallel results (the
    # API's 400 ends it); none of the runs that answered
    assert any(n.startswith("anthropic: ") for n in df["name"])
    assert not (set(df["name"]) & ({"weather", "deep-research", "support-desk"} | SHOPPING_RUNS))
    at.pills(key="status_filter").select("completed").run()
    both = runs_table(at)
    assert set(both["status"]) == {"error", "completed"}
    assert {"weather", "deep-research", "support-desk"} | SHOPPING_RUNS <= set(both["name"])
    at.pills(key="status_filter").unselect("completed").run()
    at.pills(key="status_filter").unselect("error").run()
    at.text_input(key="agent_filter").input("SHOPPING").run()  # case-insensitive
    assert names(at) == SHOPPING_RUNS
    at.text_input(key="agent_filter").input("deep-res").run()  # the Deep Agents run
    assert "deep-research" in names(at) and not names(at) & SHOPPING_RUNS


def test_health_badges_are_the_runs_findings(samples: Path) -> None:
    """weather: a clean run; stuck-search: a loop stopped by its call limit (an error,
    plus a warning for the repeated call: both said, issue 47 untrue 8); shopping: one warning (an
    unknown tool); ollama-shopping: two (the same, and its parallel calls that the
    ollama Python client leaves without ids: said on the Ollama run only)."""
    df = runs_table(open_page("runs"))
    health = dict(zip(df["name"], df["health"]))
    assert health["weather"] == "ok"
    assert health["hostile-page"] == "ok"
    assert health["stuck-search"] == "1 error, 1 warning"
    assert health["weather_loop"] == "1 error"  # the hand-rolled loop hits MAX_ITERATIONS
    assert health["shopping"] == "1 warning"
    assert health["ollama-shopping"] == "2 warnings"


def test_a_run_recorded_meanwhile_shows_up(sample_db: Path, db_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The page reads the file again when it changed (the fragment's timer reruns it
    every 2 s in the browser: tests/browser/test_browser_runs_live.py)."""
    import shutil

    from tracer_kit import get_weather, make_agent, two_lap_model

    from tracer import TraceMiddleware

    shutil.copy(sample_db, db_path)
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    at = open_page("runs")
    before = names(at)
    assert "arrived-meanwhile" not in before
    trace = TraceMiddleware(db=db_path, run_name="arrived-meanwhile")
    make_agent(two_lap_model(), [get_weather], [trace]).invoke({"messages": [("user", "hi")]})
    trace.close()
    at.run()
    df = runs_table(at)
    assert set(df["name"]) == before | {"arrived-meanwhile"}
    row = df[df["name"] == "arrived-meanwhile"].iloc[0]
    assert (row["status"], row["laps"], row["model_calls"], row["tool_calls"], row["errors"],
            row["health"]) == ("completed", 2, 2, 1, 0, "ok")
    assert df["name"].iloc[0] == "arrived-meanwhile"  # newest first


def test_ui_without_a_database_opens_the_bundled_samples(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPTRACE_DB", raising=False)
    at = AppTest.from_file(MAIN, default_timeout=60)
    at.run()
    shown = names(at)
    # one run per sample file (and the Deep Agents subagent run), by name
    assert {"weather", "shopping", "stuck-search", "deep-research", "researcher", "approvals",
            "weather_loop", "hostile-page", "support-desk"} | SHOPPING_RUNS <= shown
    caption = " ".join(c.value for c in at.caption)
    assert "samples.db" in caption


# -- Replay --------------------------------------------------------------------------------
def test_jump_to_the_next_error(samples: Path) -> None:
    """shopping: lap 2's price look-up of "unicorn" raises (step 16, index 15); lap 3
    calls a tool that does not exist (step 22, index 21); nothing after that."""
    run = run_named(samples, "shopping")
    at = open_page("replay", run=run.id)
    data = graph(at)["run"]
    assert next_of(data, "error", 0) == 15
    assert (data["steps"][15]["k"], data["steps"][15]["n"]) == ("tool", "tools")
    assert next_of(data, "error", 15) == 21
    assert next_of(data, "error", 21) is None  # (the button is disabled there)
    weather = run_named(samples, "weather")  # a run without errors
    assert next_of(graph(open_page("replay", run=weather.id))["run"], "error", 0) is None


@pytest.mark.parametrize(("speed", "ms"), [(0.5, 2400), (1.0, 1200), (2.0, 600), (4.0, 300)])
def test_each_speed_sets_the_step_time(samples: Path, speed: float, ms: int) -> None:
    """The browser plays a step every ``step_ms / speed`` ms; the speed it reports is
    kept for the replayer's next mount."""
    run = run_named(samples, "weather")
    at = open_page("replay", run=run.id)
    browser_sends(at, "speed", str(speed))
    assert not problems(at)
    g = graph(at)
    assert g["speed"] == speed and g["step_ms"] / g["speed"] == ms


LETTER = {"model": "m", "tool": "t", "error": "e", "interrupt": "i", "hook": "h", "run": "r"}


def test_tick_strip_kinds_and_colours(samples: Path) -> None:
    """One mark per step: m model, t tool, e error, i interrupt (hooks and the run's
    start and end are not marked); the strip's colours are the palette's."""
    from tracer.read.palette import KIND_COLOURS
    from tracer.replayer import style

    def kinds(at: AppTest) -> str:
        return "".join("e" if s.get("x") else LETTER[s["k"]] for s in graph(at)["run"]["steps"])

    at = open_page("replay", run=run_named(samples, "weather").id, step="4")
    #                 START ba bm enter exit am tool-in tool-out bm enter exit am aa END
    assert kinds(at) == "r" "h" "h" "m" "m" "h" "t" "t" "h" "m" "m" "h" "h" "r"
    assert graph(at)["step"] == 3
    shop = open_page("replay", run=run_named(samples, "shopping").id)
    assert (kinds(shop)[15], kinds(shop)[21]) == ("e", "e") and kinds(shop).count("e") == 2
    hitl = open_page("replay", run=run_named(samples, "approvals").id)
    assert "i" in kinds(hitl)
    # the colours the strip draws (replayer.css) are the palette's (the timeline's)
    css = dict(re.findall(r"--lt-(model|tool|error|interrupt):\s*(#[0-9a-f]{6})", style()))
    assert css == {k: KIND_COLOURS[k] for k in ("model", "tool", "error", "interrupt")}
    assert css == {"model": "#3b82f6", "tool": "#22a559", "error": "#e03131",
                   "interrupt": "#f59f00"}


def json_values(at: AppTest) -> list[Any]:
    return [json.loads(j.proto.body) for j in at.json]


def test_the_inspector_shows_the_step(samples: Path) -> None:
    """weather, step 8 (index 7): the get_weather call returns; its ToolMessage is
    the message this step added."""
    run = run_named(samples, "weather")
    at = open_page("replay", run=run.id, step="8")
    assert not problems(at)
    assert "**Step inspector** · step 8" in [m.value for m in at.markdown]
    values = json_values(at)
    event = next(v for v in values if isinstance(v, dict) and "hook" in v)
    assert {k: event[k] for k in ("step", "seq", "hook", "phase", "node",
                                  "kind", "lap", "middleware", "tool_call_id")} == {
        "step": 8, "seq": 7, "hook": "wrap_tool_call", "phase": "exit",
        "node": "tools", "kind": "tool", "lap": 1, "middleware": "TraceMiddleware",
        "tool_call_id": "call_weather_1"}
    assert "edge" not in event and "tool_calls_in_flight" not in event  # none now
    assert {"status": "success"} in values
    added = [v for v in values if isinstance(v, dict) and v.get("type") == "tool"]
    assert len(added) == 1
    assert added[0]["data"]["content"] == "Light snow, -3°C, wind 4 m/s from the north."
    assert added[0]["data"]["tool_call_id"] == "call_weather_1"
    assert "Messages added at this step (1)" in [c.value for c in at.caption]
    # the step before: the call starts, with its arguments, and adds no message
    at = open_page("replay", run=run.id, step="7")
    values = json_values(at)
    assert {"name": "get_weather", "args": {"city": "Oslo"}, "known_tool": True} in values
    event = next(v for v in values if isinstance(v, dict) and "hook" in v)
    assert (event["edge"], event["tool_calls_in_flight"]) == (
        "after_model -> tools", ["call_weather_1"])
    assert "Messages added at this step (0)" in [c.value for c in at.caption]
    assert "(none)" in [t.value for t in at.text]


def test_the_wire_pane_is_drawn_when_switched_on(samples: Path) -> None:
    """openai-weather was recorded through ChatOpenAI and the emulator: at its first
    model call the pane shows the three providers, OpenAI's body captured on the wire,
    the others rendered by their adapters."""
    import app.panes.wire_pane  # noqa: F401 - a broken pane must fail here, not skip

    run = run_named(samples, "openai-weather")
    rp = replay_of(samples, run.id)
    model_step = rp.find(0, "model")
    at = open_page("replay", run=run.id, step=str(model_step + 1))
    texts = [t.value for t in at.text]
    assert not any(t.startswith("OpenAI  ·  ") for t in texts)  # off by default
    at.toggle(key="show_wire").set_value(True).run()
    assert not problems(at)
    texts = [t.value for t in at.text]
    heads = sorted(t.split("  ·  ")[0] for t in texts if "  ·  " in t and t.split(
        "  ·  ")[0] in ("OpenAI", "Anthropic", "Ollama"))
    assert heads == ["Anthropic", "Ollama", "OpenAI"]
    captions = " ".join(c.value for c in at.caption)
    assert "OpenAI captured" in captions and "Anthropic rendered" in captions
    assert "POST emulator:/v1/chat/completions · HTTP 200" in captions
    assert "built offline by ChatAnthropic._get_request_payload" in captions
    assert "built offline by ChatOllama._chat_params" in captions
    assert {"OpenAI  ·  gpt-4o-mini", "Anthropic  ·  claude-haiku-4-5",
            "Ollama  ·  llama3.1"} <= set(texts)
    codes = [c.value for c in at.code]
    for model in ('"model": "gpt-4o-mini"', '"model": "claude-haiku-4-5"',
                  '"model": "llama3.1"'):
        body = next(c for c in codes if model in c)
        assert "What's the weather in Oslo and in Bergen right now?" in body
    # stepping on (in the browser) keeps it drawn
    report_step(at, model_step + 1)
    assert not problems(at)
    assert sum(1 for t in at.text if str(t.value).startswith("OpenAI  ·  ")) == 1
