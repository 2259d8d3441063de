"""A run's model calls, decoded once: each call's whole request, how it ended, its tokens.

``model_calls(run)`` reads the run's model-call events in order through the one
decoder of the record's request rule (``tracer.vocab.calls.Requests``: the system
prompt and tools a call's ``enter`` does not repeat) and of its usage
(``tracer.vocab.calls.Usage``), and keeps the result with the run (``Run.view``): the
run opened once is decoded once. Every reader of a call's request or tokens reads
them here: ``looptrace show`` and MCP ``get_step`` (``tracer.interop.show``), the wire
render, the diff, the cassette, the loop checks, the captions and the app's timeline.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from tracer.vocab.calls import CallRequest, Requests, Usage
from tracer.vocab.payloads import ModelExitPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS

from .loader import Run

_ENDS = ("exit", "error", "interrupt")


@dataclass(frozen=True)
class ModelCall:
    """One model call of a run, from its ``enter`` to how it ended.

    Attributes:
        seq: the seq of its ``enter`` event.
        hook: who recorded it: ``"wrap_model_call"`` (the middleware) or ``"model"``.
        lap: the lap it is in.
        request: what it sent besides its messages, whole.
        end_seq: the seq of the event that ended it (None: the record has none).
        ended: ``"exit"`` (it answered), ``"error"``, ``"interrupt"``, or None.
        usage: the tokens its answer reported (nothing reported unless it answered).
        answered_by: the model that answered, when the reply named it.
        duration_ms: how long it took, when it ended.
    """

    seq: int
    hook: str
    lap: int
    request: CallRequest
    end_seq: int | None = None
    ended: str | None = None
    usage: Usage = field(default_factory=Usage)
    answered_by: str | None = None
    duration_ms: float | None = None


def _decode(run: Run) -> tuple[ModelCall, ...]:
    out: list[ModelCall] = []
    requests = Requests()
    open_at: int | None = None  # the index in ``out`` of the call not yet ended
    for ev in run.events:
        if ev.hook not in MODEL_HOOKS:
            continue
        if ev.phase == "enter":
            out.append(ModelCall(ev.seq, ev.hook, ev.lap, requests.read(ev.payload)))
            open_at = len(out) - 1
        elif ev.phase in _ENDS and open_at is not None:
            call = out[open_at]
            answered = None
            usage = Usage()
            if ev.phase == "exit":
                p = read_payload(ModelExitPayload, ev.payload)
                usage = Usage.of(p)
                by = p.get("model")
                answered = by if isinstance(by, str) and by else None
            out[open_at] = ModelCall(call.seq, call.hook, call.lap, call.request, ev.seq,
                                     ev.phase, usage, answered, ev.duration_ms)
            open_at = None
    return tuple(out)


def _by_seq(run: Run) -> dict[int, ModelCall]:
    return {c.seq: c for c in model_calls(run)}


def model_calls(run: Run) -> tuple[ModelCall, ...]:
    """The run's model calls in order, decoded once per run."""
    return run.view(_decode)


def call_at(run: Run, seq: int) -> ModelCall | None:
    """The model call whose ``enter`` event is ``seq``; None when none begins there."""
    return run.view(_by_seq).get(seq)


def call_of(run: Run, seq: int) -> ModelCall | None:
    """The model call an event ``seq`` belongs to: the last one begun at or before it
    (its ``enter``, a ``"sent"`` or a layer's event after it); None before the first."""
    i = bisect.bisect_right(run.view(_seqs), seq)
    return model_calls(run)[i - 1] if i else None


def _seqs(run: Run) -> list[int]:
    return [c.seq for c in model_calls(run)]


@dataclass(frozen=True)
class LapTokens:
    """The tokens the model calls of one lap reported, added up (``Usage``'s rules:
    a count not reported adds 0)."""

    lap: int
    input: int = 0
    output: int = 0
    total: int = 0


def _laps(run: Run) -> dict[int, LapTokens]:
    out: dict[int, LapTokens] = {}
    for c in model_calls(run):
        if c.ended != "exit":
            continue
        u = c.usage
        t = out.get(c.lap, LapTokens(c.lap))
        out[c.lap] = LapTokens(c.lap, t.input + (u.input or 0), t.output + (u.output or 0),
                               t.total + (u.total or 0))
    return out


def tokens_by_lap(run: Run) -> dict[int, LapTokens]:
    """Each lap's tokens (laps whose calls answered), by lap number: what the timeline
    draws, ``token_jumps`` compares and the captions say call by call."""
    return run.view(_laps)


__all__ = ["LapTokens", "ModelCall", "call_at", "call_of", "model_calls", "tokens_by_lap"]
