"""What the model calls cost in money: each call priced from what was recorded.

A model call is priced from its usage (the ``usage`` of its ``exit`` event: the
``AIMessage.usage_metadata`` LangChain reported, cached and reasoning tokens
included), the model that answered (its ``exit`` event's, as the reply named it) or the
one it went to (its ``enter`` event's, else the run's), the provider, and when it was
made. The price table is Pydantic's ``genai-prices``
(bundled with the package; looptrace never asks it to fetch newer prices), with
the user's own prices first: a TOML file named by ``--prices`` or
``$LOOPTRACE_PRICES`` (``Prices.load``; docs/guide/cost.md).

An unknown price is ``None``, never 0: a call that reported no usage, or whose
model the table does not know. A sum of calls (``Cost``) keeps the priced part
and says how many calls it prices (``Cost.text``: "≥ $0.0123 (2 of 3 calls
priced)"). ``run_costs`` prices runs, each on its own and with its subagent runs.

``genai_prices`` takes 0.6 s to 1.8 s to import and load its table: it is imported
on the first call that needs it, not with this module, and a call it priced before
(in this process or an earlier one) is answered from ``tracer.read.price_memo``
without it.

Example:
    ```python
    from tracer.read.cost import Prices, run_costs
    from tracer.read.loader import TraceDB

    with TraceDB("looptrace.db") as db:
        for run_id, c in run_costs(db, [r.id for r in db.runs(limit=10)]).items():
            print(run_id[:12], c.total.text(), c.own.usd)
    ```
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import stat
import threading
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from tracer.errors import PricesFileError
from tracer.vocab.calls import Usage
from tracer.vocab.payloads import ModelEnterPayload, ModelExitPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS
from tracer.vocab.words import plural

from .price_memo import Answer, memo

__all__ = ["ENV_VAR", "CallCost", "Cost", "Prices", "RunCost", "call_costs",
           "cost_difference", "default_prices", "money", "price_call", "prices_stamp",
           "run_costs"]

ENV_VAR = "LOOPTRACE_PRICES"
MAX_PRICES_BYTES = 4 * 2**20  # (a prices file of a thousand models is under 200 kB)

# LangChain's provider names (``ls_provider``, what runs.provider holds) that genai-prices
# spells otherwise; a name not here is given to genai-prices as it is (it matches its own
# provider ids and aliases), and a provider it does not know prices nothing.
PROVIDER_IDS: dict[str, str] = {
    "azure_openai": "azure",
    "azure": "azure",
    "google_genai": "google",
    "google_vertexai": "google",
    "google_anthropic_vertex": "google",
    "vertexai": "google",
    "bedrock": "aws",
    "amazon_bedrock": "aws",
    "bedrock_converse": "aws",
    "mistralai": "mistral",
    "xai": "x-ai",
    "fireworks": "fireworks",
    "together": "together",
    "deepseek": "deepseek",
    "groq": "groq",
    "cohere": "cohere",
    "perplexity": "perplexity",
    "openrouter": "openrouter",
}

# The override file's price keys (USD per million tokens) and what each prices.
_PRICE_KEYS = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok",
               "cache_write_per_mtok", "reasoning_per_mtok")
_MILLION = Decimal(1_000_000)


# -- sums ---------------------------------------------------------------------------------

def money(usd: Decimal | float) -> str:
    """An amount of dollars as people read it: three significant digits below a dollar
    ("$0.000195", "$0.0123", "$0.5"), cents from one ("$1.23"), none from 100."""
    x = float(usd)
    if x == 0:
        return "$0"
    if abs(x) >= 100:
        return f"${x:,.0f}"
    if abs(x) >= 1:
        return f"${x:,.2f}"
    places = min(10, 2 - math.floor(math.log10(abs(x))))
    return "$" + f"{x:.{places}f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Cost:
    """What some model calls cost: ``priced_usd`` the sum of those priced, ``calls`` how
    many there were, ``priced`` how many of them have a price."""

    priced_usd: Decimal = Decimal(0)
    calls: int = 0
    priced: int = 0

    @property
    def complete(self) -> bool:
        return self.priced == self.calls

    @property
    def usd(self) -> float | None:
        """The cost, or None (unknown) unless every call is priced."""
        return float(self.priced_usd) if self.complete else None

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.priced_usd + other.priced_usd, self.calls + other.calls,
                    self.priced + other.priced)

    def text(self) -> str:
        """"$0.0123"; "unknown" when no call is priced; "≥ $0.0123 (2 of 3 calls
        priced)" when some are."""
        if self.complete:
            return money(self.priced_usd)
        if not self.priced:
            return "unknown"
        calls = plural(self.calls, "call")
        return f"≥ {money(self.priced_usd)} ({self.priced} of {calls} priced)"

    def short(self) -> str:
        """``text`` for a table's cell: "≥ $0.0123 (2/3)" when 2 of 3 calls are priced."""
        if self.complete or not self.priced:
            return self.text()
        return f"≥ {money(self.priced_usd)} ({self.priced}/{self.calls})"

    def to_dict(self) -> dict[str, Any]:
        return {"usd": self.usd, "priced_usd": float(self.priced_usd), "calls": self.calls,
                "priced_calls": self.priced}


