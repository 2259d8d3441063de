"""The cost in money on the command line (issue 37): ``runs`` (a column, ``cost_usd`` in
``--json``), ``show`` (the run's cost and each model call's), ``check --max-cost`` (the
CI gate: exit 1 over the limit, 0 under; a cost not known does not pass), ``--prices``.

Over the bundled sample traces (the OpenAI and Anthropic emulators' runs carry real model
names); the expected figures are written out by hand from the providers' prices:
gpt-4o-mini $0.15 in / $0.60 out, claude-haiku-4-5 $1 / $5 per million tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_kit import cli as run_cli

OPENAI_WEATHER = (37 * 0.15 + 25 * 0.60 + 50 * 0.15 + 19 * 0.60) / 1e6  # two calls
ANTHROPIC_SHOPPING = ((49 + 67 + 74 + 86 + 92) * 1 + (30 + 13 + 13 + 13 + 23) * 5) / 1e6


@pytest.fixture(autouse=True)
def _no_prices_file(monkeypatch: pytest.MonkeyPatch) -> None:
    # (``--prices`` names its file in the process's environment: put back after each test)
    monkeypatch.setenv("LOOPTRACE_PRICES", "")
    monkeypatch.delenv("LOOPTRACE_PRICES")


def _by_name(rows: list[dict]) -> dict[str, dict]:  # type: ignore[type-arg]
    return {r["name"]: r for r in rows}


def test_runs_json_has_cost_usd(sample_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "runs", "--db", str(sample_store), "--json", "--limit", "0")
    assert code == 0
    rows = _by_name(json.loads(out))
    assert rows["openai-weather"]["cost_usd"] == pytest.approx(OPENAI_WEATHER)
    assert rows["anthropic-shopping"]["cost_usd"] == pytest.approx(ANTHROPIC_SHOPPING)
    assert rows["weather"]["cost_usd"] is None  # a scripted model: no price, not $0
    assert rows["openai-shopping"]["cost_usd"] is None  # no usage reported
    c = rows["deep-research"]["cost"]
    assert (c["calls"], c["own"]["calls"], c["subagent_runs"]) == (4, 2, 1)


def test_runs_table_has_a_cost_column(sample_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "runs", "--db", str(sample_store), "--limit", "0")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "name", "status", "laps", "model", "tools", "errors",
                                "tokens", "cost", "parent"]
    row = {ln.split()[1]: ln for ln in lines[1:]}
    assert "$0.0000394" in row["openai-weather"]  # (37*0.15 + 25*0.6 + 50*0.15 + 19*0.6) / 1e6
    assert "unknown" in row["weather"]


def test_show_says_the_cost_and_each_call(sample_store: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "show", "anthropic-shopping", "--db", str(sample_store))
    assert code == 0
    assert "  cost $0.000828\n" in out
    assert "model calls (5):" in out
    assert "claude-haiku-4-5  49 in, 30 out  $0.000199" in out  # (49*1 + 30*5) / 1e6
    code, out, _ = run_cli(capsys, "show", "anthropic-shopping", "--db", str(sample_store), "--json")
    d = json.loads(out)["cost"]
    assert d["usd"] == pytest.approx(ANTHROPIC_SHOPPING)
    assert [c["priced_by"] for c in d["model_calls"]] == ["genai-prices"] * 5
    code, out, _ = run_cli(capsys, "show", "weather", "--db", str(sample_store))
    assert "  cost unknown\n" in out
    assert "unknown (no price for 'scripted-weather' at scripted)" in out


def test_check_max_cost_is_a_ci_gate(sample_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(sample_store)
    code, out, _ = run_cli(capsys, "check", "openai-weather", "--db", db, "--max-cost", "0.001")
    assert code == 0
    assert out.splitlines()[-1] == "cost ok: 1 run cost $0.0000394 in all (at most $0.001 a run)"
    code, out, _ = run_cli(capsys, "check", "anthropic-shopping", "--db", db,
                           "--max-cost", "0.0005")
    assert code == 1
    assert out.splitlines()[-1].startswith(
        "OVER     run ") and out.splitlines()[-1].endswith(
        "anthropic-shopping cost $0.000828, over --max-cost $0.0005")
    code, out, _ = run_cli(capsys, "check", "anthropic-shopping", "openai-weather", "--db", db,
                           "--max-total-cost", "$0.0008")
    assert code == 1 and "2 runs together cost $0.000867, over --max-total-cost" in out
    # a cost not known does not pass silently
    code, out, _ = run_cli(capsys, "check", "weather", "--db", db, "--max-cost", "10")
    assert code == 1 and "UNKNOWN  run " in out and "cannot be held to $10.00" in out
    code, out, _ = run_cli(capsys, "check", "weather", "--db", db, "--max-cost", "10",
                           "--allow-unknown-cost")
    assert code == 0 and "passed (--allow-unknown-cost)" in out
    # with --json, stdout stays the findings' JSON; the verdict goes to stderr
    code, out, err = run_cli(capsys, "check", "anthropic-shopping", "--db", db, "--json",
                             "--max-cost", "0.0005")
    assert code == 1 and isinstance(json.loads(out), list) and "OVER" in err


def test_prices_option_prices_a_custom_model(sample_store: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "prices.toml"
    f.write_text('[models."scripted-weather"]\ninput_per_mtok = 1000\noutput_per_mtok = 2000\n')
    code, out, _ = run_cli(capsys, "runs", "--db", str(sample_store), "--json", "--limit", "0",
                           "--prices", str(f))
    assert code == 0
    w = _by_name(json.loads(out))["weather"]
    assert w["cost_usd"] == pytest.approx((w["input_tokens"] * 1000 + w["output_tokens"] * 2000) / 1e6)
    code, out, _ = run_cli(capsys, "check", "weather", "--db", str(sample_store), "--max-cost", "1",
                           "--prices", str(f))
    assert code == 0
    f.write_text("[models.x]\ninput_per_mtok = 1\n")
    code, out, err = run_cli(capsys, "runs", "--db", str(sample_store), "--prices", str(f))
    assert code == 1 and out == ""
    assert err == f"looptrace runs: prices file {f}: models.x needs output_per_mtok (USD per million tokens)\n"


def test_a_subagent_run_checked_with_its_parent_counts_once(
        sample_store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "prices.toml"
    f.write_text('[models."scripted-deep"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n')
    code, out, _ = run_cli(capsys, "runs", "--db", str(sample_store), "--json", "--limit", "0")
    rows = _by_name(json.loads(out))
    top, sub = rows["deep-research"], rows["researcher"]
    code, out, _ = run_cli(capsys, "check", top["id"], sub["id"], "--db", str(sample_store),
                           "--max-total-cost", "1", "--prices", str(f))
    assert code == 0
    tokens = top["total_tokens"] + sub["total_tokens"]  # (91 + 71: $1,000 a million)
    assert out.splitlines()[-1] == (f"cost ok: 1 run cost ${tokens / 1000:.3f} in all "
                                    "(at most $1.00 in all)")


def test_runs_json_names_each_runs_models_in_order(sample_store: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``models`` in ``runs --json``: the models that answered the run's calls, a
    fallback's too (support-desk's primary fails over to its backup)."""
    code, out, _ = run_cli(capsys, "runs", "--db", str(sample_store), "--json", "--limit", "0")
    assert code == 0
    rows = _by_name(json.loads(out))
    assert rows["support-desk"]["models"] == ["scripted-backup", "scripted-primary"]
    assert rows["anthropic-shopping"]["models"] == ["claude-haiku-4-5"]
    assert rows["weather"]["models"] == ["scripted-weather"]


