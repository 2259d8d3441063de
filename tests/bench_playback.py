"""Playback in a real browser, many times over (run on demand, not by pytest).

    uv run python tests/bench_playback.py [--pages 15] [--pauses 8] [--buttons]

Serves the bundled sample traces, opens the shopping run in Debian's Chromium,
and per page: chooses 4x, then plays and pauses with the space bar up to
``--pauses`` times, each pause at a random moment of a step (``--buttons``:
with the Play and Pause buttons instead). Prints how many
pauses failed (the Play button did not come back, the page did not settle on a
step where the graph and the step counter agree, or it went blank), how long
a pause took to show, and how many steps a second 4x plays (nominal: 3.3).

The browser tests do the same six times per run of the suite; this is the
figure behind them (before playback moved into the graph component, about one
pause in ten blanked the page with Streamlit's "Bad delta path index").
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from browser_support import CHROMIUM_ARGS, chromium_path, streamlit_server, wait_connected
from playwright.sync_api import expect, sync_playwright
from test_browser_replay import (
    GRAPH,
    MOVED_JS,
    PANES_JS,
    SETTLED_JS,
    SHOWN_STEP_JS,
)

from tracer.exchange import read_trace, sample_files


def toggle(page, button: str, click: bool) -> None:  # type: ignore[no-untyped-def]
    if click:
        page.locator(f".st-key-{button} button:visible").click()
    else:
        page.keyboard.press("Space")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=15)
    ap.add_argument("--pauses", type=int, default=8)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--buttons", action="store_true", help="click Play / Pause, not space")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    path = next(p for p in sample_files() if p.stem == "shopping")
    root = read_trace(path)[0]["root"]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "samples.db"
        subprocess.run([sys.executable, "-m", "tracer.cli", "import", "--db", str(db),
                        *map(str, sample_files())], check=True, capture_output=True)
        tried, failures, reaction, played = 0, [], [], [0.0, 0.0]
        with streamlit_server(db) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            for k in range(args.pages):
                ctx = browser.new_context(viewport={"width": 1400, "height": 1000},
                                          reduced_motion="reduce")
                page = ctx.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
                page.goto(f"{url}/replay?run={root}&step=1")
                wait_connected(page)
                expect(page.locator(GRAPH)).to_have_attribute("data-step", "0", timeout=30_000)
                page.locator(".st-key-speed button:visible", has_text="4x").click()
                here = 0
                for r in range(args.pauses):
                    tried += 1
                    try:
                        toggle(page, "play", args.buttons)
                        expect(page.locator(".st-key-pause button:visible")).to_be_visible()
                        page.wait_for_function(MOVED_JS, arg=here, timeout=10_000)
                        t0, s0 = time.monotonic(), page.evaluate(SHOWN_STEP_JS)
                        time.sleep(rnd.uniform(0.3, 1.5))
                        played[0] += page.evaluate(SHOWN_STEP_JS) - s0
                        played[1] += time.monotonic() - t0
                        t0 = time.monotonic()
                        toggle(page, "pause", args.buttons)
                        expect(page.locator(".st-key-play button:visible")).to_be_visible()
                        reaction.append(time.monotonic() - t0)
                        page.evaluate("window.__settle = null")
                        here = int(page.wait_for_function(SETTLED_JS, timeout=10_000).json_value())
                    except Exception as exc:  # noqa: BLE001 - a failed pause is a figure here
                        failures.append(f"page {k} pause {r}: {str(exc).splitlines()[0][:120]} "
                                        f"{page.evaluate(PANES_JS)} {errors[-1:]}")
                        break
                    if here >= 28:
                        break
                ctx.close()
    print(f"pauses: {tried}, failed: {len(failures)}")
    for f in failures:
        print("  " + f)
    if reaction:
        print(f"pause shown after: median {statistics.median(reaction) * 1000:.0f} ms, "
              f"max {max(reaction) * 1000:.0f} ms")
    if played[1]:
        print(f"4x plays {played[0] / played[1]:.2f} steps/s over {played[1]:.0f} s of "
              f"playback (nominal 3.33)")


if __name__ == "__main__":
    main()
