"""The findings pane: badge text, scrubber markers, and the panel driven by AppTest."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app.findings_pane import health_badge, markers, worst
from tracer.check import Finding


def _f(sev: str, seq: int | None = 3, rule: str = "dangling-tool-call") -> Finding:
    return Finding(rule, sev, "openai", "msg", "run1", seq, ("a1",))


def test_health_badge() -> None:
    assert health_badge(None) == "–"
    assert health_badge([]) == "ok"
    assert health_badge([_f("info")]) == "1 info"
    assert health_badge([_f("warning"), _f("warning"), _f("info")]) == "2 warnings"
    assert health_badge([_f("warning"), _f("error")]) == "1 error"
    assert worst([_f("info"), _f("warning")]) == "warning"
    assert worst([]) is None


def test_markers_keep_the_worst_severity_per_step() -> None:
    fs = [_f("warning", 3), _f("error", 3), _f("info", 7), _f("error", None)]
    assert markers(fs) == {3: "error", 7: "info"}


def _panel_app() -> None:
    import streamlit as st

    from app.findings_pane import render_findings
    from tracer.check import Finding

    def jump(seq, keys):  # type: ignore[no-untyped-def]
        st.session_state["jumped"] = (seq, keys)

    findings = [
        Finding("dangling-tool-call", "error", "openai",
                "**not bold** <img src=x onerror=alert(1)> call c2 got no result", "r1", 11,
                ("ai-1",)),
        Finding("no-final-answer", "warning", None, "no answer", "r1", None, ()),
    ]
    render_findings(findings, jump, key="f")


def test_panel_lists_findings_as_text_and_jumps() -> None:
    at = AppTest.from_function(_panel_app, default_timeout=10).run()
    assert not at.exception
    texts = [t.value for t in at.text]
    assert "dangling-tool-call · openai" in texts
    assert "no-final-answer · all providers" in texts
    hostile = "**not bold** <img src=x onerror=alert(1)> call c2 got no result"
    assert hostile in texts
    assert all(hostile not in m.value for m in at.markdown)
    at.button(key="f_0").click().run()
    assert at.session_state["jumped"] == (11, ("ai-1",))
    at.button(key="f_1").click().run()
    assert at.session_state["jumped"] == (None, ())
