"""The claims of the README and of every page under docs/ are tested: the hooks table,
every code block by its language tag (python: each run as written, in a fresh
directory; bash and yaml: every command and flag they name; json and yaml: parsed;
text: shown, not run), every command and flag the pages name, and the claims
about the tracer that no other test pins down (one event per node of a plain
LangGraph graph, ``lean=True`` adding no graph node, ``run_name``, WAL with
``synchronous=NORMAL``, the app's Streamlit defaults).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docs_kit import all_docs, code_blocks
from pytester_kit import run_inline

from tracer.cli import COMMANDS, main
from tracer.vocab.hooks import HOOKS

ROOT = Path(__file__).resolve().parents[2]
README = all_docs()  # README.md and every page under docs/
# The language tags a block may have, each with the test that runs it
TAGS = {"python", "bash", "yaml", "json", "text"}

pytest_plugins = ["pytester"]


def test_hooks_table_matches_hooks() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (node|wrap) \| (.+) \|$", README, re.MULTILINE)
    assert [(h.name, h.kind, h.purpose) for h in HOOKS] == rows


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_cli_command_is_documented(command: str) -> None:
    assert f"`looptrace {command}" in README


# -- the code blocks ----------------------------------------------------------------------
def blocks(lang: str) -> list[tuple[str, str]]:
    """(the heading the block is under, its code) for every ```lang block of every page."""
    return [(heading, code) for _, heading, tag, code in code_blocks() if tag == lang]


def test_every_block_has_a_tag_a_test_runs() -> None:
    """A block without a tag, or with one no test runs, is a block nothing checks
    (a block meant as text is tagged ```text)."""
    tags = [(p.relative_to(ROOT).as_posix(), h, tag) for p, h, tag, _ in code_blocks()]
    assert len(tags) > 20
    assert [t for t in tags if t[2] not in TAGS] == []


def test_every_json_and_yaml_block_parses() -> None:
    import yaml

    found = 0
    for _, heading, tag, code in code_blocks():
        if tag == "json":
            json.loads(code)
        elif tag == "yaml":
            assert yaml.safe_load(code) is not None, heading
        else:
            continue
        found += 1
    assert found >= 3


PY = {
    "write": "`create_agent`",
    "around": "What the record shows, and where to put the tracer",
    "deep": "Deep Agents",
    "hand-rolled": "A hand-rolled loop or a plain LangGraph graph",
    "read": "Python API (read side)",
    "whatif": "What if: rerun a run, fork it at a step",
    "test": "Test your agent",
}


def python_block(name: str) -> str:
    (code,) = [c for h, c in blocks("python") if h == PY[name]]
    return code


def test_every_python_block_is_run_by_a_test() -> None:
    assert sorted(h for h, _ in blocks("python")) == sorted(PY.values())


def run_block(name: str, where: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a README block as a script in ``where``; what it printed."""
    monkeypatch.chdir(where)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(python_block(name), f"README: {PY[name]}", "exec"),  # noqa: S102
             {"__name__": "__main__"})
    return out.getvalue()


def db_rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def counts(db: Path) -> list[tuple[Any, ...]]:
    """(name, status, laps, model calls, tool calls, parent's tool call id) per run."""
    return db_rows(db, """
        SELECT r.name, r.status, MAX(e.lap),
               SUM(e.hook IN ('wrap_model_call', 'model') AND e.phase = 'enter'),
               SUM(e.hook IN ('wrap_tool_call', 'tool') AND e.phase = 'enter'),
               r.parent_tool_call_id
        FROM runs r JOIN events e ON e.run_id = r.id GROUP BY r.id ORDER BY r.started_at""")


