"""Benchmark of the playground's answers (run on demand, not by pytest).

    .venv/bin/python benchmarks/bench_playground.py [--repeat 5]

On a database built from the bundled sample traces, prints the median time of
``tracer.wire.playground.playground`` for the second model call of ``openai-weather``
(four messages, one tool), three ways:

- offline, unedited: the recorded answer of the same request (the cassette search:
  the run, its subagent runs, its reruns and forks);
- offline, with a system-prompt edit no record holds: the search finds nothing and the
  answer says what the model would have been sent;
- the agent's own model (``tracer.demo.factories:weather``, built per call) on the
  ``weather`` run's first call.

Each includes loading the run and rendering the three providers' wire forms.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tracer.interop.exchange import build_sample_db
from tracer.wire.playground import playground


def _median_ms(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    fn()  # (warm: the adapters' imports)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = build_sample_db(Path(folder) / "samples.db")
        step = playground(db, "openai-weather", 1).step + 1
        weather = playground(db, "weather", 1)
        cases = {
            "offline, served from the record": lambda: playground(db, "openai-weather", step),
            "offline, no record has it": lambda: playground(
                db, "openai-weather", step, edit={"kind": "system", "text": "Be brief."}),
            "the agent's own model": lambda: playground(
                db, weather.run, weather.step, model="agent",
                agent="tracer.demo.factories:weather"),
        }
        for name, fn in cases.items():
            print(f"{name:34s} {_median_ms(fn, args.repeat):8.1f} ms (median of {args.repeat})")


if __name__ == "__main__":
    main()
