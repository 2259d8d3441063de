"""``looptrace check --max-cost USD``: the cost in money as a CI gate.

Each checked run is priced with its subagent runs (``tracer.read.cost.run_costs``;
a subagent run checked with its parent is counted in its parent, not again), and
held to ``max_cost``; ``max_total`` holds the checked runs together. A cost that is
not known does not pass silently: a run whose calls are not all priced fails the
gate, unless what is priced already passes the limit (then it is over for sure) or
``allow_unknown`` is given (then it is reported, and passes).

Example:
    ```python
    from tracer.checks.budget import cost_gate
    from tracer.read.loader import TraceDB

    with TraceDB("looptrace.db") as db:
        verdict = cost_gate(db, [r.id for r in db.runs()], max_cost=0.05)
    print("\\n".join(verdict.lines))
    raise SystemExit(1 if verdict.failed else 0)
    ```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from tracer.read.cost import Cost, Prices, money, run_costs
from tracer.read.loader import TraceDB
from tracer.vocab.words import plural

__all__ = ["Verdict", "cost_gate"]


@dataclass
class Verdict:
    """What the gate found: one line per run it speaks of (and one for the total), and
    whether the gate fails."""

    lines: list[str] = field(default_factory=list)
    failed: bool = False


def _judge(what: str, c: Cost, limit: float, flag: str, allow_unknown: bool,
           v: Verdict) -> None:
    lim = Decimal(str(limit))
    if c.priced_usd > lim:
        v.failed = True
        v.lines.append(f"OVER     {what} cost {c.text()}, over {flag} {money(lim)}")
    elif not c.complete:
        unknown = c.calls - c.priced
        why = (f"{unknown} of {plural(c.calls, 'model call')} without a price"
               + (f"; the rest cost {money(c.priced_usd)}" if c.priced else ""))
        if allow_unknown:
            v.lines.append(f"UNKNOWN  {what} cost {c.text()} ({why}): passed (--allow-unknown-cost)")
        else:
            v.failed = True
            v.lines.append(f"UNKNOWN  {what} cost {c.text()} ({why}): cannot be held to "
                           f"{money(lim)}; price the model with --prices, or pass "
                           "--allow-unknown-cost")


def cost_gate(db: TraceDB, run_ids: Sequence[str], *, max_cost: float | None = None,
              max_total: float | None = None, allow_unknown: bool = False,
              prices: Prices | None = None) -> Verdict:
    """Hold ``run_ids`` (full ids, in ``db``, a ``TraceDB``) to ``max_cost`` each and to
    ``max_total`` together (USD)."""
    v = Verdict()
    if max_cost is None and max_total is None:
        return v
    ids = list(dict.fromkeys(run_ids))
    parents = dict(db.query(
        f"SELECT id, parent_id FROM runs WHERE id IN ({','.join('?' * len(ids))})", ids)
    ) if ids else {}
    checked = set(ids)
    # (a subagent run checked with a run above it is in that run's cost)

    def above_checked(rid: str) -> bool:
        seen = {rid}
        up = parents.get(rid)
        while up is not None and up not in seen:
            if up in checked:
                return True
            seen.add(up)
            up = parents.get(up) if up in parents else _parent(db, up, parents)
        return False

    roots = [r for r in ids if not above_checked(r)]
    costs = run_costs(db, roots, prices)
    names = dict(db.query(
        f"SELECT id, name FROM runs WHERE id IN ({','.join('?' * len(roots))})", roots)
    ) if roots else {}
    total = Cost()
    for rid in roots:
        c = costs[rid]
        total = total + c.total
        if max_cost is not None:
            below = f" with {c.subagents} subagent run{'s' if c.subagents != 1 else ''}" \
                if c.subagents else ""
            _judge(f"run {rid[:12]} {names.get(rid) or ''}{below}".rstrip(), c.total, max_cost,
                   "--max-cost", allow_unknown, v)
    if max_total is not None:
        _judge(f"{len(roots)} runs together", total, max_total, "--max-total-cost",
               allow_unknown, v)
    if not v.lines:
        limits = [f"{money(Decimal(str(x)))} {w}" for x, w in
                  ((max_cost, "a run"), (max_total, "in all")) if x is not None]
        v.lines.append(f"cost ok: {len(roots)} run{'s' if len(roots) != 1 else ''} cost "
                       f"{total.text()} in all (at most {', '.join(limits)})")
    return v


def _parent(db: TraceDB, rid: str, cache: dict[str, str | None]) -> str | None:
    rows = db.query("SELECT parent_id FROM runs WHERE id = ?", [rid])
    cache[rid] = rows[0][0] if rows else None
    return cache[rid]
