"""Compare two runs: align them lap by lap and hook by hook, find the first divergence.

``diff_runs(run_a, run_b)`` aligns the replay steps of two runs (the same
scenario before and after a prompt change, or through two providers) and
reports every difference, with the first one pinned down precisely: the lap,
the step index in each run, a kind and a sentence. Messages are compared by a
readable text form (type, text, tool calls with their arguments, tool status);
ids, timestamps, durations and token counts are ignored, so two recordings of
the same scenario are identical.

Example:
    >>> with TraceDB("looptrace.db") as db:
    ...     d = diff_runs(db.run(a), db.run(b))
    >>> d.first_divergence.kind, d.first_divergence.index_a
    ('different_arguments', 9)

From the command line: ``looptrace diff RUN_A RUN_B``.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tracer.vocab.calls import CallRequest
from tracer.vocab.payloads import ToolEnterPayload, read_payload
from tracer.vocab.records import MODEL_HOOKS, TOOL_HOOKS

from .calls import call_at
from .loader import Message, Run, TraceDB, content_text
from .state_at import STORE_PREFIX, key_label
from .steps import Replay, Step, build_replay, plural

# Divergence kinds, in the order a reader thinks about them.
KINDS: tuple[str, ...] = (
    "input",  # a different user message
    "system_prompt",  # the model got a different system prompt
    "tools",  # the model was offered different tools
    "model",  # a different model answered
    "tool_calls",  # one run asked for tool calls (or more of them) where the other did not
    "different_tool",  # a different tool was called
    "different_arguments",  # the same tool with different arguments
    "different_answer",  # different answer text from the model
    "tool_result",  # a tool returned something else (or another status)
    "state",  # a state key (todos, files, structured_response, a custom key) differs
    "message",  # any other message difference
    "error",  # a different error (or an error on one side only)
    "interrupt",  # the run paused for a human with a different request
    "human_decision",  # the human answered an interrupt differently
    "hook_sequence",  # a hook fired on one side with no counterpart on the other
    "extra_lap",  # a whole lap exists on one side only
    "status",  # the runs ended differently (completed / error / interrupted)
)

# The debugger's own steps (``tracer.debug``: a pause, and how it was answered): not
# behaviour of the agent, so not compared; what an edit changed shows in the steps after.
DEBUGGER_PHASES = frozenset({"pause", "debug"})

# A random id inside a text (Deep Agents names a summary's file after one).
_RANDOM_ID = re.compile(
    r"(?<![0-9a-f])[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}(?![0-9a-f])")

# Differences in how the model was set up rather than in what the run did: reported once
# each (not at every model call), and never the "first divergence".
SETUP_KINDS: tuple[str, ...] = ("system_prompt", "tools", "model")



@dataclass(frozen=True, slots=True)
class Divergence:
    """One difference between the runs, at one aligned pair of steps."""

    lap: int  # the lap it happens in (the lap recorded on the event)
    # 0-based index into run A's replay steps (None: no such step in A); descriptions
    # count steps from 1, as the replay shows them ("Step N / M").
    index_a: int | None
    index_b: int | None
    kind: str  # one of KINDS
    description: str
    detail: str = ""  # a unified diff of the messages involved, when there are any
    key: str = ""  # a "state" divergence: the state key that differs


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the alignment: a step of A next to its counterpart in B."""

    segment: str  # "lap 0" (before the loop), "lap N", or "end"
    index_a: int | None
    index_b: int | None
    same: bool


@dataclass
class LapDiff:
    segment: str
    lap: int
    rows: list[Row]
    differences: list[Divergence]
    message_diff: str  # unified diff of the messages added in this lap ("" when equal)

    @property
    def identical(self) -> bool:
        return not self.differences


