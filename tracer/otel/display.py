"""What tracing backends show first, beside the GenAI attributes.

Arize Phoenix and MLflow list a span by its ``input.value`` / ``output.value``
(OpenInference's attributes, with ``input.mime_type`` / ``output.mime_type``):
neither derives them from ``gen_ai.input.messages``, and Phoenix fills an LLM
span's missing output with ``{"model": ...}``. So every exported span carries
them: the user's question and the final answer on ``invoke_agent``, the input
messages and the assistant's text (or its tool calls) on ``chat``, the
arguments and the result on ``execute_tool``. Tool definitions go in the flat
GenAI form (``{"type": "function", "name", "description", "parameters"}``):
Phoenix rejects OpenAI's nested ``{"function": {...}}``.

The resource names the service (``service.name``) and Phoenix's project
(``openinference.project.name``): both are the ``--service`` name.
"""

from __future__ import annotations

import json
from typing import Any

TEXT = "text/plain"
JSON = "application/json"
DEFAULT_SERVICE = "looptrace"


def resource(service: str | None = None) -> dict[str, Any]:
    name = service or DEFAULT_SERVICE
    return {"service.name": name, "openinference.project.name": name}


def io(direction: str, value: Any) -> dict[str, Any]:
    """``input.value`` and ``input.mime_type`` (or ``output.*``): text as it is, anything
    else as JSON; nothing for an empty value."""
    if value is None or value == "" or value == []:
        return {}
    if isinstance(value, str):
        return {f"{direction}.value": value, f"{direction}.mime_type": TEXT}
    return {f"{direction}.value": json.dumps(value, ensure_ascii=False, default=str),
            f"{direction}.mime_type": JSON}


def message_text(message: dict[str, Any]) -> str:
    """The text parts of a GenAI-convention message, joined."""
    return "\n".join(str(p.get("content") or "") for p in message.get("parts", [])
                     if p.get("type") == "text" and p.get("content"))


def reply(message: dict[str, Any]) -> Any:
    """What an assistant message says: its text, else its tool calls."""
    text = message_text(message)
    if text:
        return text
    calls = [{"name": p.get("name"), "arguments": p.get("arguments"), "id": p.get("id")}
             for p in message.get("parts", []) if p.get("type") == "tool_call"]
    return calls or None


def question(messages: list[dict[str, Any]]) -> str | None:
    """The last user message's text before the first assistant reply (the run's question)."""
    found = None
    for m in messages:
        if m.get("role") == "assistant":
            break
        if m.get("role") == "user" and message_text(m):
            found = message_text(m)
    return found


def tool_definitions(tools: Any) -> list[dict[str, Any]]:
    """Tool schemas in the flat GenAI form, whatever form the request had them in
    (OpenAI's nested ``function``, Anthropic's ``input_schema``, already flat)."""
    out = []
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        nested = tool.get("function")
        fn: dict[str, Any] = nested if isinstance(nested, dict) else tool
        flat: dict[str, Any] = {"type": "function", "name": fn.get("name")}
        if fn.get("description"):
            flat["description"] = fn["description"]
        params = fn.get("parameters", fn.get("input_schema"))
        if params is not None:
            flat["parameters"] = params
        if flat["name"]:
            out.append(flat)
    return out
