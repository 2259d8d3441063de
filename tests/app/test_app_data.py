"""The app's pure parts and its error paths: bad databases, hostile content,
what the replayer is given per step (``tracer.replayer.replay_json``), timeline
lanes, the runs table."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from app_kit import app_test, browser_sends, report_step
from streamlit.testing.v1 import AppTest
from test_app_pages import graph
from test_replayer_data import messages_at as views_at  # (the browser's messagesAt)

from app.data.run_view import build_run_view
from app.screens.runs.runs_table import runs_frame
from app.screens.timeline.timeline import spans, timeline_figure, tokens_per_lap
from tracer.db.schema import SCHEMA_VERSION, connect
from tracer.read.graph_layout import EDGES, NODES, drawing, passthrough_hooks, route
from tracer.read.loader import TraceDB
from tracer.read.palette import colour_map
from tracer.read.steps import GRAPH_NODES, build_replay
from tracer.replayer import replay_json

PAGES = ("runs", "replay", "timeline", "presenter")


pytestmark = pytest.mark.usefixtures("clean_streamlit_caches")


def run_page(page: str) -> AppTest:
    return app_test(page).run()


# -- bad databases: one clear line, never a traceback ---------------------------------
def _missing(p: Path) -> None:
    pass


def _empty(p: Path) -> None:
    p.write_bytes(b"")


def _corrupt(p: Path) -> None:
    p.write_bytes(b"this is not sqlite at all\x00" * 200)


def _foreign(p: Path) -> None:
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.commit()
    conn.close()


def _newer(p: Path) -> None:
    connect(p).close()
    conn = sqlite3.connect(p)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                 [str(SCHEMA_VERSION + 1)])
    conn.commit()
    conn.close()


@pytest.mark.parametrize(("make", "words"), [
    (_missing, "no such database"), (_empty, "empty"), (_corrupt, "not"),
    (_foreign, "not a looptrace"), (_newer, "newer looptrace")])
@pytest.mark.parametrize("page", PAGES)
def test_bad_database_is_one_clear_message(db_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           make, words: str, page: str) -> None:  # type: ignore[no-untyped-def]
    make(db_path)
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    at = run_page(page)
    assert not at.exception, at.exception
    assert len(at.error) == 1
    msg = at.error[0].value
    assert words in msg and "\n" not in msg.strip()
    assert "Traceback" not in msg


def test_a_database_with_no_runs_says_so(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    connect(db_path).close()
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    for page in PAGES:
        at = run_page(page)
        assert not at.exception and not at.error
        assert any("No runs" in i.value for i in at.info), page


# -- hostile content is text ------------------------------------------------------------
def test_hostile_content_is_shown_as_text_never_markdown(sample_db: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The message list is the replayer's: trace text travels to it as JSON data (and
    reaches the page through textContent, tests/app/test_replayer_data.py); whatever
    Python draws from the trace (the inspector) is text or JSON, never markdown."""
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    with TraceDB(sample_db) as db:
        run = next(r for r in db.runs() if r.name == "hostile-page")
        rp = build_replay(db.run(run.id))
    hostile = [m for m in rp.run.messages if "<script" in m.text or "](" in m.text]
    assert hostile
    at = app_test("replay")
    at.query_params["run"] = run.id
    at.query_params["step"] = str(len(rp))  # the last step
    at.run()
    assert not at.exception
    data = graph(at)["run"]
    shown = [data["messages"][x]["text"] for x in views_at(data)[-1]]
    for m in hostile:
        body = m.content if isinstance(m.content, str) else m.text
        assert any(body.strip() in x for x in shown), body[:60]
    # every step's new messages are in the inspector as JSON: report each step
    seen = [j.proto.body for j in at.json]
    for i in range(len(rp)):
        if rp.steps[i].new_keys:
            report_step(at, i)
            assert not at.exception
            seen += [j.proto.body for j in at.json]
    strings = [x for body in seen for x in _strings(json.loads(body))]
    for m in hostile:
        assert any(m.text.strip()[:40] in x for x in strings), m.text[:60]
    markdownish = [m.value for m in at.markdown] + [c.value for c in at.caption]
    for text in markdownish:
        assert "<script" not in text and "onerror" not in text and "](http" not in text
    assert not any("<script" in h.proto.body for h in at.get("html"))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _strings(v)]
    if isinstance(value, list):
        return [x for v in value for x in _strings(v)]
    return []