@dataclass
class RunDiff:
    """Two runs aligned step by step (``rows``, per lap in ``laps``), every difference
    found, the first divergence and the unified diff of their conversations."""

    a: Replay
    b: Replay
    rows: list[Row]  # the whole alignment, in display order
    laps: list[LapDiff]
    differences: list[Divergence] = field(default_factory=list)
    message_diff: str = ""  # unified diff of the final conversations
    subagents: list[SubagentDiff] = field(default_factory=list)  # filled by diff_tree

    @property
    def first_divergence(self) -> Divergence | None:
        """The first step where the runs behave differently (setup differences aside)."""
        return next((x for x in self.differences if x.kind not in SETUP_KINDS), None)

    @property
    def setup(self) -> list[Divergence]:
        """How the model was set up differently (model, system prompt, tools), each once."""
        return [x for x in self.differences if x.kind in SETUP_KINDS]

    @property
    def identical(self) -> bool:
        return not self.differences and all(sd.identical for sd in self.subagents)

    @property
    def same_behaviour(self) -> bool:
        """The runs behave the same: no difference but in the set-up (model, system
        prompt, tools offered), and the same for every pair of subagent runs. Two
        providers answering the same conversation (other model names, another wire
        format) behave the same when they make the same hooks, tool calls, arguments,
        answers and status; ids, timings, token counts and bodies on the wire are
        never compared. ``looptrace diff`` exits 0 for it."""
        return self.first_divergence is None and not any(
            x.kind == "status" for x in self.differences) and all(
            sd.diff is not None and sd.diff.same_behaviour for sd in self.subagents)

    @property
    def run_level(self) -> list[Divergence]:
        """Differences of the runs as a whole, in no lap (a different final status)."""
        in_laps = [x for ld in self.laps for x in ld.differences]
        return [x for x in self.differences if not any(x is y for y in in_laps)]

    def row_of(self, *, index_a: int | None = None, index_b: int | None = None) -> int:
        """The alignment row holding ``step_a`` (or ``step_b``); 0 if none does."""
        for i, r in enumerate(self.rows):
            if (index_a is not None and r.index_a == index_a) or (
                    index_b is not None and r.index_b == index_b):
                return i
        return 0

    def to_dict(self) -> dict[str, Any]:
        """The diff as JSON (``looptrace diff --json``). Steps are counted from 1 here,
        as in the text and the replay ("Step N / M"); null: no such step on that side."""
        def side(rp: Replay) -> dict[str, Any]:
            s = rp.run.summary
            return {"id": s.id, "name": s.name, "status": s.status, "laps": s.laps,
                    "steps": len(rp.steps)}

        def div(x: Divergence) -> dict[str, Any]:
            # (the JSON counts steps from 1: index_a / index_b are its "step_a" / "step_b")
            out = {_JSON_KEY.get(k, k): _one(v) if k in _JSON_KEY else v
                   for k, v in asdict(x).items()}
            if not x.key:  # (only a state divergence names a key)
                del out["key"]
            return out

        first = self.first_divergence
        return {
            "a": side(self.a), "b": side(self.b), "identical": self.identical,
            "same_behaviour": self.same_behaviour,
            "first_divergence": div(first) if first else None,
            "setup": [div(x) for x in self.setup],
            "laps": [{"segment": ld.segment, "lap": ld.lap,
                      "differences": [div(d) for d in ld.differences],
                      "message_diff": ld.message_diff} for ld in self.laps],
            "alignment": [[_one(r.index_a), _one(r.index_b)] for r in self.rows],
            "message_diff": self.message_diff,
            "subagents": [sd.to_dict() for sd in self.subagents],
        }


@dataclass
class SubagentDiff:
    """The n-th subagent run of A next to the n-th of B (in the order they started)."""

    index: int
    name: str
    a: str | None  # run id (None: B ran a subagent A did not)
    b: str | None
    diff: RunDiff | None  # None when one side has no such subagent

    @property
    def identical(self) -> bool:
        return self.diff is not None and self.diff.identical

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "a": self.a, "b": self.b,
                "diff": self.diff.to_dict() if self.diff else None}


# -- readable forms -----------------------------------------------------------

_JSON_KEY = {"index_a": "step_a", "index_b": "step_b"}


