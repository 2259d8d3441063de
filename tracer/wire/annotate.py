"""Annotate the differences that matter, on JSON paths of a provider body.

``annotate_request(provider, body)`` and ``annotate_response(provider, body)``
return ``Annotation``s: an aspect (the same across providers, so the three
formats can be compared aspect by aspect), a JSON path into the body, and a
short note. ``annotated_text`` prints the body as indented JSON with each note
beside the line where its path starts: the annotations sit on the JSON itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[Any, ...]

# Aspects in display order, with a title.
ASPECTS: dict[str, str] = {
    "system": "Where the system prompt goes",
    "assistant_content": "Assistant content when it calls tools",
    "arguments": "Tool-call arguments",
    "ids": "Tool-call ids",
    "tool_results": "How tool results travel",
    "tool_errors": "How a failed tool is marked",
    "tools": "Tool definitions",
    "stream": "Streaming flag",
    "usage": "Where usage comes back",
    "stop_reason": "Where the stop reason comes back",
    "stateless": "What the server remembers",
    "done": "How the loop knows it is done",
}

# True of every provider's chat API, and easy to forget: said on each body.
STATELESS = "the whole history again: the API keeps no state"
NO_DONE_FLAG = ('no "done" flag: the loop stops when no tool is asked for, not because of '
                "the stop reason")
# True of OpenAI's and Ollama's tool results alike.
NO_ERROR_FLAG = "no error flag: a failed tool is only visible in the text"


@dataclass(frozen=True)
class Annotation:
    aspect: str
    path: Path
    note: str

    @property
    def where(self) -> str:
        return path_text(self.path)


def path_text(path: Path) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _msgs(body: dict[str, Any]) -> list[Any]:
    m = body.get("messages")
    return m if isinstance(m, list) else []


def annotate_request(provider: str, body: Any) -> list[Annotation]:
    if not isinstance(body, dict):
        return []
    fn = {"openai": _openai_req, "anthropic": _anthropic_req, "ollama": _ollama_req,
          "langchain": _langchain_req}.get(provider)
    out = list(fn(body)) if fn else []
    if fn and isinstance(body.get("messages"), list):
        out.append(Annotation("stateless", ("messages",), STATELESS))
    return out


def annotate_response(provider: str, body: Any) -> list[Annotation]:
    if not isinstance(body, dict):
        return []
    fn = {"openai": _openai_resp, "anthropic": _anthropic_resp,
          "ollama": _ollama_resp, "langchain": _langchain_resp}.get(provider)
    out = list(fn(body)) if fn else []
    if fn:
        out.append(Annotation("done", (), NO_DONE_FLAG))
    return out


# A message of a request body: (index, the message, its role, first of the last results?)
_Turn = tuple[int, dict[str, Any], Any, bool]


def _turns(body: dict[str, Any], key: str = "role") -> Iterator[_Turn]:
    """The message objects of a request body, each as ``(index, message, role,
    last_results)``: the role is read from ``key`` ("role" on the wire, "type" in
    LangChain's dicts); ``last_results`` marks the first message of the last run of
    tool-role messages (the results the tool notes point at)."""
    msgs = _msgs(body)

    def is_tool(m: Any) -> bool:
        return isinstance(m, dict) and m.get(key) == "tool"

    last = None
    for i, m in enumerate(msgs):
        if is_tool(m) and (i == 0 or not is_tool(msgs[i - 1])):
            last = i
    for i, m in enumerate(msgs):
        if isinstance(m, dict):
            yield i, m, m.get(key), i == last


# -- OpenAI -------------------------------------------------------------------------
def _openai_req(body: dict[str, Any]) -> Iterator[Annotation]:
    for i, m, role, last_results in _turns(body):
        if role in ("system", "developer"):
            yield Annotation("system", ("messages", i),
                             f"system prompt: a message of its own, role {role!r}, first in the list")
        elif role == "assistant" and m.get("tool_calls"):
            c = m.get("content")
            if c is None:
                note = "content is null: this turn only calls tools"
            elif isinstance(c, list):
                note = ("content is a list of parts (the recorded message had content "
                        "blocks); the calls travel beside it in tool_calls")
            else:
                note = "content is a plain string; the calls travel beside it in tool_calls"
            yield Annotation("assistant_content", ("messages", i, "content"), note)
            for j, tc in enumerate(m["tool_calls"]):
                if j == 0:
                    yield Annotation("arguments", ("messages", i, "tool_calls", j, "function",
                                                   "arguments"),
                                     "arguments are a JSON-encoded STRING, not an object")
                yield Annotation("ids", ("messages", i, "tool_calls", j, "id"),
                                 "call id, echoed by the result's tool_call_id")
        elif role == "tool" and last_results:
            yield Annotation("tool_results", ("messages", i),
                             "one role:\"tool\" message per result, right after the call, "
                             "tied to it by tool_call_id")
            yield Annotation("tool_errors", ("messages", i, "content"), NO_ERROR_FLAG)
    if body.get("tools"):
        yield Annotation("tools", ("tools", 0),
                         "{type: function, function: {name, description, parameters}}")
    if "stream" in body:
        yield Annotation("stream", ("stream",), f"stream: {json.dumps(body['stream'])} "
                         "(sent explicitly)")


def _openai_resp(body: dict[str, Any]) -> Iterator[Annotation]:
    if "usage" in body:
        yield Annotation("usage", ("usage",), "usage: prompt_tokens / completion_tokens")
    elif body.get("object") == "chat.completion" and "choices" in body:
        yield Annotation("usage", (), "no usage: a stream carries it only when the request "
                                      "asks with stream_options.include_usage")
    choices = body.get("choices")
    if isinstance(choices, list) and choices:
        yield Annotation("stop_reason", ("choices", 0, "finish_reason"),
                         "stop reason per choice: finish_reason (tool_calls / stop)")
        msg = choices[0].get("message") if isinstance(choices[0], dict) else None
        if isinstance(msg, dict) and msg.get("tool_calls"):
            yield Annotation("assistant_content", ("choices", 0, "message", "content"),
                             "content null (or text) beside tool_calls")
            yield Annotation("arguments", ("choices", 0, "message", "tool_calls", 0, "function",
                                           "arguments"), "arguments come back as a JSON string")


# -- Anthropic ----------------------------------------------------------------------
def _anthropic_req(body: dict[str, Any]) -> Iterator[Annotation]:
    if "system" in body:
        yield Annotation("system", ("system",),
                         "system prompt: top-level `system`, never a message")
    for i, m, role, _ in _turns(body):  # (no tool role: results are blocks of a user turn)
        content = m.get("content")
        blocks = content if isinstance(content, list) else []
        if role == "assistant" and any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks):
            kinds = ", ".join(str(b.get("type")) for b in blocks if isinstance(b, dict))
            yield Annotation("assistant_content", ("messages", i, "content"),
                             f"content is a LIST of blocks ({kinds})")
            first = True
            for j, b in enumerate(blocks):
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    if first:
                        first = False
                        yield Annotation("arguments", ("messages", i, "content", j, "input"),
                                         "input is a parsed JSON OBJECT")
                    yield Annotation("ids", ("messages", i, "content", j, "id"),
                                     "tool_use id, echoed by tool_result.tool_use_id")
        results = [j for j, b in enumerate(blocks)
                   if isinstance(b, dict) and b.get("type") == "tool_result"]
        if role == "user" and results:
            n = len(results)
            yield Annotation("tool_results", ("messages", i),
                             f"ONE role:\"user\" message carries {'all ' if n > 1 else ''}{n} "
                             f"result{'s' if n > 1 else ''} as tool_result blocks")
            for j in results:
                if blocks[j].get("is_error"):
                    yield Annotation("tool_errors", ("messages", i, "content", j, "is_error"),
                                     "is_error: true marks the failed tool")
                    break
    if body.get("tools"):
        yield Annotation("tools", ("tools", 0), "{name, description, input_schema}: no wrapper")
    if "stream" in body:
        yield Annotation("stream", ("stream",), "stream: true only when streaming")
    else:
        yield Annotation("stream", ("max_tokens",),
                         "no stream key when not streaming; max_tokens is required")


def _anthropic_resp(body: dict[str, Any]) -> Iterator[Annotation]:
    if "usage" in body:
        yield Annotation("usage", ("usage",), "usage: input_tokens / output_tokens")
    if "stop_reason" in body:
        yield Annotation("stop_reason", ("stop_reason",),
                         "stop reason top-level: stop_reason (tool_use / end_turn)")
    content = body.get("content")
    if isinstance(content, list):
        for j, b in enumerate(content):
            if isinstance(b, dict) and b.get("type") == "tool_use":
                yield Annotation("arguments", ("content", j, "input"),
                                 "input comes back as an object")
                break


# -- Ollama -------------------------------------------------------------------------
def _ollama_req(body: dict[str, Any]) -> Iterator[Annotation]:
    for i, m, role, last_results in _turns(body):
        if role == "system":
            yield Annotation("system", ("messages", i),
                             "system prompt: a message of its own, role \"system\"")
        elif role == "assistant" and m.get("tool_calls"):
            if "content" in m:
                yield Annotation("assistant_content", ("messages", i, "content"),
                                 "content is a plain string; the calls travel beside it")
            else:
                yield Annotation("assistant_content", ("messages", i),
                                 "no content key at all: this turn only calls tools")
            yield Annotation("arguments", ("messages", i, "tool_calls", 0, "function",
                                           "arguments"), "arguments are an OBJECT")
            calls = m["tool_calls"]
            if isinstance(calls[0], dict) and calls[0].get("id"):
                yield Annotation("ids", ("messages", i, "tool_calls", 0, "id"),
                                 "the call id is sent back (this client kept it)")
            else:
                yield Annotation("ids", ("messages", i, "tool_calls", 0),
                                 "no id here: the server sent one (since 0.12.10), but the "
                                 "ollama Python client 0.6.x drops it (ChatOllama then "
                                 "invents its own, and does not send it)")
        elif role == "tool" and last_results:
            if m.get("tool_call_id"):
                yield Annotation("tool_results", ("messages", i),
                                 "one role:\"tool\" message per result, with the call's "
                                 "tool_call_id")
            else:
                yield Annotation("tool_results", ("messages", i),
                                 "one role:\"tool\" message per result, with NO call id: "
                                 "matched to its call by order only (and tool_name, if sent)")
            yield Annotation("tool_errors", ("messages", i, "content"), NO_ERROR_FLAG)
    if body.get("tools"):
        yield Annotation("tools", ("tools", 0), "OpenAI-shaped: {type: function, function}")
    if "stream" in body:
        yield Annotation("stream", ("stream",),
                         "stream: true always (ChatOllama reads NDJSON lines)")


def _ollama_resp(body: dict[str, Any]) -> Iterator[Annotation]:
    if "prompt_eval_count" in body:
        yield Annotation("usage", ("prompt_eval_count",),
                         "usage top-level: prompt_eval_count / eval_count (final line only)")
    if "done_reason" in body:
        yield Annotation("stop_reason", ("done_reason",), "stop reason: done_reason, with done")
    msg = body.get("message")
    if isinstance(msg, dict) and msg.get("tool_calls"):
        first = msg["tool_calls"][0]
        if isinstance(first, dict) and first.get("id"):
            yield Annotation("ids", ("message", "tool_calls", 0, "id"),
                             "an id per call (Ollama server 0.12.10 and later); the ollama "
                             "Python client 0.6.x drops it on reading")
        else:
            yield Annotation("ids", ("message", "tool_calls", 0),
                             "tool calls come back with no id (an Ollama server older than "
                             "0.12.10)")


# -- LangChain (what every adapter normalises to) ---------------------------------------
def _langchain_req(body: dict[str, Any]) -> Iterator[Annotation]:
    for i, m, kind, last_results in _turns(body, key="type"):
        if kind == "system":
            yield Annotation("system", ("messages", i),
                             "a SystemMessage at the head; each adapter moves it where its "
                             "provider wants it")
        elif kind == "ai" and m.get("tool_calls"):
            yield Annotation("assistant_content", ("messages", i, "content"),
                             "content as the model gave it; the calls in tool_calls")
            yield Annotation("arguments", ("messages", i, "tool_calls", 0, "args"),
                             "args: a parsed dict, whatever the provider sent")
            yield Annotation("ids", ("messages", i, "tool_calls", 0),
                             "the normalised call: {name, args, id, type: \"tool_call\"}, the "
                             "same for every provider")
        elif kind == "tool" and last_results:
            yield Annotation("tool_results", ("messages", i),
                             "one ToolMessage per result, tied to its call by tool_call_id")
            yield Annotation("tool_errors", ("messages", i, "status"),
                             "status: \"error\" marks a failed tool (the providers' formats "
                             "keep it only as is_error, or not at all)")
    if body.get("tools"):
        yield Annotation("tools", ("tools", 0), "the tool schemas bind_tools made")


def _langchain_resp(body: dict[str, Any]) -> Iterator[Annotation]:
    if body.get("usage_metadata"):
        yield Annotation("usage", ("usage_metadata",),
                         "usage_metadata: input_tokens / output_tokens, whatever the provider")
    meta = body.get("response_metadata")
    if isinstance(meta, dict):
        for key in ("finish_reason", "stop_reason", "done_reason"):
            if key in meta:
                yield Annotation("stop_reason", ("response_metadata", key),
                                 f"the provider's own stop reason, under its own name ({key})")
                break
    if body.get("tool_calls"):
        yield Annotation("ids", ("tool_calls", 0), "tool_calls: [{name, args, id, type}]")


# -- rendering ----------------------------------------------------------------------
def _lines(value: Any, path: Path, indent: int, key: str | None, comma: bool,
           fold: frozenset[Path]) -> Iterator[tuple[str, Path, int]]:
    pad = "  " * indent
    head = pad + (json.dumps(key, ensure_ascii=False) + ": " if key is not None else "")
    tail = "," if comma else ""
    if path in fold and isinstance(value, (dict, list)) and value:
        if isinstance(value, dict) and isinstance(value.get("role"), str):
            rest = len(value) - 1
            yield (head + '{"role": ' + json.dumps(value["role"]) + f", ... {rest} more "
                   f"key{'s' if rest != 1 else ''} folded ... }}" + tail), path, indent
            return
        what = f"{len(value)} item{'s' if len(value) != 1 else ''}"
        yield head + ("[" if isinstance(value, list) else "{") + f" ... {what} folded ... " + (
            "]" if isinstance(value, list) else "}") + tail, path, indent
    elif isinstance(value, dict) and value:
        yield head + "{", path, indent
        items = list(value.items())
        for n, (k, v) in enumerate(items):
            yield from _lines(v, (*path, k), indent + 1, str(k), n < len(items) - 1, fold)
        yield pad + "}" + tail, path, indent
    elif isinstance(value, list) and value:
        yield head + "[", path, indent
        for n, v in enumerate(value):
            yield from _lines(v, (*path, n), indent + 1, None, n < len(value) - 1, fold)
        yield pad + "]" + tail, path, indent
    else:
        yield head + json.dumps(value, ensure_ascii=False) + tail, path, indent


def annotated_text(body: Any, annotations: Iterable[Annotation] = (), *,
                   marker: str = "  <-- ", above: bool = False,
                   fold: Iterable[Path] = (), hide: Iterable[Path] = ()) -> str:
    """``body`` as indented JSON with each annotation's note on its path's first line.

    ``above``: put each note on a comment line of its own just above (for narrow
    columns). ``fold``: paths whose value is shown as one "... folded ..." line;
    notes inside a folded value move to that line. ``hide``: folded the same way,
    but the notes inside are dropped (earlier turns, annotated again later).
    """
    moved = frozenset(tuple(f) for f in fold)
    hidden = frozenset(tuple(h) for h in hide)
    folded = moved | hidden
    notes: dict[Path, list[str]] = {}
    for a in annotations:
        path = tuple(a.path)
        if any(len(path) > len(h) and path[:len(h)] == h for h in hidden):
            continue
        for f in moved:
            if path[:len(f)] == f:
                path = f
        notes.setdefault(path, []).append(a.note)
    out = []
    seen: set[Path] = set()
    for line, path, indent in _lines(body, (), 0, None, False, folded):
        if path in notes and path not in seen:
            seen.add(path)
            text = " | ".join(dict.fromkeys(notes[path]))
            if above:
                out.append("  " * indent + "// " + text)
            else:
                line += marker + text
        out.append(line)
    for path, texts in notes.items():
        if path not in seen:
            out.append(f"// {path_text(path)}: {' | '.join(texts)}")
    return "\n".join(out)


def earlier_turns(body: Any) -> list[Path]:
    """The messages before the last assistant message (to fold: they were sent before)."""
    msgs = _msgs(body) if isinstance(body, dict) else []
    last = max((i for i, m in enumerate(msgs) if isinstance(m, dict)
                and m.get("role") == "assistant"), default=None)
    return [("messages", i) for i in range(last)] if last else []


def resolve(body: Any, path: Path) -> Any:
    """The value at ``path`` (KeyError/IndexError if absent)."""
    v = body
    for p in path:
        v = v[p]
    return v
