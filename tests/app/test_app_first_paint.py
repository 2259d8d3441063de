"""The replay page's first visit: the replayer first, the rest once it has painted.

A session's first replay page is drawn lean: the run's header and the replayer, and
nothing whose scripts a fresh browser would load and render before the run (the
sidebar's run picker, the floor plan and wire toggles, the inspector's JSON viewers,
the findings). The replayer says when it has painted the run ("painted"); the page is
then drawn whole, without sending the run again (issue 29: the first visit of a
500-lap run). ``app_kit.app_test(..., paint=False)`` leaves the browser's "painted"
to the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from app_kit import app_test, browser_sends, replayer, report_step
from streamlit.testing.v1 import AppTest

from tracer.read.loader import TraceDB

pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


@pytest.fixture
def samples(sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    return sample_db


def run_id(db: Path, name: str) -> str:
    with TraceDB(db) as t:
        return next(r.id for r in t.runs() if r.name == name)


def whole(at: AppTest) -> dict[str, bool]:
    """Which of the page's parts beyond the replayer are drawn."""
    return {
        "run picker": any(s.key == "run_pick" for s in at.sidebar.selectbox),
        "toggles": len(at.toggle) >= 2,  # the floor plan's and the wire formats'
        "inspector": bool(at.get("json")),
        "findings": any(e.label.startswith("Findings") for e in at.expander),
    }


def test_the_first_page_is_the_replayer_then_the_rest_once_painted(samples: Path) -> None:
    """shopping (a tool error: it has findings). Without the lean page, every part is
    drawn at once (the first assertion fails); without the "painted" event's full run,
    none is drawn after it (the second)."""
    rid = run_named = run_id(samples, "shopping")
    at = app_test("replay", paint=False, run=rid, step="3").run()
    assert not at.exception, at.exception
    first = replayer(at)
    assert first["paint"] is True and not first.get("held")
    assert first["run"]["run"]["id"] == run_named and first["step"] == 2
    assert [t.value for t in at.text][:1] == [f"shopping  ·  {rid}  ·  345 tokens"]  # the header
    assert whole(at) == dict.fromkeys(("run picker", "toggles", "inspector", "findings"), False)

    browser_sends(at, "painted", f"{first['key']}|1")
    assert not at.exception, at.exception
    after = replayer(at)
    assert whole(at) == dict.fromkeys(("run picker", "toggles", "inspector", "findings"), True)
    assert after["paint"] is False
    assert after["key"] == first["key"] and after.get("held")  # (the app sent no run again)
    assert after["step"] == 2


def test_the_rest_of_the_session_is_drawn_whole(samples: Path) -> None:
    """Once a replayer has painted, another run (and the page opened again) is drawn
    whole at once: the lean page is for a fresh browser's first replay only."""
    at = app_test("replay", paint=False, run=run_id(samples, "shopping")).run()
    browser_sends(at, "painted", f"{replayer(at)['key']}|1")
    report_step(at, 4)
    at.query_params["run"] = run_id(samples, "weather")
    at.query_params.pop("step", None)
    at.run()
    assert not at.exception, at.exception
    data = replayer(at)
    assert data["paint"] is False and not data.get("held")
    assert data["run"]["run"]["name"] == "weather"
    assert whole(at)["run picker"] and whole(at)["inspector"]


def test_a_painted_report_about_another_run_is_not_taken_as_held(samples: Path) -> None:
    """The browser painted run A, the app meanwhile shows run B (a link): B is sent."""
    at = app_test("replay", paint=False, run=run_id(samples, "shopping")).run()
    key = replayer(at)["key"]
    at.query_params["run"] = run_id(samples, "weather")
    at.run()
    browser_sends(at, "painted", f"{key}|1")
    assert not at.exception, at.exception
    data = replayer(at)
    assert not data.get("held") and data["run"]["run"]["name"] == "weather"
    assert whole(at)["inspector"]
