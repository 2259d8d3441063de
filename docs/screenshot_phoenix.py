"""Take ``docs/img/phoenix-run.png``: a looptrace run as Arize Phoenix shows it.

Called by ``docs/screenshots.py --take phoenix`` (or ``--take all``). Starts a real
Phoenix server (``tests/backend_kit.phoenix_server``: ``.ci-venvs/phoenix``, which
``.ci/run`` creates; a temporary SQLite store, free loopback ports), sends the
deep-research sample the way ``docs/guide/otel.md`` says::

    looptrace export deep-research --db samples --otlp URL --service my-agent

then opens the run's trace in Phoenix in the headless Chromium it is given, picks the
run's AGENT span and its Events tab (the hooks, each an event named after it), and
writes the picture. The server is stopped on the way out.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from backend_kit import phoenix_server
from playwright.sync_api import Browser

ROOT = Path(__file__).resolve().parent.parent
RUN = "deep-research"  # a run with a subagent: its AGENT span under the task call
SERVICE = "my-agent"  # (the project otel.md's command names)
WIDTH, HEIGHT = 1600, 1000
WAIT = 120_000  # ms: a freshly started Phoenix answers its first queries slowly


def phoenix_venv() -> Path:
    base = Path(os.environ.get("LOOPTRACE_BACKEND_VENVS") or ROOT / ".ci-venvs")
    return base / "phoenix"


def take(out: Path, browser: Browser) -> Path:
    """Write ``out/phoenix-run.png``; a missing Phoenix venv is one line (SystemExit)."""
    if not (phoenix_venv() / "bin" / "phoenix").exists():
        sys.exit(f"{phoenix_venv()} not found: .ci/run creates it (uv venv "
                 f"{phoenix_venv()}, then uv pip sync tests/backends/phoenix.txt into it)")
    with tempfile.TemporaryDirectory() as tmp, phoenix_server(Path(tmp)) as url:
        subprocess.run([sys.executable, "-m", "tracer", "export", RUN, "--db", "samples",
                        "--otlp", url, "--service", SERVICE], check=True, cwd=ROOT)
        page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        try:
            page.goto(f"{url}/projects")
            page.get_by_role("link", name=SERVICE).or_(page.get_by_text(SERVICE)).first.click(
                timeout=WAIT)
            # the trace list: the run's AGENT span with its question and its answer
            page.get_by_text(f"invoke_agent {RUN}").first.click(timeout=WAIT)
            # the trace: every span of the run, the subagent's under its task call
            page.get_by_text("invoke_agent researcher").first.wait_for(timeout=WAIT)
            page.get_by_role("tab", name="Events").first.click(timeout=WAIT)
            page.get_by_text("before_model").first.wait_for(timeout=WAIT)
            page.mouse.move(0, HEIGHT - 1)  # (no tooltip over the picture)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(800)
            path = out / "phoenix-run.png"
            page.screenshot(path=str(path))
        finally:
            page.close()
    print(path)
    return path
