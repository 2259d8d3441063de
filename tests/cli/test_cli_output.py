"""What the command line prints and writes, against hand-written expectations:
``runs`` (table, ``--json``, ``--search``), ``export`` (``-o``, the default file
name, an ambiguous prefix), ``import`` of bad trace files, ``demo``'s flags, ``ui``
(the bundled samples by default, bound to 127.0.0.1). Fast: ``mutmut`` runs it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_kit import cli as run_cli
from pg_kit import untouched
from tracer_kit import rows

from tracer.cli import main
from tracer.db.schema import SCHEMA_VERSION
from tracer.interop.exchange import import_rows

# Two runs written by hand: a parent run and a subagent run that failed.
ALPHA = {"id": "r-alpha-0001", "name": "weather", "agent_name": "weather-bot",
         "status": "completed", "started_at": 10.0, "ended_at": 12.5, "model": "scripted",
         "total_tokens": 77, "input_tokens": 50, "output_tokens": 27, "source": "middleware"}
BETA = {"id": "r-beta-0002", "parent_id": "r-alpha-0001", "parent_tool_call_id": "c1",
        "status": "error", "started_at": 20.0, "error": "Boom: no stock", "source": "callbacks"}


def ev(run: str, seq: int, hook: str, phase: str, lap: int, tcid: str | None = None) -> dict:
    return {"run_id": run, "seq": seq, "ts": 10.0 + seq, "hook": hook, "phase": phase,
            "lap": lap, "tool_call_id": tcid}


def msg(run: str, pos: int, text: str) -> dict:
    return {"run_id": run, "position": pos, "seq": 0, "msg_id": f"{run}-m{pos}", "type": "human",
            "text": text, "data": json.dumps({"type": "human", "data": {"content": text}}),
            "version": 0, "key": f"{run}-m{pos}"}


ROWS = [
    ("runs", ALPHA),
    ("events", ev("r-alpha-0001", 0, "run", "start", 0)),
    ("events", ev("r-alpha-0001", 1, "wrap_model_call", "enter", 1)),
    ("events", ev("r-alpha-0001", 2, "wrap_model_call", "exit", 1)),
    ("events", ev("r-alpha-0001", 3, "wrap_tool_call", "enter", 1, "c1")),
    ("events", ev("r-alpha-0001", 4, "wrap_tool_call", "exit", 1, "c1")),
    ("events", ev("r-alpha-0001", 5, "wrap_model_call", "enter", 2)),
    ("events", ev("r-alpha-0001", 6, "wrap_model_call", "exit", 2)),
    ("events", ev("r-alpha-0001", 7, "run", "end", 2)),
    ("messages", msg("r-alpha-0001", 0, "Weather in Oslo?")),
    ("runs", BETA),
    ("events", ev("r-beta-0002", 0, "run", "start", 0)),
    ("events", ev("r-beta-0002", 1, "wrap_model_call", "enter", 1)),
    ("events", ev("r-beta-0002", 2, "wrap_model_call", "error", 1)),
    ("messages", msg("r-beta-0002", 0, "Price of a 100% cotton_shirt")),
]


@pytest.fixture
def db(new_store: Callable[..., str]) -> str:
    """The two runs in a store on each engine."""
    path = new_store("cli.db")
    import_rows(ROWS, path)
    return path


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    """The two runs in a SQLite file (``tmp_path/cli.db``), for the tests of files."""
    path = tmp_path / "cli.db"
    import_rows(ROWS, path)
    return path


# -- runs ---------------------------------------------------------------------------------
# (r-beta made a model call that reported no usage: its tokens are "not reported", not 0;
# its call failed and r-alpha's model "scripted" has no price: their cost is unknown)
TABLE = """\
id            name     status     laps  model  tools  errors  tokens        cost     parent
r-beta-0002            error      1     1      0      1       not reported  unknown  r-alpha-0001
r-alpha-0001  weather  completed  2     2      1      0       77            unknown
"""


def test_runs_prints_one_row_per_run_newest_first(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(capsys, "runs", "--db", str(db))
    assert (code, out, err) == (0, TABLE, "")


def test_runs_cuts_long_ids_and_names(store_db: str, capsys) -> None:  # type: ignore[no-untyped-def]
    db = store_db
    import_rows([("runs", {"id": "0123456789abcdef-long", "status": "running",
                           "name": "a name that is much longer than twenty-eight characters",
                           "parent_id": "fedcba9876543210-parent", "started_at": 1.0})], db)
    code, out, _ = run_cli(capsys, "runs", "--db", str(db))
    assert code == 0
    assert out.splitlines()[1] == ("0123456789ab  a name that is much longer t  running  "
                                   "0     0      0      0       0       $0    fedcba987654")


def test_runs_json_has_every_field(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "runs", "--db", str(db), "--json")
    assert code == 0
    data = json.loads(out)
    assert [r["id"] for r in data] == ["r-beta-0002", "r-alpha-0001"]
    assert data[1] == {
        "id": "r-alpha-0001", "parent_id": None, "parent_tool_call_id": None, "name": "weather",
        "thread_id": None, "agent_name": "weather-bot", "status": "completed",
        "started_at": 10.0, "ended_at": 12.5, "error": None, "model": "scripted",
        "provider": None, "input_tokens": 50, "output_tokens": 27, "total_tokens": 77,
        "source": "middleware", "laps": 2, "model_calls": 2, "tool_calls": 1, "errors": 0,
        "events": 8, "duration_s": 2.5, "models": [], "paused": None, "cost_usd": None,
        "cost": {"usd": None, "priced_usd": 0.0, "calls": 3, "priced_calls": 0,
                 "own": {"usd": None, "priced_usd": 0.0, "calls": 2, "priced_calls": 0},
                 "subagent_runs": 1,
                 "models": {"scripted": {"usd": None, "priced_usd": 0.0, "calls": 2,
                                         "priced_calls": 0},
                            "unknown model": {"usd": None, "priced_usd": 0.0, "calls": 1,
                                              "priced_calls": 0}}}}
    assert data[0]["duration_s"] is None and data[0]["error"] == "Boom: no stock"
    assert (data[0]["errors"], data[0]["parent_id"]) == (1, "r-alpha-0001")


@pytest.mark.parametrize(("text", "ids"), [
    ("Oslo", ["r-alpha-0001"]),
    ("oslo", ["r-alpha-0001"]),  # case-insensitive (ASCII)
    ("100%", ["r-beta-0002"]),  # % and _ are text, not wildcards
    ("_shirt", ["r-beta-0002"]),
    ("100% cotton", ["r-beta-0002"]),
    ("1%0", []),
    ("o_lo", []),
    ("nowhere", []),
])
def test_runs_search_matches_message_text(db: Path, capsys, text: str, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "runs", "--db", str(db), "--search", text, "--json")
    assert code == 0
    assert [r["id"] for r in json.loads(out)] == ids
    code, out, _ = run_cli(capsys, "runs", "--db", str(db), "--search", text)
    if ids:
        assert [line.split()[0] for line in out.splitlines()[1:]] == ids
    else:
        assert out == "no runs\n"


def test_runs_on_an_empty_or_missing_database(tmp_path: Path, store_db: str, capsys) -> None:  # type: ignore[no-untyped-def]
    from tracer.db.schema import connect

    connect(store_db).close()
    assert run_cli(capsys, "runs", "--db", store_db) == (0, "no runs\n", "")
    assert run_cli(capsys, "runs", "--db", store_db, "--json") == (
        0, "[]\n", "")
    code, out, err = run_cli(capsys, "runs", "--db", str(tmp_path / "missing.db"))
    assert (code, out) == (1, "")
    assert err == (f"looptrace runs: {tmp_path / 'missing.db'}: no such database "
                   "(the bundled sample traces: --db samples)\n")


# -- export -------------------------------------------------------------------------------
def test_export_to_a_file_with_o(db: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out_file = tmp_path / "out" / "alpha.jsonl"
    code, out, err = run_cli(capsys, "export", "r-alpha", "--db", str(db), "-o", str(out_file))
    assert (code, out, err) == (0, f"{out_file}\n", "")
    lines = [json.loads(x) for x in out_file.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == {"format": "looptrace-trace", "version": 1,
                        "schema_version": SCHEMA_VERSION,
                        "root": "r-alpha-0001", "runs": 2}
    assert [(r["table"], r["row"].get("id") or r["row"]["run_id"]) for r in lines[1:]] == (
        [("runs", "r-alpha-0001")] + [("events", "r-alpha-0001")] * 8
        + [("messages", "r-alpha-0001"), ("runs", "r-beta-0002")]
        + [("events", "r-beta-0002")] * 3 + [("messages", "r-beta-0002")])
    code, out, _ = run_cli(capsys, "export", "r-beta-0002", "--db", str(db), "--out",
                           str(tmp_path / "b.jsonl"))
    assert code == 0 and json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])[
        "runs"] == 1


def test_export_without_o_writes_the_run_as_typed_dot_jsonl_here(
        db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    """As the README's command table says: ``<RUN>.jsonl`` in the current directory."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    code, out, _ = run_cli(capsys, "export", "r-alpha", "--db", str(db))
    assert (code, out) == (0, "r-alpha.jsonl\n")
    assert [p.name for p in here.iterdir()] == ["r-alpha.jsonl"]
    assert json.loads((here / "r-alpha.jsonl").read_text().splitlines()[0])["root"] == (
        "r-alpha-0001")


