"""Benchmark: how long a newcomer waits (run on demand, not by pytest).

    uv run --frozen python benchmarks/bench_cold_start.py [--repeat 5] [--no-app]

Prints, medians of ``--repeat`` fresh processes each:

- cold ``runs``: ``looptrace runs --db samples`` with an empty price memo (a new
  ``$LOOPTRACE_CACHE_DIR``): the costs column asks genai-prices, which is imported;
- warm ``runs``: the same with the memo the cold run left: genai-prices is not imported;
- both again with ``PYTHONDONTWRITEBYTECODE=1`` and no bytecode cache
  (``PYTHONPYCACHEPREFIX`` a new empty folder: a fresh clone, a read-only install);
- whether each process imported ``genai_prices`` (read from ``sys.modules`` at exit);
- the app's first visit to a 500-lap run (server side, cold caches):
  ``benchmarks/bench_app.py --laps 499`` (499 laps asking for tool calls and the answer)
  and its OPEN line.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: print('genai_prices imported:', 'genai_prices' in"
         " sys.modules, file=sys.stderr))\n"
         "from tracer.cli import main\n"
         "sys.exit(main(['runs', '--db', 'samples']))\n")


def once(cache: Path, env_extra: dict[str, str]) -> tuple[float, bool]:
    env = {**os.environ, "LOOPTRACE_CACHE_DIR": str(cache), **env_extra}
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - t, "genai_prices imported: True" in done.stderr


def measure(repeat: int, no_bytecode: bool) -> None:
    cold, warm, imported = [], [], {"cold": set(), "warm": set()}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            extra = ({"PYTHONDONTWRITEBYTECODE": "1",
                      "PYTHONPYCACHEPREFIX": str(Path(d) / "pycache")} if no_bytecode else {})
            s, imp = once(Path(d) / "cache", extra)
            cold.append(s)
            imported["cold"].add(imp)
            s, imp = once(Path(d) / "cache", extra)
            warm.append(s)
            imported["warm"].add(imp)
    how = "no bytecode written" if no_bytecode else "bytecode cached"
    print(f"looptrace runs --db samples ({how}), median of {repeat}: "
          f"cold {statistics.median(cold):.2f} s (genai_prices imported: "
          f"{sorted(imported['cold'])}), warm {statistics.median(warm):.2f} s "
          f"(genai_prices imported: {sorted(imported['warm'])})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-app", action="store_true", help="leave out the app's first visit")
    args = ap.parse_args()
    once(Path(tempfile.mkdtemp()), {})  # (the bytecode written once, as after uv sync)
    measure(args.repeat, no_bytecode=False)
    measure(max(1, args.repeat // 2), no_bytecode=True)
    if not args.no_app:
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_app.py"),
                               "--laps", "499", "--steps", "0"], cwd=ROOT,
                              capture_output=True, text=True, check=False)
        opened = [ln for ln in done.stdout.splitlines() if ln.startswith(("OPEN", "run "))]
        print("the app's first visit to a 500-lap run (bench_app.py --laps 499):")
        print("\n".join("  " + ln for ln in opened) or done.stderr[-2000:])
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
