"""AppTest smoke and logic tests of the replay app over the bundled sample traces.

Every page renders every sample run; the replayer component's data, the steps
the browser reports (``app_kit.report_step``: the component's "step" trigger),
deep links and the URL, bad query parameters, subagent navigation, findings and
the Presenter page. AppTest runs no JavaScript and fires no timers: the
replayer's controls, playback and keyboard are the browser's (tests/browser/test_browser_*.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from app_kit import app_test, browser_sends, browser_sends_all, replayer, report_step, runs_table
from streamlit.testing.v1 import AppTest
from test_replayer_data import messages_at as views_at  # (the browser's messagesAt)

from tracer.read.captions import captions
from tracer.read.loader import RunSummary, TraceDB
from tracer.read.steps import Replay, build_replay
from tracer.replayer import STEP_MS, replay_json

PAGES = ("runs", "replay", "timeline", "presenter")


pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


@pytest.fixture
def samples(sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    return sample_db


def sample_runs(db: Path) -> list[RunSummary]:
    with TraceDB(db) as t:
        return t.runs()


def replay_of(db: Path, run_id: str) -> Replay:
    with TraceDB(db) as t:
        return build_replay(t.run(run_id))


def run_named(db: Path, name: str) -> RunSummary:
    return next(r for r in sample_runs(db) if r.name == name)


def open_page(page: str, **query: str) -> AppTest:
    """The app at ``/page?query``, run once (``page``: runs, replay, timeline, ...)."""
    return app_test(page, **query).run()


def problems(at: AppTest) -> list[str]:
    return [str(e.value) for e in at.exception] + [str(e.value) for e in at.error]


def graph(at: AppTest) -> dict[str, Any]:
    """The data the replay page's replayer component was given on the last run
    (``app/panes/replayer_component.py``: ``replayer_data``)."""
    return replayer(at)


def inspector_step(at: AppTest) -> int | None:
    """The step (1-based) the step inspector shows."""
    for m in at.markdown:
        if m.value.startswith("**Step inspector** · step "):
            return int(m.value.rsplit(" ", 1)[1])
    return None


def url_step(at: AppTest) -> str:
    value = at.query_params["step"]
    return value[0] if isinstance(value, list) else value


# -- every page, every sample run ---------------------------------------------------
def test_samples_exist(samples: Path) -> None:
    runs = sample_runs(samples)
    assert len(runs) >= 6
    assert any(r.parent_id for r in runs), "the Deep Agents sample has a nested subagent run"


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_every_sample_run(samples: Path, page: str) -> None:
    for run in sample_runs(samples):
        at = open_page(page, run=run.id)
        assert not problems(at), (page, run.name, problems(at))
        if page in ("replay", "presenter"):
            rp = replay_of(samples, run.id)
            g = graph(at)
            assert (g["step"], len(g["run"]["steps"])) == (0, len(rp))
            assert g["run"]["steps"][0]["n"] == rp.steps[0].node
            # the run as the browser plays it: the replay's JSON, payloads left on the server
            assert g["run"] == json.loads(json.dumps(replay_json(rp, payloads=False)))
            assert g["key"] == f"{run.id}:{len(rp)}:{run.status}"
            assert (g["presenter"], g["subagents"]) == (page == "presenter", page == "replay")
            assert g["keyboard"] is True and g["live_ms"] == 0  # (all samples are finished)


def test_runs_page_lists_every_run_with_subagents_nested(samples: Path) -> None:
    at = open_page("runs")
    assert not problems(at)
    df = runs_table(at)
    runs = sample_runs(samples)
    assert set(df["id"]) == {r.id for r in runs}
    child = next(r for r in runs if r.parent_id)
    rows = list(df["id"])
    assert rows.index(child.id) == rows.index(child.parent_id) + 1
    assert df.loc[df["id"] == child.id, "run"].iloc[0].strip().startswith("↳")
    for col in ("status", "duration_s", "laps", "model_calls", "tool_calls", "errors", "tokens",
                "health"):
        assert col in df.columns
    # openai-shopping streamed without usage: not reported (empty), not 0 tokens
    tokens = dict(zip(df["name"], df["tokens"], strict=True))
    assert tokens["openai-shopping"] is None
    assert tokens["weather"] == 77 and tokens["ollama-shopping"] == 460
    # numbers, sorted as numbers (as text, "77" came after "460"): the browser's table
    # sorts a column of kind "tokens" numerically (tests/browser/test_browser_runs_page.py)
    assert all(isinstance(v, int) for v in tokens.values() if v is not None)
    assert runs_grid_kinds(at)["tokens"] == "tokens"
    by_tokens = df.dropna(subset=["tokens"]).sort_values("tokens")
    assert list(by_tokens["tokens"]) == sorted(v for v in tokens.values() if v is not None)
    assert (list(by_tokens["name"]).index("weather")
            < list(by_tokens["name"]).index("ollama-shopping"))


def test_runs_page_shows_each_runs_cost(samples: Path) -> None:
    """Issue 37: a cost column, sortable by its dollars; "unknown" (never $0) where no
    model call has a known price. By hand: gpt-4o-mini is $0.15 in and $0.60 out per
    million tokens (openai-weather: 87 in, 44 out), claude-haiku-4-5 $1 and $5
    (anthropic-shopping: 368 in, 92 out)."""
    at = open_page("runs")
    assert not problems(at)
    df = runs_table(at)
    cost = dict(zip(df["name"], df["cost"], strict=True))
    usd = dict(zip(df["name"], df["cost_usd"], strict=True))
    assert cost["openai-weather"] == "$0.0000394"
    assert usd["openai-weather"] == pytest.approx((87 * 0.15 + 44 * 0.60) / 1e6)
    assert usd["anthropic-shopping"] == pytest.approx((368 + 92 * 5) / 1e6)
    assert cost["weather"] == "unknown" and usd["weather"] is None  # a scripted model
    assert cost["openai-shopping"] == "unknown"  # no usage reported
    # the call that failed (HTTP 400) is not priced: the run says so
    partly = next(n for n in cost if n.startswith("anthropic: "))
    assert cost[partly].startswith("≥ $0.000162 (1/2)")
    assert runs_grid_kinds(at)["cost"] == "cost"  # (sorted by cost_usd: runs_grid.js)


def runs_grid_kinds(at: AppTest) -> dict[str, str]:
    """How the browser's table shows each of its columns."""
    from app_kit import runs_grid

    data = runs_grid(at)
    assert data is not None
    return {c["key"]: c["kind"] for c in data["columns"]}


