"""The demo agents as factories (``tracer.demo.factories``): every bundled sample run of
an agent demo reruns and forks through the factory its name and model resolve to
(``tracer.demo.catalog.demo_agent``), as ``looptrace rerun RUN --agent ... --db DB``
and the app's "Fork here" run it (issue 39, item 16: "Fork here" could not run on the
bundled samples). The factories carry no tracer: the rerun adds one writing to ``--db``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tracer.cli import main
from tracer.demo import factories
from tracer.demo.scenarios import AGENTS
from tracer.read.diff import diff_tree, format_text
from tracer.demo.catalog import DEMO_FACTORIES, demo_agent
from tracer.read.loader import TraceDB
from tracer.whatif.rerun import default_stack, load_factory

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_traces"
# the agent demos whose sample a factory reruns (middleware-stack: see the module's doc)
DEMOS = sorted(set(AGENTS) - {"middleware-stack"})


def root_row(path: Path) -> dict[str, object]:
    """The sample file's top-level run row (read from the file, not through looptrace)."""
    with path.open() as f:
        head = json.loads(f.readline())
        for line in f:
            rec = json.loads(line)
            if rec["table"] == "runs" and rec["row"]["id"] == head["root"]:
                return dict(rec["row"])
    raise AssertionError(f"{path}: no root run row")


def test_every_agent_demo_but_the_layered_one_has_a_factory() -> None:
    specs = set(DEMO_FACTORIES.values())
    assert len(specs) == len(DEMOS)
    for demo in DEMOS:
        spec = f"tracer.demo.factories:{demo.replace('-', '_')}"
        assert spec in specs, demo
        factory = load_factory(spec)
        assert factory is getattr(factories, demo.replace("-", "_"))
        # no tracer in its own list: the rerun adds one writing to --db
        assert not any(type(m).__name__ == "TraceMiddleware" for m in default_stack(factory))
        row = root_row(SAMPLES / f"{demo}.jsonl")
        assert demo_agent(str(row["name"]), str(row["model"])) == spec, demo
    assert demo_agent("weather", "gpt-4o-mini") is None  # (a run of another agent)
    assert demo_agent(None, None) is None


@pytest.mark.parametrize("demo", DEMOS)
def test_a_bundled_sample_reruns_and_forks_through_its_factory(
        tmp_path: Path, demo: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "samples.db"
    assert main(["import", str(SAMPLES / f"{demo}.jsonl"), "--db", str(db)]) == 0
    row = root_row(SAMPLES / f"{demo}.jsonl")
    run_id = str(row["id"])
    agent = demo_agent(str(row["name"]), str(row["model"]))
    assert agent is not None
    capsys.readouterr()
    assert main(["rerun", run_id, "--db", str(db), "--agent", agent, "--json"]) == 0
    rerun = json.loads(capsys.readouterr().out)
    assert rerun["live"]["model_calls"] == 0
    assert rerun["served"]["model_calls"] == rerun["record"]["model_calls"] > 0
    with TraceDB(db) as t:
        d = diff_tree(t, run_id, t, rerun["run"])
        assert d.identical, format_text(d)
    # a fork at the first model call, its live part answered by the demo's scripted model
    assert main(["rerun", run_id, "--db", str(db), "--agent", agent, "--at", "4",
                 "--system", "Be brief.", "--json"]) == 0
    fork = json.loads(capsys.readouterr().out)
    assert fork["live"]["from"] is not None and fork["live"]["model_calls"] >= 1
    conn = sqlite3.connect(db)
    try:
        meta, status = conn.execute("SELECT metadata, status FROM runs WHERE id = ?",
                                    [fork["run"]]).fetchone()
    finally:
        conn.close()
    assert json.loads(meta)["forked_from"] == {
        "run": run_id, "step": 4, "edit": {"kind": "system", "text": "Be brief."}}
    assert status == row["status"]  # (stock-check fails again, as recorded)