def _one(i: int | None) -> int | None:
    """A 0-based step index counted from 1 (as the replay shows it)."""
    return None if i is None else i + 1


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def message_text(m: Message) -> str:
    """A readable, id-free text form of one message (what the diff compares)."""
    if m.type == "tool":
        status = m.status or "success"
        head = f"[tool {m.name or '?'}{' status=' + status if status != 'success' else ''}]"
    elif m.type == "ai":
        head = "[ai]"
    else:
        head = f"[{m.type}]"
    lines = [head]
    text = content_text(m.content) if m.body else m.text
    if text:
        lines.extend("  " + line for line in text.splitlines() or [""])
    for c in m.tool_calls:
        lines.append(f"  -> {c.get('name', '?')}({_canon(c.get('args', {}))})")
    for c in m.invalid_tool_calls:
        lines.append(f"  -> invalid {c.get('name', '?')}({c.get('args', '')}): {c.get('error', '')}")
    return "\n".join(lines)


def messages_diff(a: list[Message], b: list[Message], label_a: str, label_b: str, *,
                  text: Callable[[Message], str] = message_text) -> str:
    """A unified diff of two message lists in their readable form ("" when equal)."""
    ta = "\n".join(text(m) for m in a).splitlines()
    tb = "\n".join(text(m) for m in b).splitlines()
    if ta == tb:
        return ""
    return "\n".join(difflib.unified_diff(ta, tb, label_a, label_b, lineterm=""))


# -- alignment ----------------------------------------------------------------

def _segment(step: Step) -> tuple[int, str]:
    """Which part of the loop a step belongs to: (order, label)."""
    ev = step.event
    if ev.hook == "after_agent" or (ev.hook == "run" and ev.phase != "start") or (
            ev.hook == "node" and ev.phase == "error"):  # (a failed node ended the run)
        return (1 << 30, "end")
    if ev.hook == "run":
        return (0, "lap 0")
    return (ev.lap, f"lap {ev.lap}")


def _call_order(run: Run) -> dict[str, tuple[int, int]]:
    order: dict[str, tuple[int, int]] = {}
    for m in run.messages:
        for j, c in enumerate(m.tool_calls):
            if c.get("id"):
                order.setdefault(str(c["id"]), (m.position, j))
    return order


def _segments(rp: Replay) -> dict[tuple[int, str], list[Step]]:
    """Steps per segment; parallel tool calls in call order, not completion order."""
    segs: dict[tuple[int, str], list[Step]] = {}
    s: Step | None
    for s in rp.steps:
        if s.event.phase in DEBUGGER_PHASES:  # (a person at a pause: not the agent's doing)
            continue
        segs.setdefault(_segment(s), []).append(s)
    order = _call_order(rp.run)
    for key, steps in segs.items():
        out: list[Step] = []
        block: list[Step] = []
        for s in steps + [None]:
            if s is not None and s.event.hook in TOOL_HOOKS and s.event.tool_call_id:
                block.append(s)
                continue
            if block:
                far = (1 << 30, 0)
                block.sort(key=lambda x: (order.get(x.event.tool_call_id or "", far), x.index))
                out.extend(block)
                block = []
            if s is not None:
                out.append(s)
        segs[key] = out
    return segs


def _tool_blocks(segs: dict[tuple[int, str], list[Step]]) -> dict[int, tuple[int, int, bool]]:
    """For each step of a block of tool-call steps (``_segments`` puts parallel calls in
    call order): the seqs the block spans and whether the step is the block's last in
    that order. Parallel calls finish in any order, so the state between them is
    compared once, over the whole block, at its last step."""
    out: dict[int, tuple[int, int, bool]] = {}
    for steps in segs.values():
        block: list[Step] = []
        for s in [*steps, None]:
            if s is not None and s.event.hook in TOOL_HOOKS and s.event.tool_call_id:
                block.append(s)
                continue
            if block:
                seqs = [x.event.seq for x in block]
                lo, hi = min(seqs), max(seqs)
                for x in block:
                    out[x.index] = (lo, hi, x is block[-1])
                block = []
    return out


def _signature(step: Step) -> tuple[str, str, str]:
    ev = step.event
    # A wrapped call that raised lines up with one that returned: compared, not skipped.
    phase = "exit" if ev.phase == "error" and ev.hook in TOOL_HOOKS | MODEL_HOOKS else ev.phase
    return (ev.hook, phase, ev.middleware or "")


# -- comparing one aligned pair -------------------------------------------------

