"""Breakpoints: where and when a running agent pauses (``looptrace debug --break SPEC``).

A breakpoint is written as one word, with a value after a colon for most kinds::

    step            every hook firing (step mode)
    model           every model call, before the model is asked
    model:N         the Nth model call of the run (counted from 1)
    hook:NAME       every firing of the hook NAME (one of the six); for a wrap hook,
                    hook:NAME:before or hook:NAME:after picks one side (default: before)
    tool:NAME       every call of the tool NAME, before it runs (tool:NAME:after: after
                    it ran, with its result)
    node:NAME       the graph node NAME of any LangGraph graph (a plain StateGraph, a
                    subgraph, create_agent's own nodes), before it runs (node:NAME:after:
                    after, with the update it returned)
    lap:N           the model call of lap N and of every lap after it
    error           a tool or the model raising, or a tool result with status "error"
    finding:RULE    a finding of the checks (tracer.checks.run.RULES), once, as soon as
                    the record shows it (the model's reply included): repeated-tool-call
                    pauses after the reply that repeats the call, before it runs
    text:WORDS      a model call whose request contains WORDS (any case)
    layer:NAME      inside the layer of the middleware NAME (``trace.around``): the
                    model or tool call as NAME passes it down to the rest of the onion

Any spec may end in `` if EXPR``: it stops only when EXPR is true there
(``tool:get_order if args.order_id == 42``, ``model if lap > 3``, ``tool:search if hits
>= 3``, ``error if "timeout" in text``, ``model if tokens > 20000``). EXPR is a safe
expression (``tracer.debug.condition``, simpleeval: no code runs) over the names
``CONDITION_NAMES``.

On a graph's node (``node`` moments): ``node:`` breakpoints hit in any graph; ``step``,
``error`` and ``text:`` hit at the nodes of a graph that is not ``create_agent``'s (a
plain ``StateGraph`` and its subgraphs: there the nodes are the steps, as the
middleware's hooks are in an agent). ``text:WORDS`` there: a node whose input holds
WORDS (any case).

``parse`` turns the text into a ``Breakpoint``, or raises ``InvalidOption`` with one
line naming what is wrong; ``Breakpoint.hits(moment)`` says whether a hook firing
(a ``Moment``) stops there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from tracer.errors import InvalidOption
from tracer.vocab.hooks import HOOK_NAMES

from .condition import NAMES as CONDITION_NAMES
from .condition import Condition

__all__ = ["CONDITION_HELP", "CONDITION_NAMES", "FORMS", "KINDS", "Breakpoint", "Moment", "parse",
           "parse_all", "split_specs"]

WRAP_HOOKS = ("wrap_model_call", "wrap_tool_call")
# kind -> (the form, what it stops at): the help of ``looptrace debug`` lists them
FORMS: dict[str, tuple[str, str]] = {
    "step": ("step", "every hook firing (step mode)"),
    "model": ("model | model:N", "every model call, or the Nth (from 1), before the model"),
    "hook": ("hook:NAME[:before|:after]",
             "every firing of a hook: " + ", ".join(HOOK_NAMES)),
    "tool": ("tool:NAME[:after]",
             "every call of the tool NAME, before it runs (:after: after, with its result)"),
    "node": ("node:NAME[:before|:after]",
             ("the node NAME of any LangGraph graph (plain, subgraph, create_agent's), "
              "before it runs (:after: with the update it returned)")),
    "lap": ("lap:N", "the model call of lap N and of every later lap"),
    "error": ("error", "a tool or the model raising, or a tool result with status error"),
    "finding": ("finding:RULE", ("a finding of the checks as soon as the record shows it "
                "(e.g. repeated-tool-call, dangling-tool-call)")),
    "text": ("text:WORDS", "a model call whose request contains WORDS (any case)"),
    "layer": ("layer:NAME", ("inside the middleware NAME's layer (trace.around): the call as "
              "NAME passes it down")),
}
KINDS = tuple(FORMS)
# (shown with the forms: ``looptrace debug --help``, MCP's set_breakpoint, the app)
CONDITION_HELP = (
    "SPEC if EXPR: any spec, only when EXPR is true there (a safe expression, no code "
    "runs), e.g. 'tool:get_order if args.order_id == 42', 'model if lap > 3', "
    "'tool:search if hits >= 3', 'error if \"timeout\" in text', 'model if tokens > "
    "20000'. Names: " + ", ".join(CONDITION_NAMES))


@dataclass
class Moment:
    """One hook firing, as the breakpoints ask about it.

    ``at``: ``before`` / ``after`` the call of a wrap hook or a graph node (hook
    ``node``, named ``node``), ``fire`` for a node hook, ``error`` when the call raised,
    ``layer`` inside the layer of middleware ``layer``. ``text`` is asked for only by
    ``text:`` breakpoints and conditions (a function: building it costs), as are
    ``result`` and ``cost``. ``findings``: the rules whose findings the record shows now
    and did not at the run's previous moment (asked only by ``finding:``).
    ``in_agent``: a node of a ``create_agent`` graph (whose hooks are its steps).
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
    node: str | None = None
    in_agent: bool = False
    args: Any = None  # the tool call's arguments
    result: Any = None  # () -> str: the tool's result, the model's answer
    model: str | None = None  # the model asked
    tokens: int = 0  # the run's tokens so far
    cost: Any = None  # () -> float | None: the run's cost so far (USD)
    call_id: str | None = None  # the tool call's id (stepping into and out of it)
    ns: str | None = None  # a node's checkpoint namespace (stepping out of a subgraph)
    calls: Any = None  # () -> the tool call ids a node's update answers (after a tools node)


