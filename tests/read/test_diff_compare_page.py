"""AppTest smoke tests of the Compare page (app/screens/compare/page.py) over real recorded runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from app_kit import app_test, replayer
from langchain_core.messages import AIMessage
from pg_kit import store_on
from streamlit.testing.v1 import AppTest
from test_diff import BASE, lap, record

from tracer.interop.exchange import sample_files
from tracer.read.diff import diff_runs
from tracer.read.loader import TraceDB


@pytest.fixture(scope="module")
def db(engine: str, tmp_path_factory: pytest.TempPathFactory,
       pg_url: str | None) -> tuple[str, dict[str, str]]:
    path = store_on(engine, tmp_path_factory.mktemp("compare"), pg_url)
    ids = {
        "base": record(path, BASE, "base"),
        "same": record(path, BASE, "same"),
        "args": record(path, [BASE[0], lap("Berlin", "c2"), BASE[2]], "args"),
        "prompt": record(path, BASE, "prompt", system_prompt="Talk like a pirate."),
        "hostile": record(path, [BASE[0], BASE[1], AIMessage(
            content="<img src=x onerror=alert(1)> ![x](http://evil.example/x.png)")],
            "hostile <script>alert(2)</script>"),
    }
    return path, ids


pytestmark = pytest.mark.usefixtures("clean_streamlit_caches", "app_pool")


def open_compare(monkeypatch: pytest.MonkeyPatch, path: str, a: str | None = None,
                 b: str | None = None, row: str | None = None) -> AppTest:
    monkeypatch.setenv("LOOPTRACE_DB", str(path))
    at = app_test("compare")
    if a:
        at.query_params["a"] = a
    if b:
        at.query_params["b"] = b
    if row is not None:
        at.query_params["row"] = row
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


GRAPH_ONLY = {"controls": False, "caption": False, "messages": False}


def graphs(at: AppTest) -> list[dict[str, Any]]:
    """The replayer of each side (A, then B): graph only, held at the aligned step
    (its ``goto`` is that step: each new row moves it once)."""
    out = [replayer(at, f"cmp_graph_{tag}") for tag in "AB"]
    assert len(at.get("bidi_component")) == 2
    for g in out:
        assert g["parts"] == GRAPH_ONLY and g["keyboard"] is False
        assert g["goto"] == g["step"] and g["key"] == g["run"]["run"]["id"]
        assert (g["subagents"], g["presenter"], g["live_ms"]) == (False, False, 0)
    return out


def graph_nodes(at: AppTest) -> list[str]:
    """The active node of each side's graph (A, then B)."""
    return [g["run"]["steps"][g["step"]]["n"] for g in graphs(at)]


def test_query_params_pick_the_runs_and_jump_goes_to_the_first_divergence(
        monkeypatch: pytest.MonkeyPatch, db: tuple[str, dict[str, str]]) -> None:
    path, ids = db
    at = open_compare(monkeypatch, path, ids["base"], ids["args"][:12])
    assert [s.value for s in at.selectbox] == [ids["base"], ids["args"]]
    assert any("First divergence, in lap 2" in w.value for w in at.warning)
    assert any(c.value.startswith("[different_arguments] lap 2, step 10 (A) / 10 (B)")
               for c in at.code)
    assert at.session_state["cmp_row"] == 0
    at.button(key="cmp_jump").click().run()
    with TraceDB(path) as tdb:
        d = diff_runs(tdb.run(ids["base"]), tdb.run(ids["args"]))
    assert d.first_divergence is not None
    row = d.row_of(index_a=d.first_divergence.index_a)
    assert at.session_state["cmp_row"] == row
    assert at.slider(key="cmp_slider").value == row + 1
    shown = texts(at)
    assert shown.count("step 10 / 19  ·  lap 2  ·  wrap_model_call exit") == 2
    assert graph_nodes(at) == ["model", "model"]
    assert [g["step"] for g in graphs(at)] == [d.rows[row].index_a, d.rows[row].index_b]
    assert [g["run"]["run"]["id"] for g in graphs(at)] == [ids["base"], ids["args"]]
    # The message difference is shown as a diff, and both panes show their own call.
    diffs = [c.value for c in at.code if c.language == "diff"]
    assert any('+  -> get_weather({"city": "Berlin"})' in x for x in diffs)
    codes = [c.value for c in at.code]
    assert '[ai]\n  -> get_weather({"city": "Rome"})' in codes
    assert '[ai]\n  -> get_weather({"city": "Berlin"})' in codes
    at.button(key="cmp_next").click().run()
    assert at.session_state["cmp_row"] == row + 1
    assert graph_nodes(at) == ["after_model", "after_model"]
    at.slider(key="cmp_slider").set_value(1).run()
    assert at.session_state["cmp_row"] == 0
    assert graph_nodes(at) == ["before_agent", "before_agent"]


