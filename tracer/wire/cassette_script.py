"""``looptrace proxy --rerun RUN``: serve a recorded run's responses over the wire.

``CassetteScript`` is an emulator script (``tracer.wire.scenarios.Script``) that answers
each request whose conversation matches a recorded model call of the run (or of its
subagent runs) with that call's recorded response, in whatever format the client
speaks (the emulator's: OpenAI chat completions and Responses, Anthropic messages,
Ollama chat; JSON or streamed). A hand-rolled loop on a provider's SDK, with no
LangChain at all, reruns with no upstream. A request that matches nothing is
answered by the fallback script (``echo`` unless ``--emulate`` names another), or, with
``--upstream URL`` (``forward=True``), sent on to that upstream as the recording proxy
sends it (``tracer.wire.proxy.ForwardUpstream``): the fork's live part on a real
provider. Either way the diff to the nearest recorded request is printed and kept
(``misses``).

Requests are compared in the neutral form every format reads into: each message's
role, text and tool calls (name and arguments; ids are not compared), and the system
prompt.
"""

from __future__ import annotations

import difflib
import json
import sys
import threading
from typing import Any

from tracer.read.loader import Message, TraceDB, content_text
from tracer.vocab.terminal import safe_text
from tracer.whatif.cassette import Cassette, ModelCall

from .providers import Msg, Reply, Request, ToolCall
from .proxy import ForwardUpstream
from .scenarios import Script, load_script

_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _args(call: dict[str, Any]) -> dict[str, Any]:
    args = call.get("args")
    return args if isinstance(args, dict) else {}


def _lines_of_msgs(msgs: list[Msg]) -> tuple[str, ...]:
    out = []
    for m in msgs:
        calls = "".join(f" -> {c.name}({_canon(c.args)})" for c in m.tool_calls)
        out.append(f"[{m.role}] {' '.join(m.text.split())}{calls}")
    return tuple(out)


def _lines_of_record(system: str | None, msgs: list[Message]) -> tuple[str, ...]:
    neutral = [Msg("system", system)] if system else []
    for m in msgs:
        if m.type == "system" and system:
            continue
        calls = tuple(ToolCall(str(c.get("id") or ""), str(c.get("name")), _args(c))
                      for c in m.tool_calls)
        neutral.append(Msg(_ROLES.get(m.type, m.type), content_text(m.content), calls))
    return _lines_of_msgs(neutral)


class CassetteScript:
    """An emulator script answering from the record of run ``run_id`` in ``db``."""

    def __init__(self, db: str, run_id: str, fallback: str | Script | None = "echo",
                 *, log: Any = None, forward: bool = False) -> None:
        self.forward = forward
        with TraceDB(db) as tdb:
            self.cassette = Cassette.load(tdb, run_id)
        self.fallback = load_script(fallback or "echo")
        self.calls: list[tuple[tuple[str, ...], ModelCall]] = []
        for rid, calls in self.cassette.model_calls.items():
            replay = self.cassette.replays[rid]
            for c in calls:
                msgs = replay.messages_at(c.index)
                self.calls.append((_lines_of_record(c.request.system, msgs), c))
        self.used: set[int] = set()
        self.served = 0
        self.misses: list[str] = []
        self.lock = threading.Lock()
        self.log = log if log is not None else sys.stderr

    def __call__(self, req: Request) -> Reply:
        lines = _lines_of_msgs(req.messages)
        with self.lock:
            for i, (recorded, call) in enumerate(self.calls):
                if i not in self.used and recorded == lines and call.answered:
                    self.used.add(i)
                    self.served += 1
                    return _reply(call, req)
            left = [r for i, (r, _) in enumerate(self.calls) if i not in self.used]
            nearest = max(left, key=lambda r: difflib.SequenceMatcher(
                None, "\n".join(r), "\n".join(lines)).ratio()) if left else ()
            diff = "\n".join(difflib.unified_diff(list(nearest), list(lines), "recorded",
                                                  "now", lineterm=""))
            self.misses.append(diff)
        by = "forwarded to the upstream" if self.forward else "answered by the fallback script"
        # (the client's text, in the diff, never drives the terminal)
        print(safe_text(f"looptrace proxy --rerun: a request the record does not hold; "
                        f"{by}\n{diff}", keep_newlines=True), file=self.log, flush=True)
        if self.forward:
            raise ForwardUpstream(diff)
        return self.fallback(req)


def _reply(call: ModelCall, req: Request) -> Reply:
    out = call.outcomes[-1].messages
    ai = next((m for m in out if m.get("type") in ("ai", "AIMessageChunk")), None)
    data: dict[str, Any] = (ai or {}).get("data") or {}
    calls = tuple(ToolCall(str(c.get("id") or ""), str(c.get("name")), _args(c))
                  for c in data.get("tool_calls") or [])
    usage = data.get("usage_metadata") or {}
    meta = data.get("response_metadata") or {}
    return Reply(text=content_text(data.get("content")), tool_calls=calls,
                 input_tokens=int(usage.get("input_tokens") or 0),
                 output_tokens=int(usage.get("output_tokens") or 0),
                 model=str(meta.get("model_name") or meta.get("model") or req.model
                           or "replayed"))


def rerun_script(args: Any, usage_error: type[Exception]) -> CassetteScript:
    """The script of ``looptrace proxy --rerun RUN`` (its options checked)."""
    try:
        fallback = load_script(args.emulate or "echo")
    except (ValueError, ImportError, AttributeError) as exc:
        raise usage_error(str(exc)) from None
    with TraceDB(args.db) as tdb:
        run_id = tdb.resolve(args.rerun)
    return CassetteScript(args.db, run_id, fallback, forward=bool(args.upstream))
