"""genai-prices' answers kept between processes (``tracer.read.price_memo``).

A second ``looptrace runs`` over the same file prints the same table without importing
genai-prices (0.6 to 1.8 s of the first one); an answer read back is the one genai-prices
gave, digit for digit; a folder that cannot be written changes nothing but the speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from tracer.read import cost, price_memo
from tracer.read.cost import run_costs
from tracer.read.loader import TraceDB
from tracer.read.price_memo import PriceMemo

# Runs ``looptrace runs`` and says on its last line whether genai_prices was imported.
_RUNS = ("import sys\nfrom tracer.cli import main\nrc = main(['runs', '--db', sys.argv[1]])\n"
         "print('imported genai_prices:', 'genai_prices' in sys.modules)\nsys.exit(rc)\n")


def _runs(db: Path, cache: Path) -> tuple[str, bool]:
    env = {**os.environ, "LOOPTRACE_CACHE_DIR": str(cache)}
    env.pop("LOOPTRACE_PRICES", None)
    out = subprocess.run([sys.executable, "-c", _RUNS, str(db)], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    table, _, last = out.rstrip("\n").rpartition("\n")
    return table, last.endswith("True")


def test_a_second_runs_list_prices_without_genai_prices(sample_store: str, tmp_path: Path):
    cache = tmp_path / "cache"
    first, imported = _runs(sample_store, cache)
    assert imported
    assert "$0.000828" in first  # (anthropic-shopping: a priced run among unknown ones)
    (kept,) = cache.glob("genai-prices-*.json")
    assert json.loads(kept.read_text("utf-8"))
    second, imported = _runs(sample_store, cache)
    assert not imported
    assert second == first


def test_answers_read_back_are_genai_prices_own(sample_store: str, tmp_path: Path):
    """Every priced call of the samples: the answer read back from the file equals
    genai-prices' own, as a Decimal and as text (the same digits, the same exponent)."""
    with TraceDB(sample_store) as db:
        ids = [r.id for r in db.runs(limit=None)]
        events = cost._model_events(db, ids)
    asked = []
    for rid, evs in events.items():
        with TraceDB(sample_store) as db:
            run = db.run(rid).summary
        for c in cost.call_costs(rid, evs, run.model, run.provider, cost.Prices()):
            t = cost._tokens(c.usage)
            if c.model and not isinstance(t, str):
                ts = next(e.ts for e in evs if e.seq == c.seq)
                asked.append((t, c.model, c.provider, ts))
    assert len(asked) > 50
    path = tmp_path / "answers.json"
    writer = PriceMemo(path)
    truth = [cost._ask_genai_prices(*a) for a in asked]
    assert any(t[0] is not None for t in truth) and any(t[0] is None for t in truth)
    for a, t in zip(asked, truth, strict=True):
        writer.put(*a, t)
    writer.save()
    reader = PriceMemo(path)
    back = [reader.get(*a) for a in asked]
    assert back == truth
    assert [[str(v) for v in b] for b in back if b] == [[str(v) for v in t] for t in truth]


def test_the_memo_answers_in_place_of_genai_prices(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    """What the file holds is what ``Prices.price`` answers (so a run's figures come from
    it, not from a second lookup); a call with no time is never kept (genai-prices prices
    it as of now)."""
    path = tmp_path / "m.json"
    memo = PriceMemo(path)
    monkeypatch.setattr(cost, "memo", lambda: memo)
    usage = {"input_tokens": 1000, "output_tokens": 100}
    got = cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9)
    assert got == (Decimal("0.0015"), Decimal("0.001"), Decimal("0.0005"), None, "genai-prices")
    memo.save()
    (key,) = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({key: ["7", "3", "4", None, "genai-prices"]}), "utf-8")
    memo = PriceMemo(path)  # (a later process)
    planted = (Decimal(7), Decimal(3), Decimal(4), None, "genai-prices")
    assert cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9) == planted
    cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", None)
    memo.save()
    assert list(json.loads(path.read_text("utf-8"))) == [key]