# -- what the replayer is given ------------------------------------------------------------
def test_every_replay_edge_is_drawn_and_routes_pass_through_hooks() -> None:
    assert set(NODES) == {"START", "before_agent", "before_model", "model", "after_model",
                          "tools", "after_agent", "END"}
    assert "tools>before_model" in EDGES
    # the replayer's drawing is these
    d = drawing()
    assert [n["id"] for n in d["nodes"]] == list(NODES)  # type: ignore[index]
    assert {e["id"]: e["d"] for e in d["edges"]} == EDGES  # type: ignore[index]
    assert d["nodeOrder"] == list(GRAPH_NODES)
    # a loop without middleware goes straight from START to the model: drawn through the hooks
    assert route("START", "model") == ["START>before_agent", "before_agent>before_model",
                                       "before_model>model"]
    assert route("tools", "model") == ["tools>before_model", "before_model>model"]
    assert route("END", "START") == []


# The weather run (README "Demo agents": one tool call, then the answer), step by step:
# (node drawn active, edges lit by the step, tool calls in flight, nodes visited so far)
WEATHER_GRAPH = [
    ("START", [], [], {"START"}),
    ("before_agent", ["START>before_agent"], [], {"START", "before_agent"}),
    ("before_model", ["before_agent>before_model"], [], {"START", "before_agent", "before_model"}),
    ("model", ["before_model>model"], [], {"START", "before_agent", "before_model", "model"}),
    ("model", [], [], {"START", "before_agent", "before_model", "model"}),
    ("after_model", ["model>after_model"], [],
     {"START", "before_agent", "before_model", "model", "after_model"}),
    ("tools", ["after_model>tools"], ["call_weather_1"],
     {"START", "before_agent", "before_model", "model", "after_model", "tools"}),
    ("tools", [], [], {"START", "before_agent", "before_model", "model", "after_model", "tools"}),
    ("before_model", ["tools>before_model"], [],
     {"START", "before_agent", "before_model", "model", "after_model", "tools"}),
    ("model", ["before_model>model"], [],
     {"START", "before_agent", "before_model", "model", "after_model", "tools"}),
    ("model", [], [], {"START", "before_agent", "before_model", "model", "after_model", "tools"}),
    ("after_model", ["model>after_model"], [],
     {"START", "before_agent", "before_model", "model", "after_model", "tools"}),
    ("after_agent", ["after_model>after_agent"], [],
     {"START", "before_agent", "before_model", "model", "after_model", "tools", "after_agent"}),
    ("END", ["after_agent>END"], [],
     {"START", "before_agent", "before_model", "model", "after_model", "tools", "after_agent",
      "END"}),
]


def visited(step: dict[str, Any]) -> set[str]:
    """The nodes a step's ``v`` bit mask names (bits over ``drawing()["nodeOrder"]``)."""
    order: list[str] = drawing()["nodeOrder"]  # type: ignore[assignment]
    return {n for b, n in enumerate(order) if step["v"] >> b & 1}


def test_the_steps_follow_the_replay(sample_db: Path) -> None:
    """What the graph is told to draw at each step, written out by hand (not copied
    from the replay's steps, which replay_json itself reads)."""
    with TraceDB(sample_db) as db:
        run = next(r for r in db.runs() if r.name == "weather")
        rp = build_replay(db.run(run.id))
    data = replay_json(rp, payloads=False)
    assert len(data["steps"]) == len(WEATHER_GRAPH)
    got = [(s["n"], s["r"], s["t"], visited(s)) for s in data["steps"]]
    assert got == WEATHER_GRAPH
    assert data["names"] == {"call_weather_1": "get_weather"}  # the chip's label


