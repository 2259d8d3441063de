"""What the panes draw from, computed once per loaded run (no Streamlit here).

``build_run_view(replay)`` prepares, for every stored message, the inputs the
message pane needs (role, text, tool calls with their colours), the colour of
every tool call id, the tool names, the kind of every step, the run's
findings (``tracer.check``) and its JSON form for the browser's replayer.
Stepping then only picks from these: nothing is rebuilt per step.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tracer.check import Finding, check_run
from tracer.loader import Message, content_text
from tracer.palette import call_colour, colour_indexes
from tracer.replay import Replay
from tracer.replayer import is_error, replay_json

ROLES = {"human": "human", "ai": "ai", "tool": "tool", "system": "system",
         "HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool",
         "AIMessageChunk": "ai", "SystemMessage": "system"}
KIND_LETTER = {"model": "m", "tool": "t", "error": "e", "interrupt": "i", "hook": "h", "run": "r"}


@dataclass(frozen=True, slots=True)
class CallView:
    name: str
    args: str  # JSON text
    id: str
    colour: str


@dataclass(frozen=True, slots=True)
class MessageView:
    position: int
    key: str
    role: str
    text: str
    calls: tuple[CallView, ...]
    invalid_calls: tuple[str, ...]
    tool_call_id: str | None
    colour: str | None
    status: str | None
    name: str | None


# Runs with more steps than this are checked on a background thread, so a
# large run opens at once and its findings appear when ready.
SYNC_CHECK_STEPS = 1500
# The background check starts after this delay: it holds the GIL for seconds on a
# large run, and the page's first render should not wait behind it.
CHECK_DELAY_S = 2.0


@dataclass
class RunView:
    replay: Replay
    messages: dict[tuple[int, int], MessageView]  # (position, seq) -> view
    colour_index: dict[str, int]  # tool_call_id -> palette index
    tool_names: dict[str, str]  # tool_call_id -> tool name
    kinds: str  # one letter per step (see KIND_LETTER)
    findings: list[Finding] = field(default_factory=list)
    findings_error: str | None = None
    finding_steps: list[int | None] = field(default_factory=list)  # step of each finding
    findings_pending: bool = False
    _json: dict[str, Any] | None = None

    def json(self) -> dict[str, Any]:
        """The run as the browser's replayer plays it (built once per loaded run;
        payloads stay on the server, where the inspector reads them)."""
        if self._json is None:
            self._json = replay_json(self.replay, payloads=False)
        return self._json

    def set_findings(self, findings: list[Finding], error: str | None) -> None:
        self.finding_steps = [self.step_of_seq(f.seq) for f in findings]
        self.findings, self.findings_error = findings, error
        self.findings_pending = False

    def check(self, *, background: bool | None = None) -> None:
        """Run ``tracer.check`` on the run (on a thread for a large run)."""
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

    def view(self, m: Message) -> MessageView:
        v = self.messages.get((m.position, m.seq))
        return v if v is not None else message_view(m, self.colour_index)

    def step_of_seq(self, seq: int | None) -> int | None:
        """The first step at or after event ``seq``."""
        if seq is None or not self.replay.steps:
            return None
        seqs = [s.event.seq for s in self.replay.steps]
        i = bisect.bisect_left(seqs, seq)
        return min(i, len(seqs) - 1)

    def find(self, index: int, kind: str) -> int | None:
        """The next step of ``kind`` after ``index`` ('error' includes error tool results)."""
        letter = KIND_LETTER[kind]
        i = self.kinds.find(letter, index + 1)
        return None if i < 0 else i

    def step_of_tool_call(self, tool_call_id: str | None) -> int | None:
        for s in self.replay.steps:
            if s.event.tool_call_id == tool_call_id:
                return s.index
        return None


def _args_text(args: Any) -> str:
    if isinstance(args, str):
        return args
    try:
        return json.dumps(args, ensure_ascii=False, indent=1, default=str)
    except (TypeError, ValueError):
        return str(args)


def message_view(m: Message, colour_index: dict[str, int]) -> MessageView:
    role = ROLES.get(m.type, m.type or "message")
    calls = tuple(
        CallView(str(c.get("name") or "?"), _args_text(c.get("args")), str(c.get("id") or ""),
                 call_colour(colour_index.get(str(c.get("id") or ""), 0)))
        for c in m.tool_calls)
    invalid = tuple(
        f"{c.get('name') or '?'}: {c.get('args') or ''} ({c.get('error') or 'invalid'})"
        for c in m.invalid_tool_calls)
    colour = call_colour(colour_index.get(m.tool_call_id, 0)) if m.tool_call_id else None
    return MessageView(_int(m.position), m.key, role, content_text(m.content), calls, invalid,
                       m.tool_call_id, colour, m.status, m.name)


def _int(value: Any) -> int:
    """A stored position as an int (it names CSS classes: never trust the file's type)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _findings(replay: Replay) -> tuple[list[Finding], str | None]:
    try:
        return list(check_run(replay.run)), None
    except Exception as exc:  # noqa: BLE001 - a broken checker must not break the replay
        return [], f"{type(exc).__name__}: {exc}"


def build_run_view(replay: Replay, *, with_findings: bool = True) -> RunView:
    run = replay.run
    colours = colour_indexes(run.messages)
    views = {(m.position, m.seq): message_view(m, colours)
             for m in (*run.messages, *run.revisions)}
    names: dict[str, str] = {}
    for ev in run.events:
        if ev.tool_call_id and isinstance(ev.payload, dict) and ev.payload.get("name"):
            names.setdefault(ev.tool_call_id, str(ev.payload["name"]))
    for m in run.messages:
        for c in m.tool_calls:
            if c.get("id"):
                names.setdefault(str(c["id"]), str(c.get("name") or "tool"))
    kinds = "".join("e" if is_error(s) else KIND_LETTER.get(s.kind, "h") for s in replay.steps)
    view = RunView(replay, views, colours, names, kinds)
    if with_findings:
        view.check()
    return view