@pytest.mark.parametrize("argv", [["export", "r-"], ["export", "r-", "--html", "x.html"]])
def test_an_ambiguous_prefix_is_one_line_and_writes_nothing(
        db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys,  # type: ignore[no-untyped-def]
        argv: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *argv, "--db", str(db))
    assert (code, out) == (1, "")
    assert err == f"looptrace export: run id prefix 'r-' is ambiguous in {db}\n"
    assert not list(tmp_path.glob("*.jsonl")) and not (tmp_path / "x.html").exists()
    code, _, err = run_cli(capsys, "export", "zzz", "--db", str(db))
    assert code == 1 and err == (f"looptrace export: no run 'zzz' in {db} "
                                 "(not an id, a prefix of one or a run's name)\n")


def test_diff_with_an_ambiguous_prefix_is_trouble(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(capsys, "diff", "r-", "r-alpha", "--db", str(db))
    assert (code, out) == (2, "")
    assert err == f"looptrace diff: run id prefix 'r-' is ambiguous in {db}\n"


# -- import of bad trace files -----------------------------------------------------------------
@pytest.mark.parametrize(("content", "tail"), [
    ("", "empty trace file"),
    ("hello\n", ":1: not a looptrace trace file (Expecting value: line 1 column 1 (char 0))"),
    (('{"format": "looptrace-trace", "schema_version": 2}\n{"table": "runs", "row": '
      '{"id": "x", "status": "completed", "shoe_size": 44}}\n'),
     ":2: unknown columns for runs: shoe_size"),
    (('{"format": "looptrace-trace", "schema_version": 2}\n{"table": "runs", "row": '
      '{"id": "x", "status": "completed"}}\n{broken\n'),
     (":3: malformed JSON (Expecting property name enclosed in double quotes: line 1 column 2"
      " (char 1))")),
    ('{"format": "looptrace-trace", "schema_version": 99}\n',
     ": written by a newer looptrace (schema 99); upgrade looptrace to import it"),
])
def test_import_of_a_bad_trace_file_is_one_line_and_imports_nothing(
        tmp_path: Path, capsys, content: str, tail: str, store_db: str) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    db = store_db
    code, out, err = run_cli(capsys, "import", str(bad), "--db", str(db))
    assert (code, out) == (1, "")
    sep = ": " if tail == "empty trace file" else ""
    assert err == f"looptrace import: {bad}{sep}{tail}\n"
    assert untouched(db) or rows(db, "SELECT COUNT(*) FROM runs") == [(0,)]


def test_import_of_a_good_file_then_a_missing_one(db: Path, tmp_path: Path, capsys, store_db: str) -> None:  # type: ignore[no-untyped-def]
    good = tmp_path / "good.jsonl"
    assert main(["export", "r-alpha", "--db", str(db), "-o", str(good)]) == 0
    capsys.readouterr()
    into = store_db
    code, out, err = run_cli(capsys, "import", str(good), "--db", str(into))
    assert (code, out, err) == (0, f"imported 2 runs into {into}\n", "")
    code, out, err = run_cli(capsys, "import", str(tmp_path / "nope.jsonl"), "--db", str(into))
    assert (code, out) == (1, "")
    assert err.startswith(f"looptrace import: {tmp_path / 'nope.jsonl'}: cannot read trace file")
    assert err.count("\n") == 1


# -- demo ---------------------------------------------------------------------------------------
def test_demo_only_and_export(tmp_path: Path, capsys, store_db: str) -> None:  # type: ignore[no-untyped-def]
    db, out_dir = store_db, tmp_path / "exported"
    code, out, err = run_cli(capsys, "demo", "--db", str(db), "--only", "weather",
                             "--export", str(out_dir))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("weather ") and len(lines) == 3
    assert lines[1].startswith(f"recorded 1 run into {db} in ")  # (issue 39: "1 runs")
    assert lines[2] == f"exported to {out_dir}"
    assert [p.name for p in out_dir.iterdir()] == ["weather.jsonl"]
    assert rows(db, "SELECT name, status FROM runs") == [("weather", "completed")]


def test_demo_only_takes_several_names_and_refuses_unknown_ones(store_db: str, capsys) -> None:  # type: ignore[no-untyped-def]
    db = store_db
    assert main(["demo", "--db", str(db), "--only", "weather", "hostile-content"]) == 0
    assert sorted(rows(db, "SELECT name FROM runs")) == [("hostile-page",), ("weather",)]
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["demo", "--db", str(db), "--only", "no-such-scenario"])
    assert info.value.code == 2
    assert "invalid choice: 'no-such-scenario'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "providers"), [([], True), (["--no-providers"], False)])