def test_setup_only_difference(monkeypatch: pytest.MonkeyPatch,
                               db: tuple[str, dict[str, str]]) -> None:
    path, ids = db
    at = open_compare(monkeypatch, path, ids["base"], ids["prompt"])
    assert any(i.value.startswith("Set up differently") for i in at.info)
    assert any(s.value.startswith("Same behaviour") for s in at.success)
    assert any(c.value.startswith("[system_prompt] lap 1, step 3 (A) / 3 (B)") for c in at.code)
    at.button(key="cmp_jump").click().run()
    assert at.session_state["cmp_row"] == 2
    assert graph_nodes(at) == ["model", "model"]


def test_identical_runs(monkeypatch: pytest.MonkeyPatch,
                        db: tuple[str, dict[str, str]]) -> None:
    path, ids = db
    at = open_compare(monkeypatch, path, ids["base"], ids["same"])
    assert any(s.value.startswith("Identical") for s in at.success)
    assert not at.warning
    assert not [b for b in at.button if b.key == "cmp_jump"]


def test_untrusted_text_never_reaches_markdown(monkeypatch: pytest.MonkeyPatch,
                                               db: tuple[str, dict[str, str]]) -> None:
    path, ids = db
    at = open_compare(monkeypatch, path, ids["base"], ids["hostile"])
    at.button(key="cmp_last").click().run()
    assert not at.exception
    assert any("onerror" in c.value for c in at.code)  # shown, as code
    for el in [*at.markdown, *at.warning, *at.success, *at.caption]:
        assert "onerror" not in el.value and "evil.example" not in el.value
        assert "<script>" not in el.value


def test_row_deep_link(monkeypatch: pytest.MonkeyPatch,
                       db: tuple[str, dict[str, str]]) -> None:
    """``row`` is the row the page shows ("row 10 / 19" is ``row=10``)."""
    path, ids = db
    at = open_compare(monkeypatch, path, ids["base"], ids["args"], row="10")
    assert at.session_state["cmp_row"] == 9
    assert "row 10 / 19" in " ".join(texts(at))
    assert graph_nodes(at) == ["model", "model"]
    assert at.query_params["row"] == "10"
    at.button(key="cmp_next").click().run()
    assert at.query_params["row"] == "11"
    for bad, want in (("999", "19"), ("0", "1"), ("-4", "1"), ("x", "1")):
        st.cache_data.clear()
        st.cache_resource.clear()
        at = open_compare(monkeypatch, path, ids["base"], ids["args"], row=bad)
        assert at.query_params["row"] == want


def test_bad_query_params_fall_back_to_defaults(monkeypatch: pytest.MonkeyPatch,
                                                db: tuple[str, dict[str, str]]) -> None:
    path, ids = db
    at = open_compare(monkeypatch, path, "no-such-run", "'; DROP TABLE runs; --")
    assert len(at.selectbox) == 2
    with TraceDB(path) as tdb:
        newest = [r for r in tdb.runs() if not r.parent_id]
    agents = [r.agent_name or r.name for r in newest]
    if len(set(agents)) == len(agents):  # no agent ran twice: nothing is picked
        assert (at.selectbox[0].value, at.selectbox[1].value) == (None, None)
    else:  # the newest two runs of one agent, the older as A
        assert at.selectbox[0].value != at.selectbox[1].value
        assert (agents[newest.index(next(r for r in newest if r.id == at.selectbox[1].value))]
                == agents[newest.index(next(r for r in newest
                                            if r.id == at.selectbox[0].value))])


