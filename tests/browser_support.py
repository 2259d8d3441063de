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
from typing import Self

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
            wait_healthy(url, proc, timeout=60, log=log)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def ui_server(db: str | Path, *, root: Path = ROOT,
              timeout: float = 300) -> Iterator[tuple[str, float, int]]:
    """The app as ``looptrace ui`` starts it (``app/serve.py`` of the checkout ``root``,
    run as a script, ``root`` first on the import path) on a free 127.0.0.1 port;
    yields its base URL once the server has printed it, the seconds that took, and the
    server's process id."""
    import threading

    port = free_port()
    env = {**os.environ, "LOOPTRACE_DB": str(db), "PYTHONPATH": str(root)}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, str(root / "app" / "serve.py"), "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    printed = threading.Event()
    seen: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if url in line:
                printed.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not printed.wait(timeout):
            msg = f"the app did not print {url} in {timeout:.0f} s:\n{''.join(seen)}"
            raise RuntimeError(msg)
        yield url, time.monotonic() - t0, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_healthy(url: str, proc: subprocess.Popen[bytes], *, timeout: float,
                 log: Path | None = None) -> None:
    """Wait until the Streamlit server at ``url`` (started as ``proc``) answers its health
    check; RuntimeError (with its log, if any) when it exits or does not in ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            seen = log.read_text(errors="replace") if log is not None and log.exists() else ""
            msg = f"streamlit at {url} did not start" + (f"; its log ({log}):\n{seen}" if log else "")
            raise RuntimeError(msg)
        time.sleep(0.2)


def wait_connected(page, timeout: float = 30_000) -> None:  # type: ignore[no-untyped-def]
    """Wait until the Streamlit app is connected (then wait for a page element)."""
    page.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]',
                           timeout=timeout)


# -- helpers for the browser tests (network guard, leak server, console) -------

FONT_NOISE = ("font", "fonts.googleapis", "fonts.gstatic", ".woff", ".ttf")


class RequestCounter:
    """A tiny HTTP server on 127.0.0.1 that counts every request it receives
    (a would-be leak target: a trace that makes the page fetch from it fails)."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.requests: list[str] = []
        counter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _any(self) -> None:
                counter.requests.append(f"{self.command} {self.path}")
                self.send_response(204)
                self.end_headers()

            do_GET = do_POST = do_HEAD = do_OPTIONS = _any

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# Streamlit's own icon / font fetches (a ``:material/...:`` page_icon makes the client
# fetch the favicon SVG from Google): aborted, but not counted as the trace's doing.
FONT_HOSTS = ("https://fonts.gstatic.com/", "https://fonts.googleapis.com/")


def guard_network(context, allowed_prefix: str | None,  # type: ignore[no-untyped-def]
                  let_through: tuple[str, ...] = (),
                  ignore: tuple[str, ...] = FONT_HOSTS) -> list[str]:
    """Record every request of ``context`` not under ``allowed_prefix`` (None: only
    file:// and data: are allowed, e.g. for a page opened from disk) and abort it,
    except URLs starting with one of ``let_through`` (recorded, then sent on, so a
    counting server sees them too). URLs starting with one of ``ignore`` are aborted
    and not recorded. Returns the live list of recorded URLs."""
    blocked: list[str] = []

    def handle(route) -> None:  # type: ignore[no-untyped-def]
        url = route.request.url
        if ignore and url.startswith(ignore):
            route.abort()
            return
        if allowed_prefix is not None and (url == allowed_prefix or url.startswith(
                allowed_prefix.rstrip("/") + "/")):
            route.continue_()
            return
        if url.startswith(("file://", "data:", "blob:", "about:")) and allowed_prefix is None:
            route.continue_()
            return
        blocked.append(url)
        if url.startswith(let_through) and let_through:
            route.continue_()
        else:
            route.abort()

    context.route("**/*", handle)
    return blocked


def collect_console_errors(page) -> list[str]:  # type: ignore[no-untyped-def]
    """Console errors and uncaught page errors, without failed font fetches."""
    errors: list[str] = []

    def on_console(msg) -> None:  # type: ignore[no-untyped-def]
        if msg.type == "error":
            text = msg.text
            loc = (msg.location or {}).get("url", "")
            if any(n in (text + " " + loc).lower() for n in FONT_NOISE):
                return
            # Streamlit's client probes /<page>/_stcore/... before /_stcore/...: a benign 404.
            if "/_stcore/" in loc and "404" in text:
                return
            errors.append(text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    return errors