@dataclass(frozen=True)
class CallCost:
    """One model call priced: its run and ``exit`` event (``seq``, ``lap``), the model and
    provider it went to, its usage as recorded, and its price in USD (``usd``, split in
    ``input_usd`` / ``output_usd``), or None with ``why`` it is unknown; ``source``: the
    table that priced it ("genai-prices", or the override file)."""

    run_id: str
    seq: int
    lap: int | None
    model: str | None
    provider: str | None
    usage: dict[str, Any] | None
    usd: Decimal | None
    input_usd: Decimal | None = None
    output_usd: Decimal | None = None
    why: str | None = None
    source: str | None = None

    @property
    def cost(self) -> Cost:
        return Cost(self.usd or Decimal(0), 1, int(self.usd is not None))

    def text(self) -> str:
        return money(self.usd) if self.usd is not None else f"unknown ({self.why})"

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "lap": self.lap, "model": self.model,
                "provider": self.provider,
                "usd": None if self.usd is None else float(self.usd),
                "why_unknown": self.why, "priced_by": self.source}


def _sum(costs: Iterable[Cost]) -> Cost:
    total = Cost()
    for c in costs:
        total = total + c
    return total


@dataclass(frozen=True)
class RunCost:
    """A run's cost: its own model calls (``calls``, ``own``) and with every run below it
    (``total``); ``subagents``: how many runs below it were priced in."""

    run_id: str
    calls: tuple[CallCost, ...]
    own: Cost
    total: Cost
    subagents: int = 0
    by_model: dict[str, Cost] = field(default_factory=dict)  # own and below, by model

    def by_lap(self) -> dict[int, Cost]:
        """The run's own calls' cost per lap."""
        out: dict[int, Cost] = {}
        for c in self.calls:
            lap = c.lap or 0
            out[lap] = out.get(lap, Cost()) + c.cost
        return out

    def text(self) -> str:
        """The run's cost as one line: the total, and its own part when subagent runs
        spent too."""
        if not self.subagents:
            return self.total.text()
        return (f"{self.total.text()} with {self.subagents} subagent "
                f"run{'s' if self.subagents != 1 else ''} ({self.own.text()} its own)")

    def to_dict(self) -> dict[str, Any]:
        return {**self.total.to_dict(), "own": self.own.to_dict(),
                "subagent_runs": self.subagents,
                "models": {m: c.to_dict() for m, c in sorted(self.by_model.items())}}


# -- the price table ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Override:
    prices: dict[str, Decimal]
    provider: str | None


