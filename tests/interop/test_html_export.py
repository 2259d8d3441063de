"""``tracer.interop.html_export``: one self-contained, offline, inert HTML replay file.

Non-browser checks of the file itself (the browser test that opens it from disk
lives elsewhere): no URL outside the embedded data, a strict CSP, hostile trace
text inert inside the JSON block, and the embedded data faithful to the replay.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from pg_kit import store_on

from tracer import TraceMiddleware
from tracer.cli import main
from tracer.demo.models import ScriptedChatModel, call, turn_script
from tracer.interop.exchange import sample_files
from tracer.interop.html_export import export_html, render_html, script_json
from tracer.read.captions import captions
from tracer.read.graph_layout import drawing, step_edges
from tracer.read.loader import TraceDB
from tracer.read.steps import GRAPH_NODES, build_replay
from tracer.replayer import script, style

HOSTILE = ('</script><script>alert(1)</script><img src=x onerror=alert(2)> '
           '![x](http://evil.example/x.png) <!-- \u2028\u2029 & &amp; "quoted"')
DATA_RE = re.compile(
    r'<script type="application/json" id="looptrace-data">(.*?)</script>', re.DOTALL)


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return HOSTILE


def record_hostile(db: Path) -> str:
    mw = TraceMiddleware(db=db, run_name="hostile </title><script>alert(3)</script>")
    model = ScriptedChatModel(script=turn_script([
        AIMessage(content="", tool_calls=[
            call("fetch_page", {"url": "https://evil.example/</script>"}, "c1"),
            call("fetch_page", {"url": "http://evil.example/2"}, "c2")]),
        AIMessage(content="Summary: " + HOSTILE),
    ]))
    agent = create_agent(model, tools=[fetch_page], middleware=[mw],
                         system_prompt="Be careful <script>alert(4)</script>")
    agent.invoke({"messages": [("user", "Read " + HOSTILE)]})
    mw.flush()
    with TraceDB(db) as tdb:
        return tdb.runs()[0].id


@pytest.fixture(scope="module")
def hostile(engine: str, tmp_path_factory: pytest.TempPathFactory,
            pg_url: str | None) -> tuple[str, str]:
    db = store_on(engine, tmp_path_factory.mktemp("html"), pg_url)
    return db, record_hostile(db)


def split(page: str) -> tuple[str, str]:
    """(the page without the data block, the data block's text)."""
    found = DATA_RE.findall(page)
    assert len(found) == 1, "exactly one embedded data block"
    return DATA_RE.sub("", page), found[0]


SVG_NS = "http://www.w3.org/2000/svg"  # (the SVG namespace: a name, never fetched)


def check_self_contained(page: str) -> dict:
    outside, data = split(page)
    assert outside.count(SVG_NS) == 1  # (replayer.js: createElementNS)
    assert not re.search(r"https?://", outside.replace(SVG_NS, "")), (
        "no URL outside the embedded data")
    # no attribute that loads anything: in the markup, nor set by the scripts
    markup = re.sub(r"<(script|style)\b[^>]*>.*?</\1>", "", outside, flags=re.DOTALL)
    assert not re.search(r"\b(src|href|srcset|action|formaction)\s*=", markup, re.IGNORECASE)
    assert not re.search(r"""setAttribute(NS)?\([^)]*["'](xlink:)?(src|href|srcset|action|"""
                         r"""formaction)["']""", outside)
    assert not re.search(r"\.(src|href|srcset|action|formaction)\s*=", outside)
    # url(...) only for the page's own SVG markers (a fragment of the document itself)
    assert "@import" not in outside and "url(" not in re.sub(r"url\(#lt-arrow[\w-]*\)", "",
                                                              outside)
    assert re.search(r'<meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
                     r" script-src 'unsafe-inline'; style-src 'unsafe-inline';", outside)
    assert "connect-src 'none'" in outside and "img-src 'none'" in outside
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function"):
        assert sink not in outside, sink
    # Three scripts: the inert data block, the replayer (inline) and the page's own.
    assert len(re.findall(r"<script\b", page)) == 3
    assert re.findall(r"<script\b[^>]*>", page) == [
        '<script type="application/json" id="looptrace-data">', "<script>", "<script>"]
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in data
    return json.loads(data)


def test_hostile_content_stays_inert_in_the_json_block(hostile: tuple[Path, str],
                                                       tmp_path: Path) -> None:
    db, run_id = hostile
    out = export_html(db, run_id, tmp_path / "sub" / "run.html")
    assert out == tmp_path / "sub" / "run.html"
    page = out.read_text("utf-8")
    data = check_self_contained(page)
    # The trace text survives exactly, as data.
    texts = [m["text"] for m in data["messages"]]
    assert "Read " + HOSTILE in texts
    assert HOSTILE in texts
    assert "Summary: " + HOSTILE in texts
    assert data["system"] == "Be careful <script>alert(4)</script>"
    assert data["run"]["name"] == "hostile </title><script>alert(3)</script>"
    args = [c["args"] for m in data["messages"] for c in m["calls"]]
    assert {"url": "https://evil.example/</script>"} in args
    # Nothing from the trace escaped into the markup: one </script> per script, an escaped title.
    assert page.count("</script>") == 3
    assert "<title>looptrace replay: hostile &lt;/title&gt;&lt;script&gt;" in page
    assert "alert(" not in re.sub(r"<title>[^<]*</title>", "", split(page)[0])


def test_embedded_data_matches_the_replay(hostile: tuple[Path, str]) -> None:
    db, run_id = hostile
    with TraceDB(db) as tdb:
        rp = build_replay(tdb.run(run_id))
    data = json.loads(split(render_html(rp))[1])
    assert data["layout"]["nodeOrder"] == list(GRAPH_NODES)  # (the bits of a step's "v")
    assert data["layout"] == drawing()
    assert len(data["steps"]) == len(rp.steps)
    for i, (s, st) in enumerate(zip(data["steps"], rp.steps)):
        assert (s["n"], s["k"], s["c"], s["t"]) == (
            st.node, st.kind, captions(rp)[st.index], list(st.active_tools))
        assert s["nk"][:len(st.new_keys)] == list(st.new_keys)  # (then the revised ones)
        assert s["e"] == (list(st.edge) if st.edge else None)
        assert s["r"] == step_edges(rp, i)
        assert {n for i, n in enumerate(GRAPH_NODES) if s["v"] >> i & 1} == set(st.visited)
        # the page's step inspector shows the payload
        assert s["pl"] == json.loads(json.dumps(st.event.payload, default=str))
        assert (s["h"], s["p"], s["l"], s["s"]) == (
            st.event.hook, st.event.phase, st.event.lap, st.event.seq)
    # every message once (in the order the steps first show them: parallel results
    # appear in the order their tools finished, which varies from run to run)
    keys = [m["key"] for m in data["messages"]]
    assert len(keys) == len(set(keys)) and set(keys) == {m.key for m in rp.run.messages}
    # Two parallel calls, both answered, linked by id.
    calls = [c["id"] for m in data["messages"] for c in m["calls"]]
    answers = [m["tcid"] for m in data["messages"] if m["type"] == "tool"]
    assert sorted(calls) == sorted(answers) == ["c1", "c2"]
    assert max(len(s["t"]) for s in data["steps"]) >= 1


def test_page_has_the_stable_hooks_for_browser_tests(hostile: tuple[Path, str]) -> None:
    """The page's own header, and the replayer's DOM contract (built by replayer.js:
    the same in the app's component; the browser tests read it)."""
    db, run_id = hostile
    with TraceDB(db) as tdb:
        page = render_html(build_replay(tdb.run(run_id)))
    outside, _ = split(page)
    assert '<main id="replay"></main>' in outside
    assert '<h1 id="run-name"></h1>' in outside and 'id="run-meta"' in outside
    assert '<button id="back-to-parent" type="button" hidden>' in outside
    # the replayer is inlined whole and played in #replay with its inspector
    assert script() in outside and style() in outside
    assert 'createReplayer($("replay"), {' in outside
    assert "parts: { inspector: true }" in outside and "keyboard: true" in outside
    assert 'setAttribute("data-depth"' in outside
    for hook in ('"data-testid": "lt-replayer"', '"data-testid": "lt-graph"',
                 '"data-action": action', '"data-speed": sp', '"data-position": m.pos',
                 '"data-key": m.key', '"data-call-id"', '"data-node": n.id',
                 '"data-edge": e.id', '"data-tool-call": id', '"lt-counter"', '"lt-scrub"',
                 '"lt-caption"'):
        assert hook in outside, hook
    for action in ("first", "prev", "play", "pause", "next", "last", "next-model",
                   "next-tool", "next-error"):
        assert f'btn("{action}", ' in outside, action
    assert '"data-action": "open-subagent"' in outside


def test_script_json_escapes_everything_that_could_end_a_script() -> None:
    value = {"x": "</script><!--\u2028\u2029&<>"}
    text = script_json(value)
    assert text == ('{"x":"\\u003c/script\\u003e\\u003c!--\\u2028\\u2029'
                    '\\u0026\\u003c\\u003e"}')
    assert json.loads(text) == value


def test_cli_export_html(hostile: tuple[Path, str], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    db, run_id = hostile
    out = tmp_path / "cli.html"
    assert main(["export", run_id[:8], "--db", str(db), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    check_self_contained(out.read_text("utf-8"))
    assert main(["export", "nope", "--db", str(db), "--html", str(out)]) == 1
    assert "no run 'nope'" in capsys.readouterr().err


@pytest.mark.skipif(not sample_files(), reason="no sample traces bundled yet")
def test_every_sample_trace_exports_as_one_self_contained_file(sample_store: str,
                                                                tmp_path: Path) -> None:
    with TraceDB(sample_store) as tdb:
        runs = tdb.runs()
    assert runs
    by_id = {r.id: r for r in runs}
    nested = 0
    for r in runs:
        out = export_html(sample_store, r.id, tmp_path / f"{r.id}.html")
        data = check_self_contained(out.read_text("utf-8"))
        assert data["run"]["id"] == r.id
        assert len(data["steps"]) == r.events
        # Subagent runs travel in the same file, each a replay of its own.
        kids = {k.id for k in runs if k.parent_id == r.id}
        assert kids <= set(data["subruns"])
        for kid, sub in data["subruns"].items():
            assert len(sub["steps"]) == by_id[kid].events
            assert sub["run"]["parent_id"] in {r.id, *data["subruns"]}
        nested += bool(kids)
    assert nested or not any(r.parent_id for r in runs)


def test_the_header_says_the_runs_cost(sample_store: str, tmp_path: Path) -> None:
    """Issue 37: the exported file's header says each run's cost (claude-haiku-4-5, $1 in
    and $5 out per million tokens: 368 in, 92 out), "unknown" where no price is known."""
    with TraceDB(sample_store) as db:
        ids = {r.name: r.id for r in db.runs()}
    page = export_html(sample_store, ids["anthropic-shopping"], tmp_path / "a.html").read_text()
    data = json.loads(DATA_RE.search(page).group(1))  # type: ignore[union-attr]
    assert data["run"]["cost"] == "cost $0.000828"
    assert "R.run.cost" in page  # (the header shows it: #run-meta)
    page = export_html(sample_store, ids["deep-research"], tmp_path / "d.html").read_text()
    data = json.loads(DATA_RE.search(page).group(1))  # type: ignore[union-attr]
    assert data["run"]["cost"] == "cost unknown with 1 subagent run (unknown its own)"
    assert [d["run"]["cost"] for d in data["subruns"].values()] == ["cost unknown"]
