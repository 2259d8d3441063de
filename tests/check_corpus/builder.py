"""Turn a compact case description (a JSON file in this folder) into a real trace.

A case lists the steps of a run; the builder writes them as a looptrace trace
file (the JSONL of ``looptrace export``), imports it with
``tracer.interop.exchange.import_trace`` and the test checks the imported run. This is
how histories no real agent produces (a result before its call, a duplicate
result ...) get into a database.

Steps (one key each):
  {"human": "text"}                    a user message
  {"system": "text"}                   a system message inside the conversation
  {"model": {opts}}                    a model call (wrap_model_call enter); opts:
        "tools": ["name", ...]         tools offered (OpenAI-format schemas)
        "system": "prompt"             the system prompt sent with it
        "message_keys": [...]          what a middleware actually sent
        "inline": [{"human": "..."}]   messages only that request carried
        "omitted_keys": [...]          recorded messages the call did not get
  {"ai": {"text": "...", "calls": [[name, args, id]], "invalid": [[name, "raw", id]],
          "tokens": N, "id": "..."}}   the model's reply (wrap_model_call exit)
  {"tool": {"id": "c1", "content": "...", "status": "success"|"error",
            "name": "...", "known": false, "raise": "Error text"}}
                                       a tool call and its ToolMessage (or, with
                                       "raise", an error event and no message)
  {"history": ["key", ...]}            the history rewritten to these keys
  {"jump_end": "Middleware"}           a node hook jumping to the end
  {"note": "text"}                     an AI message not made by the model
  {"run_error": "text"}                the run failed with this error
  {"result": {"id": "c1", "content": ""}}  a result the loop sent without a tool event
  {"state": {"values": {"key": value}, "by": "tools", "call": "c1"}}
                                       state keys changed at the last event (``state``
                                       rows and their values; ``null`` in ``values``: the
                                       key left the state)
  {"hook": {"middleware": "M", "hook": "after_model", "update_keys": [...],
            "jump_to": "end"}}         another middleware's node hook (as callbacks
                                       record it)
  {"wire": {"provider": "openai", "body": {...}}}
                                       the HTTP request body captured for the
                                       last model call (a ``wire`` row)

A case's ``"run"`` sets the run row: ``status``, ``error`` and ``provider`` (default
"corpus"; "ollama" for the cases of Ollama's own findings).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from tracer.db.serialize import message_dict, search_text
from tracer.db.state_rows import value_hash
from tracer.interop.exchange import import_trace
from tracer.read.loader import Run, TraceDB

CORPUS = Path(__file__).resolve().parent


def cases() -> list[Path]:
    return sorted(CORPUS.glob("*.json"))


def load_case(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _schema(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": f"{name} tool",
        "parameters": {"type": "object", "properties": {}}}}


class _Trace:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.seq = 0
        self.lap = 0
        self.conv: list[str] = []
        self.rows: list[dict[str, Any]] = []
        self.ts = 1_700_000_000.0

    def event(self, hook: str, phase: str, payload: Any = None, *, tool_call_id: str | None = None,
              middleware: str | None = "TraceMiddleware") -> int:
        seq = self.seq
        self.seq += 1
        self.ts += 0.01
        self.rows.append({"table": "events", "row": {
            "run_id": self.run_id, "seq": seq, "ts": self.ts, "hook": hook, "phase": phase,
            "duration_ms": 1.0 if phase in ("exit", "error") else None, "middleware": middleware,
            "lap": self.lap, "tool_call_id": tool_call_id, "task": None,
            "payload": None if payload is None else json.dumps(payload)}})
        return seq

    def message(self, seq: int, m: Any) -> str:
        key = "t:" + m.tool_call_id if isinstance(m, ToolMessage) else str(m.id)
        self.rows.append({"table": "messages", "row": {
            "run_id": self.run_id, "position": len(self.conv), "seq": seq, "msg_id": m.id,
            "type": m.type, "tool_call_id": getattr(m, "tool_call_id", None),
            "text": search_text(m), "data": json.dumps(message_dict(m))}})
        self.conv.append(key)
        return key


def _inline(spec: dict[str, Any], n: int) -> Any:
    if "human" in spec:
        return HumanMessage(spec["human"], id=spec.get("id", f"inline{n}"))
    if "system" in spec:
        return SystemMessage(spec["system"], id=spec.get("id", f"inline{n}"))
    msg = f"unsupported inline message {spec}"
    raise ValueError(msg)


def build_trace(case: dict[str, Any], out: Path) -> Path:
    """Write ``case`` as a trace file at ``out``."""
    run_id = case.get("run_id") or ("case-" + case["name"])
    t = _Trace(run_id)
    t.event("run", "start", {"name": case["name"]}, middleware=None)
    n = 0
    for step in case["steps"]:
        (kind, spec), = step.items()
        n += 1
        if kind == "human":
            seq = t.event("before_model", "fire")
            t.message(seq, HumanMessage(spec, id=f"h{n}"))
        elif kind == "system":
            seq = t.event("before_model", "fire")
            t.message(seq, SystemMessage(spec, id=f"s{n}"))
        elif kind == "model":
            t.lap += 1
            payload: dict[str, Any] = {"messages": len(t.conv), "model": "corpus-model"}
            if "tools" in spec:
                payload["tools"] = [_schema(x) for x in spec["tools"]]
            if "system" in spec:
                payload["system"] = spec["system"]
            if "message_keys" in spec:
                payload["message_keys"] = spec["message_keys"]
                payload["messages"] = len(spec["message_keys"])
            if "inline" in spec:
                payload["inline_messages"] = [message_dict(_inline(x, i))
                                              for i, x in enumerate(spec["inline"])]
            if "omitted_keys" in spec:
                payload["omitted_keys"] = spec["omitted_keys"]
            t.event("wrap_model_call", "enter", payload)
        elif kind == "ai":
            calls = [{"name": c[0], "args": c[1], "id": c[2], "type": "tool_call"}
                     for c in spec.get("calls", [])]
            invalid = [{"name": c[0], "args": c[1], "id": c[2], "error": "bad JSON",
                        "type": "invalid_tool_call"} for c in spec.get("invalid", [])]
            tokens = int(spec.get("tokens", 20))
            seq = t.event("wrap_model_call", "exit", {
                "usage": {"input_tokens": tokens - 5, "output_tokens": 5, "total_tokens": tokens},
                "tool_calls": len(calls)})
            t.message(seq, AIMessage(spec.get("text", ""), tool_calls=calls,
                                     invalid_tool_calls=invalid, id=spec.get("id", f"a{n}")))
        elif kind == "tool":
            tcid = spec["id"]
            enter: dict[str, Any] = {"name": spec.get("name", "tool"),
                                     "args": spec.get("args", {})}
            if "known" in spec:
                enter["known_tool"] = spec["known"]
            t.event("wrap_tool_call", "enter", enter, tool_call_id=tcid)
            if "raise" in spec:
                t.event("wrap_tool_call", "error", {"error": spec["raise"], "type": "ToolError"},
                        tool_call_id=tcid)
                continue
            status = spec.get("status", "success")
            seq = t.event("wrap_tool_call", "exit", {"status": status}, tool_call_id=tcid)
            t.message(seq, ToolMessage(spec.get("content", "ok"), tool_call_id=tcid,
                                       status=status, name=spec.get("name"),
                                       id=spec.get("msg_id", f"r{n}")))
        elif kind == "result":  # a result the loop made itself (no tool event of its own)
            t.message(max(t.seq - 1, 0), ToolMessage(spec.get("content", ""),
                                                     tool_call_id=spec["id"],
                                                     status=spec.get("status", "success"),
                                                     id=spec.get("msg_id", f"r{n}")))
        elif kind == "history":
            t.event("history", "fire", {"keys": spec, "previous": len(t.conv)}, middleware=None)
            t.conv = list(spec)
        elif kind == "jump_end":
            t.event("before_model", "fire", {"update_keys": ["jump_to", "messages"],
                                             "jump_to": "end"}, middleware=spec)
        elif kind == "note":
            seq = t.event("after_agent", "fire")
            t.message(seq, AIMessage(spec, id=f"note{n}"))
        elif kind == "wire":
            enter = max(r["row"]["seq"] for r in t.rows if r["table"] == "events"
                        and r["row"]["hook"] == "wrap_model_call" and r["row"]["phase"] == "enter")
            t.rows.append({"table": "wire", "row": {
                "run_id": run_id, "seq": enter, "ts": t.ts, "provider": spec["provider"],
                "method": "POST", "url": "http://127.0.0.1/emulated",
                "request_body": json.dumps(spec["body"]), "status": 200}})
        elif kind == "state":
            seq = max(t.seq - 1, 0)
            for key, value in spec["values"].items():
                h = None
                if value is not None or spec.get("none_is_value"):
                    text = json.dumps(value)
                    h = value_hash(text)
                    if not any(r["table"] == "state_values" and r["row"]["hash"] == h
                               for r in t.rows):
                        t.rows.append({"table": "state_values", "row": {
                            "run_id": run_id, "hash": h, "data": text}})
                t.rows.append({"table": "state", "row": {
                    "run_id": run_id, "seq": seq, "key": key, "hash": h,
                    "by": spec.get("by"), "tool_call_id": spec.get("call")}})
        elif kind == "hook":
            payload = {"update_keys": spec.get("update_keys", [])}
            if spec.get("jump_to"):
                payload["jump_to"] = spec["jump_to"]
            t.event(spec.get("hook", "after_model"), "fire", payload,
                    middleware=spec["middleware"])
        elif kind == "run_error":
            t.event("run", "error", {"error": spec}, middleware=None)
        else:
            msg = f"unknown step {kind!r} in case {case['name']}"
            raise ValueError(msg)
    run = case.get("run", {})
    status = run.get("status", "completed")
    if status == "completed":
        t.event("after_agent", "fire")
    header = {"format": "looptrace-trace", "version": 1, "schema_version": 1, "root": run_id,
              "runs": 1}
    run_row = {"id": run_id, "name": case["name"], "status": status,
               "started_at": 1_700_000_000.0, "ended_at": t.ts + 1, "error": run.get("error"),
               "source": "import", "model": "corpus-model",
               "provider": run.get("provider", "corpus")}
    lines = [header, {"table": "runs", "row": run_row}, *t.rows]
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return out


def build(case: dict[str, Any], tmp: Path) -> tuple[Run, list[dict[str, Any]]]:
    """Import ``case`` into a fresh database under ``tmp``: its run and wire rows."""
    trace = build_trace(case, tmp / f"{case['name']}.jsonl")
    db = tmp / f"{case['name']}.db"
    (run_id,) = import_trace(trace, db)
    with TraceDB(db) as tdb:
        return tdb.run(run_id), tdb.wire(run_id)


def build_run(case: dict[str, Any], tmp: Path) -> Run:
    return build(case, tmp)[0]
