"""Offline rendering with the adapters' own request builders, the side-by-side view,
and the annotations of the documented differences."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracer.demo.providers import record_provider_demos
from tracer.read.loader import TraceDB
from tracer.read.steps import build_replay
from tracer.wire.annotate import annotated_text, resolve
from tracer.wire.render import model_call, model_call_events, render_request
from tracer.wire.view import CAPTURED, RECORDED, RENDERED, call_at_step, call_view


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TraceDB, list[str]]]:
    db = tmp_path_factory.mktemp("demos") / "demos.db"
    ids = record_provider_demos(db)
    with TraceDB(db) as tdb:
        yield tdb, ids


def _by_name(tdb: TraceDB, ids: list[str]) -> dict[str, str]:
    return {tdb.summary(i).name or "": i for i in ids}


def test_provider_demos_record_both_scenarios_through_each_adapter(
        demos: tuple[TraceDB, list[str]]) -> None:
    tdb, ids = demos
    names = _by_name(tdb, ids)
    assert sorted(names) == sorted(f"{p}-{s}" for p in ("openai", "anthropic", "ollama")
                                   for s in ("weather", "shopping"))
    for name, rid in names.items():
        run = tdb.run(rid)
        assert run.summary.status == "completed", name
        calls = model_call_events(run)
        assert len(calls) == (2 if name.endswith("weather") else 5)
        assert [w["seq"] for w in tdb.wire(rid)] == [c.seq for c in calls]


def test_rendering_reproduces_every_captured_request(demos: tuple[TraceDB, list[str]]) -> None:
    """The offline builder gives exactly the body the adapter sent, for every call."""
    tdb, ids = demos
    checked = 0
    for rid in ids:
        run = tdb.run(rid)
        replay = build_replay(run)
        rows = {w["seq"]: w for w in tdb.wire(rid)}
        for enter in model_call_events(run):
            row = rows[enter.seq]
            captured = json.loads(row["request_body"])
            call = model_call(replay, enter)
            rendered = render_request(row["provider"], call.lc_messages(),
                                      model=captured["model"], tools=call.tools,
                                      stream=bool(captured.get("stream")))
            assert rendered == captured, f"{row['provider']} call {call.index}"
            checked += 1
    assert checked == 3 * (2 + 5)


def _turn(tdb: TraceDB, rid: str, index: int) -> Any:
    run = tdb.run(rid)
    replay = build_replay(run)
    return call_view(replay, model_call_events(run)[index], tdb.wire(rid))


def test_side_by_side_shows_the_documented_differences(
        demos: tuple[TraceDB, list[str]]) -> None:
    tdb, ids = demos
    rid = _by_name(tdb, ids)["ollama-shopping"]
    # The third call carries: text + 2 parallel calls, 2 results, a tool-only
    # turn (unicorn) and its error result.
    view = _turn(tdb, rid, 2)
    b = view.bodies
    assert b["ollama"].source == CAPTURED
    assert b["openai"].source == RENDERED and b["anthropic"].source == RENDERED
    oa, an, ol = b["openai"].request, b["anthropic"].request, b["ollama"].request

    # System prompt: a message for OpenAI and Ollama, top-level for Anthropic.
    assert oa["messages"][0] == {"role": "system", "content": an["system"]}
    assert ol["messages"][0]["role"] == "system"
    assert all(m["role"] != "system" for m in an["messages"])
    # Assistant turn that only calls a tool: null content vs a list of blocks.
    assert oa["messages"][5]["role"] == "assistant" and oa["messages"][5]["content"] is None
    assert [x["type"] for x in an["messages"][3]["content"]] == ["tool_use"]
    # Arguments: a JSON string vs an object (Anthropic input, Ollama arguments).
    assert oa["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"product": "laptop"}'
    assert an["messages"][1]["content"][1]["input"] == {"product": "laptop"}
    assert ol["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"product": "laptop"}
    # Results: role tool per result vs ONE user message of tool_result blocks.
    assert [m["role"] for m in oa["messages"][3:5]] == ["tool", "tool"]
    assert an["messages"][2]["role"] == "user"
    assert [x["type"] for x in an["messages"][2]["content"]] == ["tool_result"] * 2
    assert an["messages"][4]["content"][0]["is_error"] is True
    # Ids: OpenAI and Anthropic carry them (the same ones: LangChain's), Ollama none.
    assert oa["messages"][3]["tool_call_id"] == an["messages"][2]["content"][0]["tool_use_id"]
    assert "tool_call_id" not in json.dumps(ol) and '"id"' not in json.dumps(ol)

    # Every aspect is annotated for every provider, on a path that exists.
    aspects = {key: per for key, _title, per in view.aspects()}
    for key in ("system", "assistant_content", "arguments", "ids", "tool_results", "usage",
                "stop_reason"):
        assert key in aspects
        for provider, notes in aspects[key].items():
            assert notes, f"{provider} has no {key} annotation"
    for body in b.values():
        for note in body.request_notes:
            resolve(body.request, note.path)
        for note in body.response_notes:
            resolve(body.response, note.path)
    assert [n.where for n in b["anthropic"].request_notes if n.aspect == "system"] == ["$.system"]
    assert [n.where for n in b["openai"].request_notes if n.aspect == "arguments"] == [
        "$.messages[2].tool_calls[0].function.arguments",
        "$.messages[5].tool_calls[0].function.arguments"]
    assert any(n.where == "$.messages[4].content[0].is_error"
               for n in b["anthropic"].request_notes)
    # Responses: usage and stop reason where each provider puts them.
    stops = {p: [n.where for n in x.response_notes if n.aspect == "stop_reason"]
             for p, x in b.items()}
    assert stops == {"openai": ["$.choices[0].finish_reason"],
                     "anthropic": ["$.stop_reason"], "ollama": ["$.done_reason"],
                     # (LangChain keeps the recording provider's own key: Ollama's here)
                     "langchain": ["$.response_metadata.done_reason"]}
    # Said on every body: the API keeps no state, and no flag says the loop is done.
    for p, body in b.items():
        assert [n.where for n in body.request_notes if n.aspect == "stateless"] == [
            "$.messages"], p
        assert any(n.aspect == "done" and "not because of the stop reason" in n.note
                   for n in body.response_notes), p
    # LangChain's normalised call: name, args (a dict), id, type
    lc_call = b["langchain"].request["messages"][2]["tool_calls"][0]
    assert set(lc_call) == {"name", "args", "id", "type"} and lc_call["type"] == "tool_call"
    assert lc_call["args"] == {"product": "laptop"}
    assert b["openai"].response_source == RENDERED
    assert b["openai"].response["choices"][0]["finish_reason"] == "tool_calls"


def test_captured_body_wins_and_streamed_chunks_are_kept(
        demos: tuple[TraceDB, list[str]]) -> None:
    tdb, ids = demos
    rid = _by_name(tdb, ids)["anthropic-shopping"]
    view = _turn(tdb, rid, 0)
    an = view.bodies["anthropic"]
    assert an.source == CAPTURED and an.request["stream"] is True
    assert an.chunks[0].startswith("event: message_start")
    assert an.response["stop_reason"] == "tool_use"
    assert [n.where for n in an.response_notes if n.aspect == "usage"] == ["$.usage"]


def test_annotated_text_puts_each_note_on_its_line() -> None:
    body = {"system": "be brief", "messages": [{"role": "user", "content": "hi"}]}
    from tracer.wire.annotate import annotate_request

    text = annotated_text(body, annotate_request("anthropic", body))
    line = next(ln for ln in text.splitlines() if '"system"' in ln)
    assert "top-level `system`" in line
    assert json.loads("\n".join(ln.split("  <-- ")[0] for ln in text.splitlines()
                                if not ln.startswith("//"))) == body


def test_every_sample_trace_renders_for_every_provider(sample_db: Path) -> None:
    with TraceDB(sample_db) as tdb:
        runs = tdb.runs()
        assert runs
        viewed = 0
        for s in runs:
            run = tdb.run(s.id)
            replay = build_replay(run)
            rows = tdb.wire(s.id)
            for i in range(len(replay)):
                if replay.steps[i].kind != "model" or replay.steps[i].event.phase != "enter":
                    continue
                view = call_at_step(replay, i, rows)
                assert view is not None
                for p, body in view.bodies.items():
                    assert body.source in (CAPTURED, RENDERED, RECORDED), (s.name, p, body.error)
                    assert isinstance(body.request, dict) and body.request.get("messages")
                viewed += 1
        assert viewed > 10


def test_no_model_call_before_the_first_one(sample_db: Path) -> None:
    with TraceDB(sample_db) as tdb:
        s = tdb.runs()[0]
        replay = build_replay(tdb.run(s.id))
        assert call_at_step(replay, 0, []) is None


def test_folding_earlier_turns_keeps_the_latest_turn_whole() -> None:
    from tracer.wire.annotate import annotate_request, earlier_turns

    body = {"model": "m", "tools": [{"type": "function", "function": {"name": "f"}}],
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "u"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f",
                                                                   "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "r1"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c2", "type": "function", "function": {"name": "f",
                                                                   "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c2", "content": "r2"}]}
    notes = annotate_request("openai", body)
    assert earlier_turns(body) == [("messages", i) for i in range(4)]
    text = annotated_text(body, notes, above=True, fold=[("tools",)],
                          hide=earlier_turns(body))
    lines = text.splitlines()
    assert '  "tools": [ ... 1 item folded ... ],' in lines
    assert '    {"role": "assistant", ... 2 more keys folded ... },' in lines
    # The folded turn's inner notes are gone; the latest turn keeps all of its own.
    assert text.count("// content is null") == 1
    assert text.count("arguments are a JSON-encoded STRING") == 1
    assert "// system prompt" in text  # a note ON a folded message stays
    assert '"tool_call_id": "c2"' in text and '"tool_call_id": "c1"' not in text
    # Results are annotated on the latest group.
    assert [n.path for n in notes if n.aspect == "tool_results"] == [("messages", 5)]
