"""The writer's speed-ups change no row: the same runs make the same rows as before.

Every truth scenario (``tests/truth/``: prebuilt middleware, human in the loop,
Deep Agents with state keys and a subagent, failing agents) and the benchmark's agents
(2 laps, 11 laps, 10 of them asking for 3 parallel calls, ``lean``) are recorded, with and without the
callback handler, and every row of every table is compared with
``tests/fixtures/same_rows.json``: the rows the tracer wrote for the same runs before
the writer was made cheaper (issue 29), written by this file's ``--write`` with that
code. Only what two identical runs make up at random is normalised (ids, times, pids,
thread names, object ids, the order and seq of what parallel calls did, the hashes of values holding those); a long text is compared by its
length and digest, to keep the file small.

Regenerate only when a change is meant to change what is recorded:
``uv run --frozen python tests/record/test_tracer_same_rows.py --write``.

It failed, as it should, with the writer's message rows left without their search
text, and with the events of a run written without their payloads.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if __name__ == "__main__":  # (under pytest the kits are on the path already)
    sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent / "benchmarks"),
                    str(HERE.parent.parent)]
GOLDEN = HERE.parent / "fixtures" / "same_rows.json"

# (table, ORDER BY): every table the writer fills, in an order that does not depend
# on random ids (runs by start; the rest by run, then their own keys).
TABLES = (
    ("runs", "started_at"),
    ("events", "run_order, seq"),
    ("messages", "run_order, position, seq"),
    ("state", "run_order, seq, key"),
    ("state_values", "run_order, data"),
    ("run_stats", "run_order"),
    ("search_runs", "n"),
    ("search_pending", "id"),
    ("wire", "id"),
)
# Columns whose values are times or process facts: never the same twice.
VOLATILE = {"ts", "started_at", "ended_at", "duration_ms", "pid"}
# Parallel tool calls end in any order, and take their seq in that order: in these
# tables the seq is left out and the rows compared as a set (each row whole otherwise).
SEQ_TABLES = {"events", "messages", "state"}
LONG = 160  # a text longer than this is kept as its length and digest

_RUN_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")  # (and uuid4().hex)
# Made up at random, and in an order that parallel tool calls change: one placeholder
# each (what they link is compared through the rows that hold them).
_RANDOM = (
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"(?<![0-9a-f])[0-9a-f]{24}(?![0-9a-f])"), "<hash>"),  # state value hashes
    (re.compile(r"\bo:\d+"), "o:<id>"),  # the key of a message without id: its object's id
)
_FIXED = (
    (re.compile(r"ThreadPoolExecutor-\d+_\d+"), "ThreadPoolExecutor-N"),
    (re.compile(r"\bTask-\d+\b"), "Task-N"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"), "<time>"),
    (re.compile(r"(\"(?:ts|started_at|ended_at|duration_ms|created_at|modified_at)\":)"
                r"-?\d+(?:\.\d+)?(?:e-?\d+)?"), r"\1<t>"),
)


class _Names:
    """Run ids to ``<R0>``, ``<R1>`` ... in the order the runs started; other random
    texts to one placeholder each."""

    def __init__(self, run_ids: list[str]) -> None:
        self.runs = {r: f"<R{i}>" for i, r in enumerate(run_ids)}

    def sub(self, text: str) -> str:
        for rx, repl in _FIXED:
            text = rx.sub(repl, text)
        text = _RUN_ID.sub(lambda m: self.runs.get(m.group(0), "<hex>"), text)
        for rx, repl in _RANDOM:
            text = rx.sub(repl, text)
        return text


def dump(db: Path) -> dict[str, list[list[Any]]]:
    """Every row of the writer's tables, normalised (see the module docstring)."""
    conn = sqlite3.connect(db)
    run_ids = [r for (r,) in conn.execute("SELECT id FROM runs ORDER BY started_at")]
    names = _Names(run_ids)
    order = {rid: i for i, rid in enumerate(run_ids)}
    conn.create_function("run_order_of", 1, lambda r: order.get(r, -1))
    out: dict[str, list[list[Any]]] = {}
    for table, by in TABLES:
        cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
        key = "id" if table == "runs" else "run_id"
        extra = f", run_order_of({key}) AS run_order" if key in cols else ", 0 AS run_order"
        if table in ("search_pending", "search_runs"):
            extra = ", 0 AS run_order"
        rows = conn.execute(f"SELECT *{extra} FROM {table} ORDER BY {by}").fetchall()
        got = []
        for row in rows:
            vals: list[Any] = []
            for col, v in zip(cols, row):
                if col in VOLATILE or (col == "seq" and table in SEQ_TABLES):
                    v = None if v is None else "<t>"
                elif isinstance(v, str):
                    v = names.sub(v)
                    if len(v) > LONG:
                        v = f"<{len(v)} chars {hashlib.sha1(v.encode()).hexdigest()[:16]}>"
                vals.append(v)
            got.append(vals)
        out[table] = sorted(got, key=repr) if table in SEQ_TABLES else got
    conn.close()
    return out


def record_truth(db: Path, name: str, attach: bool) -> None:
    from truth.run import run_truth

    from tracer import TraceMiddleware

    trace = TraceMiddleware(db=db)
    callbacks = [trace.callback_handler()] if attach else None
    run_truth(name, [trace], position="first", callbacks=callbacks)
    trace.close()


def record_bench(db: Path, laps: int, width: int, lean: bool) -> None:
    from bench_tracer import get_price, scripted
    from langchain.agents import create_agent

    from tracer import TraceMiddleware

    trace = TraceMiddleware(db=db, lean=lean)
    agent = create_agent(scripted(laps, width), tools=[get_price], middleware=[trace])
    for i in range(3):
        agent.invoke({"messages": [("user", f"question {i}")]})
    trace.close()


def cases() -> list[str]:
    from truth.scenarios import FAILING, SCENARIOS

    out = [f"truth:{n}:{cb}" for n in sorted(SCENARIOS) + sorted(FAILING)
           for cb in ("hooks", "attach")]
    out += ["bench:1x1:full", "bench:10x3:full", "bench:1x1:lean", "bench:10x3:lean"]
    return out


def record_case(case: str, db: Path) -> dict[str, list[list[Any]]]:
    kind, name, how = case.split(":")
    if kind == "truth":
        record_truth(db, name, how == "attach")
    else:
        laps, width = (int(x) for x in name.split("x"))
        record_bench(db, laps, width, how == "lean")
    return dump(db)


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(GOLDEN.read_text())
    return data


@pytest.mark.parametrize("case", cases())
def test_same_rows_as_before(case: str, golden: dict[str, Any], tmp_path: Path) -> None:
    got = record_case(case, tmp_path / "t.db")
    want = golden[case]
    for table, _ in TABLES:
        assert got[table] == want[table], f"{case}: the rows of {table} differ"


def _write() -> None:
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as d:
        for i, case in enumerate(cases()):
            out[case] = record_case(case, Path(d) / f"{i}.db")
            print(case, {t: len(r) for t, r in out[case].items()}, flush=True)
    GOLDEN.write_text(json.dumps(out, indent=0, sort_keys=True) + "\n")


if __name__ == "__main__":
    if "--write" in sys.argv:
        _write()
