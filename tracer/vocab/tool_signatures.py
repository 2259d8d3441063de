"""A tool's Python signature, recorded beside the schema the model saw (the write side of
``tracer.read.tool_life``).

``signatures`` runs on the writer thread with the tool schemas: for each tool of a model
call, its Python signature as text, and the parameters that the schema the model saw
leaves out (``runtime: ToolRuntime``, injected state, the call id: LangChain fills them
in, the model never sees them). Recorded in the model call's ``enter`` payload as
``signatures``, next to ``tools``, only when the schemas are written (once per run, or
when the tools change). The signature is read from the tool's function
(``StructuredTool.func`` / ``.coroutine``), else from its ``args_schema``; nothing else
is run. Nothing here reads a recorded run (``tracer.read.tool_life`` does).
"""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any, get_args, get_origin

if TYPE_CHECKING:
    from .payloads import Signature

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


def schema_params(schema: Any) -> tuple[str | None, set[str]]:
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
    props = dict(schema_params(s) for s in schemas or ())
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


__all__ = ["annotation_text", "schema_params", "signature_text", "signatures"]