class Prices:
    """The price table: the user's prices first (``models``: by model name;
    ``providers``: every model of a provider), then genai-prices.

    Args:
        models: model name -> price keys (``input_per_mtok`` ... USD per million tokens).
        providers: provider name -> price keys.
        source: where the user's prices came from (the file), named in ``CallCost.source``.
    """

    def __init__(self, *, models: Mapping[str, _Override] | None = None,
                 providers: Mapping[str, _Override] | None = None,
                 source: str | None = None) -> None:
        self.models = {k.lower(): v for k, v in (models or {}).items()}
        self.providers = {k.lower(): v for k, v in (providers or {}).items()}
        self.source = source

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> Prices:
        """The table with the prices of ``path`` (else ``$LOOPTRACE_PRICES``, else none of
        the user's). A file that cannot be read or does not fit is ``PricesFileError``:
        one line naming the file and what is wrong."""
        path = path or os.environ.get(ENV_VAR) or None
        if not path:
            return cls()
        p = Path(path)
        text = _read_prices_file(p)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            msg = f"prices file {p}: not TOML ({exc})"
            raise PricesFileError(msg) from None
        except RecursionError:  # (arrays or inline tables nested thousands deep)
            msg = f"prices file {p}: not a prices file (nested too deep)"
            raise PricesFileError(msg) from None
        except ValueError as exc:  # (an integer of more digits than Python converts)
            msg = f"prices file {p}: not a prices file ({exc})"
            raise PricesFileError(msg) from None
        return cls.from_dict(data, source=str(p))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "prices") -> Prices:
        """The table of a parsed prices file (``[models."NAME"]`` and
        ``[providers."NAME"]`` tables of prices)."""
        extra = sorted(set(data) - {"models", "providers"})
        if extra:
            msg = f"prices file {source}: unknown table {extra[0]!r} (use [models.\"NAME\"] " \
                  "or [providers.\"NAME\"])"
            raise PricesFileError(msg)
        out: dict[str, dict[str, _Override]] = {"models": {}, "providers": {}}
        for kind in ("models", "providers"):
            table = data.get(kind, {})
            if not isinstance(table, dict):
                msg = f"prices file {source}: {kind} must be a table of tables"
                raise PricesFileError(msg)
            for name, entry in table.items():
                out[kind][name] = _entry(source, f"{kind}.{name}", entry, kind == "models")
        return cls(models=out["models"], providers=out["providers"], source=source)

    def _override(self, model: str | None, provider: str | None) -> _Override | None:
        if model:
            o = self.models.get(model.lower())
            if o is not None and (o.provider is None or (provider or "").lower() == o.provider):
                return o
        if provider:
            return self.providers.get(provider.lower())
        return None

    def price(self, usage: Mapping[str, Any] | None, model: str | None,
              provider: str | None, ts: float | None = None
              ) -> tuple[Decimal | None, Decimal | None, Decimal | None, str | None, str | None]:
        """(total, input, output, why unknown, priced by) for one model call."""
        tokens = _tokens(usage)
        if isinstance(tokens, str):
            return None, None, None, tokens, None
        o = self._override(model, provider)
        if o is not None:
            return (*_priced_by_override(o.prices, tokens), None, self.source)
        if not model:
            return None, None, None, "no model recorded", None
        return _priced_by_genai_prices(tokens, model, provider, ts)


def _read_prices_file(p: Path) -> str:
    """The text of a prices file: a regular file of at most ``MAX_PRICES_BYTES``, read
    without waiting on anyone (a FIFO or ``/dev/zero`` is refused before it is read:
    one blocks until a writer comes, the other never ends)."""
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        msg = f"prices file {p}: cannot read it ({exc.strerror or exc})"
        raise PricesFileError(msg) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            msg = f"prices file {p}: not a regular file"
            raise PricesFileError(msg)
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_PRICES_BYTES + 1)
    except OSError as exc:
        msg = f"prices file {p}: cannot read it ({exc.strerror or exc})"
        raise PricesFileError(msg) from None
    finally:
        os.close(fd)
    if len(raw) > MAX_PRICES_BYTES:
        msg = f"prices file {p}: over {MAX_PRICES_BYTES // 2**20} MiB, not a prices file"
        raise PricesFileError(msg)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"prices file {p}: not TOML ({exc})"
        raise PricesFileError(msg) from None