def test_runs_page_search_filters_by_message_text(samples: Path) -> None:
    at = open_page("runs")
    at.text_input(key="search").input("unicorn").run()
    assert not problems(at)
    names = set(runs_table(at)["name"])
    # the shopping scenario's unknown product, recorded by the scripted demo and
    # through each provider's adapter (written by hand: not TraceDB.runs(search=...))
    assert names == {"shopping", "openai-shopping", "anthropic-shopping", "ollama-shopping"}


# -- the step the browser reports ---------------------------------------------------------
def test_the_step_the_browser_reports_moves_the_state_the_url_and_the_inspector(
        samples: Path) -> None:
    """The browser steps by itself and reports the step it settled on: the server's
    state, the URL and the panes drawn in Python follow; the browser is not sent
    anywhere (``goto`` stays: it would pull the replay back)."""
    run = run_named(samples, "weather")
    rp = replay_of(samples, run.id)
    at = open_page("replay", run=run.id)
    first = graph(at)
    n = len(rp)
    for i in [*range(1, n), 3, 0]:
        report_step(at, i)
        assert not problems(at)
        assert at.session_state["lt_step"] == i
        assert url_step(at) == str(i + 1)  # the step as the page shows it
        assert inspector_step(at) == i + 1
        g = graph(at)
        assert (g["step"], g["goto"], g["key"]) == (i, first["goto"], first["key"])
    # a report of another run (one the browser left), or junk, changes nothing
    report_step(at, 5)
    for junk in ("another-run:14:completed|2", f"{first['key']}|x", f"{first['key']}|-1",
                 "7", f"{run.id}:7", ""):
        browser_sends(at, "step", junk)
        assert not problems(at)
        assert at.session_state["lt_step"] == 5, junk
    # a step past the end (a run that shrank?) is the last
    report_step(at, n + 20)
    assert at.session_state["lt_step"] == n - 1


