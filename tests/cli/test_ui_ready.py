"""``looptrace ui --token`` / ``--password`` prints its link only once the server is
warmed up and listening (issue 29). Before, the link was printed by ``looptrace ui``
itself, before the server had even started importing: a browser opened at once met
a server not yet there, then a cold first page. The plain form already waited (Streamlit
prints its URL after ``app/serve.py``'s warm-up)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from browser_support import free_port
from tracer_kit import get_weather, make_agent, two_lap_model

from tracer import TraceMiddleware

ROOT = Path(__file__).resolve().parents[2]
WARMED = "looptrace ui: warmed up in "


def health(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=5) as r:
        return r.read().decode().strip()


@pytest.mark.parametrize("form", [["--token"], ["--password", "s3cret"]])
def test_the_link_is_printed_after_the_warm_up_once_listening(tmp_path: Path,
                                                               form: list[str]) -> None:
    db = tmp_path / "ready.db"
    trace = TraceMiddleware(db=db, run_name="ready-run")
    make_agent(two_lap_model(), [get_weather], [trace]).invoke({"messages": [("user", "hi")]})
    trace.close()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "LOOPTRACE_NO_WARM"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer.cli", "ui", "--db", str(db), "--port", str(port),
         *form], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith(f"looptrace ui: http://127.0.0.1:{port}/"):
                # printed once the server listens: it answers now, with no wait
                assert health(port) == "ok"
                break
        else:
            pytest.fail("looptrace ui ended without printing its link:\n" + "".join(lines))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.communicate(timeout=30)
    text = "".join(lines)
    warmed = [i for i, line in enumerate(lines) if line.startswith(WARMED)]
    assert len(warmed) == 1, text
    assert warmed[0] < len(lines) - 1, text  # the warm-up's line came first
    assert "not warmed up" not in text
    assert "WARNING" not in text, text  # (Streamlit's caches warmed before its runtime: quiet)
    assert ("?token=" in lines[-1]) == (form == ["--token"])
    assert "s3cret" not in text
