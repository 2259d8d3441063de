"""Record every demo scenario into a database: what ``looptrace demo`` does.

``record_all(db)`` runs each scenario of ``tracer.demo.scenarios.SCENARIOS``
(real agents driven by scripted models) and then, through the provider
emulator, the provider demos of ``tracer.demo.providers``; offline, in seconds. The
workshop guide's talking points are written as notes on the runs they describe
(``tracer.demo.workshop``).
"""

from __future__ import annotations

from .roots import root_ids, run_name
from .workshop import TALKING_POINTS, add_talking_points


def record_all(db: str, only: list[str] | None = None,
               providers: bool = True) -> dict[str, list[str]]:
    """Record every scenario (or those in ``only``) into ``db``; with ``providers`` (and no
    ``only``), the provider demos too. Return scenario name -> its new root run ids."""
    from .scenarios import SCENARIOS

    out: dict[str, list[str]] = {}
    for name, scenario in SCENARIOS.items():
        if only and name not in only:
            continue
        before = root_ids(db)
        scenario(db)
        out[name] = sorted(root_ids(db) - before)
        if name in TALKING_POINTS and len(out[name]) == 1:  # (the workshop guide's notes)
            add_talking_points(db, name, out[name][0])
    if providers and not only:
        from .providers import record_provider_demos

        for run_id in record_provider_demos(db):
            out.setdefault(f"provider-{run_name(db, run_id)}", []).append(run_id)
    return out
