"""Which demo agent recorded a run: the factory (``tracer.demo.factories``) that builds
it again, for a rerun or a fork of a demo run or a bundled sample trace (the app's
"Fork here", ``looptrace rerun RUN --agent ...``).

Beside the factories and imported without them: no LangChain (the app's data seam reads
it, ``tracer.demo.factories`` imports it; an import-linter contract holds it light).
"""

from __future__ import annotations

FACTORIES_MODULE = "tracer.demo.factories"

# The demo agents' runs by run name and the scripted model that answered: the
# factory's name in ``FACTORIES_MODULE``.
DEMO_FACTORIES: dict[tuple[str, str], str] = {
    (name, model): f"{FACTORIES_MODULE}:{attr}" for name, model, attr in (
        ("weather", "scripted-weather", "weather"),
        ("shopping", "scripted-shop", "shopping"),
        ("stuck-search", "scripted-stuck", "repeated_tool"),
        ("deep-research", "scripted-deep", "deep_agent"),
        ("release-notes", "scripted-workspace", "deep_workspace"),
        ("approvals", "scripted-hitl", "human_in_the_loop"),
        ("hostile-page", "scripted-web", "hostile_content"),
        ("booking", "scripted-booking", "tool_validation_error"),
        ("stock-check", "scripted-stock", "tool_exception"),
    )}


def demo_agent(name: str | None, model: str | None) -> str | None:
    """The ``--agent`` of the demo agent that recorded a run named ``name`` whose model
    was ``model`` (a demo run, a bundled sample, or a rerun or fork of one); None for
    any other run."""
    return DEMO_FACTORIES.get((name or "", model or ""))
