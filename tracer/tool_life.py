"""A tool call's life: the schema the model saw, the Python behind it, the path it took.

Write side (``signatures``, on the writer thread with the tool schemas): for each
tool of a model call, its Python signature as text, and the parameters that the
schema the model saw leaves out (``runtime: ToolRuntime``, injected state, the
call id: LangChain fills them in, the model never sees them). Recorded in the
model call's ``enter`` payload as ``signatures``, next to ``tools``, only when
the schemas are written (once per run, or when the tools change). The signature
is read from the tool's function (``StructuredTool.func`` / ``.coroutine``), else
from its ``args_schema``; nothing else is run.

Read side (``tool_life``, ``schema_at``, ``signature_at``): what the inspector
shows at a tool step, and the captions' words for how the call ended
(``ERROR_PATHS``: the middleware records ``error_path`` on an error ToolMessage,
and ``handle_tool_error`` on an exception that went through).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast, get_args, get_origin

if TYPE_CHECKING:
    from .payloads import ErrorPayload, Signature, ToolEnterPayload, ToolExitPayload
    from .replay import Replay

# -- write side --------------------------------------------------------------------

_QUALIFIED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)")


def _meta_text(m: Any) -> str:
    """One item of ``Annotated[...]`` metadata: a pydantic Field's constraints, else repr."""
    parts = []
    for c in getattr(m, "metadata", ()) or ():  # annotated_types: Ge(ge=1) -> ge=1
        r = repr(c)
        inner = r[r.find("(") + 1:-1] if "(" in r and r.endswith(")") else r
        parts.append(inner)
    desc = getattr(m, "description", None)
    if desc:
        parts.append(f"description={desc!r}")
    if type(m).__name__ == "FieldInfo":
        return f"Field({', '.join(parts)})"
    return _QUALIFIED.sub(r"\1", repr(m))


def annotation_text(a: Any) -> str:
    """A type annotation as a reader writes it (no module paths)."""
    if a is inspect.Parameter.empty:
        return ""
    if isinstance(a, str):
        return a
    if get_origin(a) is not None and type(a).__name__ == "_AnnotatedAlias":
        base, *meta = get_args(a)
        return f"Annotated[{annotation_text(base)}, {', '.join(map(_meta_text, meta))}]"
    if isinstance(a, type):
        return a.__name__
    return _QUALIFIED.sub(r"\1", inspect.formatannotation(a)).replace("NoneType", "None")


def _param_text(p: inspect.Parameter) -> str:
    ann = annotation_text(p.annotation)
    text = f"{p.name}: {ann}" if ann else p.name
    if p.default is not inspect.Parameter.empty:
        text += f" = {p.default!r}"
    if p.kind is p.VAR_POSITIONAL:
        text = "*" + text
    elif p.kind is p.VAR_KEYWORD:
        text = "**" + text
    return text


def signature_text(tool: Any) -> tuple[str, list[str]] | None:
    """``tool``'s Python signature as text, and its parameter names (None: unknown)."""
    name = str(getattr(tool, "name", None) or getattr(tool, "__name__", "tool"))
    fn = getattr(tool, "func", None) or getattr(tool, "coroutine", None)
    if fn is None and callable(tool) and not hasattr(tool, "args_schema"):
        fn = tool  # a plain function given as a tool
    if fn is not None:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return None
        params = [p for p in sig.parameters.values() if p.name != "self"]
        ret = annotation_text(sig.return_annotation)
        text = f"{name}({', '.join(map(_param_text, params))})" + (f" -> {ret}" if ret else "")
        return text, [p.name for p in params]
    schema = getattr(tool, "args_schema", None)
    fields = getattr(schema, "model_fields", None)
    if isinstance(fields, dict):
        parts = [f"{k}: {annotation_text(f.annotation)}" for k, f in fields.items()]
        return f"{name}({', '.join(parts)})", list(fields)
    return None