def test_demo_no_providers_flag(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys,  # type: ignore[no-untyped-def]
                                argv: list[str], providers: bool) -> None:
    import tracer.demo.record as demo_record

    seen = []
    monkeypatch.setattr(demo_record, "record_all", lambda db, only, providers=True: (
        seen.append((db, only, providers)) or {}))
    assert main(["demo", "--db", str(tmp_path / "d.db"), *argv]) == 0
    assert seen == [(str(tmp_path / "d.db"), None, providers)]
    assert capsys.readouterr().out.startswith(f"recorded 0 runs into {tmp_path / 'd.db'}")


def test_demo_prints_each_scenario_and_exports_each_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys, store_db: str) -> None:  # type: ignore[no-untyped-def]
    """A scenario that records two runs exports them as NAME-1 and NAME-2, into a
    folder made on the way (or one already there)."""
    import re

    import tracer.demo.record as demo_record

    db = store_db
    ids = ["0123456789abcdef-first", "fedcba9876543210-second"]
    import_rows([("runs", {"id": i, "status": "completed", "started_at": 1.0}) for i in ids], db)
    monkeypatch.setattr(demo_record, "record_all",
                        lambda db, only, providers=True: {"twice": ids, "once": ids[:1]})
    out_dir = tmp_path / "a" / "b"
    for _ in range(2):  # the second time the folder is already there
        code, out, _ = run_cli(capsys, "demo", "--db", str(db), "--export", str(out_dir))
        assert code == 0
        lines = out.splitlines()
        assert lines[0] == "twice" + " " * 24 + "0123456789ab, fedcba987654"
        assert lines[1] == "once" + " " * 25 + "0123456789ab"
        m = re.fullmatch(rf"recorded 3 runs into {re.escape(str(db))} in (\d+\.\d) s", lines[2])
        assert m and float(m.group(1)) < 60
        assert lines[3] == f"exported to {out_dir}"
    assert sorted(p.name for p in out_dir.iterdir()) == ["once.jsonl", "twice-1.jsonl",
                                                         "twice-2.jsonl"]
    root = json.loads((out_dir / "twice-2.jsonl").read_text().splitlines()[0])["root"]
    assert root == "fedcba9876543210-second"


