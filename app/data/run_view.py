"""What the replay page draws from, computed once per loaded run (no Streamlit here).

``build_run_view(replay)`` holds the run's replay, the kind of every step, its
findings (``tracer.checks.run``, on a thread for a large run) and, built on first
use, its JSON form for the browser's replayer (``tracer.replayer.replay_json``).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tracer.checks.run import Finding, check_replay
from tracer.read.steps import Replay
from tracer.replayer import KIND_LETTER, kinds, replay_json

__all__ = ["CHECK_DELAY_S", "SYNC_CHECK_STEPS", "RunView", "build_run_view"]

# Runs with more steps than this are checked on a background thread, so a
# large run opens at once and its findings appear when ready.
SYNC_CHECK_STEPS = 1500
# The background check starts after this delay: it holds the GIL for seconds on a
# large run, and the page's first render should not wait behind it.
CHECK_DELAY_S = 2.0


@dataclass
class RunView:
    replay: Replay
    kinds: str  # one letter per step (see KIND_LETTER)
    findings: list[Finding] = field(default_factory=list)
    findings_error: str | None = None
    finding_indexes: list[int | None] = field(default_factory=list)  # step of each finding
    findings_pending: bool = False
    _json: dict[int | None, dict[str, Any]] = field(default_factory=dict)

    def json(self, window: tuple[int, int] | None = None) -> dict[str, Any]:
        """The run as the browser's replayer plays it, or the window ``(start, stop)`` of
        it (built once per loaded run and window; payloads stay on the server, where the
        inspector reads them)."""
        at = None if window is None else window[0]
        if at not in self._json:
            if len(self._json) > 2:  # (the whole run, or the last windows asked for)
                self._json.clear()
            self._json[at] = replay_json(self.replay, payloads=False, window=window)
        return self._json[at]

    def set_findings(self, findings: list[Finding], error: str | None) -> None:
        self.finding_indexes = [self.index_of_seq(f.seq) for f in findings]
        self.findings, self.findings_error = findings, error
        self.findings_pending = False

    def check(self, *, background: bool | None = None) -> None:
        """Run ``tracer.checks.run`` on the run (on a thread for a large run)."""
        if background is None:
            background = len(self.replay.steps) > SYNC_CHECK_STEPS
        if not background:
            self.set_findings(*_findings(self.replay))
            return
        self.findings_pending = True

        def later() -> None:
            time.sleep(CHECK_DELAY_S)
            self.set_findings(*_findings(self.replay))

        threading.Thread(target=later, name="looptrace-check", daemon=True).start()

    def index_of_seq(self, seq: int | None) -> int | None:
        """The index of the step of event ``seq`` (``Replay.index_of_seq``)."""
        return self.replay.index_of_seq(seq)

    def find(self, index: int, kind: str) -> int | None:
        """The next step of ``kind`` after ``index`` ('error' includes error tool results)."""
        letter = KIND_LETTER[kind]
        i = self.kinds.find(letter, index + 1)
        return None if i < 0 else i

    def index_of_tool_call(self, tool_call_id: str | None) -> int | None:
        for s in self.replay.steps:
            if s.event.tool_call_id == tool_call_id:
                return s.index
        return None


def _findings(replay: Replay) -> tuple[list[Finding], str | None]:
    try:
        return list(check_replay(replay)), None
    except Exception as exc:  # noqa: BLE001 - a broken checker must not break the replay
        return [], f"{type(exc).__name__}: {exc}"


def build_run_view(replay: Replay, *, with_findings: bool = True) -> RunView:
    view = RunView(replay, kinds(replay))
    if with_findings:
        view.check()
    return view