def test_parallel_calls_in_flight_have_their_own_colours(sample_db: Path) -> None:
    """shopping's first lap asks for two prices at once: while both are in flight,
    two chips, each in its own colour (the colour of its call in the message list)."""
    with TraceDB(sample_db) as db:
        run = next(r for r in db.runs() if r.name == "shopping")
        rp = build_replay(db.run(run.id))
    data = replay_json(rp, payloads=False)
    # steps 6-9: two enters, then two exits, in whichever order the threads ran
    tools = [sorted(data["steps"][i]["t"]) for i in range(6, 10)]
    both = ["call_price_laptop", "call_price_mouse"]
    assert tools[1] == both and tools[3] == []
    assert len(tools[0]) == len(tools[2]) == 1
    colours = {t: data["colours"][t] for t in both}
    assert len(set(colours.values())) == 2
    # the message list colours a call and its result by the same map
    calls = {c["id"] for m in data["messages"] for c in m["calls"]}
    assert set(both) <= calls
    assert colours == {k: colour_map(rp.run.messages)[k] for k in both}


def test_results_link_to_their_calls_by_colour(sample_db: Path) -> None:
    with TraceDB(sample_db) as db:
        run = next(r for r in db.runs() if r.name == "weather")
        rp = build_replay(db.run(run.id))
    data = replay_json(rp, payloads=False)
    calls = {c["id"] for m in data["messages"] for c in m["calls"]}
    results = [m for m in data["messages"] if m["type"] == "tool"]
    assert results
    for r in results:
        assert r["tcid"] in calls and r["tcid"] in data["colours"]
    assert len({data["colours"][c] for c in calls}) == len(calls)
    assert len(build_run_view(rp, with_findings=False).kinds) == len(rp)


# -- timeline and runs table ---------------------------------------------------------------
def test_timeline_lanes_one_per_tool_call_and_tokens_per_lap(sample_db: Path) -> None:
    with TraceDB(sample_db) as db:
        run = next(r for r in db.runs() if r.name == "shopping")  # parallel calls, tokens
        rp = build_replay(db.run(run.id))
    rows = spans(rp)
    tool_calls = {e.tool_call_id for e in rp.run.events if e.hook in ("wrap_tool_call", "tool")}
    tool_lanes = {r["lane"] for r in rows if r["lane"].startswith("tool ")}
    assert len(tool_lanes) == len(tool_calls) >= 2
    assert sum(1 for r in rows if r["lane"] == "model calls") == run.model_calls
    assert all(r["duration"] >= 0 for r in rows)
    laps = tokens_per_lap(rp)
    assert [r["lap"] for r in laps] == sorted({e.lap for e in rp.run.events
                                               if e.hook == "wrap_model_call"})
    assert sum(r["input"] + r["output"] for r in laps) == run.total_tokens
    fig = timeline_figure(rp)
    assert fig.layout.xaxis.title.text.startswith("time")


def test_the_timeline_legend_shows_each_bar_in_its_own_colour(sample_db: Path) -> None:
    """Issue 47, untrue 5: the legend's "tool" was steel blue (the trace's first colour)
    while a tool's bar had its call's colour: every bar trace is of one colour now, the
    colour its legend swatch shows, and each tool call's bar is its call's colour."""
    with TraceDB(sample_db) as db:
        run = next(r for r in db.runs() if r.name == "shopping")  # five calls, three tools
        rp = build_replay(db.run(run.id))
    fig = timeline_figure(rp)
    bars = [t for t in fig.data if t.type == "bar"]
    assert all(isinstance(t.marker.color, str) for t in bars)
    tool_bars = [t for t in bars if t.name.startswith("tool ")]
    # calls 1, 2 and 5 answered (3 and 4 failed: red error bars), in palette colours 1, 2, 5
    assert {t.name: t.marker.color for t in tool_bars} == {
        "tool get_price · call_price_laptop": "#1f77b4",
        "tool get_price · call_price_mouse": "#8c6d1f",
        "tool apply_discount · call_discount": "#e377c2"}
    assert all(t.legendgroup == "tool" for t in tool_bars)
    assert next(t for t in bars if t.name == "model").marker.color == "#3b82f6"


def test_runs_frame_nests_children_under_parents(sample_db: Path) -> None:
    with TraceDB(sample_db) as db:
        runs = db.runs()
    df = runs_frame(runs, lambda r: "ok")
    ids = list(df["id"])
    assert sorted(ids) == sorted(r.id for r in runs)
    for r in runs:
        if r.parent_id:
            i = ids.index(r.id)
            assert ids.index(r.parent_id) < i
            assert df.iloc[i]["depth"] == 1
    assert set(df["health"]) == {"ok"}


