"""AppTest tests of the Playground page (app/screens/playground/page.py, app/panes/playground_pane.py):
one edit made with the debugger's form, sent offline or to the agent's own model, the
new answer beside the recorded one, the request in the three providers' forms; a bad
model name is one line; nothing is written."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from app_kit import app_test
from streamlit.testing.v1 import AppTest

from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.wire.render import model_call_events

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")

HOSTILE = "**bold** [link](https://evil.example) <img src=x onerror=alert(1)> :material/bolt:"


@pytest.fixture
def db(sample_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    copy = tmp_path / "samples.db"
    shutil.copy(sample_db, copy)
    monkeypatch.setenv("LOOPTRACE_DB", str(copy))
    monkeypatch.delenv("LOOPTRACE_AGENT", raising=False)
    return copy


def _call(db: Path, name: str, n: int) -> tuple[str, int]:
    """The id of the run ``name`` and the step (from 1) of its ``n``-th model call."""
    with TraceDB(db) as t:
        rid = next(r.id for r in t.runs() if r.name == name)
        run = t.run(rid)
    replay = build_replay(run)
    seq = model_call_events(run)[n - 1].seq
    return rid, next(s.index for s in replay.steps if s.event.seq == seq) + 1


def _rows(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as c:
        return (c.execute("SELECT count(*) FROM runs").fetchone()[0],
                c.execute("SELECT count(*) FROM events").fetchone()[0])


def open_playground(db: Path, name: str, n: int) -> AppTest:
    rid, step = _call(db, name, n)
    at = app_test("playground", timeout=90, run=rid[:12], step=str(step)).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def test_an_edit_sent_offline_shows_both_answers_and_the_three_wire_forms(db: Path) -> None:
    before = _rows(db)
    at = open_playground(db, "openai-weather", 2)
    assert "Model call 2" in "\n".join(str(t.value) for t in at.text)
    at.selectbox(key="dbg_change").select("the system prompt").run()
    at.text_area(key="dbg_text").input("Be brief.").run()
    assert at.radio(key="play_ask").value == "offline"
    at.button(key="play_send").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    codes = [str(c.value) for c in at.code]
    # the recorded answer, then the offline one (no record has this request)
    assert any(c.startswith("Here is the weather: Oslo") for c in codes)
    assert ("[offline] No model was asked, and no recorded call had this request. The model "
            "would have been sent 4 messages, the last a tool get_weather message: "
            "'Sunny, 21°C in Bergen.'; a system prompt of 9 characters; the tools "
            "get_weather.") in codes
    assert [t.label for t in at.tabs] == ["OpenAI", "Anthropic", "Ollama"]
    openai, anthropic, ollama = (json.loads(str(t.code[0].value)) for t in at.tabs)
    assert openai["messages"][0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in openai["messages"]] == ["system", "user", "assistant", "tool",
                                                      "tool"]
    assert anthropic["system"] == "Be brief."
    assert [m["role"] for m in anthropic["messages"]] == ["user", "assistant", "user"]
    assert ollama["messages"][0] == {"role": "system", "content": "Be brief."}
    assert _rows(db) == before  # nothing written


def test_unedited_offline_is_the_recorded_answer(db: Path) -> None:
    at = open_playground(db, "openai-weather", 2)
    at.button(key="play_send").click().run()
    texts = " ".join(str(t.value) for t in at.text)
    assert "offline: the recorded answer of the same request" in texts
    codes = [str(c.value) for c in at.code]
    answers = [c for c in codes if c.startswith("Here is the weather: Oslo")]
    assert len(answers) == 2  # the recorded one, and the same served offline


def test_a_bad_model_name_or_a_missing_key_is_one_line(
        db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    at = open_playground(db, "openai-weather", 1)
    at.radio(key="play_ask").set_value("another model").run()
    at.text_input(key="play_model").input("openai:gpt-4o-mini").run()
    at.button(key="play_send").click().run()
    assert not at.exception, at.exception
    (err,) = at.error
    # (escaped: the line is markdown, app/kit/safe.py)
    assert "cannot build the model 'openai\\:gpt-4o-mini'\\: Missing credentials" in err.value
    assert "\n" not in err.value
    at.radio(key="play_ask").set_value("another model").run()
    at.text_input(key="play_model").input("no-such-provider:nothing").run()
    at.button(key="play_send").click().run()
    assert not at.exception, at.exception
    (err,) = at.error
    assert "cannot build the model" in err.value and "\n" not in err.value
    assert not at.tabs  # no answer shown


def test_hostile_text_is_shown_as_text(db: Path) -> None:
    at = open_playground(db, "openai-weather", 1)
    at.selectbox(key="dbg_change").select("a message's text").run()
    at.text_area(key="dbg_text").input(HOSTILE).run()
    at.button(key="play_send").click().run()
    assert not at.exception, at.exception
    assert any(HOSTILE in str(c.value) for c in at.code)  # (the offline answer quotes it)
    for m in [*at.markdown, *at.caption, *at.error]:
        assert "<img" not in str(m.value) and "](https" not in str(m.value), m.value
    # a hostile model name: its error line is escaped too
    at.radio(key="play_ask").set_value("another model").run()
    at.text_input(key="play_model").input("[x](https://evil.example)").run()
    at.button(key="play_send").click().run()
    (err,) = at.error
    assert "](https" not in err.value


def test_a_demo_runs_agent_answers_with_its_own_model(db: Path) -> None:
    at = open_playground(db, "weather", 1)
    assert "the agent's own model" in at.radio(key="play_ask").options
    at.radio(key="play_ask").set_value("the agent's own model").run()
    at.button(key="play_send").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    bold = " ".join(str(m.value) for m in at.markdown)
    assert "agent tracer.demo.factories\\:weather \\(scripted-weather\\) answers" in bold
    codes = [str(c.value) for c in at.code]
    # the scripted model asks for the weather in Oslo, as it did when recorded: twice
    assert sum('"name": "get_weather"' in c and '"city": "Oslo"' in c for c in codes) == 2


def test_the_replay_page_links_to_the_playground_at_its_step(db: Path) -> None:
    rid, step = _call(db, "openai-weather", 2)
    at = app_test("replay", run=rid, step=str(step)).run()
    assert not at.exception, at.exception
    links = {p.proto.label: p.proto.query_string for p in at.get("page_link")}
    assert links["Re-send this model call in the playground"] == f"run={rid}&step={step}"