def test_the_app_moves_the_browser_only_through_goto(samples: Path) -> None:
    """A new link in the same tab (the URL edited), a finding, a subagent's return:
    each moves the browser once (``state.move_to``: a new ``goto``)."""
    run = run_named(samples, "shopping")
    rp = replay_of(samples, run.id)
    at = open_page("replay", run=run.id, step="3")
    g = graph(at)
    assert (g["step"], at.session_state["lt_step"]) == (2, 2)
    goto = g["goto"]
    at.run()  # a rerun moves nothing
    assert graph(at)["goto"] == goto and graph(at)["step"] == 2
    at.query_params["step"] = "9"  # the user edits the URL
    at.run()
    assert not problems(at)
    g = graph(at)
    assert (g["step"], g["goto"], at.session_state["lt_step"]) == (8, goto + 1, 8)
    assert g["run"]["steps"][8]["n"] == rp.steps[8].node
    # the URL the app wrote back after a report is not a new link
    report_step(at, 4)
    at.run()
    assert (graph(at)["step"], graph(at)["goto"], url_step(at)) == (4, goto + 1, "5")


def test_state_move_to_and_shown_step() -> None:
    """``move_to``: the app's own move (counted, the highlight kept by ``show_finding``);
    ``shown_step``: the browser's (not counted, the highlight dropped)."""
    from streamlit.testing.v1 import AppTest

    def script() -> None:
        import streamlit as st

        from app.kit import state

        state.init()
        log = []
        state.move_to(4)
        log.append((st.session_state[state.STEP], st.session_state[state.GOTO]))
        state.show_finding(7, ("h:0", "a:1"))
        log.append((st.session_state[state.STEP], st.session_state[state.GOTO],
                    st.session_state[state.HIGHLIGHT]))
        state.shown_step(2)
        log.append((st.session_state[state.STEP], st.session_state[state.GOTO],
                    st.session_state[state.HIGHLIGHT]))
        state.show_finding(None, ("t:2",))  # a finding without a step: highlight only
        log.append((st.session_state[state.STEP], st.session_state[state.GOTO],
                    st.session_state[state.HIGHLIGHT]))
        state.open_run("child", push=True)
        log.append((st.session_state[state.STEP], st.session_state[state.GOTO],
                    st.session_state[state.HIGHLIGHT], st.session_state[state.STACK]))
        st.session_state["log"] = log  # (a test's own key)

    at = AppTest.from_function(script)
    at.session_state["lt_run"] = "parent"
    at.run()
    assert not at.exception
    assert at.session_state["log"] == [
        (4, 1), (7, 2, ("h:0", "a:1")), (2, 2, ()), (2, 2, ("t:2",)),
        (0, 3, (), [("parent", 2)])]


def test_speed_the_browser_reports_is_kept(samples: Path) -> None:
    run = run_named(samples, "weather")
    at = open_page("replay", run=run.id)
    g = graph(at)
    assert (g["speed"], g["step_ms"], g["live_ms"]) == (1.0, STEP_MS, 0)
    browser_sends(at, "speed", "4")
    assert at.session_state["lt_speed"] == 4.0 and graph(at)["speed"] == 4.0
    for bad in ("3", "fast", "", "nan"):
        browser_sends(at, "speed", bad)
        assert not problems(at)
        assert graph(at)["speed"] == 4.0, bad
    at.run()  # kept (a plain key: the replayer's next mount starts at it)
    assert graph(at)["speed"] == 4.0


