"""Breakpoints: where and when a running agent pauses (``looptrace debug --break SPEC``).

A breakpoint is written as one word, with a value after a colon for most kinds::

    step            every hook firing (step mode)
    model           every model call, before the model is asked
    model:N         the Nth model call of the run (counted from 1)
    hook:NAME       every firing of the hook NAME (one of the six); for a wrap hook,
                    hook:NAME:before or hook:NAME:after picks one side (default: before)
    tool:NAME       every call of the tool NAME, before it runs
    lap:N           the model call of lap N and of every lap after it
    error           a tool or the model raising, or a tool result with status "error"
    finding:RULE    a finding of the checks (tracer.checks.run.RULES), once, as soon as
                    the record shows it (the model's reply included): repeated-tool-call
                    pauses after the reply that repeats the call, before it runs
    text:WORDS      a model call whose request contains WORDS (any case)
    layer:NAME      inside the layer of the middleware NAME (``trace.around``): the
                    model or tool call as NAME passes it down to the rest of the onion

``parse`` turns the text into a ``Breakpoint``, or raises ``InvalidOption`` with one
line naming what is wrong; ``Breakpoint.hits(moment)`` says whether a hook firing
(a ``Moment``) stops there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracer.errors import InvalidOption
from tracer.vocab.hooks import HOOK_NAMES

__all__ = ["FORMS", "KINDS", "Breakpoint", "Moment", "parse", "parse_all"]

WRAP_HOOKS = ("wrap_model_call", "wrap_tool_call")
# kind -> (the form, what it stops at): the help of ``looptrace debug`` lists them
FORMS: dict[str, tuple[str, str]] = {
    "step": ("step", "every hook firing (step mode)"),
    "model": ("model | model:N", "every model call, or the Nth (from 1), before the model"),
    "hook": ("hook:NAME[:before|:after]",
             "every firing of a hook: " + ", ".join(HOOK_NAMES)),
    "tool": ("tool:NAME", "every call of the tool NAME, before it runs"),
    "lap": ("lap:N", "the model call of lap N and of every later lap"),
    "error": ("error", "a tool or the model raising, or a tool result with status error"),
    "finding": ("finding:RULE", ("a finding of the checks as soon as the record shows it "
                "(e.g. repeated-tool-call, dangling-tool-call)")),
    "text": ("text:WORDS", "a model call whose request contains WORDS (any case)"),
    "layer": ("layer:NAME", ("inside the middleware NAME's layer (trace.around): the call as "
              "NAME passes it down")),
}
KINDS = tuple(FORMS)


@dataclass
class Moment:
    """One hook firing, as the breakpoints ask about it.

    ``at``: ``before`` / ``after`` the call of a wrap hook, ``fire`` for a node hook,
    ``error`` when the call raised, ``layer`` inside the layer of middleware ``layer``. ``text`` is asked for only by ``text:`` breakpoints
    (a function: building it costs). ``findings``: the rules whose findings the record
    shows now and did not at the run's previous moment (asked only by ``finding:``).
    """

    hook: str
    at: str
    lap: int = 0
    model_call: int = 0  # the run's model calls so far, this one included
    tool: str | None = None
    layer: str | None = None
    error: bool = False
    text: Any = None  # () -> str
    findings: Any = None  # () -> set[str]
    reply: Any = None  # the model's reply, at a model call's ``after`` (for ``finding:``)


@dataclass(frozen=True)
class Breakpoint:
    """One parsed breakpoint; ``spec`` is the text it was written as."""

    kind: str
    value: str | None = None
    number: int | None = None
    side: str | None = None
    spec: str = field(default="", compare=False)

    def hits(self, m: Moment) -> bool:
        k = self.kind
        if k == "step":
            return True
        model_before = m.hook == "wrap_model_call" and m.at == "before"
        if k == "model":
            return model_before and (self.number is None or m.model_call == self.number)
        if k == "lap":
            return model_before and m.lap >= (self.number or 0)
        if k == "text":
            return model_before and m.text is not None and str(self.value).lower() in m.text()
        if k == "tool":
            return m.hook == "wrap_tool_call" and m.at == "before" and m.tool == self.value
        if k == "hook":
            if m.hook != self.value:
                return False
            return m.at == (self.side or "before") if m.hook in WRAP_HOOKS else True
        if k == "error":
            return m.error
        if k == "finding":
            return m.findings is not None and self.value in m.findings()
        if k == "layer":
            return m.at == "layer" and m.layer == self.value
        return False


def parse(spec: str, *, rules: tuple[str, ...] = ()) -> Breakpoint:
    """The breakpoint written as ``spec``; ``InvalidOption`` (one line) if it names no
    kind, no hook, no number, or (with ``rules`` given) no rule of the checks."""
    text = str(spec).strip()
    kind, _, rest = text.partition(":")
    kind = kind.strip().lower()
    rest = rest.strip()
    if kind not in FORMS:
        msg = (f"breakpoint {text!r}: no kind {kind!r} (one of: "
               + ", ".join(f[0] for f in FORMS.values()) + ")")
        raise InvalidOption(msg)
    if kind in ("step", "error"):
        if rest:
            msg = f"breakpoint {text!r}: {kind} takes no value"
            raise InvalidOption(msg)
        return Breakpoint(kind, spec=text)
    if kind in ("model", "lap"):
        if not rest and kind == "model":
            return Breakpoint(kind, spec=text)
        if not rest.isdigit() or int(rest) < 1:
            msg = f"breakpoint {text!r}: {kind}:N needs a whole number from 1"
            raise InvalidOption(msg)
        return Breakpoint(kind, number=int(rest), spec=text)
    if not rest:
        msg = f"breakpoint {text!r}: {FORMS[kind][0]} needs a value"
        raise InvalidOption(msg)
    if kind == "hook":
        name, _, side = rest.partition(":")
        if name not in HOOK_NAMES:
            msg = f"breakpoint {text!r}: no hook {name!r} (hooks: {', '.join(HOOK_NAMES)})"
            raise InvalidOption(msg)
        if side and (name not in WRAP_HOOKS or side not in ("before", "after")):
            msg = (f"breakpoint {text!r}: only wrap_model_call and wrap_tool_call take "
                   ":before or :after")
            raise InvalidOption(msg)
        return Breakpoint(kind, value=name, side=side or None, spec=text)
    if kind == "finding" and rules and rest not in rules:
        msg = f"breakpoint {text!r}: no rule {rest!r} (rules: {', '.join(rules)})"
        raise InvalidOption(msg)
    if kind == "text":
        rest = rest.lower()
    return Breakpoint(kind, value=rest, spec=text)


def parse_all(specs: Any, *, rules: tuple[str, ...] = ()) -> list[Breakpoint]:
    """Breakpoints from a list of specs or one comma-separated string (``LOOPTRACE_DEBUG``);
    ``True`` or ``"1"`` / ``"on"``: none armed yet (the debugger listens for breakpoints
    set from the app, the CLI or MCP)."""
    if specs is True or specs is None:
        return []
    if isinstance(specs, str):
        if specs.strip().lower() in ("1", "on", "true", "yes", ""):
            return []
        specs = [s for s in specs.split(",") if s.strip()]
    return [b if isinstance(b, Breakpoint) else parse(b, rules=rules) for b in specs]
