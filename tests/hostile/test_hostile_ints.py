"""Integers too large for SQLite or the OS (issue 36, item 9): ``runs --limit 10**23`` and
``prune --keep 10**23`` gave tracebacks (an OverflowError binding the number);
``ui --port 70000`` failed in a traceback after its 10 s warm-up; MCP ``list_runs`` /
``search_runs`` with an offset of 2**63 or more answered only "Error executing tool".
Every integer option of every command is now range-checked by the parser (one error
line, exit 2, at once), and the MCP tools' integer arguments by name."""

from __future__ import annotations

import sqlite3

import argparse
import asyncio
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracer.cli import COMMANDS, build_parser, main

TOP = 2**63 - 1
# Every integer option, by hand: (command, option, lowest, highest).
INT_OPTIONS = [
    ("runs", "--limit", 0, TOP), ("runs", "--offset", 0, TOP), ("prune", "--keep", 0, TOP),
    ("show", "--step", -TOP - 1, TOP), ("rerun", "--at", -TOP - 1, TOP),
    ("rerun", "--drop", -TOP - 1, TOP), ("ui", "--port", 1, 65535),
    ("proxy", "--port", 0, 65535), ("collect", "--port", 0, 65535),
    ("collect", "--max-spans", 1, TOP), ("collect", "--max-traces", 1, TOP),
    ("mcp", "--port", 0, 65535), ("note", "--step", -TOP - 1, TOP),
    ("note", "--delete", 1, TOP), ("playground", "--at", 1, TOP),
    ("threads", "--limit", 0, TOP), ("threads", "--offset", 0, TOP),
]
# what each command needs besides the option, to parse
REQUIRED = {"show": ["RUN"], "note": ["RUN"], "playground": ["RUN"], "rerun": ["RUN", "--agent", "m:f"],
            "proxy": ["--provider", "openai"]}
SAMPLE = "weather"  # (weather.jsonl's run, by its name: 14 events, one step each)
SAMPLE_STEPS = 14

INTS = st.one_of(st.integers(), st.integers(min_value=-(2**70), max_value=2**70),
                 st.sampled_from([0, 1, -1, 65535, 65536, TOP, TOP + 1, -TOP - 1, -TOP - 2,
                                  10**23, 10**400]))
PROPERTY = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def actions(command: str) -> list[argparse.Action]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices[command]._actions)


def test_no_integer_option_goes_unchecked() -> None:
    """A new ``type=int`` option would take 10**23 (and fail later): each has a range."""
    ints = []
    for command in COMMANDS:
        for a in actions(command):
            if a.type is int:
                ints.append((command, a.option_strings))
            if getattr(a.type, "__qualname__", "") == "int_range.<locals>.integer":
                ints.append((command, a.option_strings[-1]))
    assert sorted(ints) == sorted((c, o) for c, o, _, _ in INT_OPTIONS)


@pytest.mark.parametrize(("command", "option", "low", "high"), INT_OPTIONS)
def test_the_parser_takes_the_range_and_nothing_else(capsys, command: str, option: str,  # type: ignore[no-untyped-def]
                                                     low: int, high: int) -> None:
    @PROPERTY
    @given(value=INTS)
    def check(value: int) -> None:
        argv = [command, *REQUIRED.get(command, []), f"{option}={value}"]
        if low <= value <= high:
            args = build_parser(command).parse_args(argv)
            assert getattr(args, option.lstrip("-").replace("-", "_")) == value
            return
        with pytest.raises(SystemExit) as info:
            build_parser(command).parse_args(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        (line,) = [ln for ln in err.splitlines() if ln.startswith("looptrace ")]
        assert line.startswith(f"looptrace {command}: error: argument {option}: "), err
        top = "2**63-1" if high == TOP else str(high)
        assert line.endswith(f"is out of range ({low} to {top})"), err
        assert "Traceback" not in err

    check()


def test_a_word_is_one_line_too(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as info:
        main(["runs", "--limit", "ten"])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "looptrace runs: error: argument --limit: invalid int value: 'ten'")


def test_ui_port_70000_is_refused_at_once(capsys) -> None:  # type: ignore[no-untyped-def]
    """(was a traceback after the 10 s warm-up: the parser now says no before it starts)"""
    with pytest.raises(SystemExit) as info:
        main(["ui", "--port", "70000"])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "looptrace ui: error: argument --port: 70000 is out of range (1 to 65535)")


