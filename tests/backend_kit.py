"""Real tracing backends for the tests: Arize Phoenix and MLflow's tracking server,
each started on 127.0.0.1 (free ports, a temporary SQLite store) from its own venv.

Their dependency trees (pandas, sqlalchemy, alembic, their own opentelemetry and
protobuf pins) are kept out of the project's lock: ``.ci/run`` creates
``.ci-venvs/phoenix`` and ``.ci-venvs/mlflow`` from ``tests/backends/*.txt``, and
what a backend stored is read back by a small script run with that venv's python
(``tests/backends/read_*.py``, through the backend's own client), which prints
JSON. Without those venvs the tests skip (set ``LOOPTRACE_BACKEND_VENVS`` to
another directory holding them); in CI (``CI`` set) they fail instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from browser_support import ARTIFACTS, ROOT, free_port

from tracer.otel.spans import Span, SpanEvent

BACKENDS = ROOT / "tests" / "backends"
STARTUP = 300.0  # seconds: both migrate a fresh database first (slow on a busy machine)


def venv_python(name: str) -> Path:
    """The python of backend ``name``'s venv; skip (fail in CI) if it is not there."""
    base = Path(os.environ.get("LOOPTRACE_BACKEND_VENVS") or ROOT / ".ci-venvs")
    py = base / name / "bin" / "python"
    if not py.exists():
        why = (f"{py} not found: .ci/run creates it (uv venv {base / name}, then uv pip sync "
               f"tests/backends/{name}.txt into it)")
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return py


@contextlib.contextmanager
def _serve(cmd: list[str], env: dict[str, str], health: str, name: str) -> Iterator[None]:
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / f"{name}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env={**os.environ, **env}, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + STARTUP
            while True:
                if proc.poll() is not None:
                    msg = f"{name} exited ({proc.returncode}): {log.read_text()[-3000:]}"
                    raise RuntimeError(msg)
                try:
                    with urllib.request.urlopen(health, timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    msg = (f"{name} did not answer {health} in {STARTUP:.0f} s: "
                           f"{log.read_text()[-3000:]}")
                    raise RuntimeError(msg)
                time.sleep(0.5)
            yield
        finally:  # the server's process group: mlflow runs uvicorn and a job runner under it
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@contextlib.contextmanager
def phoenix_server(workdir: Path) -> Iterator[str]:
    """Phoenix (``phoenix serve``, SQLite in ``workdir``); yields its URL (UI and OTLP/HTTP)."""
    py = venv_python("phoenix")
    port, grpc = free_port(), free_port()
    env = {"PHOENIX_WORKING_DIR": str(workdir), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    url = f"http://127.0.0.1:{port}"
    with _serve([str(py.parent / "phoenix"), "serve"], env, url + "/healthz", "phoenix"):
        yield url


@contextlib.contextmanager
def mlflow_server(workdir: Path) -> Iterator[str]:
    """MLflow's tracking server (SQLite store in ``workdir``); yields its URL (OTLP/HTTP at
    ``/v1/traces``, with the experiment id in the ``x-mlflow-experiment-id`` header)."""
    py = venv_python("mlflow")
    port = free_port()
    cmd = [str(py.parent / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
           "--workers", "1", "--backend-store-uri", f"sqlite:///{workdir / 'mlflow.db'}",
           "--default-artifact-root", str(workdir / "artifacts")]
    url = f"http://127.0.0.1:{port}"
    with _serve(cmd, {}, url + "/health", "mlflow"):
        yield url


def read_back(name: str, *args: str, sent: dict[str, int], tmp: Path) -> Any:
    """Run ``tests/backends/read_{name}.py`` with the backend's python; its JSON."""
    sent_file = tmp / f"sent-{name}.json"
    sent_file.write_text(json.dumps(sent))
    proc = subprocess.run([str(venv_python(name)), str(BACKENDS / f"read_{name}.py"), *args,
                           str(sent_file)], capture_output=True, text=True, timeout=600,
                          check=False)
    if proc.returncode:
        msg = f"read_{name}.py failed: {proc.stderr[-3000:]}"
        raise RuntimeError(msg)
    return json.loads(proc.stdout)


# -- what a backend returned, as looptrace's spans (to import them back) -------------------

def _iso(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def phoenix_span(d: dict[str, Any]) -> Span:
    ctx = d["context"]
    return Span(trace_id=ctx["trace_id"], span_id=ctx["span_id"], parent_id=d.get("parent_id"),
                name=d["name"], start=_iso(d["start_time"]) or 0.0, end=_iso(d.get("end_time")),
                attributes=d.get("attributes") or {},
                events=[SpanEvent(e["name"], _iso(e["timestamp"]) or 0.0,
                                  e.get("attributes") or {}) for e in d.get("events") or []],
                status={"OK": "ok", "ERROR": "error"}.get(d.get("status_code") or "", "unset"),
                status_message=d.get("status_message") or None)


def mlflow_span(trace_id: str, d: dict[str, Any]) -> Span:
    return Span(trace_id=trace_id.removeprefix("tr-"), span_id=d["span_id"],
                parent_id=d.get("parent_id"), name=d["name"], start=int(d["start_ns"]) / 1e9,
                end=int(d["end_ns"]) / 1e9 if d.get("end_ns") else None,
                attributes=d.get("attributes") or {},
                events=[SpanEvent(e["name"], int(e["timestamp_ns"]) / 1e9,
                                  e.get("attributes") or {}) for e in d.get("events") or []],
                status={"OK": "ok", "ERROR": "error"}.get(d.get("status_code") or "", "unset"),
                status_message=d.get("status_message") or None)
