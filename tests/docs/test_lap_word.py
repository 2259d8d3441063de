"""One meaning of "lap" (the glossary's: one model call and what it asked for) in the
benchmarks' output and the pages quoting them.

Issue 47, untrue 2: the README's "What it costs", docs/dev/performance.md and
benchmarks/bench_tracer.py called a run of 2 model calls and 1 tool call "1 lap", while
the glossary, the app and ``run_stats`` count the weather sample, of that very shape, as 2.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench_tracer import get_price, scripted, shape
from langchain.agents import create_agent

from tracer import TraceMiddleware
from tracer.read.loader import TraceDB

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_names_its_scenarios_by_the_laps_the_record_counts(
        tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    trace = TraceMiddleware(db=db)
    for tool_laps, width in ((1, 1), (10, 3)):
        agent = create_agent(scripted(tool_laps, width), tools=[get_price], middleware=[trace])
        agent.invoke({"messages": [("user", "price it")]})
    trace.flush()
    with TraceDB(db) as tdb:
        counted = sorted((r.laps, r.model_calls, r.tool_calls) for r in tdb.runs())
    assert counted == [(2, 2, 1), (11, 11, 30)]  # by hand: the answer is a lap too
    assert shape(1, 1) == "2 laps (2 model calls, 1 tool call)"
    assert shape(10, 3) == "11 laps (11 model calls, 30 tool calls, 3 at a time)"


def test_no_page_calls_a_two_model_call_run_one_lap() -> None:
    pages = [ROOT / "README.md", ROOT / "docs" / "dev" / "performance.md",
             ROOT / "tests" / "README.md", *sorted((ROOT / "benchmarks").glob("*.py"))]
    for page in pages:
        text = " ".join(page.read_text().split())
        said = re.findall(r"\b(?:1|one)[- ]lap\b(?! of)", text, re.IGNORECASE)
        assert not said, f"{page.name}: {said}"
    costs = " ".join((ROOT / "README.md").read_text().split("## What it costs")[1]
                     .split("\n## ")[0].split())
    assert "(2 laps: 2 model calls and a tool call)" in costs
