"""AppTest tests of the Wire page and the Wire pane (app/screens/wire/page.py, app/panes/wire_pane.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_kit import app_test
from streamlit.testing.v1 import AppTest

from tracer.demo.providers import record_provider_demos
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.wire.render import model_call_events

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("wireapp") / "demos.db"
    record_provider_demos(db, providers=("anthropic", "ollama"))
    return db


def _run_named(db: Path, name: str) -> str:
    with TraceDB(db) as t:
        return next(r.id for r in t.runs() if r.name == name)


def open_wire(db: Path, monkeypatch: pytest.MonkeyPatch, **query: str) -> AppTest:
    monkeypatch.setenv("LOOPTRACE_DB", str(db))
    at = app_test("wire", timeout=60, **query).run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    return "\n".join([c.value for c in at.code] + [t.value for t in at.text] +
                     [m.value for m in at.markdown] + [c.value for c in at.caption])


def test_wire_page_follows_a_deep_link_to_a_captured_call(
        demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = _run_named(demo_db, "anthropic-shopping")
    with TraceDB(demo_db) as t:
        run = t.run(rid)
    replay = build_replay(run)
    second = model_call_events(run)[1]
    # A step a little after the second model call started: that call is shown.
    step = next(s.index for s in replay.steps if s.event.seq == second.seq) + 1
    at = open_wire(demo_db, monkeypatch, run=rid[:12], step=str(step + 1))  # (1-based)
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="wire_run").value == rid
    assert at.selectbox(key=f"wire_call_{rid}").value == second.seq
    text = _texts(at)
    assert "Anthropic captured" in text and "OpenAI rendered" in text
    codes = [c.value for c in at.code]
    assert len(codes) >= 3
    anthropic = next(c for c in codes if '"tool_result"' in c and '"system"' in c)
    lines = anthropic.splitlines()
    at_system = next(i for i, ln in enumerate(lines) if ln.strip().startswith('"system":'))
    assert lines[at_system - 1].strip() == "// system prompt: top-level `system`, never a message"
    openai = next(c for c in codes if '"role": "tool"' in c and '"tool_call_id"' in c)
    assert "// arguments are a JSON-encoded STRING" in openai
    assert '"tools": [ ... 2 items folded ... ]' in openai
    assert at.query_params["run"] == [rid] or at.query_params["run"] == rid


def test_wire_page_diff_and_responses(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rid = _run_named(demo_db, "ollama-weather")
    at = open_wire(demo_db, monkeypatch, run=rid)
    diff = next(c for c in at.code if c.language == "diff")
    assert diff.value.startswith("--- openai (rendered)\n+++ anthropic (rendered)")
    at.segmented_control(key="wire_part_page").set_value("Response").run()
    assert not at.exception
    codes = "\n".join(c.value for c in at.code)
    assert "done_reason" in codes and "finish_reason" in codes and "stop_reason" in codes
    at.segmented_control(key="wire_part_page").set_value("Chunks").run()
    assert "raw chunks, as they arrived" in _texts(at)  # Ollama streams NDJSON


def test_wire_page_unknown_run_is_one_error(demo_db: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_wire(demo_db, monkeypatch, run="nosuchrun", step="abc")
    assert [e.value for e in at.error] == [
        "no run 'nosuchrun' in this database; showing the newest run instead"]
    assert at.code  # the newest run is shown anyway


def test_wire_page_renders_every_sample_run(sample_db: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with TraceDB(sample_db) as t:
        runs = [r for r in t.runs() if r.model_calls]
    assert runs
    for r in runs:
        at = open_wire(sample_db, monkeypatch, run=r.id)
        assert not at.error, (r.name, [e.value for e in at.error])
        # (annotated: every request body says the API keeps no state)
        assert any("// the whole history again" in c.value for c in at.code), r.name


def _pane_script() -> None:
    import os

    from app.panes.wire_pane import render_wire_pane
    from tracer.read.loader import TraceDB
    from tracer.read.steps import build_replay

    db = os.environ["LOOPTRACE_DB"]
    with TraceDB(db) as t:
        replay = build_replay(t.run(os.environ["WIRE_RUN"]))
    render_wire_pane(db, replay, int(os.environ["WIRE_STEP"]))


def test_wire_pane_follows_the_replay_step(demo_db: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    rid = _run_named(demo_db, "ollama-shopping")
    with TraceDB(demo_db) as t:
        run = t.run(rid)
    replay = build_replay(run)
    calls = model_call_events(run)
    monkeypatch.setenv("LOOPTRACE_DB", str(demo_db))
    monkeypatch.setenv("WIRE_RUN", rid)
    monkeypatch.setenv("WIRE_STEP", "0")
    at = AppTest.from_function(_pane_script, default_timeout=60).run()
    assert not at.exception, at.exception
    assert "No model call yet" in _texts(at)
    for n, call in enumerate(calls):
        step = next(s.index for s in replay.steps if s.event.seq == call.seq)
        monkeypatch.setenv("WIRE_STEP", str(step + 1))
        at = AppTest.from_function(_pane_script, default_timeout=60).run()
        assert not at.exception, at.exception
        text = _texts(at)
        assert f"call {n + 1} · lap {call.lap} · step {step + 1}:" in text  # (one numbering)
        assert "Ollama captured" in text and "Anthropic rendered" in text
        results = sum(c.value.count('"role": "tool"') for c in at.code if '"options"' in c.value)
        assert results == sum(1 for m in replay.messages_at(step) if m.type == "tool")