def _requests(rp: Replay) -> dict[int, CallRequest]:
    """The whole request of each model call, by the step index of its ``enter``."""
    out: dict[int, CallRequest] = {}
    for s in rp.steps:
        if s.event.hook in MODEL_HOOKS and s.event.phase == "enter":
            call = call_at(rp.run, s.event.seq)
            out[s.index] = call.request if call is not None else CallRequest()
    return out


def _short(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _calls(m: Message) -> list[tuple[str, str]]:
    return [(str(c.get("name", "?")), _canon(c.get("args", {}))) for c in m.tool_calls]


def _compare_messages(ma: Message, mb: Message,
                      text: Callable[[Message], str] = message_text) -> tuple[str, str] | None:
    """(kind, description) of how two messages at the same place differ, or None."""
    if text(ma) == text(mb):
        return None
    if ma.type != mb.type:
        return "message", f"A has a {ma.type} message where B has a {mb.type} message"
    if ma.type == "human":
        return "input", (f"different user input: {_short(content_text(ma.content))!r} "
                         f"vs {_short(content_text(mb.content))!r}")
    if ma.type == "tool":
        if (ma.status or "success") != (mb.status or "success"):
            return "tool_result", (f"tool {ma.name or '?'} returned status "
                                   f"{ma.status or 'success'} in A but {mb.status or 'success'}"
                                   " in B")
        return "tool_result", (f"tool {ma.name or '?'} returned "
                               f"{_short(content_text(ma.content))!r} in A but "
                               f"{_short(content_text(mb.content))!r} in B")
    if ma.type == "ai":
        ca, cb = _calls(ma), _calls(mb)
        if len(ca) != len(cb):
            def said(calls: list[tuple[str, str]]) -> str:
                if not calls:
                    return "answered in plain text"
                return f"asked for {len(calls)} tool call{'s' * (len(calls) > 1)} (" + ", ".join(
                    n for n, _ in calls) + ")"
            return "tool_calls", f"the model {said(ca)} in A but {said(cb)} in B"
        for (na, xa), (nb, xb) in zip(ca, cb):
            if na != nb:
                return "different_tool", f"the model called {na} in A but {nb} in B"
        for (na, xa), (_nb, xb) in zip(ca, cb):
            if xa != xb:
                return "different_arguments", (f"the model called {na} with {_short(xa)} in A "
                                               f"but with {_short(xb)} in B")
        return "different_answer", (f"the model answered {_short(content_text(ma.content))!r} "
                                    f"in A but {_short(content_text(mb.content))!r} in B")
    return "message", f"the {ma.type} message differs"


def _memo_text() -> Callable[[Message], str]:
    """``message_text`` memoised for one diff (keyed by object: the runs outlive it)."""
    cache: dict[int, str] = {}

    def text(m: Message) -> str:
        t = cache.get(id(m))
        if t is None:
            t = cache[id(m)] = message_text(m)
        return t

    return text


class _Side:
    def __init__(self, rp: Replay,
                 segs: dict[tuple[int, str], list[Step]] | None = None) -> None:
        self.rp = rp
        self.blocks = _tool_blocks(segs if segs is not None else _segments(rp))
        self.requests = _requests(rp)
        self.by_key = rp.run.message_by_key

    def call_name(self, step: Step) -> str:
        tcid = step.event.tool_call_id
        for m in self.rp.run.messages:
            for c in m.tool_calls:
                if tcid and c.get("id") == tcid:
                    return str(c.get("name", "?"))
        return "?"

    def new_messages(self, step: Step) -> list[Message]:
        return [self.by_key[k] for k in step.new_keys if k in self.by_key]


def _compare_pair(a: _Side, b: _Side, sa: Step, sb: Step,
                  text: Callable[[Message], str] = message_text) -> list[tuple[str, ...]]:
    """Every (kind, description, detail) difference between two aligned steps."""
    out: list[tuple[str, ...]] = []
    ea, eb = sa.event, sb.event
    pa = ea.payload if isinstance(ea.payload, dict) else {}
    pb = eb.payload if isinstance(eb.payload, dict) else {}
    if ea.phase != eb.phase and "error" in (ea.phase, eb.phase):
        bad, good = ("A", "B") if ea.phase == "error" else ("B", "A")
        err = (pa if ea.phase == "error" else pb).get("error")
        what = "the model call"
        if ea.hook in TOOL_HOOKS:
            what = f"tool call {(a if bad == 'A' else b).call_name(sa if bad == 'A' else sb)}"
        desc = f"{what} raised {_short(str(err))!r} in {bad} but returned in {good}"
        out.append(("error", desc, ""))
        return out  # the missing result and status follow from the error
    elif ea.phase == "error" and pa.get("error") != pb.get("error"):
        out.append(("error", (f"{ea.hook} raised {_short(str(pa.get('error')))!r} in A but "
                             f"{_short(str(pb.get('error')))!r} in B"), ""))
    if ea.phase == "interrupt":
        va = [i.get("value") for i in pa.get("interrupts") or [] if isinstance(i, dict)]
        vb = [i.get("value") for i in pb.get("interrupts") or [] if isinstance(i, dict)]
        if _canon(va) != _canon(vb):
            out.append(("interrupt", (f"the run paused asking {_short(_canon(va))} in A but "
                                     f"{_short(_canon(vb))} in B"), ""))
    if ea.hook == "resume" and _canon(pa.get("resume")) != _canon(pb.get("resume")):
        out.append(("human_decision", (f"the human answered {_short(_canon(pa.get('resume')))} "
                                      f"in A but {_short(_canon(pb.get('resume')))} in B"), ""))
    if ea.hook in MODEL_HOOKS and ea.phase == "enter":
        ra = a.requests.get(sa.index, CallRequest())
        rb = b.requests.get(sb.index, CallRequest())
        sys_a, sys_b = ra.system, rb.system
        if sys_a != sys_b:
            detail = "\n".join(difflib.unified_diff(
                (sys_a or "").splitlines(), (sys_b or "").splitlines(), "A system prompt",
                "B system prompt", lineterm=""))
            out.append(("system_prompt", "the model got a different system prompt", detail))
        ta, tb = ra.tool_names, rb.tool_names
        if ta is not None and tb is not None and sorted(ta) != sorted(tb):
            out.append(("tools", f"the model was offered tools {ta} in A but {tb} in B", ""))
        if ra.model and rb.model and ra.model != rb.model:
            out.append(("model", f"model {ra.model} in A but {rb.model} in B", ""))
        if "message_keys" in pa or "message_keys" in pb:
            # a request rewritten on its way to the tracer (not the state): compare what
            # the model was sent (a random id in a text, such as a summary's file, aside)
            def sent(m: Message) -> str:
                return _RANDOM_ID.sub("<id>", text(m))

            detail = messages_diff(a.rp.messages_at(sa.index), b.rp.messages_at(sb.index),
                                   "A", "B", text=sent)
            if detail:
                out.append(("message", "the model was sent different messages", detail))
    ma, mb = a.new_messages(sa), b.new_messages(sb)
    for x, y in zip(ma, mb):
        found = _compare_messages(x, y, text)
        if found:
            detail = messages_diff([x], [y], "A", "B", text=text)
            out.append((found[0], found[1], detail))
    if len(ma) != len(mb):
        more, side = (ma, "A") if len(ma) > len(mb) else (mb, "B")
        extra = more[min(len(ma), len(mb)):]
        detail = messages_diff(ma, mb, "A", "B", text=text)
        kind = {"tool": "tool_result", "human": "input", "ai": "different_answer"}.get(
            extra[0].type, "message")
        what = (f"a {extra[0].type} message" if len(extra) == 1 else
                f"{len(extra)} more messages ({extra[0].type} first)")
        out.append((kind, f"{side} adds {what} here: {_short(text(extra[0]))!r}", detail))
    if ea.hook in TOOL_HOOKS and ea.phase == "enter":
        if pa.get("name") != pb.get("name"):
            out.append(("different_tool", (f"tool {pa.get('name')} runs in A but "
                                          f"{pb.get('name')} in B"), ""))
        elif _canon(pa.get("args")) != _canon(pb.get("args")):
            out.append(("different_arguments",
                        (f"tool {pa.get('name')} runs with {_short(_canon(pa.get('args')))} in A"
                        f" but with {_short(_canon(pb.get('args')))} in B"), ""))
    if (ea.hook in TOOL_HOOKS and ea.phase == "exit" and pa.get("status") != pb.get("status")
            and not any(f[0] == "tool_result" for f in out)):
        out.append(("tool_result", (f"tool call ended with status {pa.get('status')} in A "
                                       f"but {pb.get('status')} in B"), ""))
    block_a, block_b = a.blocks.get(sa.index), b.blocks.get(sb.index)
    if block_a and block_b:  # (tool calls: the state once, over the whole block)
        if block_a[2] and block_b[2]:
            out += _state_pair(a.rp, b.rp, block_a[1], block_b[1],
                               since=(block_a[0] - 1, block_b[0] - 1))
    else:
        out += _state_pair(a.rp, b.rp, ea.seq, eb.seq)
    return out


# A time inside a state value (Deep Agents stamps each file's created_at / modified_at).
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


def _state_text(value: Any) -> str:
    """A state value as the diff compares it: random ids and times aside, as elsewhere."""
    text = json.dumps(value, indent=1, sort_keys=True, default=str)
    return _TIME.sub("<time>", _RANDOM_ID.sub("<id>", text))


def _state_pair(ra: Replay, rb: Replay, seq_a: int, seq_b: int,
                since: tuple[int, int] | None = None) -> list[tuple[str, ...]]:
    """The state keys that changed at either of two aligned steps (or, with ``since``,
    after those seqs and up to the steps) and hold other values there
    (``tracer.read.state_at``): one difference per key, with a diff of the values."""
    la, lb = ra.run.state, rb.run.state
    if not la and not lb:
        return []
    if since is None:
        keys = {v.key for v in la.changed_at(seq_a)} | {v.key for v in lb.changed_at(seq_b)}
    else:
        keys = ({v.key for v in la.between(since[0], seq_a)}
                | {v.key for v in lb.between(since[1], seq_b)})
    keys = {k for k in keys if not k.startswith("@") or k.startswith(STORE_PREFIX)}
    if not keys:
        return []
    va, vb = la.compared_at(seq_a), lb.compared_at(seq_b)
    out: list[tuple[str, ...]] = []
    for key in sorted(keys):
        ta = _state_text(va[key]) if key in va else None
        tb = _state_text(vb[key]) if key in vb else None
        if ta == tb:
            continue
        if ta is None or tb is None:
            side = "A" if tb is None else "B"
            desc = f"{key_label(key)} is set in {side} only: {_short(ta or tb or '', 60)!r}"
        else:
            desc = (f"{key_label(key)} is {_short(ta.replace(chr(10), ' '), 60)!r} in A but "
                    f"{_short(tb.replace(chr(10), ' '), 60)!r} in B")
        detail = "\n".join(difflib.unified_diff((ta or "").splitlines(), (tb or "").splitlines(),
                                                f"A {key}", f"B {key}", lineterm=""))
        out.append(("state", desc, detail, key))
    return out


def _idx(i: int | None) -> str:
    """A step as the replay shows it: counted from 1."""
    return "-" if i is None else str(i + 1)


def _describe_step(step: Step) -> str:
    ev = step.event
    what = f"{ev.hook} {ev.phase}"
    name = read_payload(ToolEnterPayload, ev.payload).get("name")
    if ev.hook in TOOL_HOOKS and name:
        what += f" ({name})"
    return what


# -- the diff -----------------------------------------------------------------

def diff_runs(run_a: Run, run_b: Run) -> RunDiff:
    """Align two runs lap by lap and hook by hook and list every difference."""
    ra, rb = build_replay(run_a), build_replay(run_b)
    return diff_replays(ra, rb)


def diff_replays(ra: Replay, rb: Replay) -> RunDiff:
    sa, sb = _segments(ra), _segments(rb)
    a, b = _Side(ra, sa), _Side(rb, sb)
    text = _memo_text()
    rows: list[Row] = []
    laps: list[LapDiff] = []
    differences: list[Divergence] = []
    setup_seen: set[tuple[str, str]] = set()
    for key in sorted(set(sa) | set(sb)):
        _order, label = key
        steps_a, steps_b = sa.get(key, []), sb.get(key, [])
        lap_rows: list[Row] = []
        lap_diffs: list[Divergence] = []
        lap_no = (steps_a or steps_b)[0].event.lap

        def add(x: Step | None, y: Step | None, found: Sequence[tuple[str, ...]],
                same: bool | None = None, lap_rows: list[Row] = lap_rows,
                lap_diffs: list[Divergence] = lap_diffs, label: str = label) -> None:
            ia, ib = (x.index if x else None), (y.index if y else None)
            lap_rows.append(Row(label, ia, ib, not found if same is None else same))
            lap = (x or y).event.lap  # type: ignore[union-attr]
            for f in found:
                kind, desc, detail = f[0], f[1], f[2]
                if kind in SETUP_KINDS:
                    if (kind, desc + detail) in setup_seen:
                        continue
                    setup_seen.add((kind, desc + detail))
                where = f"{label}, step {_idx(ia)} (A) / {_idx(ib)} (B)"
                lap_diffs.append(Divergence(lap, ia, ib, kind, f"{where}: {desc}", detail,
                                            f[3] if len(f) > 3 else ""))

        if not steps_a or not steps_b:
            present, absent = ("A", "B") if steps_a else ("B", "A")
            other = (rb if steps_a else ra).run.summary.laps
            status = (rb if steps_a else ra).run.summary.status
            for i, s in enumerate(steps_a or steps_b):
                if i:
                    found = []
                elif label == "end":
                    found = [("status", (f"the loop ends with after_agent in {present} only "
                                        f"({absent} ended {status})"), "")]
                else:
                    found = [("extra_lap", (f"{label} exists only in {present} ({absent} has "
                                           f"{plural(other, 'lap')})"), "")]
                add(s if steps_a else None, None if steps_a else s, found, same=False)
        elif label == "end" and ra.run.summary.status != rb.run.summary.status:
            # The runs ended differently: one difference, not one per step of their ends.
            st_a, st_b = ra.run.summary.status, rb.run.summary.status
            for i, (x, y) in enumerate(itertools.zip_longest(steps_a, steps_b)):
                found = [("status", f"the run ends otherwise: A ended {st_a}, B ended {st_b}",
                          "")] if i == 0 else []
                add(x, y, found, same=False)
        else:
            sm = difflib.SequenceMatcher(a=[_signature(s) for s in steps_a],
                                         b=[_signature(s) for s in steps_b], autojunk=False)
            for op, i1, i2, j1, j2 in sm.get_opcodes():
                if op == "equal":
                    for x, y in zip(steps_a[i1:i2], steps_b[j1:j2]):
                        add(x, y, _compare_pair(a, b, x, y, text))
                    continue
                for x in steps_a[i1:i2]:
                    add(x, None, [("hook_sequence", (f"{_describe_step(x)} fires in A with no "
                                                    "counterpart in B"), "")])
                for y in steps_b[j1:j2]:
                    add(None, y, [("hook_sequence", (f"{_describe_step(y)} fires in B with no "
                                                    "counterpart in A"), "")])
        msgs_a = [m for s in steps_a for m in a.new_messages(s)]
        msgs_b = [m for s in steps_b for m in b.new_messages(s)]
        md = messages_diff(msgs_a, msgs_b, f"A {ra.run.id[:12]} {label}",
                           f"B {rb.run.id[:12]} {label}", text=text)
        if md and not lap_diffs:
            # Same messages in another order, e.g. parallel results arriving differently.
            lap_diffs.append(Divergence(lap_no, None, None, "message",
                                        f"{label}: the messages differ", md))
        rows.extend(lap_rows)
        laps.append(LapDiff(label, lap_no, lap_rows, lap_diffs, md))
        differences.extend(lap_diffs)
    st_a, st_b = ra.run.summary.status, rb.run.summary.status
    if st_a != st_b and not any(x.kind == "status" for x in differences):
        last_a = len(ra.steps) - 1 if ra.steps else None
        last_b = len(rb.steps) - 1 if rb.steps else None
        differences.append(Divergence(
            max(ra.run.summary.laps, rb.run.summary.laps), last_a, last_b, "status",
            f"run ended {st_a} in A but {st_b} in B"))
    final_a = ra.messages_at(len(ra.steps) - 1)
    final_b = rb.messages_at(len(rb.steps) - 1)
    md = messages_diff(final_a, final_b, f"A {ra.run.id[:12]}", f"B {rb.run.id[:12]}",
                       text=text)
    return RunDiff(ra, rb, rows, laps, differences, md)


# -- subagents and text -------------------------------------------------------

def diff_tree(db_a: TraceDB, run_a: str, db_b: TraceDB, run_b: str, *,
              _above: frozenset[tuple[str, str]] = frozenset()) -> RunDiff:
    """``diff_runs`` of two runs, plus their subagent runs paired in starting order.

    A subagent run that is also above its own side's run (parents in a cycle, written
    by other means than ``import``, which refuses them) is not walked again."""
    d = diff_runs(db_a.run(run_a), db_b.run(run_b))
    above = _above | {(run_a, run_b)}
    kids_a = [k for k in d.a.run.children if k.id not in {a for a, _ in above}]
    kids_b = [k for k in d.b.run.children if k.id not in {b for _, b in above}]
    for i in range(max(len(kids_a), len(kids_b))):
        ka = kids_a[i] if i < len(kids_a) else None
        kb = kids_b[i] if i < len(kids_b) else None
        name = (ka or kb).name or (ka or kb).agent_name or "subagent"  # type: ignore[union-attr]
        sub = diff_tree(db_a, ka.id, db_b, kb.id, _above=above) if ka and kb else None
        d.subagents.append(SubagentDiff(i + 1, name, ka.id if ka else None,
                                        kb.id if kb else None, sub))
    return d


def format_text(d: RunDiff, indent: str = "") -> str:
    """The diff as ``looptrace diff`` prints it: both runs, the setup differences, the
    first divergence, every difference per lap, the message diff, then each pair of
    subagent runs, four spaces deeper; every line is indented by ``indent``."""
    text = _format(d)
    for sd in d.subagents:
        head = f"subagent #{sd.index} {sd.name}"
        if sd.diff is None:
            side = "A" if sd.a else "B"
            text += f"\n\n{head}: only in {side} ({sd.a or sd.b})"
        elif sd.identical:
            text += f"\n\n{head}: identical ({sd.a} / {sd.b})"
        else:
            text += f"\n\n{head}:\n" + format_text(sd.diff, indent + "    ")
    return "\n".join(indent + line if line else line for line in text.splitlines())


def _format(d: RunDiff) -> str:
    lines = []
    for tag, rp in (("A", d.a), ("B", d.b)):
        s = rp.run.summary
        lines.append(f"{tag}: {s.id}  {s.name or ''}  {s.status}, {plural(s.laps, 'lap')}, "
                     f"{plural(len(rp.steps), 'step')}")
    if d.identical:
        lines.append("identical: same hooks, tool calls, arguments, answers and status")
        return "\n".join(lines)
    for x in d.setup:
        lines.append("")
        lines.append(f"setup ({x.kind}): {x.description}")
        if x.detail:
            lines.append(x.detail)
    first = d.first_divergence
    lines.append("")
    if d.same_behaviour:
        lines.append("same behaviour: the same hooks, tool calls, arguments, answers and status"
                     " (set up differently, as above)")
        return "\n".join(lines)
    if first is None:
        lines.append("different behaviour:")
    else:
        lines.append(f"first divergence ({first.kind}): {first.description}")
        if first.detail:
            lines.append(first.detail)
    for x in d.differences:
        if x.kind == "status" and not any(x in ld.differences for ld in d.laps):
            lines.append("")
            lines.append(f"status: {x.description}")
    for ld in d.laps:
        rest = [x for x in ld.differences if x.kind not in SETUP_KINDS]
        if not rest:
            continue
        lines.append("")
        lines.append(f"{ld.segment}: {len(rest)} difference{'s' * (len(rest) > 1)}")
        for x in rest:
            lines.append(f"  - [{x.kind}] {x.description}")
    if d.message_diff:
        lines.append("")
        lines.append(d.message_diff)
    return "\n".join(lines)


__all__ = [
    "KINDS",
    "SETUP_KINDS",
    "Divergence",
    "LapDiff",
    "Row",
    "RunDiff",
    "SubagentDiff",
    "diff_replays",
    "diff_runs",
    "diff_tree",
    "format_text",
    "message_text",
    "messages_diff",
]