@dataclass(frozen=True)
class Breakpoint:
    """One parsed breakpoint; ``spec`` is the text it was written as."""

    kind: str
    value: str | None = None
    number: int | None = None
    side: str | None = None
    spec: str = field(default="", compare=False)
    cond: Condition | None = None

    def hits(self, m: Moment, hits: int = 1) -> bool:
        """``m`` is where this breakpoint stops and its condition (if any) holds there
        (``hits``: how many times its place was reached in the run, this one too)."""
        return self.at(m) and (self.cond is None or self.cond.holds(m, hits))

    def at(self, m: Moment) -> bool:
        """``m`` is where this breakpoint stops (its condition aside)."""
        k = self.kind
        if m.hook == "node":
            return self._at_node(m)
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
            return (m.hook == "wrap_tool_call" and m.at == (self.side or "before")
                    and m.tool == self.value)
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

    def _at_node(self, m: Moment) -> bool:
        k = self.kind
        if k == "node":
            return m.node == self.value and m.at == (self.side or "before")
        if m.in_agent:  # (create_agent: its hooks are the steps, its errors are the calls')
            return False
        if k == "step":
            return m.at == "before"
        if k == "error":
            return m.error
        if k == "text":
            return (m.at == "before" and m.text is not None
                    and str(self.value).lower() in m.text())
        return False


def parse(spec: str, *, rules: tuple[str, ...] = ()) -> Breakpoint:
    """The breakpoint written as ``spec``; ``InvalidOption`` (one line) if it names no
    kind, no hook, no number, or (with ``rules`` given) no rule of the checks, or its
    `` if EXPR`` is not a safe expression over ``CONDITION_NAMES``."""
    text = str(spec).strip()
    head, sep, expr = _split_condition(text)
    bp = _place(head, text, rules)
    if not sep:
        return bp
    return replace(bp, cond=Condition.parse(expr, spec=text))


def _split_condition(text: str) -> tuple[str, str, str]:
    """(the place, " if ", the expression), split at the first `` if `` (a spec's
    words cannot hold one); ``SPEC if`` with nothing after it too (then said)."""
    low = text.lower()
    i = low.find(" if ")
    if i < 0:
        if low.endswith(" if"):
            return text[:-3].strip(), " if ", ""
        return text, "", ""
    return text[:i].strip(), " if ", text[i + 4:].strip()


def _number(text: str, kind: str, rest: str) -> int:
    """``rest`` as a whole number from 1 (ASCII digits: ``²`` passes ``isdigit()`` and
    ``int()`` refuses it)."""
    if not re.fullmatch(r"[0-9]{1,9}", rest) or int(rest) < 1:
        msg = f"breakpoint {text!r}: {kind}:N needs a whole number from 1, not {rest!r}"
        raise InvalidOption(msg)
    return int(rest)


def _place(head: str, text: str, rules: tuple[str, ...] = ()) -> Breakpoint:
    kind, _, rest = head.partition(":")
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
        return Breakpoint(kind, number=_number(text, kind, rest), spec=text)
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
    if kind in ("tool", "node"):
        name, side = rest, ""
        if ":" in rest:
            name, _, side = rest.rpartition(":")
            name, side = name.strip(), side.strip().lower()
        sides = ("after",) if kind == "tool" else ("before", "after")
        if side and side not in sides:
            msg = (f"breakpoint {text!r}: {kind}:NAME takes "
                   + " or ".join(f":{x}" for x in sides) + f", not :{side}")
            raise InvalidOption(msg)
        if not name:
            msg = f"breakpoint {text!r}: {FORMS[kind][0]} needs a name"
            raise InvalidOption(msg)
        return Breakpoint(kind, value=name, side=side or None, spec=text)
    if kind == "finding" and rules and rest not in rules:
        msg = f"breakpoint {text!r}: no rule {rest!r} (rules: {', '.join(rules)})"
        raise InvalidOption(msg)
    if kind == "text":
        rest = rest.lower()
    return Breakpoint(kind, value=rest, spec=text)


# a comma that starts another spec (LOOPTRACE_DEBUG): one a condition or WORDS hold
# stays theirs
_NEXT_SPEC = re.compile(r",\s*(?=(?:" + "|".join(KINDS) + r")\b)", re.IGNORECASE)


def split_specs(text: str) -> list[str]:
    """The specs of a comma-separated list (``LOOPTRACE_DEBUG``): split at the commas
    that are followed by a kind."""
    return [s.strip() for s in _NEXT_SPEC.split(text) if s.strip()]


def parse_all(specs: Any, *, rules: tuple[str, ...] = ()) -> list[Breakpoint]:
    """Breakpoints from a list of specs or one comma-separated string (``LOOPTRACE_DEBUG``);
    ``True`` or ``"1"`` / ``"on"``: none armed yet (the debugger listens for breakpoints
    set from the app, the CLI or MCP)."""
    if specs is True or specs is None:
        return []
    if isinstance(specs, str):
        if specs.strip().lower() in ("1", "on", "true", "yes", ""):
            return []
        specs = split_specs(specs)
    return [b if isinstance(b, Breakpoint) else parse(b, rules=rules) for b in specs]