# -- deep links and bad query parameters ------------------------------------------------
def test_deep_link_opens_the_step_the_page_shows(samples: Path) -> None:
    """``step`` is the number on the page: ``step=8`` opens "Step 8 / N" (index 7)."""
    run = run_named(samples, "shopping")
    rp = replay_of(samples, run.id)
    at = open_page("replay", run=run.id, step="8")
    assert not problems(at)
    assert at.session_state["lt_step"] == 7
    g = graph(at)
    assert g["step"] == 7 and g["goto"] >= 1  # the browser goes there
    assert g["run"]["steps"][7]["n"] == rp.steps[7].node
    assert inspector_step(at) == 8
    assert url_step(at) == "8"
    prefix = open_page("replay", run=run.id[:12], step="4")
    assert not problems(prefix)
    assert prefix.session_state["lt_run"] == run.id
    assert graph(prefix)["step"] == 3
    assert graph(prefix)["run"]["run"]["id"] == run.id
    # the first step is step=1; an old 0-based link's step=0 opens it too
    for first in ("1", "0"):
        at = open_page("replay", run=run.id, step=first)
        assert graph(at)["step"] == 0 and inspector_step(at) == 1
        assert url_step(at) == "1"


@pytest.mark.parametrize(("step", "expected"), [
    ("abc", 0), ("-4", 0), ("0", 0), ("99999", "last"), ("", 0), ("2.5", 0), ("%00", 0)])
def test_bad_step_is_clamped(samples: Path, step: str, expected: Any) -> None:
    run = run_named(samples, "weather")
    n = len(replay_of(samples, run.id))
    at = open_page("replay", run=run.id, step=step)
    assert not problems(at)
    want = n - 1 if expected == "last" else expected
    assert at.session_state["lt_step"] == want
    assert graph(at)["step"] == want and url_step(at) == str(want + 1)


@pytest.mark.parametrize("page", ["replay", "timeline", "presenter"])
def test_unknown_run_is_a_clear_error(samples: Path, page: str) -> None:
    at = open_page(page, run="no-such-run", step="3")
    assert not at.exception
    assert len(at.error) == 1
    assert "no run 'no-such-run'" in at.error[0].value


# -- subagents and findings ---------------------------------------------------------------
def test_subagent_opens_as_nested_replay_and_back(samples: Path) -> None:
    parent = next(r for r in sample_runs(samples) if any(
        c.parent_id == r.id for c in sample_runs(samples)))
    child = next(r for r in sample_runs(samples) if r.parent_id == parent.id)
    rp = replay_of(samples, parent.id)
    call_step = next(s.index for s in rp.steps if s.event.tool_call_id == child.parent_tool_call_id)
    at = open_page("replay", run=parent.id)
    # the replayer knows which call ran which subagent (its "Open subagent" button)
    assert graph(at)["run"]["children"] == [
        {"id": child.id, "name": child.name, "parent_tool_call_id": child.parent_tool_call_id}]
    # the header's button
    at.button(key="open_child_0").click().run()
    assert not problems(at)
    assert at.session_state["lt_run"] == child.id
    assert at.query_params["run"] in (child.id, [child.id])
    assert len(graph(at)["run"]["steps"]) == len(replay_of(samples, child.id))
    assert graph(at)["step"] == 0
    at.button(key="to_parent").click().run()
    assert at.session_state["lt_run"] == parent.id
    assert graph(at)["step"] == 0  # where we left it
    # at the task tool call that ran it, the browser opens that subagent ("open")
    report_step(at, call_step)
    goto = graph(at)["goto"]
    browser_sends(at, "open", f"{child.id}:1732970000000")
    assert not problems(at)
    assert at.session_state["lt_run"] == child.id
    assert at.session_state["lt_stack"] == [(parent.id, call_step)]
    g = graph(at)
    assert (g["run"]["run"]["id"], g["step"], g["goto"]) == (child.id, 0, goto + 1)
    assert g["run"]["run"]["parent_tool_call_id"] == child.parent_tool_call_id
    # back to the parent, at the call
    at.button(key="to_parent").click().run()
    assert at.session_state["lt_run"] == parent.id and at.session_state["lt_stack"] == []
    g = graph(at)
    assert (g["run"]["run"]["id"], g["step"], g["goto"]) == (parent.id, call_step, goto + 2)
    assert url_step(at) == str(call_step + 1)
    # a run that is not a child of this one is not opened
    browser_sends(at, "open", "no-such-run:1")
    assert at.session_state["lt_run"] == parent.id