def _schema_params(schema: Any) -> tuple[str | None, set[str]]:
    """A tool schema as recorded (OpenAI's function format, or flat): name, parameters."""
    if not isinstance(schema, dict):
        return None, set()
    fn: Any = schema.get("function") if isinstance(schema.get("function"), dict) else schema
    params = fn.get("parameters") or fn.get("input_schema") or {}
    props = params.get("properties") if isinstance(params, dict) else None
    return fn.get("name"), set(props) if isinstance(props, dict) else set()


def signatures(tools: Any, schemas: Any) -> dict[str, Signature]:
    """For each tool with a readable signature: ``{"signature": text, "hidden": [...]}``,
    ``hidden`` being the parameters the model's schema leaves out (injected)."""
    props = dict(_schema_params(s) for s in schemas or ())
    out: dict[str, Signature] = {}
    for tool in tools or ():
        if isinstance(tool, dict):
            continue  # a provider's built-in tool: no Python behind it
        try:
            got = signature_text(tool)
        except Exception:  # noqa: BLE001 - an odd tool: no signature
            got = None
        if got is None:
            continue
        text, params = got
        name = str(getattr(tool, "name", ""))
        shown = props.get(name)
        hidden = [p for p in params if shown is not None and p not in shown]
        out[name] = {"signature": text, "hidden": hidden}
    return out


# -- read side ---------------------------------------------------------------------

ERROR_PATHS: dict[str, str] = {
    "validation": "its arguments failed the tool's schema, so it never ran: create_agent's "
                  "ToolNode returned the validation error as an error ToolMessage (its "
                  "default handler converts argument errors only), and the model gets it on "
                  "the next lap to correct its arguments",
    "handle_tool_error": "the tool raised a ToolException and sets handle_tool_error=True, so "
                         "LangChain turned it into this error ToolMessage and fed it back to "
                         "the model; without that flag the exception would have propagated "
                         "and failed the run",
    "handle_validation_error": "its arguments failed the tool's schema and the tool sets "
                               "handle_validation_error, so the tool itself answered with an "
                               "error ToolMessage",
    "unknown_tool": "the model asked for a tool the agent does not have, so ToolNode answered "
                    "with an error ToolMessage listing the tools it does have",
    "returned": "an error ToolMessage made by the tool itself or by a wrap_tool_call layer "
                "inside TraceMiddleware (e.g. ToolErrorMiddleware, or ToolRetryMiddleware when "
                "its retries ran out)",
}

PROPAGATES = ("By default create_agent's ToolNode turns only argument-validation errors into "
              "messages, so the exception propagates up through every wrap_tool_call layer: "
              "unless a middleware outside TraceMiddleware turns it into a ToolMessage, the "
              "run fails")
# Said where the record shows it happened (the run failed with the tool's exception).
PROPAGATED = ("By default create_agent's ToolNode turns only argument-validation errors into "
              "messages: this exception propagated up through every wrap_tool_call layer, "
              "nothing turned it into a ToolMessage, and the run failed with it")


def _model_enters(replay: Replay) -> list[Any]:
    from .records import MODEL_HOOKS

    return [e for e in replay.run.events if e.hook in MODEL_HOOKS and e.phase == "enter"
            and isinstance(e.payload, dict)]


def schema_at(replay: Replay, seq: int, name: str) -> dict[str, Any] | None:
    """The schema of tool ``name`` as the model saw it in the latest model call at or
    before event ``seq`` that wrote the tool schemas (they are written when they change)."""
    found = None
    for e in _model_enters(replay):
        if e.seq > seq:
            break
        tools = e.payload.get("tools")
        if isinstance(tools, list):
            found = next((t for t in tools if _schema_params(t)[0] == name), None)
    return found


def signature_at(replay: Replay, seq: int, name: str) -> dict[str, Any] | None:
    """``{"signature", "hidden"}`` of tool ``name`` as recorded with its schema."""
    found = None
    for e in _model_enters(replay):
        if e.seq > seq:
            break
        sigs = e.payload.get("signatures")
        if isinstance(e.payload.get("tools"), list):
            found = sigs.get(name) if isinstance(sigs, dict) else None
    return found if isinstance(found, dict) else None


