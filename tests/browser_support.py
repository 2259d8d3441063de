"""Real-browser test support: Debian's Chromium driven by Playwright, and a
Streamlit server on a free loopback port. Never downloads a browser."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def streamlit_server(db: str | Path | None = None, app: str | Path | None = None,
                     env: dict[str, str] | None = None) -> Iterator[str]:
    """Run the app on 127.0.0.1 and yield its base URL; stop it afterwards."""
    port = free_port()
    app = Path(app or ROOT / "app" / "main.py")
    e = dict(os.environ)
    if db is not None:
        e["LOOPTRACE_DB"] = str(db)
    e.update(env or {})
    log = ARTIFACTS / f"streamlit-{port}.log"
    ARTIFACTS.mkdir(exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(app), "--server.address", "127.0.0.1",
             "--server.port", str(port), "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=e, stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                        if r.read().decode().strip() == "ok":
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    msg = f"streamlit did not start; see {log}"
                    raise RuntimeError(msg)
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_connected(page, timeout: float = 30_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the Streamlit app is connected (then wait for a page element)."""
    page.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]',
                           timeout=timeout)
