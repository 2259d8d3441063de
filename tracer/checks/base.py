"""Records shared by every check: findings, thresholds, and each model call's input.

``model_inputs(run)`` rebuilds, for every model call of a run, the message list
the model received: the replay's conversation at that step, or the exact keys
a middleware recorded when it rewrote the request (``message_keys``, with any
message that only lived in the request carried inline), less the recorded
messages the callback handler saw left out of the request (``omitted_keys``).
Each message is reduced to a ``ProtocolMessage``: the little a protocol rule needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tracer.errors import InvalidOption
from tracer.read.calls import call_at
from tracer.read.loader import Message, Run
from tracer.read.steps import Replay, build_replay
from tracer.vocab.payloads import LayerPayload, ModelEnterPayload, read_payload
from tracer.vocab.provider_names import PROVIDERS
from tracer.vocab.records import MODEL_HOOKS

__all__ = [
    "PROVIDERS",
    "SEVERITIES",
    "Call",
    "Finding",
    "ModelInput",
    "ProtocolMessage",
    "Thresholds",
    "exit_seqs",
    "health",
    "is_empty_content",
    "model_inputs",
    "own_messages",
    "turn_of",
]

SEVERITIES: tuple[str, ...] = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    """One problem found in a run, with where to look.

    ``rule`` is a stable id (see ``tracer.checks.run.RULES``); ``provider`` names the
    provider whose rule it is, or is None when it applies to all; ``seq`` is the
    event to jump to (for a protocol rule, the model call that would be
    rejected); ``message_keys`` are ``Message.key`` of the messages involved.
    """

    rule: str
    severity: str  # "error" | "warning" | "info"
    provider: str | None  # "openai" | "anthropic" | "ollama" | None (all)
    message: str
    run_id: str
    seq: int | None
    message_keys: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "provider": self.provider,
                "message": self.message, "run_id": self.run_id, "seq": self.seq,
                "message_keys": list(self.message_keys)}


def health(found: Iterable[Finding] | Mapping[str, int]) -> str:
    """A run's health in words: each severity found with its count, the worst first
    (a warning is not hidden behind an error), or ``"ok"``.

    The one health function: ``looptrace check``, ``looptrace show``, the Runs page's
    badge and the replay page's findings pane all say it this way.

    Args:
        found: the run's findings, or their counts by severity (as kept in
            ``run_checks``).

    Returns:
        ``"1 error"``, ``"1 error, 1 warning"``, ``"2 warnings, 1 info"`` ... or
        ``"ok"``.
    """
    if isinstance(found, Mapping):
        counts = found
    else:
        counts = {}
        for f in found:
            counts[f.severity] = counts.get(f.severity, 0) + 1
    said = [f"{n} {sev}{'' if n == 1 else 's'}"
            for sev in SEVERITIES if (n := counts.get(sev, 0))]
    return ", ".join(said) or "ok"


def health_class(found: Iterable[Finding]) -> str:
    """The class of a run's health the runs list filters by: its worst severity
    (``error``, ``warning``, ``info``), or ``ok``."""
    worst = {f.severity for f in found}
    return next((sev for sev in SEVERITIES if sev in worst), "ok")


@dataclass(frozen=True)
class Thresholds:
    """When a pattern across a run becomes a loop finding.

    Defaults:
        repeat_calls = 3: the same tool with the same or nearly the same
            arguments asked for this many times is a ``repeated-tool-call``.
        near_args_ratio = 0.9 and near_min_chars = 12: two calls of a tool
            count as "nearly the same" when their arguments have the same keys
            and every value is equal once normalised (strings lower-cased,
            whitespace collapsed), or is a string of at least
            ``near_min_chars`` characters whose difflib similarity ratio to
            the other is at least ``near_args_ratio`` (a re-worded query; short
            values such as ids or city names must match exactly).
        repeat_errors = 3: a tool failing (error result or exception) this many
            times in a row is a ``repeated-tool-error``.
        repeat_empty = 3: a tool returning an empty result ("", [], {}, null)
            this many times in a row is a ``repeated-empty-result``.
        token_jump_ratio = 3.0 and token_jump_min = 1000: a lap whose total
            tokens are at least ``token_jump_ratio`` times the previous lap's and
            at least ``token_jump_min`` more is a ``token-jump``.
    """

    repeat_calls: int = 3
    near_args_ratio: float = 0.9
    near_min_chars: int = 12
    repeat_errors: int = 3
    repeat_empty: int = 3
    token_jump_ratio: float = 3.0
    token_jump_min: int = 1000

    def __post_init__(self) -> None:
        for name in ("repeat_calls", "repeat_errors", "repeat_empty"):
            if int(getattr(self, name)) < 2:
                msg = f"Thresholds.{name} must be at least 2"
                raise InvalidOption(msg)
        if not 0.0 < self.near_args_ratio <= 1.0:
            msg = "Thresholds.near_args_ratio must be in (0, 1]"
            raise ValueError(msg)


@dataclass(frozen=True)
class Call:
    id: str | None
    name: str
    valid: bool  # False for an invalid tool call (unparseable arguments)


@dataclass(frozen=True)
class ProtocolMessage:
    """One message as a protocol rule sees it."""

    key: str
    role: str  # "user" | "assistant" | "tool" | "system" | "other"
    calls: tuple[Call, ...] = ()
    tool_call_id: str | None = None
    empty: bool = False  # an assistant message with no text and no tool calls


@dataclass
class ModelInput:
    """What one model call received: its ``enter`` event, the conversation (as ``ProtocolMessage``s),
    whether a system prompt came with it and the tools offered.

    (The request itself, in LangChain terms, is ``tracer.wire.render.ModelCall``.)"""

    seq: int
    index: int  # its ``enter`` step's index in the run's replay (0-based)
    turns: list[ProtocolMessage]
    has_system_prompt: bool
    offered: frozenset[str] | None  # tool names offered, None when never recorded
    reply_keys: tuple[str, ...] = field(default_factory=tuple)
    # when the request was changed after the call's ``enter`` (a debugger's edit, a layer
    # inside the tracer): the seq of the event that first shows what was sent, and the
    # conversation as it was at the ``enter``. A finding true only of what was sent
    # points there (issue 47 untrue 4)
    sent_seq: int | None = None
    entered: list[ProtocolMessage] | None = None


_ROLE = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system",
         "AIMessageChunk": "assistant", "HumanMessageChunk": "user",
         "ToolMessageChunk": "tool", "SystemMessageChunk": "system"}


def is_empty_content(content: Any) -> bool:
    """Whether a message's content says nothing: None, blank text, or a list of
    blocks that are all blank strings or blank text blocks (any other block, an
    image or a tool call, counts as something). Recorded messages and captured
    provider bodies (``checks.wire``) are judged by this one rule."""
    if content is None:
        return True
    if isinstance(content, str):
        return not content.strip()
    if isinstance(content, list):
        for block in content:
            if isinstance(block, str) and block.strip():
                return False
            if isinstance(block, dict):
                if block.get("type") == "text" and not str(block.get("text") or "").strip():
                    continue
                return False
        return True
    return False


def turn_of(m: Message) -> ProtocolMessage:
    role = _ROLE.get(m.type, "other")
    calls: list[Call] = []
    for c in m.tool_calls:
        calls.append(Call(c.get("id") or None, str(c.get("name") or "?"), True))
    for c in m.invalid_tool_calls:
        calls.append(Call(c.get("id") or None, str(c.get("name") or "?"), False))
    empty = role == "assistant" and not calls and is_empty_content(m.content)
    return ProtocolMessage(m.key, role, tuple(calls), m.tool_call_id if role == "tool" else None, empty)


class _Turns:
    """Each message's ``ProtocolMessage``, made once; and a model call's list of turns made from
    the previous call's when its messages extend them (a loop sends the history
    again with a few messages more), so that a run's calls cost its length, not its
    square. (The messages a replay hands out are the run's own objects; any other, a
    request's inline message, gets its ProtocolMessage on the way.)"""

    def __init__(self, run: Run) -> None:
        self.keep: list[Message] = [*run.messages, *run.revisions]  # (ids stay unique)
        self.by_id: dict[int, ProtocolMessage] = {id(m): turn_of(m) for m in self.keep}
        self.last: tuple[list[Message], list[ProtocolMessage]] = ([], [])

    def of(self, messages: list[Message]) -> list[ProtocolMessage]:
        before, turns = self.last
        n = len(before)
        if n and len(messages) >= n and messages[:n] == before:
            # (shares the previous list's ProtocolMessage objects: comparing the two is cheap)
            out = turns + self._of(messages[n:])
        else:
            out = self._of(messages)
        self.last = (messages, out)
        return out

    def _of(self, messages: list[Message]) -> list[ProtocolMessage]:
        try:
            return list(map(self.by_id.__getitem__, map(id, messages)))
        except KeyError:
            out = []
            for m in messages:
                t = self.by_id.get(id(m))
                if t is None:
                    self.keep.append(m)
                    t = self.by_id[id(m)] = turn_of(m)
                out.append(t)
            return out


def model_inputs(run: Run, replay: Replay | None = None) -> list[ModelInput]:
    """Every model call of ``run`` with the conversation it received, in order
    (``replay``: the run's, if already built)."""
    replay = replay or build_replay(run)
    out: list[ModelInput] = []
    offered: frozenset[str] | None = None
    has_system = False
    exits = exit_seqs(run)
    by_seq = run.messages_by_seq
    omitted: frozenset[str] = frozenset()
    turns_of = _Turns(run).of
    for step in replay.steps:
        ev = step.event
        if ev.hook not in MODEL_HOOKS:
            continue
        later_view = ev.phase == "sent" or (ev.phase == "layer" and isinstance(
            read_payload(LayerPayload, ev.payload).get("message_keys"), list))
        if later_view and out:
            # what the model finally received, after the layers inside the tracer
            last = out[-1]
            turns = turns_of(replay.messages_at(step.index))
            changed = turns != last.turns
            entered = last.entered if last.entered is not None else last.turns
            out[-1] = ModelInput(last.seq, last.index, turns, last.has_system_prompt,
                                 last.offered, last.reply_keys,
                                 ev.seq if changed else last.sent_seq,
                                 entered if changed else last.entered)
            continue
        if ev.phase != "enter":
            continue
        p = read_payload(ModelEnterPayload, ev.payload)
        call = call_at(run, ev.seq)
        if call is not None and call.request.tool_names is not None:
            offered = frozenset(n for n in call.request.tool_names if n)
        if call is not None and call.request.system:
            has_system = True
        if isinstance(p.get("omitted_keys"), list):
            omitted = frozenset(str(k) for k in p["omitted_keys"])
        if isinstance(p.get("message_keys"), list):
            messages = replay.sent_at(ev)
        elif omitted:
            messages = [m for m in replay.messages_at(step.index) if m.key not in omitted]
        else:
            messages = replay.messages_at(step.index)
        replies = tuple(m.key for m in by_seq.get(exits.get(ev.seq, -1), ()))
        out.append(ModelInput(ev.seq, step.index, turns_of(messages), has_system, offered,
                             replies))
    return out


def exit_seqs(run: Run) -> dict[int, int]:
    """Model-call enter seq -> the seq of its exit (or error) event."""
    out: dict[int, int] = {}
    pending: int | None = None
    for ev in run.events:
        if ev.hook in MODEL_HOOKS and ev.phase == "enter":
            pending = ev.seq
        elif ev.hook in MODEL_HOOKS and ev.phase in ("exit", "error") and pending is not None:
            out[pending] = ev.seq
            pending = None
    return out


def own_messages(run: Run) -> list[Message]:
    """The messages of ``run``'s own laps: those that first appeared after its first
    model call began. A turn of a thread starts with the earlier turns' messages
    (recorded at its first step, at the latest with its first model call): they are
    context, not evidence of what this run did, and the loop findings
    (``tracer.checks.loops``) do not count them. A run without a model call keeps
    them all (nothing tells them apart)."""
    first = next((ev.seq for ev in run.events
                  if ev.hook in MODEL_HOOKS and ev.phase == "enter"), None)
    if first is None:
        return list(run.messages)
    return [m for m in run.messages if m.seq > first]
