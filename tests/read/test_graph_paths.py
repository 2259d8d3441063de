"""The replay graph animates only edges that were taken.

A step is drawn over the standard edges only through pass-through points (hooks
no middleware used in the run); a step that skipped a node that ran (a
``jump_to``, ``after_agent`` sending the agent back, a tool's ``Command(goto)``,
a hand-rolled loop's own way) is one jump edge ``"a>b"`` drawn as an arc. The
runs here are hand-made ``Run`` / ``Event`` records. What the replayer draws at
a step is the step's ``r`` in the run's JSON (``tracer.replayer.replay_json``),
which must be ``graph_layout.step_edges``; the jump edges' paths travel in its
``jumps``. The last tests check the HTML export carries the same, and (with
Chromium) that the export and the app, one replayer, draw them.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_kit import store_on

from tracer.interop.html_export import render_html, replay_data
from tracer.read.captions import captions
from tracer.read.graph_layout import (
    EDGES,
    LOOP_EDGES,
    NODES,
    VIEWBOX,
    drawing,
    jump_path,
    passable_points,
    passthrough_hooks,
    route,
    shape,
    step_edges,
)
from tracer.read.loader import Event, Run, RunSummary, TraceDB
from tracer.read.steps import GRAPH_NODES, Replay, build_replay
from tracer.replayer import replay_json

TM = "TraceMiddleware"


# -- hand-made runs ----------------------------------------------------------------
def make_run(spec: list[tuple[Any, ...]], *, status: str = "completed") -> Replay:
    """A replay from ``(hook, phase, middleware[, payload[, tool_call_id]])`` tuples."""
    events = []
    lap = 0
    for seq, item in enumerate(spec):
        hook, phase, mw, *rest = item
        payload = rest[0] if rest else None
        tcid = rest[1] if len(rest) > 1 else None
        if hook in ("wrap_model_call", "model") and phase == "enter":
            lap += 1
        events.append(Event(run_id="r1", seq=seq, ts=1000.0 + seq, hook=hook, phase=phase,
                            duration_ms=1.0 if phase == "exit" else None, middleware=mw,
                            lap=lap, tool_call_id=tcid, task=None, payload=payload))
    summary = RunSummary(
        id="r1", parent_id=None, parent_tool_call_id=None, name="hand-made", thread_id=None,
        agent_name=None, status=status, started_at=1000.0, ended_at=2000.0, error=None,
        model=None, provider=None, input_tokens=None, output_tokens=None, total_tokens=None,
        source="test")
    return build_replay(Run(summary, events, []))


def model(mw: str | None = TM, calls: int = 1) -> list[tuple[Any, ...]]:
    hook = "wrap_model_call" if mw else "model"
    return [(hook, "enter", mw, {"messages": 1}), (hook, "exit", mw, {"tool_calls": calls})]


def tool(tcid: str, mw: str | None = TM, exit_payload: Any = None) -> list[tuple[Any, ...]]:
    hook = "wrap_tool_call" if mw else "tool"
    return [(hook, "enter", mw, {"name": "search"}, tcid),
            (hook, "exit", mw, exit_payload or {"status": "success"}, tcid)]


def hook(name: str, mw: str | None = TM, payload: Any = None) -> list[tuple[Any, ...]]:
    return [(name, "fire", mw, payload)]


START = [("run", "start", None)]
END = [("run", "end", None)]


def taken(rp: Replay) -> list[list[str]]:
    """The edges the replayer draws, one list per step that moved (checked against
    ``step_edges`` and the JSON's jump paths on the way)."""
    data = replay_json(rp, payloads=False)
    out = []
    for s, row in zip(rp.steps, data["steps"], strict=True):
        edges = row["r"]
        assert edges == step_edges(rp, s.index)
        for e in edges:
            if e not in (LOOP_EDGES if shape(rp) == "loop" else EDGES):
                a, _, b = e.partition(">")
                assert data["jumps"][e] == jump_path(a, b, shape(rp))
        if s.edge:
            out.append(edges)
        else:
            assert edges == []
    return out


def jumps(rp: Replay) -> list[dict[str, Any]]:
    """The jump edges of the run, in step order: [{"id", "d"}] (the replayer draws each
    only while its step shows)."""
    data = replay_json(rp, payloads=False)
    standard = LOOP_EDGES if shape(rp) == "loop" else EDGES
    return [{"id": e, "d": data["jumps"][e]} for row in data["steps"] for e in row["r"]
            if e not in standard]


def at_step(rp: Replay, i: int) -> dict[str, Any]:
    """Step ``i`` as the replayer is given it."""
    return replay_json(rp, payloads=False)["steps"][i]


STANDARD_LAP = [["START>before_agent"], ["before_agent>before_model"], ["before_model>model"],
                ["model>after_model"], ["after_model>tools"], ["tools>before_model"],
                ["before_model>model"], ["model>after_model"], ["after_model>after_agent"],
                ["after_agent>END"]]


# -- (a) a standard create_agent run: every hook used, the standard edges ------------
def test_a_standard_lap_with_every_hook_used_takes_the_standard_edges() -> None:
    rp = make_run(START + hook("before_agent") + hook("before_model") + model()
                  + hook("after_model") + tool("c1") + hook("before_model") + model(calls=0)
                  + hook("after_model") + hook("after_agent") + END)
    assert replay_json(rp)["passthrough"] == passthrough_hooks(rp) == []
    assert taken(rp) == STANDARD_LAP
    assert jumps(rp) == []


# -- (b) ModelCallLimitMiddleware jumps from before_model to the end -----------------
def test_a_jump_to_end_from_before_model_is_one_jump_edge_not_through_the_model() -> None:
    rp = make_run(START + hook("before_agent") + hook("before_model") + model()
                  + hook("after_model") + tool("c1") + hook("before_model")
                  + hook("before_model", "ModelCallLimitMiddleware",
                         {"update_keys": ["jump_to", "messages"], "jump_to": "end"})
                  + hook("after_agent") + END)
    edges = taken(rp)
    assert edges[-2:] == [["before_model>after_agent"], ["after_agent>END"]]
    i = next(s.index for s in rp.steps if s.edge == ("before_model", "after_agent"))
    g = at_step(rp, i)
    assert g["r"] == ["before_model>after_agent"]
    assert replay_json(rp)["jumps"] == {"before_model>after_agent":
                                        jump_path("before_model", "after_agent")}
    assert not any("model>after_model" in e or "after_model>" in e for e in g["r"])
    assert [e for es in edges for e in es if e not in EDGES] == ["before_model>after_agent"]


def test_a_jump_to_end_recorded_by_callbacks_only_skips_the_model_too() -> None:
    """Only ModelCallLimitMiddleware's hooks were used (no after_* middleware): the
    after_model and after_agent points pass through, the model node does not."""
    lim = "ModelCallLimitMiddleware"
    rp = make_run(START + hook("before_model", lim) + model(None) + tool("c1", None)
                  + hook("before_model", lim, {"jump_to": "end"}) + END)
    assert taken(rp) == [
        ["START>before_agent", "before_agent>before_model"], ["before_model>model"],
        ["model>after_model", "after_model>tools"], ["tools>before_model"],
        ["before_model>END"]]


# -- (c) a hook no middleware used is a pass-through point -----------------------------
def test_model_to_tools_passes_through_an_unused_after_model_point() -> None:
    mw = "SomeMiddleware"
    spec = (START + hook("before_agent", mw) + hook("before_model", mw) + model(mw)
            + tool("c1", mw) + hook("before_model", mw) + model(mw, calls=0)
            + hook("after_agent", mw) + END)
    rp = make_run(spec)
    assert "after_model" in replay_json(rp)["passthrough"]
    assert passable_points(rp) == {"after_model"}
    assert taken(rp) == [
        ["START>before_agent"], ["before_agent>before_model"], ["before_model>model"],
        ["model>after_model", "after_model>tools"], ["tools>before_model"],
        ["before_model>model"], ["model>after_model", "after_model>after_agent"],
        ["after_agent>END"]]
    assert jumps(rp) == []


# -- (d) a hand-rolled loop: no middleware hooks at all --------------------------------
def test_a_hand_rolled_loop_is_drawn_as_the_loop_with_no_hook_and_no_jump() -> None:
    rp = make_run(START + model(None) + tool("c1", None) + model(None, calls=0) + END)
    assert shape(rp) == "loop"
    edges = taken(rp)
    assert edges == [
        ["START>model"],  # no before_agent in a loop of its own
        ["model>tools"],  # the loop's "tool calls?" decision
        ["tools>model"],  # the loop's back edge
        ["model>END"],  # no after_agent either
    ]
    assert jumps(rp) == []  # every move is an edge of the loop
    data = replay_json(rp)
    assert data["shape"] == "loop" and data["passthrough"] == [] and data["unknown"] == []
    assert not any("jump" in captions(rp)[s.index] for s in rp.steps)


def test_a_loop_stopped_by_its_bound_moves_to_the_end_without_a_jump() -> None:
    """tools -> END (the loop's own bound): drawn while its step shows, never as a jump,
    and the caption says what the record shows."""
    rp = make_run(START + model(None) + tool("c1", None) + END)
    assert taken(rp)[-1] == ["tools>END"]
    data = replay_json(rp)
    assert "tools>END" in data["jumps"] and not any(s.get("j") for s in data["steps"])
    assert captions(rp)[rp.steps[-1].index].startswith("The loop ended right after its tools ran")
    assert "jump" not in captions(rp)[rp.steps[-1].index]


def test_a_move_no_event_explains_is_not_called_a_jump() -> None:
    """A create_agent run recorded without the callback handler: before_model -> after_agent
    with no jump_to recorded is drawn as a move, and the caption says nothing jumped."""
    rp = make_run(START + hook("before_agent") + hook("before_model") + model()
                  + hook("after_model") + tool("c1") + hook("before_model")
                  + hook("after_agent") + END)
    data = replay_json(rp)
    [row] = [r for r in data["steps"] if "before_model>after_agent" in r["r"]]
    assert "j" not in row
    assert "jumped" not in row["c"] and "no recorded event says why" in row["c"]


def test_the_bundled_hand_rolled_loop_never_passes_after_agent(sample_store: str) -> None:
    with TraceDB(sample_store) as db:
        run = next(r for r in db.runs() if r.name == "weather_loop")
        rp = build_replay(db.run(run.id))
    edges = [e for s in replay_json(rp)["steps"] for e in s["r"]]
    assert edges and not any("after_agent" in e or "before_agent" in e for e in edges)


# -- (e) after_agent sends the agent back to work ---------------------------------------
def test_after_agent_back_to_before_model_is_a_jump_that_goes_up() -> None:
    rp = make_run(START + hook("before_agent") + hook("before_model") + model(calls=0)
                  + hook("after_model")
                  + hook("after_agent", "ReviewMiddleware", {"jump_to": "model"})
                  + hook("before_model") + model(calls=0) + hook("after_model")
                  + hook("after_agent") + END)
    edges = taken(rp)
    assert edges == [
        ["START>before_agent"], ["before_agent>before_model"], ["before_model>model"],
        ["model>after_model"], ["after_model>after_agent"],
        ["after_agent>before_model"],
        ["before_model>model"], ["model>after_model"], ["after_model>after_agent"],
        ["after_agent>END"]]
    (j,) = jumps(rp)
    assert j["id"] == "after_agent>before_model"
    (_, y0), *_, (_, y1) = points(j["d"])
    assert y1 < y0  # a back jump goes up


# -- more jumps: a tool's Command(goto), an after_model jump, interrupts ---------------
def test_a_tools_command_goto_and_an_after_model_jump_to_model() -> None:
    rp = make_run(START + hook("before_agent") + hook("before_model") + model()
                  + hook("after_model")
                  + tool("c1", exit_payload={"status": "success", "command": True})
                  + model(calls=1)  # Command(goto="model"): before_model did not run
                  + hook("after_model", "HumanInTheLoopMiddleware", {"jump_to": "model"})
                  + model(calls=0) + hook("after_model")
                  + tool("c2") + hook("after_agent") + END)  # Command(goto=END)
    edges = taken(rp)
    assert edges == [
        ["START>before_agent"], ["before_agent>before_model"], ["before_model>model"],
        ["model>after_model"], ["after_model>tools"],
        ["tools>model"], ["model>after_model"], ["after_model>model"],
        ["model>after_model"], ["after_model>tools"], ["tools>after_agent"],
        ["after_agent>END"]]


def test_an_interrupt_and_its_resume_stay_on_the_node() -> None:
    hitl = "HumanInTheLoopMiddleware"
    rp = make_run(START + hook("before_agent") + hook("before_model") + model()
                  + [("after_model", "interrupt", hitl, {"interrupts": []}),
                     ("resume", "fire", None, {})]
                  + hook("after_model", hitl) + tool("c1") + hook("before_model")
                  + model(calls=0) + hook("after_model") + hook("after_agent") + END)
    assert taken(rp) == STANDARD_LAP
    i = next(s.index for s in rp.steps if s.event.hook == "resume")
    assert at_step(rp, i)["r"] == [] and at_step(rp, i)["n"] == "after_model"


# -- the pure router -------------------------------------------------------------------
def test_route_passes_only_pass_through_points() -> None:
    every = {"before_agent", "before_model", "after_model", "after_agent"}
    assert route("START", "model", every) == [
        "START>before_agent", "before_agent>before_model", "before_model>model"]
    assert route("START", "model", {"before_agent"}) == ["START>model"]
    assert route("model", "END", every) == [
        "model>after_model", "after_model>after_agent", "after_agent>END"]
    assert route("model", "END", {"after_model"}) == ["model>END"]
    assert route("before_model", "after_agent", every) == ["before_model>after_agent"]
    assert route("tools", "model", set()) == ["tools>model"]
    assert route("tools", "model", {"before_model"}) == [
        "tools>before_model", "before_model>model"]
    # never through model or tools, whatever is passable
    assert route("before_model", "tools", every | {"model"}) == ["before_model>tools"]
    # no step: the same node, or a new invocation at START
    assert route("model", "model", every) == []
    assert route("END", "START", every) == []
    assert route("after_agent", "before_model", every) == ["after_agent>before_model"]


# -- jump paths ------------------------------------------------------------------------
NUM = r"-?\d+(?:\.\d)?"
PATH_RE = re.compile(rf"^M{NUM} {NUM} C{NUM} {NUM}, {NUM} {NUM}, {NUM} {NUM}$")


def points(d: str) -> list[tuple[float, float]]:
    nums = [float(x) for x in re.findall(NUM, d)]
    return list(zip(nums[::2], nums[1::2]))


def bezier(p: list[tuple[float, float]], t: float) -> tuple[float, float]:
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = p
    u = 1 - t
    return (u**3 * x0 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t**3 * x3,
            u**3 * y0 + 3 * u * u * t * y1 + 3 * u * t * t * y2 + t**3 * y3)


def box(n: str) -> tuple[float, float, float, float]:
    x, y, w, h = NODES[n][:4]
    return x - w / 2, y - h / 2, x + w / 2, y + h / 2


def on_border(pt: tuple[float, float], n: str) -> bool:
    x0, y0, x1, y1 = box(n)
    x, y = pt
    return (x0 <= x <= x1 and y0 <= y <= y1) and (x in (x0, x1) or y in (y0, y1))


PAIRS = [(a, b) for a, b in itertools.permutations(GRAPH_NODES, 2)]


def test_every_jump_path_is_well_formed_distinct_and_inside_the_drawing() -> None:
    paths = {(a, b): jump_path(a, b) for a, b in PAIRS}
    assert len(set(paths.values())) == len(PAIRS), "a different path for every pair"
    _, _, width, height = VIEWBOX
    for (a, b), d in paths.items():
        assert PATH_RE.match(d), d
        p = points(d)
        assert on_border(p[0], a), (a, b, d)  # leaves a's box
        assert on_border(p[-1], b), (a, b, d)  # and arrives at b's
        for t in (i / 20 for i in range(21)):
            x, y = bezier(p, t)
            assert 4 <= x <= width - 4 and 0 <= y <= height, (a, b, d, t)
        # up for a back jump, down for a forward one
        ya, yb = NODES[a][1], NODES[b][1]
        assert (p[-1][1] < p[0][1]) == (yb < ya), (a, b, d)
        if "tools" not in (a, b):
            # an arc left of the spine, ending pointing right into b's box
            assert max(bezier(p, t)[0] for t in (0.3, 0.5, 0.7)) < min(box(a)[0], box(b)[0])
            assert p[-1][0] > p[-2][0]
    with pytest.raises(ValueError):
        jump_path("model", "model")


def test_the_drawn_edges_chain_from_the_steps_edge_on_every_sample(sample_store: str) -> None:
    with TraceDB(sample_store) as db:
        replays = [build_replay(db.run(r.id)) for r in db.runs()]
    for rp in replays:
        data = replay_json(rp, payloads=False)
        for s, row in zip(rp.steps, data["steps"], strict=True):
            assert row["r"] == step_edges(rp, s.index)
            if not s.edge or s.edge[1] == "START":
                assert row["r"] == []
                continue
            pairs = [e.split(">") for e in row["r"]]
            assert pairs[0][0] == s.edge[0] and pairs[-1][1] == s.edge[1]
            assert all(p[1] == q[0] for p, q in itertools.pairwise(pairs))
            for e in row["r"]:
                assert e in (LOOP_EDGES if data["shape"] == "loop" else EDGES) or (
                    e in data["jumps"])


# -- the HTML export draws the same ------------------------------------------------------
DATA_RE = re.compile(r'<script type="application/json" id="looptrace-data">(.*?)</script>',
                     re.DOTALL)


def test_the_html_export_carries_the_same_edges_and_jump_paths() -> None:
    rp = make_run(START + hook("before_agent") + hook("before_model") + model()
                  + hook("after_model") + tool("c1") + hook("before_model")
                  + hook("before_model", "ModelCallLimitMiddleware", {"jump_to": "end"})
                  + hook("after_agent") + END)
    data = replay_data(rp)
    assert [s["r"] for s in data["steps"]] == [step_edges(rp, i) for i in range(len(rp))]
    assert data["jumps"] == {"before_model>after_agent": jump_path("before_model", "after_agent")}
    page = json.loads(DATA_RE.search(render_html(rp)).group(1))
    assert page["jumps"] == data["jumps"]
    assert page["steps"] == json.loads(json.dumps(data["steps"], default=str))
    # the export's drawing is the app's: every standard edge with the same path data
    assert page["layout"] == drawing()
    assert {e["id"]: e["d"] for e in page["layout"]["edges"]} == EDGES


# -- in a real browser: the app and the export draw the jump, and only while it is taken --
JUMP_STEP = 12  # before_model -> after_agent in the recorded run below


def record_call_limit_jump(db: Path) -> str:
    """An agent whose model always asks for a tool, stopped by ModelCallLimitMiddleware
    (run_limit=1, exit_behavior="end"): before_model jumps to the end."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelCallLimitMiddleware
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool

    from tracer import TraceMiddleware
    from tracer.demo.models import ScriptedChatModel, call

    @lc_tool
    def search(query: str) -> str:
        """Search the web."""
        return "nothing new about " + query

    def script(messages: Any) -> AIMessage:
        k = sum(1 for m in messages if m.type == "ai")
        return AIMessage(content="", tool_calls=[call("search", {"query": f"try {k}"}, f"c{k}")])

    trace = TraceMiddleware(db=db, run_name="call-limit-jump")
    agent = create_agent(ScriptedChatModel(script=script), tools=[search],
                         middleware=[trace, ModelCallLimitMiddleware(run_limit=1,
                                                                     exit_behavior="end")])
    # attached: the callback handler records the limit's before_model and its jump_to
    agent = trace.attach(agent)
    agent.invoke({"messages": [("user", "Find something new")]})
    trace.flush()
    with TraceDB(db) as tdb:
        return tdb.runs()[0].id


def _jump(db: str) -> tuple[str, str, Replay]:
    run_id = record_call_limit_jump(db)
    with TraceDB(db) as tdb:
        rp = build_replay(tdb.run(run_id))
    return db, run_id, rp


@pytest.fixture(scope="module")
def jump_run(engine: str, tmp_path_factory: pytest.TempPathFactory,
             pg_url: str | None) -> tuple[str, str, Replay]:
    """The call-limit jump recorded into a store on each engine."""
    return _jump(store_on(engine, tmp_path_factory.mktemp("jump"), pg_url, "jump.db"))


@pytest.fixture(scope="module")
def jump_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Replay]:
    """The same run in a SQLite file, for the browser tests (what they test is the
    drawing, which reads the same replay whatever the engine)."""
    return _jump(str(tmp_path_factory.mktemp("jump-file") / "jump.db"))


def test_the_recorded_call_limit_run_has_the_jump(jump_run: tuple[str, str, Replay]) -> None:
    _, _, rp = jump_run
    jumped = [(i, s["r"], s.get("j")) for i, s in enumerate(replay_json(rp)["steps"])
              if any(e not in EDGES for e in s["r"])]
    assert jumped == [(JUMP_STEP, ["before_model>after_agent"], 1)]  # said by an event
    assert captions(rp)[rp.steps[JUMP_STEP].index].startswith(
        "ModelCallLimitMiddleware.before_model (to end) jumped from before_model straight "
        "to after_agent.")


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  reduced_motion="reduce")
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    try:
        yield pg
    finally:
        context.close()


GRAPH = '[data-testid="lt-replayer"] [data-testid="lt-graph"]'


def expect_the_jump_only_at_its_step(page: Any) -> None:
    """The replayer (export or app) shows step JUMP_STEP: the jump drawn, nothing else
    taken; one step on, the jump is gone and after_agent>END is taken."""
    from playwright.sync_api import expect

    root = page.locator('[data-testid="lt-replayer"]')
    graph = page.locator(GRAPH)
    expect(graph).to_have_attribute("data-step", str(JUMP_STEP))
    jump = graph.locator('g.jumps g.edge.jump[data-edge="before_model>after_agent"] path')
    expect(jump).to_have_count(1)
    expect(jump).to_have_attribute("d", jump_path("before_model", "after_agent"))
    expect(root).to_have_attribute("data-jump", "1")
    expect(graph.locator("g.edge.taken")).to_have_count(1)  # the jump, nothing else
    for eid in ("before_model>model", "model>after_model", "after_model>after_agent"):
        expect(graph.locator(f'g.edge[data-edge="{eid}"]')).not_to_have_class(
            re.compile(r"\btaken\b"))
    root.locator('[data-action="next"]').click()
    expect(graph).to_have_attribute("data-step", str(JUMP_STEP + 1))
    expect(graph.locator("g.jumps g")).to_have_count(0)
    expect(root).to_have_attribute("data-jump", "0")
    expect(graph.locator('g.edge.taken[data-edge="after_agent>END"]')).to_have_count(1)


def test_the_html_export_draws_the_jump_only_at_its_step(
        jump_file: tuple[str, str, Replay], page: Any, tmp_path: Path) -> None:
    from tracer.interop.html_export import export_html

    db, run_id, _ = jump_file
    out = export_html(db, run_id, tmp_path / "jump.html")
    page.goto(out.as_uri() + f"#step={JUMP_STEP + 1}")  # (links count steps from 1)
    expect_the_jump_only_at_its_step(page)


def test_the_app_draws_the_jump_only_at_its_step(
        jump_file: tuple[str, str, Replay], page: Any) -> None:
    from browser_support import ARTIFACTS, streamlit_server, wait_connected
    from playwright.sync_api import expect

    db, run_id, _ = jump_file
    with streamlit_server(db) as url:
        page.goto(f"{url}/replay?run={run_id}&step={JUMP_STEP + 1}")  # (counted from 1)
        wait_connected(page)
        # (cold start: the first script run of a fresh server imports the tracer)
        page.locator(GRAPH).wait_for(timeout=30_000)
        expect(page.locator(GRAPH)).to_have_attribute("data-step", str(JUMP_STEP),
                                                      timeout=30_000)
        ARTIFACTS.mkdir(exist_ok=True)
        page.locator(GRAPH).screenshot(path=str(ARTIFACTS / "graph-jump.png"))
        expect_the_jump_only_at_its_step(page)


def test_a_hook_on_the_recorded_stack_is_a_node_even_where_it_never_fired(
        sample_store: str) -> None:
    """stock-check fails in its tool: TraceMiddleware's after_agent never fires, but the
    stack recorded with attach puts it there, so it is drawn as a node (not a point that
    says no middleware is on it) and nothing passes through it."""
    with TraceDB(sample_store) as db:
        run = next(r for r in db.runs() if r.name == "stock-check")
        rp = build_replay(db.run(run.id))
    assert "after_agent" not in rp.used_hooks  # it never fired
    assert "after_agent" not in passthrough_hooks(rp)
    assert "after_agent" not in passable_points(rp)
    assert "after_agent" not in replay_json(rp)["passthrough"]
