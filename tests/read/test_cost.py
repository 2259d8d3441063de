"""The cost in money of model calls (issue 37, ``tracer.read.cost``).

Each demo run (recorded by ``looptrace demo``: scripted models with made-up names, and
the OpenAI, Anthropic and Ollama emulators behind the real adapters with real model
names) is priced against genai-prices' own figures, computed here directly from the
events as the loader reads them; two are written out by hand from the providers'
published prices. A real agent whose scripted model reports cached and reasoning tokens
is priced with them. An unknown model is null, never $0; an override file prices a
custom model; a bad override file is one line.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import genai_prices
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from pg_kit import store_on

from tracer import TraceMiddleware
from tracer.cli import main
from tracer.demo.models import ScriptedChatModel, turn_script
from tracer.errors import PricesFileError
from tracer.read.cost import Cost, Prices, money, run_costs
from tracer.read.loader import TraceDB


@pytest.fixture(scope="module")
def demo_db(engine: str, tmp_path_factory: pytest.TempPathFactory, pg_url: str | None) -> str:
    db = store_on(engine, tmp_path_factory.mktemp("demo"), pg_url, "demo.db")
    assert main(["demo", "--db", str(db)]) == 0
    return db


def _expected(db: TraceDB, run_id: str) -> tuple[Decimal | None, int, int]:
    """(cost, calls, priced) of one run's own model calls, from genai-prices directly."""
    run = db.run(run_id)
    model, provider = run.summary.model, run.summary.provider
    total, calls, priced = Decimal(0), 0, 0
    for e in run.events:
        if e.hook not in ("wrap_model_call", "model"):
            continue
        if e.phase == "enter":
            model = e.payload.get("model") or run.summary.model
            provider = e.payload.get("provider") or run.summary.provider or None
            continue
        if e.phase not in ("exit", "error"):
            continue
        calls += 1  # (a call that failed: its cost is not known)
        usage = (e.payload or {}).get("usage") if e.phase == "exit" else None
        if not usage:
            continue
        details = usage.get("input_token_details") or {}
        try:
            price = genai_prices.calc_price(
                genai_prices.Usage(input_tokens=usage["input_tokens"],
                                   output_tokens=usage["output_tokens"],
                                   cache_read_tokens=details.get("cache_read") or None),
                model, provider_id=provider,
                genai_request_timestamp=dt.datetime.fromtimestamp(e.ts, dt.UTC))
        except LookupError:
            continue
        total += price.total_price
        priced += 1
    return (total if priced == calls else None), calls, priced


def test_every_demo_run_costs_what_genai_prices_says(demo_db: str) -> None:
    with TraceDB(demo_db) as db:
        runs = db.runs()
        costs = run_costs(db, [r.id for r in runs], Prices())
        assert len(runs) == 23 and set(costs) == {r.id for r in runs}
        priced = 0
        for r in runs:
            c = costs[r.id]
            want, calls, n = _expected(db, r.id)
            assert (c.own.calls, c.own.priced) == (calls, n), r.name
            assert c.own.usd == (None if want is None else float(want)), r.name
            priced += n
        assert priced == 12  # the OpenAI and Anthropic emulators' calls (one gave no usage)
        by_name = {r.name: costs[r.id] for r in runs}
    # written out by hand: gpt-4o-mini $0.15 / $0.60, claude-haiku-4-5 $1 / $5 per million
    # tokens; each run's two calls, 87 tokens in and 44 out
    assert by_name["openai-weather"].total.usd == pytest.approx((87 * 0.15 + 44 * 0.60) / 1e6)
    assert by_name["anthropic-weather"].total.usd == pytest.approx((87 * 1 + 44 * 5) / 1e6)
    # no usage reported (streamed without it): unknown, not $0
    assert by_name["openai-shopping"].total.usd is None
    assert by_name["openai-shopping"].total.text() == "unknown"
    assert by_name["openai-shopping"].calls[0].why == "no usage reported"
    # a self-hosted model genai-prices has no price for
    assert by_name["ollama-weather"].total.usd is None
    assert by_name["ollama-weather"].calls[0].why == "no price for 'llama3.1' at ollama"
    # a call that failed (the emulator's HTTP 400): counted, its cost unknown
    partly = by_name["anthropic: What's the weather in Oslo and in Bergen right n..."]
    assert partly.total.text() == f"≥ {money(partly.total.priced_usd)} (1 of 2 calls priced)"
    assert partly.total.usd is None
    # made-up model names: unknown, never $0
    assert by_name["weather"].total.usd is None
    assert by_name["weather"].total.text() == "unknown"