def _entry(source: str, where: str, entry: Any, is_model: bool) -> _Override:
    if not isinstance(entry, dict):
        msg = f"prices file {source}: {where} must be a table (input_per_mtok = ..., ...)"
        raise PricesFileError(msg)
    allowed = {*_PRICE_KEYS, *(("provider",) if is_model else ())}
    unknown = sorted(set(entry) - allowed)
    if unknown:
        msg = (f"prices file {source}: {where}: unknown key {unknown[0]!r} "
               f"(keys: {', '.join(sorted(allowed))})")
        raise PricesFileError(msg)
    prices: dict[str, Decimal] = {}
    for key in _PRICE_KEYS:
        if key not in entry:
            continue
        v = entry[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            msg = f"prices file {source}: {where}.{key} must be a number of dollars >= 0, not {v!r}"
            raise PricesFileError(msg)
        prices[key] = Decimal(str(v))
    for key in ("input_per_mtok", "output_per_mtok"):
        if key not in prices:
            msg = f"prices file {source}: {where} needs {key} (USD per million tokens)"
            raise PricesFileError(msg)
    provider = entry.get("provider")
    if provider is not None and not isinstance(provider, str):
        msg = f"prices file {source}: {where}.provider must be a provider's name"
        raise PricesFileError(msg)
    return _Override(prices, provider.lower() if provider else None)


# -- one call -----------------------------------------------------------------------------

def _tokens(usage: Mapping[str, Any] | None) -> dict[str, int] | str:
    """genai-prices' usage keys from LangChain's ``usage_metadata`` (read by
    ``tracer.vocab.calls.Usage``), or why it cannot be priced. ``input_tokens`` includes
    cache reads and writes (LangChain's rule, and genai-prices'); a count that is None
    was not reported, which is not 0."""
    u = Usage.counts(usage)
    if not u.reported:
        return "no usage reported"
    if u.input is None or u.output is None:
        return "no token counts reported"
    t: dict[str, int] = {"input_tokens": u.input, "output_tokens": u.output}
    read, write = u.cache_read, u.cache_write
    if read:
        t["cache_read_tokens"] = read
    if write:
        t["cache_write_tokens"] = write
        if u.cache_write_5m or u.cache_write_1h:  # (Anthropic's two cache lifetimes, priced apart)
            t["cache_write_5m_tokens"] = u.cache_write_5m or 0
            t["cache_write_1h_tokens"] = u.cache_write_1h or 0
    if u.audio_in:
        t["input_audio_tokens"] = u.audio_in
    if u.reasoning:
        t["output_reasoning_tokens"] = u.reasoning
    if u.audio_out:
        t["output_audio_tokens"] = u.audio_out
    if read and write and read + write > u.input:
        return "cached tokens exceed the input tokens"
    return t


def _priced_by_override(prices: Mapping[str, Decimal], t: Mapping[str, int]
                        ) -> tuple[Decimal, Decimal, Decimal]:
    inp, out = prices["input_per_mtok"], prices["output_per_mtok"]
    read_p = prices.get("cache_read_per_mtok", inp)
    write_p = prices.get("cache_write_per_mtok", inp)
    reason_p = prices.get("reasoning_per_mtok", out)
    read, write = t.get("cache_read_tokens", 0), t.get("cache_write_tokens", 0)
    reasoning = min(t.get("output_reasoning_tokens", 0), t["output_tokens"])
    fresh = max(0, t["input_tokens"] - read - write)
    input_usd = (fresh * inp + read * read_p + write * write_p) / _MILLION
    output_usd = ((t["output_tokens"] - reasoning) * out + reasoning * reason_p) / _MILLION
    return input_usd + output_usd, input_usd, output_usd


_lock = threading.Lock()


def _priced_by_genai_prices(t: Mapping[str, int], model: str, provider: str | None,
                            ts: float | None) -> Answer:
    kept = memo()
    who = [provider, PROVIDER_IDS.get(provider.lower(), provider) if provider else None]
    answer = kept.get(t, model, who, ts)  # (asked before: no need to import it)
    if answer is not None:
        return answer
    answer = _ask_genai_prices(t, model, provider, ts)
    kept.put(t, model, who, ts, answer)
    return answer


def _ask_genai_prices(t: Mapping[str, int], model: str, provider: str | None,
                      ts: float | None) -> Answer:
    import genai_prices  # (0.6 s to 1.8 s with its table, on the first call: price_memo)

    pid = PROVIDER_IDS.get(provider.lower(), provider) if provider else None
    when = dt.datetime.fromtimestamp(ts, dt.UTC) if ts is not None else None
    try:
        with _lock:  # (its lookup caches are plain dicts)
            calc = genai_prices.calc_price(genai_prices.Usage(**t), model, provider_id=pid,
                                           genai_request_timestamp=when)
    except LookupError:
        who = f" at {provider}" if provider else ""
        return None, None, None, f"no price for {model!r}{who}", None
    except (ValueError, ArithmeticError) as exc:
        return None, None, None, f"genai-prices: {exc}", None
    return calc.total_price, calc.input_price, calc.output_price, None, "genai-prices"


def price_call(prices: Prices, run_id: str, seq: int, lap: int | None,
               usage: Mapping[str, Any] | None, model: str | None, provider: str | None,
               ts: float | None) -> CallCost:
    """One model call priced (``Prices.price``) as a ``CallCost``."""
    total, inp, out, why, source = prices.price(usage, model, provider, ts)
    return CallCost(run_id, seq, lap, model, provider,
                    dict(usage) if isinstance(usage, Mapping) else None,
                    total, inp, out, why, source)


# -- runs ---------------------------------------------------------------------------------

def call_costs(run_id: str, events: Iterable[Any], model: str | None, provider: str | None,
               prices: Prices) -> list[CallCost]:
    """The model calls of one run priced, from its events in order (objects or rows with
    ``seq``, ``ts``, ``hook``, ``phase``, ``lap``, ``payload``: ``Event`` does) and the
    run's model and provider (for a call whose ``enter`` names none). A call is its
    ``exit``, or its ``error``: a call that failed is counted, its cost unknown. So is a
    call entered with no answer recorded (one paused in the debugger or still waiting,
    or one whose run ended first): a run paused at its first model call has cost
    unknown, as its tokens are not reported, never $0."""
    out: list[CallCost] = []
    cur_model, cur_provider = model or None, provider or None
    waiting: list[Any] = []  # (the calls entered and not yet answered)
    for e in events:
        if e.hook not in MODEL_HOOKS:
            continue
        if e.phase == "enter":
            p = read_payload(ModelEnterPayload, e.payload)
            cur_model = p.get("model") or model or None
            cur_provider = p.get("provider") or provider or None
            waiting.append((e, cur_model, cur_provider))
            continue
        if e.phase in ("exit", "error") and waiting:
            waiting.pop(0)
        if e.phase == "exit":
            done = read_payload(ModelExitPayload, e.payload)
            # (the model that answered, when its reply named it: a fallback's is priced as
            # the fallback, not as the model the call first asked)
            by = done.get("model") if isinstance(done.get("model"), str) else None
            out.append(price_call(prices, run_id, e.seq, e.lap, Usage.of(done).recorded,
                                  by or cur_model, cur_provider, e.ts))
        elif e.phase == "error":  # (a provider may have billed it: not known, so not $0)
            out.append(CallCost(run_id, e.seq, e.lap, cur_model, cur_provider, None, None,
                                why="the call failed: no usage recorded"))
    out += [CallCost(run_id, e.seq, e.lap, m, pr, None, None, why="no answer recorded")
            for e, m, pr in waiting]
    return out


@dataclass(frozen=True)
class _Row:
    seq: int
    ts: float | None
    hook: str
    phase: str
    lap: int | None
    payload: Any


def _model_events(db: Any, run_ids: Sequence[str]) -> dict[str, list[_Row]]:
    hooks = ", ".join(f"'{h}'" for h in sorted(MODEL_HOOKS))
    out: dict[str, list[_Row]] = {r: [] for r in run_ids}
    for i in range(0, len(run_ids), 500):
        part = list(run_ids[i:i + 500])
        for rid, seq, ts, hook, phase, lap, payload in db.query(
                "SELECT run_id, seq, ts, hook, phase, lap, payload FROM events WHERE run_id IN"
                f" ({','.join('?' * len(part))}) AND hook IN ({hooks}) AND phase IN"
                " ('enter', 'exit', 'error') ORDER BY run_id, seq", part):
            try:
                data = json.loads(payload) if payload else None
            except ValueError:
                data = None
            out[rid].append(_Row(seq, ts, hook, phase, lap, data))
    return out


def run_costs(db: Any, run_ids: Sequence[str], prices: Prices | None = None
              ) -> dict[str, RunCost]:
    """Each of ``run_ids`` priced (``db``: a ``TraceDB``): its own model calls, and with
    every run below it (its subagent runs, theirs ...). A run not in the file is left
    out. ``prices``: the table (default: ``Prices.load()``, the user's file named by
    ``$LOOPTRACE_PRICES`` over genai-prices)."""
    prices = prices if prices is not None else default_prices()
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        return {}
    tree: dict[str, list[str]] = {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        # (UNION, not UNION ALL: a run that is its own ancestor ends the walk)
        for root, rid in db.query(
                "WITH RECURSIVE tree(root, id) AS (SELECT id, id FROM runs WHERE id IN"
                f" ({','.join('?' * len(part))}) UNION SELECT tree.root, r.id FROM runs r"
                " JOIN tree ON r.parent_id = tree.id) SELECT root, id FROM tree", part):
            tree.setdefault(root, []).append(rid)
    every = sorted({r for rs in tree.values() for r in rs})
    meta = {}
    for i in range(0, len(every), 500):
        part = every[i:i + 500]
        for rid, model, provider in db.query(
                f"SELECT id, model, provider FROM runs WHERE id IN ({','.join('?' * len(part))})",
                part):
            meta[rid] = (model, provider)
    events = _model_events(db, every)
    calls = {rid: call_costs(rid, events.get(rid, ()), *meta.get(rid, (None, None)), prices)
             for rid in every}
    out: dict[str, RunCost] = {}
    for root in ids:
        if root not in tree:
            continue
        members = tree[root]
        everything = [c for rid in members for c in calls[rid]]
        by_model: dict[str, Cost] = {}
        for c in everything:
            key = c.model or "unknown model"
            by_model[key] = by_model.get(key, Cost()) + c.cost
        out[root] = RunCost(root, tuple(calls[root]), _sum(c.cost for c in calls[root]),
                            _sum(c.cost for c in everything), len(set(members) - {root}),
                            by_model)
    memo().save()  # (what genai-prices answered, for the next process)
    return out


def cost_difference(a: Cost, b: Cost) -> str:
    """What B cost more (or less) than A, as text: "+$0.0012 (+25%)", "-$0.0003 (-10%)",
    "the same"; "unknown" unless both are known."""
    if a.usd is None or b.usd is None:
        return "unknown"
    d = b.priced_usd - a.priced_usd
    if d == 0:
        return "the same"
    sign = "+" if d > 0 else "-"
    pct = f" ({sign}{abs(d) / a.priced_usd * 100:.0f}%)" if a.priced_usd else ""
    return f"{sign}{money(abs(d))}{pct}"


def prices_stamp() -> tuple[Any, ...]:
    """Changes when ``$LOOPTRACE_PRICES`` names another file or its file changes (a
    cache key for costs)."""
    path = os.environ.get(ENV_VAR) or None
    try:
        st = os.stat(path) if path else None
        return (path, st.st_mtime_ns, st.st_size) if st else (path, None, None)
    except OSError:
        return (path, None, None)


_default: list[Any] = [None, None]  # [(path, mtime, size), Prices]


def default_prices() -> Prices:
    """``Prices.load()``: the file ``$LOOPTRACE_PRICES`` names (read again when it
    changes), over genai-prices."""
    key = prices_stamp()
    path = key[0]
    with _lock:
        if _default[0] == key and _default[1] is not None:
            return _default[1]  # type: ignore[no-any-return]
    loaded = Prices.load(path)
    with _lock:
        _default[:] = [key, loaded]
    return loaded
