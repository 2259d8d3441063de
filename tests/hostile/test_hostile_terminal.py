"""Recorded text never drives the terminal: a run name and a tool name holding
``ESC ] 0 ; title BEL`` (set the window title), ``ESC [ 2 J`` (clear the screen), a C1
CSI and a bidi override go through every command that prints them (``runs``, ``diff``,
``check``, ``export``, ``import``, ``prune``, the proxy's request lines, the diff ``proxy
--rerun`` prints of a request it does not hold, ``replay``'s summary, errors) and come
out escaped; ``--json`` stays exact. On the main branch before issue 21, ``runs``,
``diff`` and ``check`` printed them raw; before issue 36, ``proxy --rerun``'s diff and
``replay``'s summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tracer.cli import main
from tracer.interop.exchange import import_rows

HOSTILE = "evil\x1b]0;pwned\x07\x1b[2Jname\x9b31m\u202egnp.exe"
ESCAPED = "evil\\x1b]0;pwned\\x07\\x1b[2Jname\\x9b31m\\u202egnp.exe"
TOOL = f"tool{HOSTILE}"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def rows(rid: str, tool: str) -> list[tuple[str, dict]]:
    call = {"name": tool, "args": {}, "id": "c1", "type": "tool_call"}
    ai = {"type": "ai", "data": {"content": "", "tool_calls": [call], "id": f"{rid}-ai"}}
    return [
        ("runs", {"id": rid, "name": HOSTILE, "status": "completed", "started_at": 1.0,
                  "ended_at": 2.0}),
        ("events", {"run_id": rid, "seq": 0, "ts": 1.0, "hook": "run", "phase": "start",
                    "lap": 0}),
        ("events", {"run_id": rid, "seq": 1, "ts": 1.1, "hook": "wrap_model_call",
                    "phase": "enter", "lap": 1}),
        ("events", {"run_id": rid, "seq": 2, "ts": 1.2, "hook": "wrap_model_call",
                    "phase": "exit", "lap": 1}),
        ("events", {"run_id": rid, "seq": 3, "ts": 1.3, "hook": "run", "phase": "end",
                    "lap": 1}),
        ("messages", {"run_id": rid, "position": 0, "seq": 0, "msg_id": f"{rid}-h",
                      "type": "human", "text": HOSTILE, "key": f"{rid}-h",
                      "data": json.dumps({"type": "human", "data": {"content": HOSTILE,
                                                                    "id": f"{rid}-h"}})}),
        ("messages", {"run_id": rid, "position": 1, "seq": 2, "msg_id": f"{rid}-ai",
                      "type": "ai", "text": "", "key": f"{rid}-ai", "data": json.dumps(ai)}),
    ]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    import_rows(rows("run-a", TOOL) + rows("run-b", TOOL + "x"), path)
    return path


def assert_clean(text: str) -> None:
    assert not RAW.search(text), repr(RAW.search(text))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert_clean(out)
    assert_clean(err)
    return code, out, err


def test_safe_text_escapes_controls_and_keeps_text() -> None:
    from tracer.vocab.terminal import safe_text

    assert safe_text(HOSTILE) == ESCAPED
    assert safe_text("Ærø 北京 🚀 tab\there") == "Ærø 北京 🚀 tab\there"
    assert safe_text("a\nb\r\x00\x7f\u2028") == "a\\x0ab\\x0d\\x00\\x7f\\u2028"
    assert safe_text("a\nb", keep_newlines=True) == "a\nb"


def test_runs_diff_check_print_escapes(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli(capsys, "runs", "--db", str(db))
    assert code == 0 and ESCAPED[:28] in out
    code, out, _ = cli(capsys, "diff", "run-a", "run-b", "--db", str(db))
    assert code == 1 and "tool" in out and "\\x1b]0;pwned" in out
    code, out, _ = cli(capsys, "check", "--db", str(db))
    assert "\\x1b" in out, out
    code, out, err = cli(capsys, "export", f"run-a{HOSTILE}", "--db", str(db))  # an error
    assert code == 1 and "\\x1b]0;pwned" in err
    code, out, _ = cli(capsys, "show", "run-a", "--db", str(db))
    assert code == 0 and ESCAPED[:28] in out
    code, out, _ = cli(capsys, "show", "run-a", "--db", str(db), "--step", "2")
    assert code == 0 and "\\x1b]0;pwned" in out


def test_json_stays_exact(db: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["runs", "--db", str(db), "--json"]) == 0
    names = {r["name"] for r in json.loads(capsys.readouterr().out)}
    assert names == {HOSTILE}
    main(["diff", "run-a", "run-b", "--db", str(db), "--json"])
    assert TOOL in capsys.readouterr().out.replace("\\u001b", "\x1b").replace(
        "\\u0007", "\x07")  # (C0 as JSON escapes them; C1 and bidi raw: exact)
    main(["check", "--db", str(db), "--json"])
    found = json.dumps(json.loads(capsys.readouterr().out))
    assert "\\u001b]0;pwned" in found


def test_import_export_prune_print_escapes(db: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    where = tmp_path / f"dir{HOSTILE[:18]}"
    out_file = where / "a.jsonl"
    code, out, _ = cli(capsys, "export", "run-a", "--db", str(db), "-o", str(out_file))
    assert code == 0 and "\\x1b]0;pwned" in out
    code, out, _ = cli(capsys, "import", "--db", str(where / "b.db"), str(out_file))
    assert code == 0 and "\\x1b]0;pwned" in out
    code, out, _ = cli(capsys, "prune", "--db", str(where / "b.db"), "--keep", "0")
    assert code == 0 and "\\x1b]0;pwned" in out


def test_the_proxy_prints_request_paths_escaped(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tracer.cli.proxy import _print_exchange
    from tracer.wire.capture import Exchange

    ex = Exchange(provider="openai", method="POST", url=f"/v1/chat{HOSTILE}",
                  request_headers={}, request_body="{}", status=200)
    _print_exchange(ex)
    out = capsys.readouterr().out
    assert_clean(out)
    assert out.startswith("POST /v1/chat" + ESCAPED + " 200 ")


def test_proxy_rerun_prints_the_diff_of_a_request_escaped(tmp_path: Path) -> None:
    """``looptrace proxy --rerun``: a client's request the record does not hold is
    printed as a diff to the nearest recorded one; the client's text in it comes out
    escaped (issue 36, item 12: it was printed raw, the one line of the proxy that was)."""
    import io

    from tracer.demo.record import root_ids
    from tracer.wire.loops import LOOPS
    from tracer.wire.proxy import WireServer
    from tracer.wire.cassette_script import CassetteScript
    from tracer.wire.scenarios import WEATHER_PROMPT, WEATHER_SYSTEM

    db = tmp_path / "trace.db"
    with WireServer(mode="emulate", script="weather", db=str(db)) as srv:
        LOOPS["openai"](srv.url, WEATHER_PROMPT, system=WEATHER_SYSTEM)
    (run_id,) = root_ids(db)
    log = io.StringIO()
    script = CassetteScript(str(db), run_id, fallback="echo", log=log)
    with WireServer(mode="emulate", script=script, db=str(db)) as srv:
        LOOPS["openai"](srv.url, HOSTILE, system=WEATHER_SYSTEM)
    printed = log.getvalue()
    assert_clean(printed)
    assert "a request the record does not hold" in printed
    assert f"+[user] {ESCAPED}" in printed.splitlines()
    assert HOSTILE in script.misses[0]  # (what is kept stays exact)


def test_rerun_prints_the_agents_error_escaped(db: Path, capsys,  # type: ignore[no-untyped-def]
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``looptrace rerun``'s summary holds the agent's own text (the exception it ended
    with, why the live part began): escaped too (issue 36, item 12's neighbour). The
    rerun itself is stood in for: what is under test is the printing."""
    import tracer.whatif.rerun
    from tracer.whatif.player import Stats

    def rerun(run: str, **_: object) -> tracer.whatif.rerun.RerunResult:
        stats = Stats(live_from={"call": 1, "step": 0, "why": f"a request {HOSTILE}"})
        return tracer.whatif.rerun.RerunResult(run_id="run-new", of=run, at=None, edit=None,
                                          stats=stats, error=f"ValueError({HOSTILE!s})")

    monkeypatch.setattr(tracer.whatif.rerun, "rerun", rerun)
    code, out, _ = cli(capsys, "rerun", "run-a", "--db", str(db), "--agent", "m:f")
    assert code == 0 and out.count(ESCAPED) == 2, out
