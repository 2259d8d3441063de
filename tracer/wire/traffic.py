"""Runs from traffic: a loop that ran without the tracer, rebuilt from its HTTP exchanges.

A proxy sees every request a loop sends and every response it gets, in the
provider's own format. An exchange that no traced model call claims (see
``capture.link_wire``) is a model call of a loop looptrace did not trace: this
module reads it into LangChain messages (``read_exchange``) and gives it to the
run it continues (``Conversations``): a request whose history extends an earlier
request plus its reply is the next lap of that conversation; any other request
starts a new run. Runs are written by ``ingest.RunBuilder``, so they replay,
check, diff and export like any other; each wire row is linked to its model
call, so the wire page shows the exchange itself.

What the wire cannot say is not made up: the time a tool ran (only the moment
its result was sent back is known), the hooks, and, for Ollama's chat API as
its Python client speaks it, the tool call ids. Ids a provider did not carry
are made up as ``wire-<message>-<call>`` so that results still pair with their
calls (in order, as the server pairs them), and the run says so in its metadata.

A conversation is followed for as long as this object lives (a proxy process,
or one pass of ``build_runs`` over a file): a loop whose proxy restarted in the
middle continues as a new run that starts with the whole history.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tracer.db.schema import connect
from tracer.record.ingest import RunBuilder
from tracer.record.recorder import Recorder
from tracer.vocab.redact import Redactor

from .providers import MalformedStream, Msg, format_for_path, get_format, loads_args, text_of

log = logging.getLogger("looptrace")
SOURCE = "wire"


@dataclass
class Observed:
    """One exchange read as a model call."""

    provider: str
    model: str | None
    system: str | None
    messages: list[BaseMessage]
    tools: list[Any]
    reply: AIMessage | None
    error: str | None
    results_by_order: bool = False
    stream: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


# -- reading one exchange ------------------------------------------------------------


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if text else None
    except (TypeError, ValueError):
        return None


def _call(name: str, args: Any, cid: str) -> dict[str, Any]:
    return {"name": name, "args": args if isinstance(args, dict) else {"__value__": args},
            "id": cid, "type": "tool_call"}


def to_messages(msgs: list[Msg]) -> tuple[str | None, list[BaseMessage], bool]:
    """Neutral messages -> (system prompt, LangChain messages, whether a result had to
    be paired with its call by order).

    A call without an id gets ``wire-<message>-<call>``; a result without one
    answers the next unanswered call of the assistant message before it."""
    system: list[str] = []
    out: list[BaseMessage] = []
    by_order = False
    waiting: list[str] = []  # call ids of the latest assistant message not yet answered
    for m in msgs:
        if m.role == "system":
            system.append(m.text)
        elif m.role == "assistant":
            calls = []
            for j, c in enumerate(m.tool_calls):
                cid = c.id
                if not cid:
                    cid = f"wire-{len(out)}-{j}"
                calls.append(_call(c.name, c.args, cid))
            waiting = [c["id"] for c in calls]
            out.append(AIMessage(m.text, tool_calls=calls))
        elif m.role == "tool":
            by_order = by_order or not m.tool_call_id
            tcid = m.tool_call_id or (waiting[0] if waiting else f"wire-{len(out)}-orphan")
            if tcid in waiting:
                waiting.remove(tcid)
            out.append(ToolMessage(m.text, tool_call_id=tcid,
                                   status="error" if m.is_error else "success"))
        else:
            out.append(HumanMessage(m.text))
    return ("\n\n".join(system) if system else None), out, by_order


def _usage(i: Any, o: Any) -> dict[str, int] | None:
    if i is None and o is None:
        return None
    i, o = int(i or 0), int(o or 0)
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


def _function_calls(msg: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """An OpenAI- or Ollama-shaped message's ``tool_calls`` (``{"id", "function": {"name",
    "arguments"}}``; arguments a JSON string or an object) as LangChain tool calls."""
    out = []
    for j, c in enumerate(msg.get("tool_calls") or []):
        fn = c.get("function") or {}
        out.append(_call(fn.get("name") or "", loads_args(fn.get("arguments")),
                         c.get("id") or f"wire-{index}-{j}"))
    return out


def read_reply(provider: str, body: dict[str, Any], index: int) -> AIMessage:
    """A provider's response body -> the AIMessage it carries (``index``: the
    message's place in the conversation, for ids the wire did not carry)."""
    calls: list[dict[str, Any]] = []
    meta: dict[str, Any] = {"model_name": body.get("model")}
    if provider == "openai":
        choice = (body.get("choices") or [{}])[0]
        msg = choice.get("message") or {}
        text = text_of(msg.get("content"))
        calls = _function_calls(msg, index)
        meta["finish_reason"] = choice.get("finish_reason")
        u = body.get("usage") or {}
        usage = _usage(u.get("prompt_tokens"), u.get("completion_tokens")) if u else None
    elif provider == "anthropic":
        blocks = body.get("content") or []
        text = text_of(blocks)
        calls = [_call(b.get("name") or "", b.get("input") or {}, b.get("id") or "")
                 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        meta["stop_reason"] = body.get("stop_reason")
        u = body.get("usage") or {}
        usage = _usage(u.get("input_tokens"), u.get("output_tokens")) if u else None
    elif provider == "ollama":
        msg = body.get("message") or {}
        text = text_of(msg.get("content"))
        calls = _function_calls(msg, index)
        meta["done_reason"] = body.get("done_reason")
        usage = _usage(body.get("prompt_eval_count"), body.get("eval_count"))
    elif provider == "openai-responses":
        texts = []
        for item in body.get("output") or []:
            if item.get("type") == "message":
                texts.append(text_of(item.get("content")))
            elif item.get("type") == "function_call":
                calls.append(_call(item.get("name") or "", loads_args(item.get("arguments")),
                                   item.get("call_id") or item.get("id") or ""))
        text = "".join(texts)
        meta["status"] = body.get("status")
        u = body.get("usage") or {}
        usage = _usage(u.get("input_tokens"), u.get("output_tokens")) if u else None
    else:
        msg = f"no reader for {provider!r} responses"
        raise ValueError(msg)
    meta = {k: v for k, v in meta.items() if v is not None}
    return AIMessage(text, tool_calls=calls, usage_metadata=usage, response_metadata=meta)


def _error_text(row: dict[str, Any]) -> str | None:
    status = row.get("status")
    if row.get("error"):
        return str(row["error"])
    if status is not None and int(status) >= 400:
        body = _json(row.get("response_body"))
        detail = ""
        if isinstance(body, dict):
            err = body.get("error")
            detail = (err.get("message") if isinstance(err, dict) else err) or body.get(
                "message") or ""
        return f"HTTP {status}{': ' + str(detail) if detail else ''}"
    return None


def read_exchange(row: dict[str, Any]) -> Observed:
    """A ``wire`` row -> the model call it was; ``ValueError`` if it is none (an
    endpoint that is not a chat call, a body that is not JSON)."""
    fmt = format_for_path(str(row.get("url") or "")) or get_format(str(row.get("provider")))
    body = _json(row.get("request_body"))
    if not isinstance(body, dict):
        msg = "the request body is not a JSON object"
        raise ValueError(msg)  # noqa: TRY004 - a bad exchange, not a bad argument
    req = fmt.read_request(body)
    system, messages, by_order = to_messages(req.messages)
    error = _error_text(row)
    reply = None
    if error is None:
        resp = _json(row.get("response_body"))
        if not isinstance(resp, dict) and row.get("chunks"):
            try:
                resp = fmt.reassemble(json.loads(row["chunks"]))
            except (MalformedStream, ValueError, TypeError) as exc:
                error = f"unreadable stream: {exc}"
        if error is None and not isinstance(resp, dict):
            error = "no response body"
        if error is None:
            reply = read_reply(fmt.name, resp, len(messages))
    extra: dict[str, Any] = {"provider": fmt.name}
    prev = getattr(req, "previous_response_id", None)
    if prev:
        extra["previous_response_id"] = prev
    return Observed(fmt.name, req.model or None, system, messages,
                    list(body.get("tools") or []), reply, error, by_order, req.stream, extra)


# -- conversations -> runs ----------------------------------------------------------


def adopt_ids(messages: list[BaseMessage], known: list[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with the call ids the run already knows in place of made-up ones.

    A client that drops the ids a server sent (the ``ollama`` Python client) re-sends
    the assistant message without them, and its results without ``tool_call_id``:
    the calls take the ids of the reply the run recorded, and the results follow
    them (``to_messages`` paired them with the made-up ids, in order)."""
    rename: dict[Any, Any] = {}
    for m, k in zip(messages, known, strict=False):
        if (isinstance(m, AIMessage) and isinstance(k, AIMessage)
                and len(m.tool_calls) == len(k.tool_calls)):
            for c, kc in zip(cast("list[dict[str, Any]]", m.tool_calls), k.tool_calls,
                             strict=True):
                if c["id"].startswith("wire-") and kc.get("id") and c["id"] != kc["id"]:
                    rename[c["id"]] = kc["id"]
    if not rename:
        return messages
    out: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            m = m.model_copy(update={"tool_calls": [
                {**c, "id": rename.get(c["id"], c["id"])} for c in m.tool_calls]})
        elif isinstance(m, ToolMessage) and m.tool_call_id in rename:
            m = m.model_copy(update={"tool_call_id": rename[m.tool_call_id]})
        out.append(m)
    return out



def _title(obs: Observed) -> str:
    users = [m for m in obs.messages if isinstance(m, HumanMessage)]
    first = users[0].text.strip().replace("\n", " ") if users else ""
    short = first[:48] + ("..." if len(first) > 48 else "")
    return f"{obs.provider}: {short}" if short else f"{obs.provider} loop"


class Conversations:
    """Turns unlinked exchanges into runs, following each conversation."""

    def __init__(self, db: str | os.PathLike[str], *, redactor: Redactor | None = None) -> None:
        self.path = os.fspath(db)
        self.rec = Recorder(self.path, redactor=redactor)
        self.open: list[RunBuilder] = []
        self.lock = threading.Lock()

    def _builder_for(self, obs: Observed, ts: float) -> RunBuilder:
        best = None
        for b in self.open:
            if not b.sigs or (best is not None and len(b.sigs) <= len(best[0].sigs)):
                continue
            adopted = adopt_ids(obs.messages, b.objs)
            if b.continues(adopted):
                best = (b, adopted)
        if best is not None:
            b, obs.messages = best
            if b.run.ended:
                b.reopen()
            return b
        meta: dict[str, Any] = {"provider": obs.provider}
        b = RunBuilder(self.rec, name=_title(obs), source=SOURCE, observed="wire",
                       started_at=ts, metadata=meta)
        self.open.append(b)
        return b

    def add(self, row: dict[str, Any]) -> tuple[str, int] | None:
        """Give one exchange to its run; return (run id, seq of its model call)."""
        try:
            obs = read_exchange(row)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.debug("looptrace: wire row %s is not a model call: %s", row.get("id"), exc)
            return None
        ts = float(row.get("ts") or 0)
        end = ts + (row.get("duration_ms") or 0) / 1000
        with self.lock:
            b = self._builder_for(obs, ts)
            calls = [c["id"] for m in [*obs.messages, *([obs.reply] if obs.reply else [])]
                     for c in getattr(m, "tool_calls", None) or ()]
            if any(c.startswith("wire-") for c in calls):
                b.note(ids="made up by looptrace: the wire carried no tool call ids")
            if obs.results_by_order:
                b.note(results="paired with their calls by order: the requests carried no "
                               "tool_call_id")
            seq = b.call(obs.messages, ts=ts, end_ts=end, reply=obs.reply, error=obs.error,
                         system=obs.system, tools=obs.tools, model=obs.model, extra=obs.extra)
            if obs.error is not None:
                b.end("error", ts=end, error=obs.error)
            elif obs.reply is not None and not obs.reply.tool_calls:
                b.end("completed", ts=end)
            return b.id, seq

    def close(self) -> None:
        """End the runs still waiting for their next request."""
        with self.lock:
            for b in self.open:
                if not b.run.ended:
                    b.end("completed" if b.calls else "error")
            self.rec.writer.flush()


def build_runs(db: str | os.PathLike[str], *, before: float | None = None,
               conversations: Conversations | None = None) -> list[str]:
    """Turn the file's unlinked exchanges (sent before ``before``, if given) into runs
    and link each to its model call; return the ids of the runs they went to."""
    path = os.fspath(db)
    own = conversations is None
    convs = conversations or Conversations(path)
    conn = connect(path)
    try:
        conn.row_factory = _dict_row
        rows = conn.execute(
            "SELECT * FROM wire WHERE run_id IS NULL AND ts < ? ORDER BY ts, id",
            [before if before is not None else float("inf")]).fetchall()
    finally:
        conn.close()
    links: list[tuple[str, int, int]] = []
    for row in rows:
        hit = convs.add(row)
        if hit is not None:
            links.append((hit[0], hit[1], row["id"]))
    if own:
        convs.close()
    convs.rec.writer.flush()
    if links:
        conn = connect(path)
        try:
            with conn:
                conn.executemany("UPDATE wire SET run_id = ?, seq = ? WHERE id = ?", links)
        finally:
            conn.close()
    return list(dict.fromkeys(rid for rid, _, _ in links))


def _dict_row(cursor: Any, row: tuple[Any, ...]) -> dict[str, Any]:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}
