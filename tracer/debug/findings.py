"""What a ``finding:RULE`` breakpoint asks: the findings of the checks that the record
shows now and did not before, each one once.

A finding is the same finding as the run goes on (``repeated-tool-call`` grows by one
call a lap, its message changes) when it names the same rule and starts at the same
message: ``identity`` is the rule with the key of its first message (else its
``seq``). ``FindingWatch.update`` takes the findings of the record as it is now and
keeps the new ones until a hook firing asks (``take``): a finding pauses the run once,
at the first moment that sees it, however many moments follow.

At a model call's ``after`` moment the record does not hold the reply yet (it is
recorded as the call returns): ``with_reply`` adds it to the loaded run, so that a
finding the reply makes (the third identical tool call) pauses there, before the run
can end or be cut by ``recursion_limit`` ahead of the next tool call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from tracer.db.serialize import message_dict, message_key, search_text

__all__ = ["FindingWatch", "identity", "with_reply"]


def identity(f: Any) -> tuple[str, str | int | None]:
    """One finding as the run goes on: its rule and its first message (else its seq)."""
    keys = getattr(f, "message_keys", ()) or ()
    return (str(f.rule), str(keys[0]) if keys else f.seq)


@dataclass
class FindingWatch:
    """One run's findings: those seen, and the rules of the new ones not yet asked."""

    seen: set[tuple[str, str | int | None]] = field(default_factory=set)
    new: set[str] = field(default_factory=set)

    def update(self, found: Iterable[Any]) -> None:
        for f in found:
            ident = identity(f)
            if ident not in self.seen:
                self.seen.add(ident)
                self.new.add(ident[0])

    def take(self) -> set[str]:
        """The rules of the findings new since the last ``take`` (then none are)."""
        out, self.new = self.new, set()
        return out


def with_reply(run: Any, reply: Any) -> Any:
    """``run`` (a loaded ``tracer.read.loader.Run``) with the model's ``reply`` (an
    ``AIMessage`` not recorded yet) as its last message, as the record will hold it."""
    from tracer.read.loader import Message

    if reply is None:
        return run
    key = message_key(reply)
    if any(m.key == key for m in run.messages):
        return run
    last_seq = max((e.seq for e in run.events), default=0)
    last_pos = max((m.position for m in run.messages), default=-1)
    m = Message(last_pos + 1, last_seq + 1, getattr(reply, "id", None), reply.type, None,
                search_text(reply), message_dict(reply), key)
    return replace(run, messages=[*run.messages, m])