@dataclass(frozen=True, slots=True)
class ToolLife:
    name: str
    tool_call_id: str | None
    args: Any  # as the model asked for them
    schema: dict[str, Any] | None  # as the model saw it
    signature: str | None  # the Python behind it
    hidden: tuple[str, ...]  # parameters injected by LangChain, not in the schema
    outcome: str | None  # how the call ended, in words (None: not ended by this step)


def _outcome(ev: Any, caption: str = "") -> str | None:
    if ev.phase == "error":
        err: ErrorPayload | dict[str, Any] = ev.payload if isinstance(ev.payload, dict) else {}
        # What became of the exception is the step's caption's (read from the record).
        return caption or f"Raised {err.get('error', 'an exception')}."
    if ev.phase == "interrupt":
        return "Paused for a human (an interrupt) inside the call."
    if ev.phase != "exit":
        return None
    # (a payload read back from JSON is what the writer built: ``ToolExitPayload``)
    p = cast("ToolExitPayload", ev.payload if isinstance(ev.payload, dict) else {})
    if p.get("status") == "error":
        path = ERROR_PATHS.get(str(p.get("error_path")), "")
        return "Came back as an error ToolMessage" + (f": {path}." if path else ".")
    if p.get("command"):
        return ("Returned a Command: its update carries the ToolMessage that answers the "
                "call (same tool_call_id), as ToolNode requires.")
    return "Returned a ToolMessage that answers the call (same tool_call_id)."


def tool_life(replay: Replay, index: int) -> ToolLife | None:
    """The tool call of step ``index`` (None at a step of no tool call): its schema as
    the model saw it, its Python signature, and how it ended as of this step."""
    from .records import TOOL_HOOKS

    if not replay.steps:
        return None
    i = replay.clamp(index)
    ev = replay.steps[i].event
    if ev.hook not in TOOL_HOOKS or not ev.tool_call_id:
        return None
    tcid = ev.tool_call_id
    enter = name = args = None
    outcome = None
    for st in replay.steps[:i + 1]:
        e = st.event
        if e.tool_call_id != tcid or e.hook not in TOOL_HOOKS:
            continue
        p: ToolEnterPayload | dict[str, Any] = e.payload if isinstance(e.payload, dict) else {}
        if e.phase == "enter" and enter is None:
            enter, name, args = e, p.get("name"), p.get("args")
        elif e.phase in ("exit", "error", "interrupt") and e.hook == ev.hook:
            outcome = _outcome(e, st.caption)
    if name is None:
        return None
    seq = enter.seq if enter is not None else ev.seq
    sig = signature_at(replay, seq, str(name)) or {}
    return ToolLife(str(name), tcid, args, schema_at(replay, seq, str(name)),
                    sig.get("signature"), tuple(sig.get("hidden") or ()), outcome)


def signature_note(replay: Replay) -> str:
    """What the inspector says where a tool's Python signature is missing: why, as the
    record shows it (TraceMiddleware records signatures with the tool schemas)."""
    from .records import MODEL_HOOKS, TOOL_HOOKS

    traced = any(e.middleware and "Trace" in e.middleware and e.phase in ("enter", "exit")
                 and (e.hook in MODEL_HOOKS or e.hook in TOOL_HOOKS) for e in replay.run.events)
    if traced:
        return "(not recorded: no model call of this run wrote the tool schemas)"
    if replay.run.observed:
        return ("(not recorded: this run was seen from outside, where a tool's Python "
                "signature never shows; TraceMiddleware records it with the tool schemas)")
    return ("(not recorded: this run was recorded without TraceMiddleware, which records a "
            "tool's Python signature with the tool schemas)")


__all__ = ["ERROR_PATHS", "PROPAGATED", "PROPAGATES", "ToolLife", "annotation_text", "schema_at",
           "signature_at", "signature_note", "signature_text", "signatures", "tool_life"]