def test_runs_still_lists_without_an_events_table(sample_db: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged events page: the runs are still listed, their costs and models unknown
    (null and []), said once on stderr. (SQLite only: a damaged file.)"""
    import shutil
    import sqlite3

    db = tmp_path / "damaged.db"
    shutil.copy(sample_db, db)
    con = sqlite3.connect(db)
    con.execute("ALTER TABLE events RENAME TO events_gone")
    con.commit()
    con.close()
    said = f"looptrace runs: costs not shown ({db}: cannot read (no such table: events))\n"
    code, out, err = run_cli(capsys, "runs", "--db", str(db), "--json", "--limit", "0")
    assert code == 0 and err == said
    rows = json.loads(out)
    assert len(rows) == 23
    assert {(r["cost_usd"], r["cost"], tuple(r["models"])) for r in rows} == {(None, None, ())}
    code, out, err = run_cli(capsys, "runs", "--db", str(db), "--name", "weather")
    assert code == 0 and err == said
    header, *lines = out.splitlines()
    assert header.split()[8] == "cost" and lines
    assert [line.split()[-1] for line in lines] == ["-"] * len(lines)  # (no parent column)


@pytest.mark.parametrize("text, why", [
    ("x = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deep"),  # (RecursionError)
    ("x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n", "nested too deep"),
    ('[models."m"]\ninput_per_mtok = ' + "9" * 5000 + "\noutput_per_mtok = 1\n",
     "Exceeds the limit (4300 digits)"),  # (ValueError)
    ("# " + "x" * (5 * 2**20) + "\n", "over 4 MiB, not a prices file"),
])
def test_a_hostile_prices_file_is_one_line(sample_store: str, tmp_path: Path, text: str,
                                           why: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Deeply nested arrays or inline tables gave a RecursionError traceback, an integer
    of 5,000 digits a ValueError one, a big file was read whole: one line and exit 1."""
    f = tmp_path / "prices.toml"
    f.write_text(text, "utf-8")
    code, out, err = run_cli(capsys, "runs", "--db", str(sample_store), "--prices", str(f))
    assert code == 1 and out == ""
    assert err.startswith(f"looptrace runs: prices file {f}: ") and why in err
    assert err.count("\n") == 1


_BOUNDED = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
            "from tracer.cli import main\n"
            "sys.exit(main(['runs', '--db', sys.argv[1], '--prices', sys.argv[2]]))\n")


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_a_prices_file_that_never_ends_is_refused(sample_store: str, tmp_path: Path,
                                                  kind: str) -> None:
    """``--prices /dev/zero`` read until memory ran out; a FIFO with no writer waited
    for ever: each is one line and exit 1 (in a process held to 1 GiB and 60 s)."""
    import os
    import subprocess
    import sys

    path = kind
    if kind == "fifo":
        path = str(tmp_path / "prices.fifo")
        os.mkfifo(path)
    env = {k: v for k, v in os.environ.items() if k != "LOOPTRACE_PRICES"}
    done = subprocess.run([sys.executable, "-c", _BOUNDED, str(sample_store), path], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"looptrace runs: prices file {path}: not a regular file\n"