def test_a_late_step_report_does_not_land_on_the_subagent(samples: Path) -> None:
    """The user steps, then opens the subagent at once: the step report and the open
    reach the server together (or the report of the parent comes late). The parent's
    step is not applied to the subagent's replay."""
    parent = next(r for r in sample_runs(samples) if any(
        c.parent_id == r.id for c in sample_runs(samples)))
    child = next(r for r in sample_runs(samples) if r.parent_id == parent.id)
    at = open_page("replay", run=parent.id)
    held = graph(at)["key"]
    browser_sends_all(at, [("open", f"{child.id}:1"), ("step", f"{held}|6")])
    assert not problems(at)
    assert at.session_state["lt_run"] == child.id
    assert at.session_state["lt_step"] == 0 and graph(at)["step"] == 0
    report_step(at, 6, held=held)  # later still
    assert (at.session_state["lt_run"], at.session_state["lt_step"]) == (child.id, 0)


def test_findings_jump_to_their_step(samples: Path) -> None:
    from tracer.checks.run import check_run

    run = run_named(samples, "stuck-search")
    with TraceDB(samples) as t:
        findings = check_run(t.run(run.id))
    assert findings
    rp = replay_of(samples, run.id)
    at = open_page("replay", run=run.id)
    goto = graph(at)["goto"]
    seq = findings[0].seq
    target = next(s.index for s in rp.steps if s.event.seq >= seq)
    # the findings are marks on the replayer's tick strip
    marks = graph(at)["markers"]
    assert {"step": target, "severity": str(findings[0].severity)} in marks
    assert len(marks) == sum(1 for f in findings if f.seq is not None)
    at.button(key="finding_0").click().run()
    assert at.session_state["lt_step"] == target
    assert tuple(at.session_state["lt_highlight"]) == tuple(findings[0].message_keys)
    # the browser goes there (pausing) and highlights the finding's messages
    g = graph(at)
    assert (g["step"], g["goto"]) == (target, goto + 1)
    assert g["highlight"] == list(findings[0].message_keys)
    assert inspector_step(at) == target + 1
    # the user steps on: the highlight goes
    report_step(at, max(target - 1, 0))
    assert graph(at)["highlight"] == [] and at.session_state["lt_highlight"] == ()
    assert graph(at)["goto"] == goto + 1


# -- presenter ------------------------------------------------------------------------------
def test_presenter_shows_the_replayer_without_the_panes_around_it(samples: Path) -> None:
    run = run_named(samples, "weather")
    rp = replay_of(samples, run.id)
    at = open_page("presenter", run=run.id, step="5")
    assert not problems(at)
    g = graph(at)
    assert (g["step"], g["presenter"], g["keyboard"], g["subagents"]) == (4, True, True, False)
    assert g["parts"] == {}  # the replayer's own controls, caption, graph and messages
    assert g["run"]["steps"][4]["c"] == captions(rp)[rp.steps[4].index]
    assert run.name in [t.value for t in at.text]
    assert any("Keyboard:" in c.value for c in at.caption)
    # no inspector, header, findings or wire pane
    assert inspector_step(at) is None
    for key in ("show_wire", "open_child_0", "to_parent", "finding_0"):
        with pytest.raises(KeyError):
            at.toggle(key=key) if key == "show_wire" else at.button(key=key)
    # the browser steps it; the URL follows
    report_step(at, 9)
    assert not problems(at)
    assert at.session_state["lt_step"] == 9 and url_step(at) == "10"


def test_wire_pane_follows_the_replay_when_switched_on(samples: Path) -> None:
    run = run_named(samples, "weather")
    rp = replay_of(samples, run.id)
    model_step = rp.find(0, "model")
    at = open_page("replay", run=run.id, step=str(model_step + 1))

    def pane_heads() -> list[str]:
        return [str(t.value) for t in at.text if str(t.value).startswith(
            ("OpenAI  ·  ", "Anthropic  ·  ", "Ollama  ·  "))]

    assert pane_heads() == []
    at.toggle(key="show_wire").set_value(True).run()
    assert not problems(at)
    assert at.session_state["lt_show_wire"] is True
    # drawn: one column per provider, each body rendered by that adapter (the
    # scripted weather run was recorded without a provider: nothing captured)
    assert len(pane_heads()) == 3
    # (one numbering: the step the replay shows, not the database's seq)
    assert f"Model call 1 · lap 1 · step {model_step + 1}:" in " ".join(c.value for c in at.caption)
    report_step(at, model_step + 1)
    assert not problems(at)
    assert at.toggle(key="show_wire").value is True
    assert len(pane_heads()) == 3