def test_a_hostile_run_id_in_the_url_stays_text(sample_db: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOPTRACE_DB", str(sample_db))
    at = app_test("replay")
    at.query_params["run"] = "![x](http://127.0.0.1:9/leak.png) <img src=x onerror=alert(1)>"
    at.run()
    assert not at.exception and len(at.error) == 1
    msg = at.error[0].value
    # every character markdown could act on is backslash-escaped
    assert re.search(r"(?<!\\)[<>!\[\]()]", msg) is None, msg
    assert "\\!\\[x\\]" in msg and "\\<img" in msg


def running_copy(sample_db: Path, db_path: Path) -> tuple[Any, int, sqlite3.Connection]:
    """A copy of the samples whose "weather" run reads as still being recorded: the run,
    its number of steps, and a connection to change it further."""
    import shutil

    shutil.copy(sample_db, db_path)
    with TraceDB(db_path) as db:
        run = next(r for r in db.runs() if r.name == "weather")
        n = len(build_replay(db.run(run.id)))
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE runs SET status = 'running', ended_at = NULL WHERE id = ?", [run.id])
    conn.commit()
    return run, n, conn


def test_a_run_being_recorded_refreshes_and_follows_new_steps(
        sample_db: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, n, conn = running_copy(sample_db, db_path)
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    at = app_test("replay")
    at.query_params["run"] = run.id  # no step: a live run opens at its newest step
    at.run()
    assert not at.exception
    assert at.session_state["lt_step"] == n - 1
    g = graph(at)
    assert (g["step"], len(g["run"]["steps"]), g["key"]) == (n - 1, n, f"{run.id}:{n}:running")
    assert g["live_ms"] == 2000  # the browser asks for a reload while the run is recorded
    # the recorder appends a step: watching the last step follows it
    last = conn.execute("SELECT MAX(seq), MAX(ts), MAX(lap) FROM events WHERE run_id = ?",
                        [run.id]).fetchone()
    conn.execute("INSERT INTO events(run_id, seq, ts, hook, phase, lap) VALUES (?, ?, ?, ?, ?, ?)",
                 [run.id, last[0] + 1, last[1] + 0.01, "before_model", "fire", last[2] + 1])
    conn.commit()
    browser_sends(at, "reload", "1732970000000")
    assert not at.exception
    assert at.session_state["lt_step"] == n
    g = graph(at)  # a new version of the run: the browser loads it again, in place
    assert (g["step"], len(g["run"]["steps"]), g["key"]) == (n, n + 1, f"{run.id}:{n + 1}:running")
    assert at.query_params["step"] in (str(n + 1), [str(n + 1)])
    # the run ends with a last step: the page follows it, the header says the run
    # completed and the reloads stop
    badges = " ".join(m.value for m in at.markdown)
    assert "-badge[running]" in badges and "-badge[completed]" not in badges
    conn.execute("INSERT INTO events(run_id, seq, ts, hook, phase, lap) VALUES (?, ?, ?, ?, ?, ?)",
                 [run.id, last[0] + 2, last[1] + 0.02, "after_agent", "fire", last[2] + 1])
    conn.execute("UPDATE runs SET status = 'completed', ended_at = 1 WHERE id = ?", [run.id])
    conn.commit()
    conn.close()
    browser_sends(at, "reload", "1732970002000")
    assert not at.exception
    assert at.session_state["lt_step"] == n + 1
    assert graph(at)["key"] == f"{run.id}:{n + 2}:completed"
    badges = " ".join(m.value for m in at.markdown)
    assert "-badge[completed]" in badges and "-badge[running]" not in badges
    assert graph(at)["live_ms"] == 0
    # a finished run opened without a step starts at its first step
    other = app_test("replay")
    other.query_params["run"] = run.id
    other.run()
    assert not other.exception
    assert other.session_state["lt_step"] == 0 and graph(other)["live_ms"] == 0


def test_a_live_run_watched_before_its_end_stays_where_it_is(
        sample_db: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the last step follows new steps: a step the user went back to stays."""
    run, n, conn = running_copy(sample_db, db_path)
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    at = app_test("replay", run=run.id).run()
    assert at.session_state["lt_step"] == n - 1
    report_step(at, 3)  # the user went back
    last = conn.execute("SELECT MAX(seq), MAX(ts), MAX(lap) FROM events WHERE run_id = ?",
                        [run.id]).fetchone()
    conn.execute("INSERT INTO events(run_id, seq, ts, hook, phase, lap) VALUES (?, ?, ?, ?, ?, ?)",
                 [run.id, last[0] + 1, last[1] + 0.01, "before_model", "fire", last[2] + 1])
    conn.commit()
    conn.close()
    browser_sends(at, "reload", "1732970000000")
    assert not at.exception
    assert at.session_state["lt_step"] == 3
    assert graph(at)["step"] == 3 and len(graph(at)["run"]["steps"]) == n + 1


def test_timeline_groups_tool_lanes_by_name_for_many_calls(
        sample_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.screens.timeline.timeline as tl

    with TraceDB(sample_db) as db:
        run = next(r for r in db.runs() if r.name == "shopping")  # five calls, three tools
        rp = build_replay(db.run(run.id))
    monkeypatch.setattr(tl, "MAX_CALL_LANES", 1)
    names = {e.payload.get("name") for e in rp.run.events
             if e.hook == "wrap_tool_call" and isinstance(e.payload, dict) and e.payload.get("name")}
    lanes = {r["lane"] for r in tl.spans(rp) if r["lane"].startswith("tool ")}
    assert lanes == {f"tool {n}" for n in names}


def test_odd_message_positions_do_not_break_the_pane(
        sample_db: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A position is an attribute of the message in the replayer's list
    (``data-position``, set with setAttribute): a crafted file can hold text there,
    or repeat one; the page still renders, the position travels as data and no
    markup gets through."""
    import shutil

    shutil.copy(sample_db, db_path)
    conn = sqlite3.connect(db_path)
    rid = conn.execute("SELECT id FROM runs WHERE name = 'weather'").fetchone()[0]
    conn.execute("UPDATE messages SET position = 'x</style><img src=x>' "
                 "WHERE run_id = ? AND position = 1", [rid])
    conn.execute("UPDATE messages SET position = 0 WHERE run_id = ? AND position = 2", [rid])
    conn.commit()
    conn.close()
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    at = app_test("replay")
    at.query_params["run"] = rid
    at.query_params["step"] = "999"
    at.run()
    assert not at.exception and not at.error
    assert not any("<img" in h.proto.body for h in at.get("html"))
    data = graph(at)["run"]
    positions = [m["pos"] for m in data["messages"]]
    assert "x</style><img src=x>" in positions and positions.count(0) >= 2
    assert len(views_at(data)[-1]) == len(data["messages"])


def test_a_run_with_no_events_renders_on_every_page(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    connect(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO runs(id, name, status, started_at) VALUES "
                 "('empty-run', 'nothing yet', 'running', 1.0)")
    conn.commit()
    conn.close()
    monkeypatch.setenv("LOOPTRACE_DB", str(db_path))
    for page in PAGES:
        at = app_test(page)
        at.query_params["run"] = "empty-run"
        at.run()
        assert not at.exception and not at.error, (page, at.exception, at.error)
        if page in ("replay", "presenter"):
            g = graph(at)
            assert (g["step"], g["run"]["steps"], g["live_ms"]) == (0, [], 2000)


def test_hooks_no_middleware_used_are_pass_through_points(sample_db: Path) -> None:
    from tracer.vocab.hooks import HOOK_NAMES

    with TraceDB(sample_db) as db:
        replays = {r.name: build_replay(db.run(r.id)) for r in db.runs()}
    # the hand-rolled loop has no middleware at all: drawn as the loop, with no hook
    bare = replays["weather_loop"]
    assert replay_json(bare)["shape"] == "loop"
    assert replay_json(bare)["passthrough"] == [] == replay_json(bare)["unknown"]
    # a create_agent run traced by TraceMiddleware uses every hook: none passes through
    assert replay_json(replays["weather"])["passthrough"] == []
    # the subagent sees only some hooks: the others pass through
    sub = replays["researcher"]
    assert set(replay_json(sub)["passthrough"]) == set(HOOK_NAMES) - set(sub.used_hooks)
    assert all(replay_json(rp)["passthrough"] == passthrough_hooks(rp)
               for rp in replays.values() if replay_json(rp)["shape"] == "agent")
