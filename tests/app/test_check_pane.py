"""The replay's findings panel (app/screens/replay/findings_pane.py), driven by AppTest, and the one
health badge the app shows (``tracer.checks.saved.health_badge``)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tracer.checks.saved import health_badge


def test_health_badge() -> None:
    assert health_badge({}) == "ok"
    assert health_badge({"info": 1}) == "1 info"
    # (issue 47, untrue 8: the worst severity alone hid the others: "1 error")
    assert health_badge({"warning": 2, "info": 1}) == "2 warnings, 1 info"
    assert health_badge({"warning": 1, "error": 1}) == "1 error, 1 warning"


def _panel_app(db: str) -> None:
    import streamlit as st

    from app.kit import state
    from app.screens.replay.findings_pane import render_findings
    from app.data.run_view import build_run_view
    from tracer.checks.run import Finding
    from tracer.read.loader import TraceDB
    from tracer.read.steps import build_replay

    with TraceDB(db) as t:
        run = t.run(next(r.id for r in t.runs() if r.name == "weather"))
    view = build_run_view(build_replay(run), with_findings=False)
    view.set_findings([
        Finding("dangling-tool-call", "error", "openai",
                "**not bold** <img src=x onerror=alert(1)> call c2 got no result", run.id,
                view.replay.steps[5].event.seq, ("ai-1",)),
        Finding("no-final-answer", "warning", None, "no answer", run.id, None, ()),
    ], None)
    render_findings(view, key="f")
    st.text(f"at {st.session_state.get(state.STEP)} {st.session_state.get(state.HIGHLIGHT)}")


def test_panel_lists_findings_as_text_and_jumps(sample_db: Path) -> None:
    at = AppTest.from_function(_panel_app, args=(str(sample_db),), default_timeout=30).run()
    assert not at.exception, at.exception
    assert at.expander[0].label == "Findings (1 error, 1 warning)"
    texts = [t.value for t in at.text]
    assert "dangling-tool-call · openai" in texts
    assert "no-final-answer · all providers" in texts
    hostile = "**not bold** <img src=x onerror=alert(1)> call c2 got no result"
    assert hostile in texts
    assert all(hostile not in m.value for m in at.markdown)
    assert at.button(key="f_0").label == "Step 6"
    at.button(key="f_0").click().run()
    assert "at 5 ('ai-1',)" in [t.value for t in at.text]
    assert at.button(key="f_1").label == "Show"  # a finding without a step
    at.button(key="f_1").click().run()
    assert "at 5 ()" in [t.value for t in at.text]