# -- ui -----------------------------------------------------------------------------------------
def _ui(monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[list[str], dict[str, str]]:
    from tracer.cli import ui

    seen: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(ui, "serve", lambda cmd, env: seen.append((cmd, env)) or 0)
    assert main(["ui", *argv]) == 0
    (cmd, env), = seen
    return cmd, env


def test_ui_opens_the_bundled_samples_by_default_on_localhost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPTRACE_DB", raising=False)
    cmd, env = _ui(monkeypatch)
    assert "LOOPTRACE_DB" not in env  # the app then opens the bundled samples
    assert cmd[1].endswith("app/serve.py")  # streamlit run app/main.py, preloaded
    assert cmd[2:] == ["--server.address", "127.0.0.1", "--server.port", "8501",
                       "--browser.gatherUsageStats", "false"]


def test_ui_with_a_database_and_a_port(db_file: Path, monkeypatch: pytest.MonkeyPatch,
                                       tmp_path: Path) -> None:
    """SQLite only: a file's relative path is made absolute for the app."""
    monkeypatch.chdir(tmp_path)
    cmd, env = _ui(monkeypatch, "--db", "cli.db", "--port", "9123")
    assert env["LOOPTRACE_DB"] == str(db_file)  # made absolute
    assert cmd[cmd.index("--server.port") + 1] == "9123"


def test_ui_refuses_a_bad_database_before_starting(tmp_path: Path, capsys,  # type: ignore[no-untyped-def]
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tracer.cli import ui

    monkeypatch.setattr(ui, "serve", lambda *a, **k: pytest.fail("started"))
    (tmp_path / "junk.db").write_bytes(b"not sqlite" * 100)
    code, out, err = run_cli(capsys, "ui", "--db", str(tmp_path / "junk.db"))
    assert code == 1 and out == ""
    assert err.startswith(f"looptrace ui: {tmp_path / 'junk.db'} is not") and err.count("\n") == 1


# -- export's other forms, import of several files (what mutation testing showed untested) --
def test_export_html_writes_one_page(db: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out_file = tmp_path / "alpha.html"
    code, out, err = run_cli(capsys, "export", "r-alpha", "--db", str(db), "--html",
                             str(out_file))
    assert (code, err) == (0, "")
    assert out.strip() == str(out_file)
    html = out_file.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "r-alpha-0001" in html
    assert not list(tmp_path.glob("*.jsonl"))  # the HTML only


@pytest.mark.parametrize(("argv", "message"), [
    (["export"], "give a RUN to export"),
    (["export", "r-alpha", "--follow"], "--follow needs --otlp URL"),
])
def test_export_usage_errors_are_one_line(db: Path, capsys, argv: list[str],  # type: ignore[no-untyped-def]
                                          message: str) -> None:
    code, out, err = run_cli(capsys, *argv, "--db", str(db))
    assert (code, out, err) == (1, "", f"looptrace export: {message}\n")


def test_import_of_several_files(db: Path, tmp_path: Path, capsys, store_db: str) -> None:  # type: ignore[no-untyped-def]
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(["export", "r-alpha", "--db", str(db), "-o", str(a)]) == 0
    assert main(["export", "r-beta", "--db", str(db), "-o", str(b)]) == 0
    capsys.readouterr()
    into = store_db
    code, out, err = run_cli(capsys, "import", str(a), str(b), "--db", str(into))
    assert (code, out, err) == (0, f"imported 2 runs into {into}\n", "")  # (each once)
    assert sorted(rows(into, "SELECT id FROM runs")) == [("r-alpha-0001",), ("r-beta-0002",)]


def test_export_and_import_default_to_looptrace_db_here(db_file: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys) -> None:
    """SQLite only: the default file of the current folder (no ``$LOOPTRACE_DB``)."""
    monkeypatch.delenv("LOOPTRACE_DB", raising=False)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    (here / "looptrace.db").write_bytes(db_file.read_bytes())
    assert run_cli(capsys, "export", "r-beta", "-o", "b.jsonl")[:2] == (0, "b.jsonl\n")
    (here / "looptrace.db").unlink()
    code, out, _ = run_cli(capsys, "import", "b.jsonl")
    assert (code, out) == (0, "imported 1 run into looptrace.db\n")
    assert (here / "looptrace.db").exists()


def test_ui_port_must_be_a_number(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main(["ui", "--port", "eighty"])
    assert info.value.code == 2
    assert "invalid int value: 'eighty'" in capsys.readouterr().err


# -- the runs list's filters and pages, as the command line prints them ------------------------
def test_runs_json_is_indented_by_two(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _, out, _ = run_cli(capsys, "runs", "--db", str(db), "--json")
    assert out.startswith('[\n  {\n    "id": "r-beta-0002",\n    "parent_id": "r-alpha-0001",')


def test_runs_without_db_reads_looptrace_db_here(db_file: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys) -> None:
    """SQLite only: the default file of the current folder (no ``$LOOPTRACE_DB``)."""
    monkeypatch.delenv("LOOPTRACE_DB", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "looptrace.db").write_bytes(db_file.read_bytes())
    assert run_cli(capsys, "runs") == (0, TABLE, "")


def test_runs_top_level_leaves_subagent_runs_out(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    _, out, _ = run_cli(capsys, "runs", "--db", str(db), "--top-level")
    assert out == (
        "id            name     status     laps  model  tools  errors  tokens  cost     parent\n"
        "r-alpha-0001  weather  completed  2     2      1      0       77      unknown\n")
    _, out, _ = run_cli(capsys, "runs", "--db", str(db), "--parent", "r-alpha")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["r-beta-0002"]


@pytest.mark.parametrize(("argv", "ids"), [
    (["--status", "error"], ["r-beta-0002"]),
    (["--status", "completed", "--status", "error"], ["r-beta-0002", "r-alpha-0001"]),
    (["--name", "WEATHER-bot"], ["r-alpha-0001"]),
    (["--since", "1970-01-01T00:00:15+00:00"], ["r-beta-0002"]),  # started at 20 s
    (["--until", "1970-01-01T00:00:15+00:00"], ["r-alpha-0001"]),  # started at 10 s
])
def test_runs_filters(db: Path, capsys, argv: list[str], ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(capsys, "runs", "--db", str(db), "--json", *argv)
    assert code == 0 and [r["id"] for r in json.loads(out)] == ids


@pytest.mark.parametrize("argv", [["--status", "paused"], ["--health", "sickly"],
                                  ["--limit", "ten"]])
def test_runs_refuses_unknown_values(db: Path, capsys, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main(["runs", "--db", str(db), *argv])
    assert info.value.code == 2
    assert "invalid" in capsys.readouterr().err


def test_runs_pages_say_where_they_are(store_db: str, capsys) -> None:  # type: ignore[no-untyped-def]
    db = store_db
    import_rows([("runs", {"id": f"run-{i:02d}", "status": "completed", "started_at": float(i)})
                 for i in range(5)], db)
    _, out, err = run_cli(capsys, "runs", "--db", str(db), "--limit", "2")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["run-04", "run-03"]
    assert err == "(runs 1-2 of 5: --offset 2 for the next ones, --limit 0 for all)\n"
    _, out, err = run_cli(capsys, "runs", "--db", str(db), "--limit", "2", "--offset", "2")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["run-02", "run-01"]
    assert err == "(runs 3-4 of 5: --offset 4 for the next ones, --limit 0 for all)\n"
    _, out, err = run_cli(capsys, "runs", "--db", str(db), "--limit", "2", "--offset", "4")
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["run-00"]
    assert err == ""  # the last page
    _, out, err = run_cli(capsys, "runs", "--db", str(db), "--limit", "1", "--offset", "4")
    assert err == ""  # exactly the last one: nothing after it
    _, out, err = run_cli(capsys, "runs", "--db", str(db), "--limit", "5")
    assert err == "" and len(out.splitlines()) == 6  # all of them in one page
    _, out, err = run_cli(capsys, "runs", "--db", str(db), "--limit", "0")
    assert err == "" and len(out.splitlines()) == 6
    _, out, err = run_cli(capsys, "runs", "--db", str(db), "--limit", "1")
    assert len(out.splitlines()) == 2
    assert err == "(runs 1-1 of 5: --offset 1 for the next ones, --limit 0 for all)\n"


def test_when_is_a_date_a_time_or_an_age() -> None:
    import datetime as dt

    from tracer.errors import LooptraceError
    from tracer.read.run_list import parse_when

    assert parse_when("2d", now=1_000_000.0) == 1_000_000.0 - 2 * 86_400
    assert parse_when("90m", now=10_000.0) == 10_000.0 - 5_400
    t = parse_when("12h")  # from the clock
    assert abs(t - (dt.datetime.now().timestamp() - 43_200)) < 60
    assert parse_when("2026-01-31T12:00+00:00") == dt.datetime(
        2026, 1, 31, 12, tzinfo=dt.UTC).timestamp()
    with pytest.raises(LooptraceError, match="not a date, time or age: 'soon'"):
        parse_when("soon")


def test_resolve_is_exact(store_db: str) -> None:
    """A full id wins over the longer ids it prefixes; ``_`` and ``%`` are plain
    characters; case counts."""
    from tracer.db.schema import connect
    from tracer.errors import RunNotFound
    from tracer.read.loader import TraceDB

    db = store_db
    conn = connect(db)
    for rid in ("run-1", "run-10", "Abc-9", "x%y"):
        conn.execute("INSERT INTO runs(id, name, status) VALUES (?, ?, 'completed')",
                     [rid, rid])
    conn.commit()
    conn.close()
    with TraceDB(db) as t:
        assert t.resolve("run-1") == "run-1"
        assert t.resolve("run-10") == "run-10"
        assert t.resolve("Abc") == "Abc-9"
        assert t.resolve("x%") == "x%y"
        for missing in ("run_10", "abc", "x_y", "%"):
            with pytest.raises(RunNotFound, match="no run"):
                t.resolve(missing)
        with pytest.raises(RunNotFound, match="ambiguous"):
            t.resolve("run-")


def test_ui_stops_its_server_when_terminated(tmp_path: Path) -> None:
    """A SIGTERM to ``looptrace ui`` stops the server it started (no orphan left running)."""
    import signal
    import subprocess
    import sys
    import time

    child = tmp_path / "child.pid"
    fake = tmp_path / "server.py"  # stands in for the app's server: writes its pid, waits
    fake.write_text("import os, time, pathlib\n"
                    f"pathlib.Path({str(child)!r}).write_text(str(os.getpid()))\n"
                    "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c",
                             "import sys; from tracer.cli.ui import serve; "
                             f"sys.exit(serve([sys.executable, {str(fake)!r}], {{}}))"],
                            cwd=Path(__file__).resolve().parents[2])
    try:
        for _ in range(200):
            if child.exists() and child.read_text():
                break
            time.sleep(0.05)
        pid = int(child.read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) != 0
        for _ in range(100):  # the server is gone (not left running under init)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the server outlived looptrace ui")
    finally:
        proc.kill()


def test_importing_a_file_again_says_nothing_changed(store_db: str, capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 39, item 10: the second import of the same file said "imported 1 runs"
    although it changed nothing."""
    sample = Path(__file__).resolve().parents[2] / "sample_traces" / "weather.jsonl"
    into = store_db
    assert run_cli(capsys, "import", str(sample), "--db", str(into)) == (
        0, f"imported 1 run into {into}\n", "")
    assert run_cli(capsys, "import", str(sample), "--db", str(into)) == (
        0, f"imported 0 runs into {into} (1 already stored with the same content)\n", "")
