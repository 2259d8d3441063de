"""``tracer.replayer``: the JSON form of a replay (``replay_json``) that the one
replayer (``replayer.js``: the app's component and the HTML export) plays.

On every bundled sample trace: the message list the browser builds from the
per-step edits (``mv``, applied as ``replayer.js``'s ``messagesAt`` applies
them, written again in Python here) is exactly ``Replay.messages_at``; each
step's edges are ``graph_layout.step_edges``; every tool call has the colour
``tracer.read.palette`` gives it; ``x`` marks exactly the error steps. Then the data
stays data (valid JSON, no markup in the page), a run without steps, and the
script itself: trace text reaches the page through ``textContent`` only.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from tracer.interop.html_export import render_html, script_json
from tracer.read.captions import captions
from tracer.read.graph_layout import drawing, step_edges
from tracer.read.loader import Message, Run, TraceDB
from tracer.read.palette import colour_map
from tracer.read.steps import GRAPH_NODES, Replay, build_replay
from tracer.replayer import STEP_MS, is_error, replay_json, script, view_edit

ROOT = Path(__file__).resolve().parents[2]
REPLAYER_JS = ROOT / "tracer" / "replayer" / "replayer.js"
TEMPLATE = ROOT / "tracer" / "interop" / "templates" / "replay.html"


@pytest.fixture(scope="module")
def replays(sample_db: Path) -> dict[str, Replay]:
    """Every run of every sample trace (subagent runs too), by id."""
    with TraceDB(sample_db) as db:
        return {r.id: build_replay(db.run(r.id)) for r in db.runs()}


@pytest.fixture(scope="module")
def datas(replays: dict[str, Replay]) -> dict[str, dict[str, Any]]:
    return {rid: replay_json(rp, payloads=False) for rid, rp in replays.items()}


# -- the message list, step by step ----------------------------------------------------
def apply_edit(view: list[int], op: dict[str, Any] | None) -> list[int]:
    """One step of ``messagesAt`` in replayer.js: no edit keeps the list; ``f`` is the
    whole list; else keep the first ``b``, put each ``x`` ``[at, row]`` in place,
    append ``a``."""
    if not op:
        return view
    if "f" in op:
        return list(op["f"])
    out = view[:op["b"]]
    for at, x in op.get("x", []):
        out[at] = x
    return out + list(op.get("a", []))


def messages_at(data: dict[str, Any]) -> list[list[int]]:
    """The message rows each step shows, applying the edits forward from step 0."""
    out, view = [], []
    for st in data["steps"]:
        view = apply_edit(view, st.get("mv"))
        out.append(view)
    return out


def ident(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["key"], row["seq"], row["pos"], row["type"]


def m_ident(m: Message) -> tuple[Any, ...]:
    return m.key, m.seq, m.position, m.type


def test_the_edits_rebuild_messages_at_on_every_sample(
        replays: dict[str, Replay], datas: dict[str, dict[str, Any]]) -> None:
    edited = 0
    for rid, rp in replays.items():
        data = datas[rid]
        rows = data["messages"]
        assert len(data["steps"]) == len(rp)
        for i, view in enumerate(messages_at(data)):
            want = rp.messages_at(i)
            assert [ident(rows[x]) for x in view] == [m_ident(m) for m in want], (
                rp.run.summary.name, i)
        # one row per message object shown: never the same message twice in the table
        assert len({ident(r) for r in rows}) == len(rows), rp.run.summary.name
        edited += sum(1 for s in data["steps"] if s.get("mv") and ("x" in s["mv"]
                                                                    or "f" in s["mv"]))
    # (some sample replaces messages in place: a new version, a rewritten request)
    assert edited


def test_going_back_and_jumping_gives_the_same_lists(
        replays: dict[str, Replay], datas: dict[str, dict[str, Any]]) -> None:
    """``messagesAt`` restarts from step 0 when asked for an earlier step: the lists
    do not depend on the order the steps are visited in."""
    rng = random.Random(15)
    for rid, rp in replays.items():
        forward = messages_at(datas[rid])
        for i in rng.sample(range(len(rp)), min(len(rp), 5)):
            view: list[int] = []
            for st in datas[rid]["steps"][:i + 1]:
                view = apply_edit(view, st.get("mv"))
            assert view == forward[i]


def test_each_row_is_the_message_as_recorded(replays: dict[str, Replay],
                                             datas: dict[str, dict[str, Any]]) -> None:
    rp = next(r for r in replays.values() if r.run.summary.name == "weather")
    data = datas[rp.run.id]
    by_ident = {m_ident(m): m for m in (*rp.run.messages, *rp.run.revisions)}
    for row in data["messages"]:
        m = by_ident[ident(row)]
        assert row["tcid"] == m.tool_call_id and row["status"] == m.status
        assert [c["id"] for c in row["calls"]] == [c.get("id") for c in m.tool_calls]
    answer = next(r for r in data["messages"] if r["type"] == "tool")
    assert answer["text"] == "Light snow, -3°C, wind 4 m/s from the north."
    assert answer["tcid"] == "call_weather_1"


@pytest.mark.parametrize("seed", range(20))
def test_view_edit_turns_one_list_into_the_other(seed: int) -> None:
    rng = random.Random(seed)
    prev = [rng.randrange(40) for _ in range(rng.randrange(30))]
    cur = list(prev)
    for _ in range(rng.randrange(25)):
        what = rng.randrange(3)
        if what == 0:
            cur.append(rng.randrange(40))
        elif what == 1 and cur:
            cur[rng.randrange(len(cur))] = rng.randrange(40)
        elif cur:
            del cur[rng.randrange(len(cur)):]
    op = view_edit(prev, cur)
    assert (op is None) == (prev == cur)
    assert apply_edit(prev, op) == cur
    if cur[:len(prev)] == prev and len(cur) > len(prev):
        assert op == {"b": len(prev), "a": cur[len(prev):]}  # the usual step: appended


# -- the graph, the colours, the errors --------------------------------------------------
def test_each_steps_edges_are_step_edges(replays: dict[str, Replay],
                                         datas: dict[str, dict[str, Any]]) -> None:
    for rid, rp in replays.items():
        data = datas[rid]
        for i, (s, st) in enumerate(zip(data["steps"], rp.steps, strict=True)):
            assert s["r"] == step_edges(rp, i), (rp.run.summary.name, i)
            assert (s["n"], s["k"], s["c"], s["t"]) == (
                st.node, st.kind, captions(rp)[st.index], list(st.active_tools))
            assert s["e"] == (list(st.edge) if st.edge else None)
            assert {n for b, n in enumerate(GRAPH_NODES) if s["v"] >> b & 1} == set(st.visited)
            assert s["s"] == st.event.seq and s["h"] == st.event.hook
            assert set(st.new_keys) <= set(s["nk"])
            assert set(s.get("om", ())) == set(rp.omitted_at(i))
        # every jump a step takes comes with its path
        taken = {e for s in data["steps"] for e in s["r"]}
        layout: Any = drawing()
        edges = layout["loop"]["edges"] if data["shape"] == "loop" else layout["edges"]
        standard = {e["id"] for e in edges}
        assert set(data["jumps"]) == taken - standard


def test_every_tool_call_has_its_palette_colour(replays: dict[str, Replay],
                                               datas: dict[str, dict[str, Any]]) -> None:
    many = 0
    for rid, rp in replays.items():
        colours = datas[rid]["colours"]
        want = colour_map([*rp.run.messages, *rp.run.revisions])
        ids = {str(c.get("id")) for m in rp.run.messages for c in m.tool_calls if c.get("id")}
        ids |= {m.tool_call_id for m in rp.run.messages if m.tool_call_id}
        for cid in ids:
            assert colours[cid] == want[cid], (rp.run.summary.name, cid)
        assert colours == want
        # the calls in flight and the results' calls have one
        for s in datas[rid]["steps"]:
            assert all(t in colours for t in s["t"] if t in ids)
        many += len(ids) >= 2
    assert many  # (parallel calls: shopping asks for two prices at once)


def test_parallel_calls_in_flight_have_distinct_colours(
        replays: dict[str, Replay], datas: dict[str, dict[str, Any]]) -> None:
    rp = next(r for r in replays.values() if r.run.summary.name == "shopping")
    data = datas[rp.run.id]
    both = next(s["t"] for s in data["steps"] if len(s["t"]) == 2)
    assert sorted(both) == ["call_price_laptop", "call_price_mouse"]
    assert data["colours"][both[0]] != data["colours"][both[1]]


def test_x_marks_exactly_the_error_steps(replays: dict[str, Replay],
                                         datas: dict[str, dict[str, Any]]) -> None:
    errors = 0
    for rid, rp in replays.items():
        marked = [i for i, s in enumerate(datas[rid]["steps"]) if "x" in s]
        assert marked == [st.index for st in rp.steps if is_error(rp, st)], rp.run.summary.name
        assert all(datas[rid]["steps"][i]["x"] == 1 for i in marked)
        errors += len(marked)
    assert errors
    # shopping: the "unicorn" price look-up raises (index 15), the unknown tool (21)
    shop = next(r for r in replays.values() if r.run.summary.name == "shopping")
    assert [i for i, s in enumerate(datas[shop.run.id]["steps"]) if "x" in s] == [15, 21]


def find_next(data: dict[str, Any], kind: str, index: int) -> int | None:
    """The step the replayer's "Next model call / tool call / error" buttons go to
    from ``index`` (replayer.js ``find``: an error step counts as an error only)."""
    for i in range(index + 1, len(data["steps"])):
        s = data["steps"][i]
        if (s.get("x") if kind == "error" else s["k"] == kind and not s.get("x")):
            return i
    return None


def test_the_next_buttons_go_where_the_app_said(replays: dict[str, Replay],
                                               datas: dict[str, dict[str, Any]]) -> None:
    """The browser's "Next ..." jumps, from every step of every sample, are the app's
    ``RunView.find`` (the one definition of a step's kind letter)."""
    from app.data.run_view import build_run_view

    for rid, rp in replays.items():
        view = build_run_view(rp, with_findings=False)
        for kind in ("model", "tool", "error"):
            for i in range(len(rp)):
                assert find_next(datas[rid], kind, i) == view.find(i, kind), (
                    rp.run.summary.name, kind, i)


# -- the data stays data -------------------------------------------------------------------
def test_the_json_is_plain_json_without_payloads(replays: dict[str, Replay],
                                                 datas: dict[str, dict[str, Any]]) -> None:
    for rid, data in datas.items():
        text = json.dumps(data)  # no default=: every value is JSON already
        assert json.loads(text) == data
        assert all("pl" not in s for s in data["steps"])
        assert data["format"] == "looptrace-replay" and data["version"] == 2
        assert data["run"]["id"] == rid
    # with payloads, the page's step inspector has them
    rp = next(iter(replays.values()))
    full = replay_json(rp)
    assert [s["pl"] for s in full["steps"]] == [st.event.payload for st in rp.steps]


def test_a_hostile_samples_text_stays_data(replays: dict[str, Replay],
                                           datas: dict[str, dict[str, Any]]) -> None:
    rp = next(r for r in replays.values() if r.run.summary.name == "hostile-page")
    data = datas[rp.run.id]
    texts = [m["text"] for m in data["messages"]]
    assert any("<script>" in t for t in texts)  # the trace's text, exactly
    for d in (data, replay_json(rp, payloads=True)):
        text = script_json(d)
        assert "<" not in text and "</script" not in text.lower() and ">" not in text
        assert json.loads(text) == json.loads(json.dumps(d, default=str))
    page = render_html(rp)
    assert page.count("</script>") == 3  # the data block and the two scripts: no more
    assert "window.__pwned" not in page.split('id="looptrace-data">', 1)[0]


def test_a_run_with_no_steps(replays: dict[str, Replay]) -> None:
    weather = next(r for r in replays.values() if r.run.summary.name == "weather")
    run = weather.run
    for messages in ([], run.messages):
        rp = build_replay(Run(run.summary, [], list(messages)))
        assert len(rp) == 0
        data = replay_json(rp, payloads=False)
        json.dumps(data)
        assert data["steps"] == [] and data["jumps"] == {}
        # the stored conversation, shown as is
        assert [ident(data["messages"][x]) for x in data["view0"]] == [
            m_ident(m) for m in messages]
        assert data["run"]["id"] == run.id
        assert json.loads(script_json(replay_json(rp)))["steps"] == []
        render_html(rp)  # (the page too)


# -- the script ---------------------------------------------------------------------------------
HTML_SINKS = re.compile(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\s*\("
                        r"|new\s+Function\b|createContextualFragment|DOMParser")


def _code(js: str) -> str:
    """JavaScript without its comments (a comment may name what the code avoids)."""
    js = re.sub(r"/\*.*?\*/", "", js, flags=re.DOTALL)
    return re.sub(r"(?m)(^|[^:\\])//.*$", r"\1", js)


def test_the_replayer_never_parses_trace_text_as_html(replays: dict[str, Replay]) -> None:
    js = REPLAYER_JS.read_text("utf-8")
    assert js == script()
    assert not HTML_SINKS.search(js), HTML_SINKS.search(js)
    assert not HTML_SINKS.search(TEMPLATE.read_text("utf-8"))
    rp = next(r for r in replays.values() if r.run.summary.name == "hostile-page")
    page = render_html(rp)
    outside = re.sub(r'<script type="application/json" id="looptrace-data">.*?</script>', "",
                     page, flags=re.DOTALL)
    assert not HTML_SINKS.search(outside)
    # text goes in through textContent, and no attribute that runs code is set
    code = _code(js)
    assert "textContent" in code
    assert not re.search(r"""setAttribute\(\s*["']on""", code)
    assert not re.search(r"\.on[a-z]+\s*=", code)


def test_step_ms_is_the_scripts_default() -> None:
    js = REPLAYER_JS.read_text("utf-8")
    (default,) = re.findall(r"const STEP_MS = opts\.stepMs \|\| (\d+);", js)
    assert int(default) == STEP_MS == 1200
    # the speeds the app offers are the script's
    from app.kit.state import SPEEDS

    (speeds,) = re.findall(r"const SPEEDS = \[([^\]]*)\];", js)
    assert [float(x) for x in speeds.split(",")] == list(SPEEDS)


# -- a run sent a window at a time ---------------------------------------------------------
@pytest.mark.parametrize("size", [1, 5, 17])
def test_every_window_rebuilds_messages_at_from_its_first_step(
        replays: dict[str, Replay], datas: dict[str, dict[str, Any]], size: int) -> None:
    """A window of steps [a, b): its own message table, the edits applied from an empty
    list at a give ``messages_at`` exactly; the rest of each step as in the whole run;
    ``kinds`` and ``total`` describe the whole run (the scrubber, the jumps)."""
    for rid, rp in replays.items():
        whole = datas[rid]
        n = len(rp)
        for a in range(0, n, max(1, size)):
            part = replay_json(rp, payloads=False, window=(a, a + size))
            b = min(n, a + size)
            assert (part["offset"], part["total"], len(part["steps"])) == (a, n, b - a)
            assert len(part["kinds"]) == n
            assert part["kinds"] == "".join(
                "e" if s.get("x") else {"model": "m", "tool": "t", "interrupt": "i",
                                        "hook": "h", "run": "r"}.get(s["k"], "h")
                for s in whole["steps"])
            rows = part["messages"]
            for k, view in enumerate(messages_at(part)):
                assert [ident(rows[x]) for x in view] == [
                    m_ident(m) for m in rp.messages_at(a + k)], (rp.run.summary.name, a + k)
            strip = ("mv",)
            assert [{k: v for k, v in s.items() if k not in strip} for s in part["steps"]] == [
                {k: v for k, v in s.items() if k not in strip} for s in whole["steps"][a:b]]


def test_the_whole_run_carries_no_window_fields(datas: dict[str, dict[str, Any]]) -> None:
    for data in datas.values():
        assert not {"offset", "total", "kinds"} & set(data)
