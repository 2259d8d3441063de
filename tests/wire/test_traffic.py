"""Runs from traffic: the seed's hand-rolled loop on each provider's own SDK, through
the proxy, becomes one run per loop that replays, checks, diffs and exports."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from tracer import TraceMiddleware
from tracer.checks.run import check_run
from tracer.cli import main
from tracer.demo.providers import chat_model, scenario_tools
from tracer.interop.html_export import export_html
from tracer.read.captions import captions
from tracer.read.diff import diff_runs
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.wire import WireServer
from tracer.wire.capture import WireRecorder
from tracer.wire.loops import LOOPS, get_weather
from tracer.wire.scenarios import SHOPPING_PROMPT, WEATHER_PROMPT, WEATHER_SYSTEM
from tracer.wire.traffic import build_runs

WEATHER = {"Oslo": get_weather("Oslo"), "Bergen": get_weather("Bergen")}


def _loop(db: Path, sdk: str, *, stream: bool = False, drop: bool = False,
          ollama_ids: bool = True) -> str:
    with WireServer(mode="emulate", script="weather", db=db, ollama_ids=ollama_ids) as srv:
        return LOOPS[sdk](srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM, stream=stream,
                          drop=drop)


def _only_run(db: Path):  # type: ignore[no-untyped-def]
    with TraceDB(db) as t:
        runs = t.runs()
        assert len(runs) == 1, [r.name for r in runs]
        return t.run(runs[0].id), t.wire(runs[0].id)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("sdk", ["openai", "openai-responses", "anthropic", "ollama"])
def test_each_sdk_loop_is_one_run(tmp_path: Path, sdk: str, stream: bool) -> None:
    db = tmp_path / "t.db"
    answer = _loop(db, sdk, stream=stream)
    assert answer.startswith("Here is the weather: Oslo: Light snow")
    run, wire = _only_run(db)
    assert run.summary.source == "wire" and run.observed == "wire"
    assert run.summary.status == "completed" and run.summary.laps == 2
    assert run.summary.name.startswith(f"{sdk}: What's the weather")
    # the conversation, as the loop built it (the system prompt apart)
    kinds = [m.type for m in run.messages]
    assert kinds == ["human", "ai", "tool", "tool", "ai"]
    ai = run.messages[1]
    calls = ai.tool_calls
    assert [(c["name"], c["args"]) for c in calls] == [
        ("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Bergen"})]
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == 2 and all(ids)
    # one result per call, matched by id, in order, with the tool's own text
    assert [m.tool_call_id for m in run.messages[2:4]] == ids
    assert [m.text for m in run.messages[2:4]] == [WEATHER["Oslo"], WEATHER["Bergen"]]
    assert run.messages[4].text.startswith("Here is the weather: Oslo:")
    assert not any(i.startswith("wire-") for i in ids)  # the server sent them
    if sdk == "ollama":  # ... and the client dropped them: results paired by order
        assert "by order" in run.metadata["results"]
        assert "ids" not in run.metadata
    else:
        assert "results" not in run.metadata
    # the replay: model call, two results sent back, model call, end; no hook invented
    rp = build_replay(run)
    steps = [(s.event.hook, s.event.phase, s.event.tool_call_id) for s in rp.steps]
    assert steps == [("run", "start", None), ("model", "enter", None), ("model", "exit", None),
                     ("tool", "exit", ids[0]), ("tool", "exit", ids[1]),
                     ("model", "enter", None), ("model", "exit", None), ("run", "end", None)]
    assert "sent back with the next request" in captions(rp)[rp.steps[3].index]
    assert "keeps no state" in captions(rp)[rp.steps[5].index]
    assert "from outside" in captions(rp)[rp.steps[0].index]
    # the second call received the whole history, and the system prompt
    assert [m.type for m in rp.messages_at(5)] == ["human", "ai", "tool", "tool"]
    assert rp.system_prompt() == WEATHER_SYSTEM
    # usage and stop reason came from the wire
    exit1 = rp.steps[2].event.payload
    assert exit1["tool_calls"] == 2 and exit1["usage"]["total_tokens"] > 0
    # each exchange linked to its model call
    enters = [s.event.seq for s in rp.steps if s.event.phase == "enter"]
    assert [w["seq"] for w in wire] == enters
    # the correct loop has no error to report
    assert not [f for f in check_run(run) if f.severity == "error"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_an_older_ollama_server_sends_no_ids(tmp_path: Path, stream: bool) -> None:
    """Before 0.12.10 the server sent no tool call ids: looptrace makes them up to
    pair results with calls, and the run says so."""
    db = tmp_path / "t.db"
    _loop(db, "ollama", stream=stream, ollama_ids=False)
    run, wire = _only_run(db)
    assert '"id"' not in wire[0]["response_body" if not stream else "chunks"]
    assert [c["id"] for c in run.messages[1].tool_calls] == ["wire-1-0", "wire-1-1"]
    assert [m.tool_call_id for m in run.messages[2:4]] == ["wire-1-0", "wire-1-1"]
    assert "made up" in run.metadata["ids"]


@pytest.mark.parametrize("sdk", ["openai", "openai-responses", "anthropic", "ollama"])
def test_dropped_parallel_result_is_caught(tmp_path: Path, sdk: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "t.db"
    if sdk == "ollama":  # Ollama's server takes such a history
        _loop(db, sdk, drop=True)
    else:  # the others answer 400, as the real APIs do, and the SDK raises
        with pytest.raises(Exception, match="400") as raised:
            _loop(db, sdk, drop=True)
        assert type(raised.value).__name__ == "BadRequestError"
    run, _ = _only_run(db)
    assert [m.type for m in run.messages][:3] == ["human", "ai", "tool"]
    if sdk != "ollama":
        assert run.summary.status == "error"
        refused = [e.payload["error"] for e in run.events if e.hook == "model"
                   and e.phase == "error"]
        assert len(refused) == 1 and refused[0].startswith("HTTP 400: ")
    errors = [f for f in check_run(run) if f.severity == "error"]
    assert {f.rule for f in errors} == {"dangling-tool-call"}
    missing = run.messages[1].tool_calls[1]["id"]
    assert all(missing in f.message for f in errors)
    assert main(["check", "--db", str(db)]) == 1
    assert "dangling-tool-call" in capsys.readouterr().out


def test_loops_through_one_proxy_stay_apart(tmp_path: Path) -> None:
    """Two loops at once and one after the other, on two SDKs: three runs, each
    with its own exchanges."""
    db = tmp_path / "t.db"
    with WireServer(mode="emulate", script="weather", db=db) as srv:
        threads = [threading.Thread(target=LOOPS[s], args=(srv.url, WEATHER_PROMPT))
                   for s in ("openai", "anthropic")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        LOOPS["openai"](srv.url, WEATHER_PROMPT, stream=True)
    with TraceDB(db) as t:
        runs = t.runs()
        assert len(runs) == 3
        for r in runs:
            run = t.run(r.id)
            assert [m.type for m in run.messages] == ["human", "ai", "tool", "tool", "ai"]
            wire = t.wire(r.id)
            assert len(wire) == 2
            provider = "anthropic" if r.name.startswith("anthropic") else "openai"
            assert {w["provider"] for w in wire} == {provider}


def test_traced_run_and_untraced_loop_at_once(tmp_path: Path) -> None:
    """A traced agent and a hand-rolled loop call the same proxy at the same time:
    the agent's exchanges go to its run, the loop's make a run of their own."""
    db = str(tmp_path / "t.db")

    def slow(request):  # type: ignore[no-untyped-def]
        from tracer.wire.scenarios import auto

        time.sleep(0.2)  # the two loops' calls overlap
        return auto(request)

    with WireServer(mode="emulate", script=slow, db=db) as srv:
        tm = TraceMiddleware(db=db, run_name="traced")
        agent = tm.attach(create_agent(chat_model("openai", srv.url),
                                       tools=scenario_tools("shopping"), middleware=[tm]))
        loop = threading.Thread(target=LOOPS["anthropic"], args=(srv.url, WEATHER_PROMPT))
        loop.start()
        agent.invoke({"messages": [HumanMessage(SHOPPING_PROMPT)]})
        loop.join()
        tm.flush()
    with TraceDB(db) as t:
        runs = {r.name.split(":")[0]: r for r in t.runs()}
        assert set(runs) == {"traced", "anthropic"}
        traced = t.wire(runs["traced"].id)
        assert traced and {w["provider"] for w in traced} == {"openai"}
        traced_run = t.run(runs["traced"].id)
        enters = {e.seq for e in traced_run.events if e.hook == "wrap_model_call"
                  and e.phase == "enter"}
        assert {w["seq"] for w in traced} <= enters
        loop_rows = t.wire(runs["anthropic"].id)
        assert len(loop_rows) == 2 and {w["provider"] for w in loop_rows} == {"anthropic"}


def _rows(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM wire ORDER BY id")]
    finally:
        conn.close()


def _unlinked_loops(db: Path, *loops: tuple[str, str]) -> None:
    """Record exchanges without turning them into runs (an older proxy did that)."""
    rec = WireRecorder(db, traffic=False)
    with WireServer(mode="emulate", script="auto", recorder=rec) as srv:
        for sdk, prompt in loops:
            LOOPS[sdk](srv.url, prompt)


def test_traffic_command_turns_old_exchanges_into_runs(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "t.db"
    _unlinked_loops(db, ("openai", WEATHER_PROMPT), ("ollama", WEATHER_PROMPT))
    assert all(r["run_id"] is None for r in _rows(db)) and len(_rows(db)) == 4
    assert main(["traffic", "--db", str(db)]) == 0
    assert "2 runs from traffic" in capsys.readouterr().out
    assert all(r["run_id"] for r in _rows(db))
    with TraceDB(db) as t:
        assert sorted(r.name.split(":")[0] for r in t.runs()) == ["ollama", "openai"]
    assert main(["traffic", "--db", str(db)]) == 0  # nothing left: nothing doubled
    assert "0 runs from traffic" in capsys.readouterr().out
    assert main(["traffic", "--db", str(tmp_path / "none.db")]) == 1


def _edit_request(db: Path, row_id: int, fn) -> None:  # type: ignore[no-untyped-def]
    conn = sqlite3.connect(db)
    try:
        body = json.loads(conn.execute("SELECT request_body FROM wire WHERE id = ?",
                                       [row_id]).fetchone()[0])
        fn(body)
        with conn:
            conn.execute("UPDATE wire SET request_body = ? WHERE id = ?",
                         [json.dumps(body), row_id])
    finally:
        conn.close()


def test_a_change_of_system_prompt_or_model_is_shown(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    _unlinked_loops(db, ("openai", WEATHER_PROMPT))
    second = _rows(db)[1]["id"]

    def change(body: dict) -> None:
        body["model"] = "gpt-4.1"
        body["messages"].insert(0, {"role": "system", "content": "Be brief."})

    _edit_request(db, second, change)
    build_runs(db)
    run, _ = _only_run(db)
    rp = build_replay(run)
    enter2 = [s for s in rp.steps if s.event.hook == "model" and s.event.phase == "enter"][1]
    assert enter2.event.payload["changed"] == ["system prompt", "model"]
    assert "Changed since the previous call: system prompt, model." in captions(rp)[enter2.index]


def test_a_history_that_does_not_extend_starts_a_new_run(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    _unlinked_loops(db, ("openai", WEATHER_PROMPT))
    second = _rows(db)[1]["id"]
    # the second request rewrites the first user turn: not the same conversation
    _edit_request(db, second,
                  lambda body: body["messages"][0].update(content="Weather in Rome?"))
    build_runs(db)
    with TraceDB(db) as t:
        runs = sorted(t.runs(), key=lambda r: r.started_at)
        assert len(runs) == 2
        first, other = (t.run(r.id) for r in runs)
    assert first.summary.laps == 1 and other.summary.laps == 1
    assert [m.type for m in other.messages] == ["human", "ai", "tool", "tool", "ai"]


def test_a_follow_up_continues_the_run(tmp_path: Path) -> None:
    """A conversation that goes on after a final answer is the same run."""
    db = tmp_path / "t.db"
    rec = WireRecorder(db, traffic=False)
    with WireServer(mode="emulate", script="echo", recorder=rec) as srv:
        from openai import OpenAI

        client = OpenAI(base_url=srv.url + "/v1", api_key="sk-x", max_retries=0)
        messages = [{"role": "user", "content": "hello"}]
        for follow_up in ("and again", None):
            reply = client.chat.completions.create(model="m", messages=messages)
            messages.append(reply.choices[0].message.model_dump(exclude_none=True))
            if follow_up:
                messages.append({"role": "user", "content": follow_up})
    build_runs(db)
    run, wire = _only_run(db)
    assert run.summary.status == "completed" and len(wire) == 2
    assert [m.type for m in run.messages] == ["human", "ai", "human", "ai"]
    rp = build_replay(run)
    assert [(s.event.hook, s.event.phase) for s in rp.steps].count(("run", "start")) == 2
    assert "follow-up" in captions(rp)[[s for s in rp.steps if s.event.hook == "run"][2].index]


def test_an_error_response_is_a_failed_model_call(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    _unlinked_loops(db, ("openai", WEATHER_PROMPT))
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE wire SET status = 400, response_body = ? WHERE id = ?",
                     [json.dumps({"error": {"message": "tool_call_id missing"}}),
                      _rows(db)[1]["id"]])
    conn.close()
    build_runs(db)
    run, _ = _only_run(db)
    assert run.summary.status == "error"
    errors = [(e.hook, e.phase, e.payload["error"]) for e in run.events if e.phase == "error"]
    assert errors == [("model", "error", "HTTP 400: tool_call_id missing"),
                      ("run", "error", "HTTP 400: tool_call_id missing")]


def test_exchanges_that_are_not_model_calls_are_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    _unlinked_loops(db, ("openai", WEATHER_PROMPT))
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE wire SET request_body = 'not json' WHERE id = ?",
                     [_rows(db)[0]["id"]])
    conn.close()
    build_runs(db)
    rows = _rows(db)
    assert rows[0]["run_id"] is None and rows[0]["request_body"] == "not json"
    run, _ = _only_run(db)  # the second exchange alone still makes a run
    assert run.summary.laps == 1


def test_traffic_runs_diff_and_export(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    _unlinked_loops(db, ("openai", WEATHER_PROMPT), ("openai", WEATHER_PROMPT))
    build_runs(db)
    with TraceDB(db) as t:
        a, b = (t.run(r.id) for r in t.runs())
    d = diff_runs(a, b)
    assert d.identical, d
    out = export_html(db, a.id, tmp_path / "r.html")
    html = out.read_text("utf-8")
    # (replay_json) the loop alone: no hook drawn, not even as unknown
    assert '"shape":"loop"' in html and '"unknown":[]' in html
    assert "sent back with the next request" in html
