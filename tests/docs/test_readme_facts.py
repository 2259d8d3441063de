"""The docs' names, numbers and counts come from the code and the samples.

The pages are README.md and every page under docs/. Every run the demo list and the
workshop guide name is a run of the bundled samples (under the name the app lists it by), every
sample file they name exists and holds the run named with it; the schema version the
schema page states is the code's; the counts of the OpenTelemetry benchmark quoted are
what the samples give; ``looptrace ui`` starts the server script the app page says it
does.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from docs_kit import all_docs

from tracer.db.schema import SCHEMA_VERSION
from tracer.interop.exchange import read_trace, sample_files
from tracer.read.loader import TraceDB

ROOT = Path(__file__).resolve().parents[2]
README = all_docs()  # README.md and every page under docs/
# Names in backticks that are code, not runs (the guide speaks of both).
CODE = {"tool_call_id", "handle_tool_error", "before_*", "after_*", "task", "tool", "user",
        "openai", "anthropic", "ollama", "&floorplan=1", "$OPENAI_BASE_URL"}


def section(title: str) -> str:
    """The text under the heading ``title`` (any level), up to the next heading of its
    level or above."""
    m = re.search(rf"^(#+) {re.escape(title)}", README, re.MULTILINE)
    assert m, f"no heading {title!r}"
    end = re.compile(rf"^#{{1,{len(m.group(1))}}} ", re.MULTILINE).search(README, m.end())
    return README[m.start():end.start() if end else None]


def sample_roots() -> dict[str, str]:
    """Sample file stem -> the name of its root run (the name the app lists)."""
    out = {}
    for path in sample_files():
        head, rows = read_trace(path)
        out[path.stem] = next(row["name"] for table, row in rows
                              if table == "runs" and row["id"] == head["root"])
    return out


def run_names(sample_db: Path) -> set[str]:
    with TraceDB(sample_db) as tdb:
        return {str(r.name) for r in tdb.runs()}


def test_the_demo_list_names_each_sample_and_its_run() -> None:
    roots = sample_roots()
    demo = section("Demo agents and sample traces")
    items = re.findall(r"^\d+\. `([\w-]+)`(?: \(run `([^`]+)`)?", demo, re.MULTILINE)
    assert len(items) >= 15
    for stem, run in items:
        assert stem in roots, f"the demo list names {stem!r}: no sample_traces/{stem}.jsonl"
        if stem.startswith("provider-"):  # (one item for the six: their runs named after)
            continue
        assert roots[stem] == (run or stem), (stem, run, roots[stem])
    # the provider demos' item: each weather sample and its run, the shopping ones alike
    providers = [s for s in roots if s.startswith("provider-")]
    assert len(providers) == 6
    for stem in providers:
        assert roots[stem] == stem.removeprefix("provider-")
        if stem.endswith("-weather"):
            assert f"`{stem}`" in demo and f"`{roots[stem]}`" in demo, stem
    listed = {s for s, _ in items} | set(providers)
    assert listed == set(roots), f"samples the demo list leaves out: {set(roots) - listed}"


def test_every_run_the_workshop_guide_names_is_in_the_samples(sample_db: Path) -> None:
    names = run_names(sample_db)
    roots = sample_roots()
    guide = section("Workshop guide")
    named = [re.sub(r"\s+", " ", t) for t in re.findall(r"`([^`]+)`", guide, re.DOTALL)]
    runs = [t for t in named if t not in CODE and not t.startswith(("uv ", "looptrace ",
                                                                    "sample_traces/", "→"))
            and "(" not in t and "/" not in t and "*" not in t]
    assert len(runs) >= 15
    flat = re.sub(r"\s+", " ", guide)
    for t in runs:
        samples_named = re.findall(rf"`{re.escape(t)}` \(samples? `([\w-]+)`", flat)
        if t in roots and t not in names:  # a sample file's name: only beside its run
            assert f"(sample `{t}`" in flat, f"the guide names the sample {t!r} as a run"
            continue
        assert t in names, f"the guide names {t!r}: no sample run is listed under that name"
        for stem in samples_named:
            assert stem in roots and roots[stem] == t, (t, stem)
    for path in re.findall(r"sample_traces/([\w-]+)\.jsonl", guide):
        assert path in roots


def test_the_schema_version_the_readme_states_is_the_codes() -> None:
    [said] = re.findall(r"`schema_version` \(now (\d+)\)", README)
    assert int(said) == SCHEMA_VERSION


def test_the_otel_benchmark_counts_are_the_samples(sample_db: Path) -> None:
    from tracer.otel.runspans import run_spans

    m = re.search(r"benchmarks/bench_otel\.py --copies (\d+)`: the (\d+) sample traces replicated"
                  r"\s+to ([\d,]+) runs, ([\d,]+) spans", README)
    assert m, "the README quotes bench_otel's counts"
    copies, samples, runs, spans = (int(g.replace(",", "")) for g in m.groups())
    with TraceDB(sample_db) as tdb:
        every = tdb.runs()
        n_spans = sum(len(run_spans(tdb, r.id)) for r in every if not r.parent_id)
    assert samples == len(sample_files())
    assert (runs, spans) == (copies * len(every), copies * n_spans)


def test_looptrace_ui_starts_app_serve(monkeypatch: object) -> None:
    """The README: `app/serve.py`, what `looptrace ui` starts."""
    from tracer.cli import ui

    assert "(`app/serve.py`, what `looptrace ui` starts)" in README
    seen: list[list[str]] = []
    mp = monkeypatch  # (pytest's MonkeyPatch)
    mp.setattr(ui, "serve", lambda cmd, env: seen.append(cmd) or 0)  # type: ignore[attr-defined]
    assert ui.run(argparse.Namespace(db=None, port=8599, host="127.0.0.1", password=None,
                                        token=False, agent=None)) == 0
    [cmd] = seen
    assert Path(cmd[1]).name == "serve.py" and Path(cmd[1]).parent.name in ("app", "_app")


def test_the_floor_plan_is_drawn_below_the_graph() -> None:
    """The README: the floor plan shows below the graph: the replay view draws it after
    the replayer (graph and messages), in the app's page and the Presenter's."""
    assert "shows the floor plan below\nthe graph" in README or (
        "floor plan below the graph" in re.sub(r"\s+", " ", README))
    src = (ROOT / "app" / "screens" / "replay" / "page.py").read_text(encoding="utf-8")
    body = src[src.index("def _draw("):]
    for part in re.split(r"\n    if presenter:", body)[1:]:
        assert part.index("_replayer(") < part.index("render_floor_plan_section(")
    assert body.index("_replayer(path, view, i, presenter=False") < body.rindex(
        "render_floor_plan_section(")


def test_the_readme_says_everything_ci_run_does() -> None:
    """Issue 47, untrue 6: the README's gloss on ``bash .ci/run`` said "ruff, mypy, then
    pytest" and left out the Phoenix and MLflow environments and ``lint-imports``. Each
    tool ``.ci/run`` runs, and each backend it makes a venv for, is in the gloss."""
    script = (ROOT / ".ci" / "run").read_text()
    tools = re.findall(r"^uv run --frozen (\S+)", script, re.MULTILINE)
    (backends,) = re.findall(r"^for backend in ([\w ]+); do", script, re.MULTILINE)
    assert tools == ["ruff", "mypy", "lint-imports", "pytest"]  # (the list read right)
    (gloss,) = [ln for ln in README.splitlines() if ln.startswith("bash .ci/run ")]
    gloss = gloss.lower()
    assert all(t in gloss for t in tools), gloss
    assert all(b in gloss for b in backends.split()), gloss
