"""Take the docs' pictures: real screenshots of the app on the bundled sample traces, and
of a sample run in Arize Phoenix.

    uv run --frozen python docs/screenshots.py [--out docs/img] [--take app|phoenix|all]

Builds the sample database (``tracer.interop.exchange.build_sample_db``), starts the app on
127.0.0.1 (``tests/browser_support.streamlit_server``, as the browser tests do) and
opens each page in Debian's headless Chromium through Playwright (never a downloaded
browser). Writes one PNG per picture the README's tour shows. ``--take phoenix`` (or
``all``) takes ``phoenix-run.png`` (docs/guide/otel.md) with ``docs/screenshot_phoenix.py``:
a real Phoenix server from ``.ci-venvs/phoenix``, started and stopped here.
(``debug.png`` is taken by tests/browser/test_browser_debug.py, under test-artifacts/.)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # browser_support, replayer_driver, backend_kit
sys.path.insert(0, str(ROOT / "docs"))  # screenshot_phoenix

from browser_support import CHROMIUM_ARGS, chromium_path, streamlit_server
from playwright.sync_api import Page, sync_playwright
from replayer_driver import Replayer

import screenshot_phoenix

from tracer.interop.exchange import build_sample_db
from tracer.read.loader import TraceDB

WIDTH, HEIGHT = 1400, 900


def run_ids(db: Path) -> dict[str, str]:
    with TraceDB(db) as tdb:
        return {str(r.name): r.id for r in tdb.runs()}


def settle(page: Page) -> None:
    """Wait until Streamlit has finished drawing (no element marked stale or running)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(800)


def shoot(page: Page, out: Path, name: str, *, full: bool = False) -> None:
    page.screenshot(path=str(out / f"{name}.png"), full_page=full)
    print(out / f"{name}.png")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    ap.add_argument("--take", choices=("app", "phoenix", "all"), default="app",
                    help="the app's pictures (default), phoenix-run.png, or both")
    args = ap.parse_args(argv)
    exe = chromium_path()
    if exe is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.take in ("app", "all"):
        take_app(args.out, exe)
    if args.take in ("phoenix", "all"):
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            try:
                screenshot_phoenix.take(args.out, browser)
            finally:
                browser.close()
    return 0


def take_app(out: Path, exe: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = build_sample_db(Path(tmp) / "samples.db")
        ids = run_ids(db)
        with streamlit_server(db) as url, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})

            page.goto(url)  # (the runs page is the default page, at "/")
            page.get_by_role("heading", name="Runs").wait_for(timeout=60_000)
            page.locator('[data-testid="lt-runs-table"] tbody tr').first.wait_for(
                timeout=60_000)
            settle(page)
            shoot(page, out, "runs")

            # the weather run at its first tool call: the graph, the chips, the messages
            page.goto(f"{url}/replay?run={ids['weather']}&step=7")
            Replayer(page).wait_ready()
            settle(page)
            shoot(page, out, "replay")

            # the runaway loop: the findings beside the replay
            page.goto(f"{url}/replay?run={ids['footgun-no-bound']}&step=5")
            Replayer(page).wait_ready()
            settle(page)
            findings = page.get_by_text("Findings (", exact=False).first
            findings.click()
            settle(page)
            # (the findings' header at the top of the picture, its findings below it)
            findings.evaluate("e => e.scrollIntoView({block: 'start'})")
            page.mouse.wheel(0, -60)
            settle(page)
            shoot(page, out, "findings")

            page.goto(f"{url}/wire?run={ids['openai-weather']}")
            # (the bodies come after the wire modules' first import: wait for them, not
            # for their grey placeholders)
            page.locator('[data-testid="stCode"]', has_text="messages").first.wait_for(
                timeout=60_000)
            settle(page)
            shoot(page, out, "wire")

            page.goto(f"{url}/compare?a={ids['openai-weather']}&b={ids['anthropic-weather']}")
            settle(page)
            shoot(page, out, "compare")
            browser.close()


if __name__ == "__main__":
    raise SystemExit(main())