def test_an_override_file_prices_custom_models_and_subagent_runs_apart(
        demo_db: str, tmp_path: Path) -> None:
    f = tmp_path / "prices.toml"
    f.write_text('[models."scripted-deep"]\ninput_per_mtok = 2.0\noutput_per_mtok = 8\n\n'
                 '[providers.ollama]\ninput_per_mtok = 0\noutput_per_mtok = 0\n')
    prices = Prices.load(f)
    with TraceDB(demo_db) as db:
        top = next(r for r in db.runs() if r.name == "deep-research")
        sub = db.runs(parent_id=top.id)[0]
        c = run_costs(db, [top.id], prices)[top.id]
        ollama = next(r for r in db.runs() if r.name == "ollama-weather")
        free = run_costs(db, [ollama.id], prices)[ollama.id]
    own = (top.input_tokens * 2 + top.output_tokens * 8) / 1e6
    below = (sub.input_tokens * 2 + sub.output_tokens * 8) / 1e6
    assert c.own.usd == pytest.approx(own)
    assert c.total.usd == pytest.approx(own + below)
    assert c.subagents == 1
    assert c.by_model["scripted-deep"].usd == pytest.approx(own + below)
    assert c.calls[0].source == str(f)
    assert "with 1 subagent run" in c.text()
    assert free.total.usd == 0.0 and free.total.text() == "$0"  # priced at $0 by the user


def test_the_environment_names_the_prices_file(demo_db: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    f = tmp_path / "p.toml"
    f.write_text('[models."scripted-weather"]\ninput_per_mtok = 1\noutput_per_mtok = 1\n')
    monkeypatch.setenv("LOOPTRACE_PRICES", str(f))
    with TraceDB(demo_db) as db:
        r = next(x for x in db.runs() if x.name == "weather")
        c = run_costs(db, [r.id])[r.id]
    assert c.total.usd == pytest.approx((r.input_tokens + r.output_tokens) / 1e6)


@pytest.mark.parametrize(("text", "says"), [
    ("[models.x\n", "not TOML"),
    ('[models."x"]\ninput_per_mtok = 1\n', "needs output_per_mtok"),
    ('[models."x"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n', "must be a number"),
    ('[models."x"]\ninput_per_mtok = "cheap"\noutput_per_mtok = 1\n', "must be a number"),
    ('[models."x"]\ninput_per_mtok = 1\noutput_per_mtok = 1\ninput = 3\n', "unknown key 'input'"),
    ('[model."x"]\ninput_per_mtok = 1\n', "unknown table 'model'"),
])
def test_a_bad_prices_file_is_one_line(tmp_path: Path, text: str, says: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(PricesFileError) as err:
        Prices.load(f)
    assert says in str(err.value) and str(f) in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(PricesFileError, match="cannot read"):
        Prices.load(tmp_path / "missing.toml")


def _usage(i: int, o: int, read: int, reasoning: int) -> dict[str, object]:
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o,
            "input_token_details": {"cache_read": read},
            "output_token_details": {"reasoning": reasoning}}


def test_cached_and_reasoning_tokens_are_priced(store_db: str) -> None:
    """A real agent whose model (a scripted one, named as OpenAI's o4-mini) reports cache
    reads and reasoning tokens: each call priced with them, as genai-prices prices them
    (on each engine)."""
    db_path = store_db

    class O4Mini(ScriptedChatModel):
        def _get_ls_params(self, stop: list[str] | None = None, **kwargs: object) -> object:
            params = super()._get_ls_params(stop=stop, **kwargs)
            params["ls_provider"] = "openai"
            return params

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    first = AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}],
                      usage_metadata=_usage(1200, 300, 1024, 256))  # type: ignore[arg-type]
    last = AIMessage("Sunny.", usage_metadata=_usage(1300, 20, 1152, 0))  # type: ignore[arg-type]
    model = O4Mini(script=turn_script([first, last]), model_name="o4-mini")
    trace = TraceMiddleware(db=db_path, run_name="o4")
    agent = create_agent(model, [weather], middleware=[trace])
    agent.invoke({"messages": [("user", "Weather in Oslo?")]})
    trace.flush()
    with TraceDB(db_path) as db:
        run = db.runs()[0]
        c = run_costs(db, [run.id], Prices())[run.id]
        ts = [e.ts for e in db.run(run.id).events if e.phase == "exit" and e.hook == "wrap_model_call"]
    want = [genai_prices.calc_price(
        genai_prices.Usage(input_tokens=i, output_tokens=o, cache_read_tokens=r,
                           output_reasoning_tokens=z or None),
        "o4-mini", provider_id="openai",
        genai_request_timestamp=dt.datetime.fromtimestamp(t, dt.UTC)).total_price
        for (i, o, r, z), t in zip([(1200, 300, 1024, 256), (1300, 20, 1152, 0)], ts, strict=True)]
    assert [x.usd for x in c.calls] == want
    # and by hand: o4-mini is $1.10 in, $0.275 cached, $4.40 out per million tokens
    by_hand = ((1200 - 1024) * 1.10 + 1024 * 0.275 + 300 * 4.40
               + (1300 - 1152) * 1.10 + 1152 * 0.275 + 20 * 4.40) / 1e6
    assert c.total.usd == pytest.approx(by_hand)
    # the cached tokens lower the price: without them the calls cost more
    plain = sum(genai_prices.calc_price(genai_prices.Usage(input_tokens=i, output_tokens=o),
                                        "o4-mini", provider_id="openai").total_price
                for i, o in [(1200, 300), (1300, 20)])
    assert float(plain) > c.total.usd


