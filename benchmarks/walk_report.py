"""A walk of one run id from a hook to the replayer JSON (issue 22's acceptance).

Run: `uv run --frozen python benchmarks/walk_report.py` (about 10 s). It records one two-lap run
with ``TraceMiddleware`` (a scripted model, a real ``create_agent``), opens it, replays it
and builds the replayer JSON, and watches every Python call while it does: which
``tracer`` modules the run passes through (a function of the module ran; the scripted
model of ``tracer.demo`` left out), and how often the walk climbs back up: an import,
module-level or lazy (grimp's graph), from a module it passes to a module of a HIGHER
layer (the step model importing its views, storage importing the rules). A callback a
higher module hands down (a lazy payload, ``Replay.view``) is no climb. The layers are
those of ``[tool.importlinter]`` in pyproject.toml, written out below so the script also
runs against an older checkout (``PYTHONPATH=that/checkout``).
"""

from __future__ import annotations

import sys
import tempfile
import threading
from pathlib import Path

# top first, as in pyproject.toml's layers contract (sqlite_errors: before issue 22)
LAYERS = [
    "__main__ cli mcp_server pytest_plugin",
    "demo testing whatif mcp_whatif player cassette otel wire exchange html_export show",
    ("captions tool_life replayer check check_reports findings_store checks diff graph_layout"
     " floorplan fork_links palette"),
    "replay",
    "loader run_list",
    ("autohook autotrace middleware callbacks layers agent_stack watch ingest recorder store"
     " tool_signatures"),
    "schema search summaries prune sqlite_errors",
    ("hooks graph_shape records serialize redact rules_version provider_names known_middleware"
     " words errors terminal httpbody _lazy"),
]
RANK = {m: len(LAYERS) - i for i, names in enumerate(LAYERS) for m in names.split()}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "tracer" else None


class Walk:
    """The tracer modules a phase passes, in first-seen order."""

    def __init__(self) -> None:
        self.modules: list[str] = []

    def profile(self, frame, event, arg):  # type: ignore[no-untyped-def]
        if event != "call":
            return
        mod = frame.f_globals.get("__name__", "")
        if mod.startswith("tracer.") and not mod.startswith("tracer.demo") and (
                mod not in self.modules):
            self.modules.append(mod)


def climbs(modules: list[str]) -> list[tuple[str, str]]:
    """The imports (lazy ones included) from a module of ``modules`` to one of a higher
    layer: where the walk climbs back up."""
    import grimp

    graph = grimp.build_graph("tracer", cache_dir=None)
    out = []
    for a in modules:
        for b in sorted(graph.find_modules_directly_imported_by(a)):
            la, lb = layer_of(a), layer_of(b)
            if la and lb and la != lb and RANK.get(lb, 0) > RANK.get(la, 0):
                out.append((a, b))
    return out


def record(db: str) -> str:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from tracer import TraceMiddleware
    from tracer.demo.models import ScriptedChatModel, call, turn_script

    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        return f"Sunny in {city}"

    model = ScriptedChatModel(script=turn_script([
        AIMessage(content="", id="ai-1", tool_calls=[call("get_weather", {"city": "Oslo"}, "c1")]),
        AIMessage(content="Sunny in Oslo.", id="ai-2")]))
    tm = TraceMiddleware(db=db)
    agent = create_agent(model, tools=[get_weather], middleware=[tm])
    agent.invoke({"messages": [HumanMessage("Weather in Oslo?")]})
    tm.recorder.writer.flush()
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("SELECT id FROM runs").fetchone()[0])
    finally:
        conn.close()


def read(db: str, run_id: str) -> dict:  # type: ignore[type-arg]
    from tracer.read.loader import TraceDB
    from tracer.read.steps import build_replay
    from tracer.replayer import replay_json

    with TraceDB(db) as t:
        run = t.run(run_id)
    return replay_json(build_replay(run))


def main() -> int:
    db = str(Path(tempfile.mkdtemp()) / "walk.db")
    import tracer.replayer  # noqa: F401 - (imports are not the walk: load them first)
    from tracer import TraceMiddleware  # noqa: F401

    record(str(Path(tempfile.mkdtemp()) / "warm.db"))  # (first-call imports, too)
    walks = {"hook -> file": Walk(), "file -> replayer JSON": Walk()}
    w = walks["hook -> file"]
    sys.setprofile(w.profile)
    threading.setprofile(w.profile)  # (the writer thread)
    try:
        run_id = record(db)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    w = walks["file -> replayer JSON"]
    sys.setprofile(w.profile)
    try:
        data = read(db, run_id)
    finally:
        sys.setprofile(None)
    assert data["steps"], "no steps"
    seen: list[str] = []
    print(f"tracer at {Path(str(sys.modules['tracer'].__file__)).parent}")
    for name, walk in walks.items():
        up = climbs(walk.modules)
        print(f"{name}: {len(walk.modules)} modules, {len(up)} climbs back up")
        print("  " + " ".join(m.removeprefix("tracer.") for m in walk.modules))
        for a, b in up:
            print(f"  climbs: {a.removeprefix('tracer.')} -> {b.removeprefix('tracer.')}")
        seen += [m for m in walk.modules if m not in seen]
    print(f"the whole walk: {len(seen)} modules, {len(climbs(seen))} climbs back up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