def test_compare_opens_empty_until_two_runs_are_picked(monkeypatch: pytest.MonkeyPatch,
                                                      sample_store: str) -> None:
    """The samples hold no two runs of one agent: Compare opens with nothing picked and
    says so; picking two compares them (the guide's openai-weather and anthropic-weather)."""
    at = open_compare(monkeypatch, sample_store)
    assert (at.selectbox(key="cmp_a").value, at.selectbox(key="cmp_b").value) == (None, None)
    assert any("Pick two runs" in i.value for i in at.info)
    assert not at.get("bidi_component")
    with TraceDB(sample_store) as tdb:
        by_name = {r.name: r.id for r in tdb.runs()}
    at.selectbox(key="cmp_a").set_value(by_name["openai-weather"]).run()
    assert not at.get("bidi_component")  # one run is no pair
    at.selectbox(key="cmp_b").set_value(by_name["anthropic-weather"]).run()
    assert not at.exception
    assert any("Same behaviour" in s.value for s in at.success)
    assert len(at.get("bidi_component")) == 2


def test_without_a_link_compare_opens_on_the_newest_two_runs_of_one_agent(
        monkeypatch: pytest.MonkeyPatch, store_db: str) -> None:
    path = store_db
    old = record(path, BASE, "weather-bot")
    other = record(path, BASE, "another-bot")
    new = record(path, BASE, "weather-bot")
    assert other not in (old, new)
    at = open_compare(monkeypatch, path)
    assert (at.selectbox(key="cmp_a").value, at.selectbox(key="cmp_b").value) == (old, new)


@pytest.mark.skipif(not sample_files(), reason="no sample traces bundled yet")
def test_every_sample_trace_against_the_first(monkeypatch: pytest.MonkeyPatch,
                                              sample_store: str) -> None:
    with TraceDB(sample_store) as tdb:
        ids = [r.id for r in tdb.runs()]
    at = open_compare(monkeypatch, sample_store, ids[0], ids[0])
    for rid in ids:
        at.selectbox(key="cmp_b").set_value(rid).run()
        assert not at.exception, (rid, [e.value for e in at.exception])
        at.button(key="cmp_last").click().run()
        assert not at.exception, (rid, [e.value for e in at.exception])


def test_compare_says_what_each_run_cost_and_the_difference(
        monkeypatch: pytest.MonkeyPatch, db: tuple[str, dict[str, str]],
        tmp_path: Path) -> None:
    """Issue 37: the cost of both runs (with their subagent runs) and what B cost more.
    The scripted model has no price of its own: a prices file gives it $1,000 per
    million tokens, in and out, so each run costs its tokens / 1,000."""
    path, ids = db
    at = open_compare(monkeypatch, path, ids["base"], ids["args"])
    assert "Cost: A unknown  ·  B unknown  ·  B − A: unknown" in texts(at)
    prices = tmp_path / "prices.toml"
    prices.write_text("[providers.scripted]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n")
    monkeypatch.setenv("LOOPTRACE_PRICES", str(prices))
    at = open_compare(monkeypatch, path, ids["base"], ids["prompt"])
    with TraceDB(path) as tdb:
        a, b = tdb.summary(ids["base"]).total_tokens, tdb.summary(ids["prompt"]).total_tokens
    assert (a, b) == (91, 88)  # (the pirate's system prompt is shorter)
    line = next(t for t in texts(at) if t.startswith("Cost: "))
    assert line == "Cost: A $0.091  ·  B $0.088  ·  B − A: -$0.003 (-3%)"