def test_a_sum_says_what_it_prices() -> None:
    assert Cost().text() == "$0"
    assert Cost(Decimal("0.0123"), 3, 3).text() == "$0.0123"
    assert Cost(Decimal(0), 2, 0).text() == "unknown"
    assert Cost(Decimal(0), 2, 0).usd is None
    partial = Cost(Decimal("0.0123"), 3, 2)
    assert partial.usd is None
    assert partial.text() == "≥ $0.0123 (2 of 3 calls priced)"
    assert partial.to_dict() == {"usd": None, "priced_usd": 0.0123, "calls": 3,
                                 "priced_calls": 2}
    assert [money(x) for x in (0, 0.000195, 0.0123, 1.5, 1234.5)] == [
        "$0", "$0.000195", "$0.0123", "$1.50", "$1,234"]


def test_none_counts_are_not_reported_not_zero() -> None:
    p = Prices()
    usd, _, _, why, _ = p.price({"input_tokens": None, "output_tokens": 5}, "gpt-4o", "openai")
    assert usd is None and why == "no token counts reported"
    usd, _, _, why, _ = p.price(None, "gpt-4o", "openai")
    assert usd is None and why == "no usage reported"
    usd, _, _, why, _ = p.price({"input_tokens": 1, "output_tokens": 1}, None, None)
    assert usd is None and why == "no model recorded"


def test_pricing_asks_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """genai-prices' table is the one bundled with the package: pricing opens no socket
    (its ``UpdatePrices`` fetcher, the only code of it that does, is never started)."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("pricing tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    usd, _, _, why, by = Prices().price({"input_tokens": 1000, "output_tokens": 100},
                                        "claude-haiku-4-5", "anthropic", 1.8e9)
    assert (usd, why, by) == (Decimal("0.0015"), None, "genai-prices")  # ($1 + $5 x 0.1) / 1000
    from genai_prices.data_snapshot import get_snapshot

    assert get_snapshot().from_auto_update is False


def test_anthropic_cache_writes_are_priced_by_their_lifetime() -> None:
    """LangChain's Anthropic usage: cache reads, and cache writes as one count or split in
    5-minute and 1-hour writes. By hand, claude-haiku-4-5: $1 in, $0.10 a cache read,
    $1.25 a 5-minute write, $2 a 1-hour write, $5 out, per million tokens."""
    p = Prices()
    split = {"input_tokens": 3000, "output_tokens": 100, "input_token_details": {
        "cache_read": 1000, "cache_creation": 0, "ephemeral_5m_input_tokens": 500,
        "ephemeral_1h_input_tokens": 200}}
    usd = p.price(split, "claude-haiku-4-5", "anthropic", 1.8e9)[0]
    assert usd is not None
    assert float(usd) == pytest.approx((1300 + 1000 * 0.1 + 500 * 1.25 + 200 * 2 + 100 * 5) / 1e6)
    one = {"input_tokens": 3000, "output_tokens": 100,
           "input_token_details": {"cache_read": 1000, "cache_creation": 700}}
    usd = p.price(one, "claude-haiku-4-5", "anthropic", 1.8e9)[0]
    assert usd is not None
    assert float(usd) == pytest.approx((1300 + 1000 * 0.1 + 700 * 1.25 + 100 * 5) / 1e6)