# -- the commands that read the database, run for real ---------------------------------------
@pytest.fixture(scope="module")
def db(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copy(sample_db, tmp_path_factory.mktemp("ints") / "s.db"))


def outcome(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code:
        assert len([ln for ln in err.splitlines() if ln.startswith("looptrace ")]) == 1, err
    return code, err


@PROPERTY
@given(value=INTS)
def test_runs_limit_and_offset_any_integer(db: Path, capsys, value: int) -> None:  # type: ignore[no-untyped-def]
    fits = 0 <= value <= TOP
    assert outcome(capsys, ["runs", "--db", str(db), "--limit", str(value)])[0] == (
        0 if fits else 2)
    assert outcome(capsys, ["runs", "--db", str(db), "--offset", str(value), "--json"])[0] == (
        0 if fits else 2)


@PROPERTY
@given(value=INTS)
def test_note_step_any_integer(db: Path, capsys, value: int) -> None:  # type: ignore[no-untyped-def]
    """A step of the run: a note written; another number in SQLite's range: one line, exit
    1, nothing written; beyond it: the parser's line, exit 2."""
    code, err = outcome(capsys, ["note", SAMPLE, "x", "--db", str(db), "--step", str(value)])
    if 1 <= value <= SAMPLE_STEPS:
        assert code == 0
    elif -TOP - 1 <= value <= TOP:
        assert code == 1 and f"has steps 1 to {SAMPLE_STEPS}, not {value}" in err
    else:
        assert code == 2


@PROPERTY
@given(value=INTS)
def test_prune_keep_any_integer(db: Path, capsys, value: int) -> None:  # type: ignore[no-untyped-def]
    code, _ = outcome(capsys, ["prune", "--db", str(db), "--keep", str(value), "--dry-run"])
    assert code == (0 if 0 <= value <= TOP else 2)


@PROPERTY
@given(value=INTS)
def test_show_step_any_integer(db: Path, capsys, value: int) -> None:  # type: ignore[no-untyped-def]
    code, err = outcome(capsys, ["show", SAMPLE, "--db", str(db), "--step", str(value)])
    if not -TOP - 1 <= value <= TOP:
        assert code == 2
    elif 1 <= value <= SAMPLE_STEPS:
        assert code == 0
    else:
        rid = str(sqlite3.connect(db).execute(
            "SELECT id FROM runs WHERE name = ?", [SAMPLE]).fetchone()[0])
        says = f"run {rid[:12]} has steps 1 to {SAMPLE_STEPS}, not {value}"
        assert (code, err) == (1, f"looptrace show: {says}\n")


# -- MCP -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("tool", "args", "says"), [
    ("list_runs", {"offset": 2**63}, "offset=9223372036854775808: out of range"),
    ("list_runs", {"limit": -(2**64)}, "limit=-18446744073709551616: out of range"),
    ("search_runs", {"text": "weather", "offset": 2**63},
     "offset=9223372036854775808: out of range"),
    ("get_messages", {"run": SAMPLE, "step": 2, "offset": 10**30},
     "offset=an integer of 31 digits: out of range"),
])
def test_mcp_integer_arguments_past_64_bits_are_named(db: Path, tool: str, args: dict,
                                                      says: str) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from tracer.mcp.server import build_server

    server = build_server(db)
    with pytest.raises(ToolError) as info:
        asyncio.run(server.call_tool(tool, args))
    assert f"{says} (an integer from -2**63 to 2**63-1)" in str(info.value)


def test_mcp_the_largest_offset_is_an_empty_page(db: Path) -> None:
    from tracer.mcp.server import build_server

    server = build_server(db)
    got = asyncio.run(server.call_tool("list_runs", {"offset": 2**63 - 1}))
    assert '"runs":[]' in str(got) and '"next_offset":null' in str(got)