def test_quick_start_runs_and_looptrace_runs_lists_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    run_block("write", tmp_path, monkeypatch)
    assert counts(tmp_path / "looptrace.db") == [("LangGraph", "completed", 2, 2, 1, None)]
    # "Then `uv run looptrace runs` lists the run": the default database, here
    capsys.readouterr()
    assert main(["runs"]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["id", "name", "status", "laps", "model", "tools", "errors",
                              "tokens", "cost", "parent"]
    (run_id,) = db_rows(tmp_path / "looptrace.db", "SELECT id FROM runs")[0]
    assert row.split()[:7] == [run_id[:12], "LangGraph", "completed", "2", "2", "1", "0"]


def test_around_block_records_each_layer(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    run_block("around", tmp_path, monkeypatch)
    db = tmp_path / "looptrace.db"
    assert counts(db) == [("LangGraph", "completed", 2, 2, 1, None)]
    # each model call: the primary failed inside the fallback layer, which called the
    # rest again with the backup model
    layers = db_rows(db, "SELECT middleware, json_extract(payload, '$.what'),"
                         " json_extract(payload, '$.model') FROM events"
                         " WHERE phase = 'layer' ORDER BY seq")
    assert layers == [("ModelFallbackMiddleware", "error", None),
                      ("ModelFallbackMiddleware", "attempt", "backup"),
                      ("ModelFallbackMiddleware", "request", "backup")] * 2
    # the user's e-mail address was redacted by the PII layer: a later version is stored
    texts = [t for (t,) in db_rows(db, "SELECT text FROM messages WHERE type = 'human'"
                                       " ORDER BY seq")]
    assert texts == ["Where is order A-2? I am ada@example.com",
                     "Where is order A-2? I am [REDACTED_EMAIL]"]


def test_deep_agents_block_nests_the_subagent_run(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    run_block("deep", tmp_path, monkeypatch)
    db = tmp_path / "looptrace.db"
    parent, child = counts(db)
    assert parent[1:5] == ("completed", 2, 2, 1)
    assert child == ("researcher", "completed", 2, 2, 1, "call_1")
    (pid,) = db_rows(db, "SELECT id FROM runs WHERE parent_id IS NULL")[0]
    assert db_rows(db, "SELECT parent_id FROM runs WHERE name = 'researcher'") == [(pid,)]
    answer = db_rows(db, f"SELECT text FROM messages WHERE run_id = '{pid}' AND type = 'ai'"
                         " ORDER BY position DESC LIMIT 1")
    assert answer == [("Oslo, about 720,000 people",)]


def test_what_if_block_reruns_and_forks(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    out = run_block("whatif", tmp_path, monkeypatch).splitlines()
    db = tmp_path / "looptrace.db"
    runs = db_rows(db, "SELECT id, metadata FROM runs ORDER BY started_at")
    assert len(runs) == 3  # the run, its replay, the fork
    original, replay, fork = runs
    assert json.loads(replay[1])["rerun_of"] == original[0]
    assert json.loads(fork[1])["forked_from"] == {
        "run": original[0], "step": 9,
        "edit": {"kind": "tool_result", "text": "Heavy rain, 9°C"}}
    assert out[1] == "  from the record: 2 of 2 model calls (43 tokens, " + out[1].split(
        "tokens, ")[1]
    assert "live from model call 2" in "\n".join(out)
    assert out[-3:] == [
        "Forecast: Heavy rain, 9°C", "True",
        ("lap 1, step 10 (A) / 10 (B): tool get_weather returned 'Sunny in Oslo' in A but "
         "'Heavy rain, 9°C' in B")]


def test_what_if_commands_run_on_the_blocks_agent(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The page's command lines, each run on its own agent (the block's code down to
    ``make_agent`` in ``my_agent.py``) and its run: each exits 0 and does what it says
    (issue 39, item 16: ``--drop-middleware ModelCallLimitMiddleware`` named a
    middleware the page's agent did not have)."""
    code = python_block("whatif")
    (tmp_path / "my_agent.py").write_text(code.split("\nmake_agent().invoke")[0])
    run_block("whatif", tmp_path, monkeypatch)
    db = tmp_path / "looptrace.db"
    (run_id,) = db_rows(db, "SELECT id FROM runs ORDER BY started_at LIMIT 1")[0]
    (bash,) = [c for h, c in blocks("bash") if h == PY["whatif"]]
    lines = [ln.split("#")[0].strip() for ln in bash.splitlines() if ln.strip()]
    assert len(lines) == 5
    try:
        for line in lines:
            argv = [run_id if a == "RUN" else a for a in shlex.split(line)[2:]]
            capsys.readouterr()
            assert main(argv[1:]) == 0, (line, capsys.readouterr().err)
            out = capsys.readouterr().out
            edit = {a[2:] for a in argv if a.startswith("--")} - {"agent", "json", "offline"}
            new = out.split()[3] if not out.startswith("{") else json.loads(out)["run"]
            meta = json.loads(db_rows(db, f"SELECT metadata FROM runs WHERE id = '{new}'")[0][0])
            if not edit:
                assert meta["rerun_of"] == run_id and "nothing ran live" in out
            elif "drop-middleware" in edit:
                got = json.loads(out)
                assert got["edit"] == {"kind": "drop_middleware",
                                       "middleware": "ModelCallLimitMiddleware"}
                assert got["served"]["model_calls"] == 2 and got["live"]["model_calls"] == 0
                hooks = db_rows(db, "SELECT DISTINCT middleware FROM events WHERE run_id ="
                                    f" '{new}' AND middleware IS NOT NULL")
                assert ("ModelCallLimitMiddleware",) not in hooks
            else:
                at = int(argv[argv.index("--at") + 1])
                assert meta["forked_from"]["run"] == run_id
                assert meta["forked_from"]["step"] == at
    finally:
        sys.modules.pop("my_agent", None)


def test_test_your_agent_block_passes_offline_and_fails_on_another_answer(
        pytester: pytest.Pytester) -> None:
    """The README's test, run by pytest with the plugin: it passes offline from the
    bundled cassette; a changed expectation fails it with the run's HTML replay."""
    code = python_block("test")
    pytester.makepyfile(test_weather=code)
    res = run_inline(pytester, "--looptrace")
    res.assert_outcomes(passed=1)
    pytester.makepyfile(test_weather=code.replace('[{"get_weather"}]', '["get_weather"]'))
    res = run_inline(pytester, "--looptrace")
    res.assert_outcomes(failed=1)
    assert "tool calls differ at turn 1" in res.stdout.str()
    assert list((pytester.path / "looptrace-html").glob("test_weather.py_test_weather_agent-*"))


def test_hand_rolled_block_is_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_block("hand-rolled", tmp_path, monkeypatch)
    db = tmp_path / "looptrace.db"
    assert counts(db) == [("loop", "completed", 2, 2, 1, None)]
    types = [t for (t,) in db_rows(db, "SELECT type FROM messages ORDER BY position")]
    assert types == ["human", "ai", "tool", "ai"]


@pytest.mark.parametrize("first", ["write", "hand-rolled", "deep", "around"])
def test_read_side_block_prints_the_newest_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               first: str) -> None:
    """After any of the write-side blocks (in a fresh directory), the read side runs
    and prints something about the newest run."""
    run_block(first, tmp_path, monkeypatch)
    out = run_block("read", tmp_path, monkeypatch).splitlines()
    name = {"write": "LangGraph", "hand-rolled": "loop", "deep": "researcher",
            "around": "LangGraph"}[first]
    assert out[0] == f"{name} completed 2 laps 1 tool calls"
    steps = [line for line in out if re.match(r"\d+ ", line)]
    assert steps and steps[0].startswith("0 ")
    assert out[-1].endswith(" later versions") and out[-2].endswith(" messages in the end")


def test_read_side_block_after_the_quick_start_in_detail(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_block("write", tmp_path, monkeypatch)
    out = run_block("read", tmp_path, monkeypatch).splitlines()
    steps = [line.split(" ", 2)[:2] for line in out[1:15]]
    # the graph's path through a two-lap create_agent run, one step per event
    assert steps == [["0", "START"], ["1", "before_agent"], ["2", "before_model"],
                     ["3", "model"], ["4", "model"], ["5", "after_model"], ["6", "tools"],
                     ["7", "tools"], ["8", "before_model"], ["9", "model"], ["10", "model"],
                     ["11", "after_model"], ["12", "after_agent"], ["13", "END"]]
    assert out[15:] == ["human What's the weather in Oslo?", "4 messages in the end",
                        "0 later versions"]


# -- the proxy's adapter lines, against the emulator ----------------------------------------
def adapter_lines() -> list[tuple[str, str]]:
    """(the proxy command, the adapter expression under it) in "Provider wire formats"."""
    (code,) = [c for h, c in blocks("bash") if h == "Provider wire formats"]
    lines = code.splitlines()
    out = []
    for cmd, comment in itertools.pairwise(lines):
        if cmd.startswith("uv run looptrace proxy"):
            assert comment.startswith("#"), comment
            out.append((cmd, comment.lstrip("# ").strip()))
    return out


def test_the_adapter_lines_name_every_provider() -> None:
    assert [a.split("(", 1)[0] for _, a in adapter_lines()] == [
        "ChatOpenAI", "ChatAnthropic", "ChatOllama"]


@pytest.mark.parametrize(("cmd", "adapter"), adapter_lines(),
                         ids=[a.split("(", 1)[0] for _, a in adapter_lines()])
def test_each_adapter_line_works_through_the_proxy(tmp_path: Path, cmd: str,
                                                   adapter: str) -> None:
    """The adapter, constructed exactly as the README writes it (only the port is
    the emulator's), talks to the proxy: the command's flags parse, the call returns
    the emulator's answer, and the exchange is recorded in the database."""
    from langchain_anthropic import ChatAnthropic
    from langchain_ollama import ChatOllama
    from langchain_openai import ChatOpenAI

    from tracer.cli import build_parser
    from tracer.wire.proxy import WireServer

    argv = shlex.split(cmd)[2:]  # after "uv run"
    assert argv[0] == "looptrace"
    args = build_parser("proxy").parse_args(argv[1:])
    port = re.search(r"127\.0\.0\.1:(\d+)", adapter)
    assert port and int(port.group(1)) == args.port
    db = tmp_path / "looptrace.db"
    with WireServer(mode="emulate", script="weather", provider=args.provider, db=db) as srv:
        expr = adapter.replace(f"http://127.0.0.1:{args.port}", srv.url)
        llm = eval(expr, {"ChatOpenAI": ChatOpenAI, "ChatAnthropic": ChatAnthropic,
                          "ChatOllama": ChatOllama})
        reply = llm.invoke("What's the weather in Oslo?")
        assert reply.type == "ai" and (reply.content or reply.tool_calls)
        assert len(srv.exchanges) == 1
    stored = db_rows(db, "SELECT provider, status FROM wire")
    assert stored == [(args.provider, 200)]


# -- every command and flag the README names --------------------------------------------------
def _prose() -> str:
    return re.sub(r"^```.*?^```$", "", README, flags=re.MULTILINE | re.DOTALL)


def cli_mentions() -> list[str]:
    """Every ``looptrace <command> ...`` the pages show: in inline code, and on the
    lines of their shell and CI (yaml) blocks (commands and their comments)."""
    spans = [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", _prose())]
    out = [s for s in spans if s.startswith("looptrace ")]
    out += [s[len("uv run "):] for s in spans if s.startswith("uv run looptrace ")]
    for _, code in blocks("bash") + blocks("yaml"):
        for line in code.splitlines():
            m = re.search(r"(?:^|uv run |#\s+)(looptrace [a-z].*)", line)
            if m:
                out.append(m.group(1))
    return out


def table_commands() -> list[str]:
    return re.findall(r"^\| `(looptrace [^`]+)` \|", README, re.MULTILINE)


def flags(text: str) -> list[str]:
    return re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-o)(?![\w-])", text)


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    return capsys.readouterr().out


def test_the_command_table_lists_every_command() -> None:
    named = {c.split()[1] for c in table_commands()}
    assert named == set(COMMANDS)


@pytest.mark.parametrize("mention", sorted(set(cli_mentions())))
def test_every_command_and_flag_the_readme_names_exists(
        mention: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = mention.split()[1]
    assert command in COMMANDS, mention
    text = help_of(command, capsys)
    for flag in flags(mention):
        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), (flag, mention)


def test_the_readme_names_commands_in_several_places() -> None:
    """(the parametrised test above has something to check)"""
    mentions = cli_mentions()
    assert len(mentions) > 20
    assert {m.split()[1] for m in mentions} >= set(COMMANDS)
    assert "looptrace demo --db /tmp/s.db --export sample_traces" in mentions


def test_the_installed_command_runs() -> None:
    exe = Path(sys.executable).parent / "looptrace"
    done = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0
    for command in COMMANDS:
        assert command in done.stdout


def test_the_scripts_the_readme_runs_exist() -> None:
    for path in re.findall(r"uv run (?:--frozen )?python ((?:tests|benchmarks|docs)/\S+\.py)", README):
        assert (ROOT / path).is_file(), path
    assert (ROOT / ".ci" / "run").is_file()


# -- claims about the tracer ------------------------------------------------------------------
def test_a_plain_langgraph_graph_records_one_event_per_node(tmp_path: Path) -> None:
    """"For a plain LangGraph graph it records one event per node." """
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from tracer import TraceCallbackHandler

    class State(TypedDict):
        n: int

    graph = StateGraph(State)
    graph.add_node("plan", lambda s: {"n": s["n"] + 1})
    graph.add_node("act", lambda s: {"n": s["n"] * 10})
    graph.add_node("report", lambda s: {"n": s["n"] - 3})
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "act")
    graph.add_edge("act", "report")
    graph.add_edge("report", END)
    handler = TraceCallbackHandler(db=tmp_path / "g.db")
    assert graph.compile().invoke({"n": 1}, config={"callbacks": [handler]}) == {"n": 17}
    handler.close()
    (run_id, status), = db_rows(tmp_path / "g.db", "SELECT id, status FROM runs")
    assert status == "completed"
    events = db_rows(tmp_path / "g.db", "SELECT hook, phase, json_extract(payload, '$.node')"
                                        f" FROM events WHERE run_id = '{run_id}' ORDER BY seq")
    assert events == [("run", "start", None), ("node", "fire", "plan"), ("node", "fire", "act"),
                      ("node", "fire", "report"), ("run", "end", None)]


def test_lean_adds_no_graph_node(tmp_path: Path) -> None:
    """"lean=True installs only the two wrap hooks (no extra graph nodes)"; the full
    middleware adds its four node hooks."""
    from tracer_kit import get_weather, make_agent, two_lap_model

    from tracer import TraceMiddleware

    def nodes(middleware: list[Any]) -> set[str]:
        agent = make_agent(two_lap_model(), [get_weather], middleware)
        return set(agent.get_graph().nodes)

    bare = nodes([])
    assert bare == {"__start__", "model", "tools", "__end__"}
    lean = TraceMiddleware(db=tmp_path / "lean.db", lean=True)
    assert nodes([lean]) == bare
    full = TraceMiddleware(db=tmp_path / "full.db")
    assert nodes([full]) - bare == {f"TraceMiddleware.{h}" for h in (
        "before_agent", "before_model", "after_model", "after_agent")}
    # and lean still records the run, its model and tool calls and every message
    make_agent(two_lap_model(), [get_weather], [lean]).invoke({"messages": [("user", "hi")]})
    lean.flush()
    db = tmp_path / "lean.db"
    assert counts(db) == [("LangGraph", "completed", 2, 2, 1, None)]
    hooks = db_rows(db, "SELECT hook, phase FROM events ORDER BY seq")
    assert hooks == [("wrap_model_call", "enter"), ("wrap_model_call", "exit"),
                     ("wrap_tool_call", "enter"), ("wrap_tool_call", "exit"),
                     ("wrap_model_call", "enter"), ("wrap_model_call", "exit"), ("run", "end")]
    assert len(db_rows(db, "SELECT 1 FROM messages")) == 4


@pytest.mark.parametrize("attach", [False, True])
def test_run_name_names_the_runs_with_or_without_attach(tmp_path: Path, attach: bool) -> None:
    from tracer_kit import get_weather, make_agent, two_lap_model

    from tracer import TraceMiddleware

    trace = TraceMiddleware(db=tmp_path / "n.db", run_name="nightly-eval")
    agent = make_agent(two_lap_model(), [get_weather], [trace], name="weather-bot")
    if attach:
        agent = trace.attach(agent)
    agent.invoke({"messages": [("user", "hi")]})
    agent.invoke({"messages": [("user", "again")]})
    trace.flush()
    assert db_rows(tmp_path / "n.db", "SELECT name, agent_name FROM runs") == [
        ("nightly-eval", "weather-bot")] * 2


def test_wal_with_synchronous_normal(tmp_path: Path) -> None:
    """"SQLite in WAL mode (synchronous=NORMAL)": the file, and the writer's connection."""
    from tracer_kit import get_weather, make_agent, two_lap_model

    from tracer import TraceMiddleware

    trace = TraceMiddleware(db=tmp_path / "w.db")
    make_agent(two_lap_model(), [get_weather], [trace]).invoke({"messages": [("user", "hi")]})
    trace.flush()
    assert db_rows(tmp_path / "w.db", "PRAGMA journal_mode") == [("wal",)]
    conn = trace.recorder.writer._conn
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA synchronous").fetchone() == (1,)  # 1 = NORMAL (2 = FULL)
    trace.close()


# -- the app's Streamlit defaults ------------------------------------------------------------
def test_streamlit_run_binds_localhost_without_telemetry(tmp_path: Path) -> None:
    """`uv run streamlit run app/main.py` (the README's other way to start the app) is
    as safe as `looptrace ui`, from whatever directory it is started: Streamlit reads
    the config.toml in .streamlit/ beside the entry script (and lets it override the
    current directory's and the user's). Resolved here by Streamlit itself, started
    in an empty directory with an empty home."""
    code = ("import streamlit.config as c\n"
            f"c._main_script_path = {str(ROOT / 'app' / 'main.py')!r}  # as `streamlit run`\n"
            "c.get_config_options(force_reparse=True)\n"
            "print(c.get_option('server.address'), c.get_option('browser.gatherUsageStats'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["127.0.0.1", "False"]
    assert "uv run streamlit run app/main.py" in README