def _step_where(rp: Replay, pred: Any) -> int:
    return next(s.index for s in rp.steps if pred(s))


def test_versions_and_layers_are_shown(samples: Path) -> None:
    """The middleware-stack sample: a message in a later version says so and who made
    it; at a layer step the inspector lists the call's layers with a diff of what the
    layer changed in the messages, and the message list shows the request as it
    passed on."""
    run = run_named(samples, "support-desk")
    rp = replay_of(samples, run.id)
    layer = _step_where(rp, lambda s: s.event.phase == "layer"
                        and s.event.middleware == "ContextEditingMiddleware")
    at = open_page("replay", run=run.id, step=str(layer + 1))
    assert not problems(at), problems(at)
    # the replayer's message list at that step: its rows' notes
    data = graph(at)
    rows = data["run"]["messages"]
    view = views_at(data["run"])[layer]
    notes = [rows[x].get("vn") for x in view]
    assert "version 2, changed by PIIMiddleware[email].before_model" in notes
    assert "as the model received it: a layer of the model call changed it" in notes
    cleared = next(rows[x] for x in view
                   if rows[x].get("vn", "").startswith("as the model received it"))
    assert cleared["text"] == "[cleared]"
    texts = [t.value for t in at.text]
    codes = [c.value for c in at.code]
    diff = next(c for c in codes if c.startswith("--- above"))
    assert "-tool #2: Orders of the customer:" in diff and "+tool #2: [cleared]" in diff
    assert any("ContextEditingMiddleware · request · messages" in t for t in texts)
    # a step before any layer changed anything: no note of a request form
    before = _step_where(rp, lambda s: s.event.hook == "before_model")
    at = open_page("replay", run=run.id, step=str(before + 1))
    data = graph(at)["run"]
    assert not any(str(data["messages"][x].get("vn", "")).startswith("as the model received it")
                   for x in views_at(data)[before])
    assert not any("ContextEditingMiddleware · request" in t.value for t in at.text)


def test_the_timeline_and_the_run_header_say_the_cost(samples: Path) -> None:
    """Issue 37: the Timeline's cost per lap (its text per lap, written out by hand from
    claude-haiku-4-5's $1 in and $5 out per million tokens) and the replay's header."""
    from app.screens.timeline.timeline import cost_per_lap
    from tracer.read.cost import run_costs

    run = run_named(samples, "anthropic-shopping")
    at = open_page("timeline", run=run.id)
    assert not problems(at)
    assert "The run's own model calls: $0.000828" in [t.value for t in at.text]
    assert any(s.value == "Cost per lap" for s in at.subheader)
    with TraceDB(samples) as db:
        rows = cost_per_lap(run_costs(db, [run.id])[run.id])
    # lap by lap: (49 + 30*5), (67 + 13*5), (74 + 13*5), (86 + 13*5), (92 + 23*5)
    assert [r["text"] for r in rows] == ["$0.000199", "$0.000132", "$0.000139", "$0.000151",
                                         "$0.000207"]
    at = open_page("replay", run=run.id)
    # (460 tokens: what its wire says, issue 39 item 5; said before the cost)
    assert any(t.value.endswith(f"{run.id}  ·  460 tokens  ·  cost $0.000828") for t in at.text)
    weather = run_named(samples, "weather")  # a scripted model: unknown, never $0
    at = open_page("timeline", run=weather.id)
    assert "The run's own model calls: unknown" in [t.value for t in at.text]
    # (issue 47, in the way 4: an unknown price was an empty chart on a -1..1 USD axis)
    assert "No price known for scripted-weather: no cost to chart." in [
        c.value for c in at.caption]
    assert "cost_chart" not in [getattr(c, "key", None) for c in at.get("plotly_chart")]
    assert len(at.get("plotly_chart")) == 2  # the timeline and the tokens, not the cost