def test_a_cache_folder_that_cannot_be_written_changes_nothing(sample_store: str,
                                                               tmp_path: Path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with_cache, _ = _runs(sample_store, tmp_path / "cache")
    without, imported = _runs(sample_store, blocked / "looptrace")
    assert imported and without == with_cache
    assert blocked.read_text() == "not a folder"


def test_run_costs_keeps_what_it_asked(sample_store: str, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch):
    memo = PriceMemo(tmp_path / "kept.json")
    monkeypatch.setattr(cost, "memo", lambda: memo)
    with TraceDB(sample_store) as db:
        costs = run_costs(db, [r.id for r in db.runs(limit=None)])
    assert costs
    assert len(json.loads((tmp_path / "kept.json").read_text("utf-8"))) > 10


@pytest.mark.parametrize("held", [
    ["not a number", "3", "4", None, "genai-prices"],
    ["7", "3", "4", None, {"a": 1}],
    ["7", "3", "4", 5, "genai-prices"],
    "x" * 40,
])
def test_a_damaged_memo_is_asked_again_not_believed(tmp_path: Path, held: object,
                                                    monkeypatch: pytest.MonkeyPatch):
    """A memo file damaged (or written by something else) is never an answer: the call
    is priced by genai-prices, as if the file were not there; a file far over the
    memo's own size is not read at all."""
    usage = {"input_tokens": 1000, "output_tokens": 100}
    truth = cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9)
    path = tmp_path / "m.json"
    memo = PriceMemo(path)
    monkeypatch.setattr(cost, "memo", lambda: memo)
    cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9)
    memo.save()
    (key,) = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({key: held}), "utf-8")
    memo = PriceMemo(path)
    assert cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9) == truth
    good = json.dumps({key: ["7", "3", "4", None, "genai-prices"]})
    path.write_text(good, "utf-8")
    memo = PriceMemo(path)
    planted = (Decimal(7), Decimal(3), Decimal(4), None, "genai-prices")
    assert cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9) == planted
    path.write_text(good + " " * price_memo.MAX_FILE_BYTES, "utf-8")  # (over: not read)
    memo = PriceMemo(path)
    assert cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9) == truth


@pytest.mark.parametrize("held", ["NaN", "sNaN", "-1", "Infinity", "-Infinity", "-0.5E-3"])
def test_a_memo_number_that_is_not_a_price_is_asked_again(tmp_path: Path, held: str,
                                                           monkeypatch: pytest.MonkeyPatch):
    """A kept amount that is a number but not a price (NaN and sNaN crashed ``runs`` and
    ``show``; -1 and Infinity were shown as ``$-1.00`` and ``$-inf``) is not believed:
    the call is priced by genai-prices."""
    usage = {"input_tokens": 1000, "output_tokens": 100}
    truth = cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9)
    assert truth[0] is not None and truth[0] > 0
    path = tmp_path / "m.json"
    memo = PriceMemo(path)
    monkeypatch.setattr(cost, "memo", lambda: memo)
    cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9)
    memo.save()
    (key,) = json.loads(path.read_text("utf-8"))
    for at in range(3):  # (the total, the input's or the output's amount)
        row: list[str | None] = [str(v) if v is not None else None for v in truth]
        row[at] = held
        path.write_text(json.dumps({key: row}), "utf-8")
        memo = PriceMemo(path)
        assert cost.Prices().price(usage, "claude-haiku-4-5", "anthropic", 1.8e9) == truth


def _poison(cache: Path, held: str) -> None:
    """Every kept answer's amounts set to ``held``, as a shared or restored cache might."""
    (kept,) = cache.glob("genai-prices-*.json")
    data = json.loads(kept.read_text("utf-8"))
    kept.write_text(json.dumps({k: [held if v is not None and i < 3 else v
                                    for i, v in enumerate(row)]
                                for k, row in data.items()}), "utf-8")


@pytest.mark.parametrize("held", ["-1", "NaN", "sNaN", "-Infinity", "Infinity"])
def test_check_max_cost_is_not_fooled_by_a_poisoned_memo(
        sample_store: str, tmp_path: Path, held: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]):
    """The CI cost gate through a shared cache: with every kept amount -1 (or NaN...),
    ``check --max-cost`` passed a run genai-prices' table puts over the limit (or
    crashed); ``runs`` and ``show`` showed ``$-1.00`` or crashed."""
    from tracer.cli import main

    cache = tmp_path / "cache"
    monkeypatch.setenv("LOOPTRACE_CACHE_DIR", str(cache))
    monkeypatch.delenv("LOOPTRACE_PRICES", raising=False)
    monkeypatch.setattr(price_memo, "_memos", {})
    assert main(["runs", "--db", str(sample_store)]) == 0
    _poison(cache, held)
    monkeypatch.setattr(price_memo, "_memos", {})  # (a new process: reads the file)
    capsys.readouterr()
    code = main(["check", "anthropic-shopping", "--db", str(sample_store), "--max-cost", "0.0005"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.splitlines()[-1].endswith(
        "anthropic-shopping cost $0.000828, over --max-cost $0.0005")
    for argv in (["runs", "--db", str(sample_store)],
                 ["show", "anthropic-shopping", "--db", str(sample_store)]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "$0.000828" in out
        assert "$-" not in out and "inf" not in out.lower() and "nan" not in out.lower()
