"""A breakpoint's condition: ``SPEC if EXPR`` (``tracer.debug.breakpoints``).

EXPR is a safe expression, never Python run as code: a breakpoint can come from MCP or
the app, written by someone (or something) other than the person who runs the agent.
It is parsed and evaluated by simpleeval (``EvalWithCompoundTypes``): comparisons,
``and`` / ``or`` / ``not``, ``in``, arithmetic, literals (also lists), ``a.b`` on an
object (for ``args``: its key ``b``) and ``a["b"]``; no imports, no function calls, no
attribute starting with ``_``. Only the names in ``NAMES`` exist: any other name (a
function's too), a syntax error, or an empty EXPR is one line when the breakpoint is
armed.

At a moment the names are (what does not apply there is empty: ``""``, ``{}``, 0):

- ``args``: the tool call's arguments (an object: ``args.order_id``);
- ``result``: the tool's result text (after a tool), the model's answer (after it);
- ``text``: the text the moment carries: the request's messages before a model call,
  the result after a tool, the error at an error, a node's input;
- ``lap``: the run's lap (its model calls so far, this one too);
- ``tool``: the tool's name; ``model``: the name of the model asked; ``node``: the
  graph node's name;
- ``hits``: how many times this breakpoint's place was reached in this run, this
  time too (``tool:search if hits >= 3``: the third search and after);
- ``tokens``: the run's tokens so far (input and output); ``cost``: the run's cost so
  far in USD, priced as ``looptrace runs`` prices it (0 when it cannot be priced).

An expression that fails at a moment (``args.order_id`` of a call with no such
argument, comparing text with a number) is false there; the first such failure of a
breakpoint is said once, as a warning.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from simpleeval import EvalWithCompoundTypes, InvalidExpression

from tracer.errors import InvalidOption

__all__ = ["NAMES", "Condition"]

NAMES = ("args", "result", "text", "lap", "tool", "model", "node", "hits", "tokens", "cost")
_CONSTANTS = ("True", "False", "None")
MAX_CHARS = 500


@dataclass(frozen=True)
class Condition:
    """A parsed condition; ``holds(moment, hits)`` says whether it is true there."""

    expr: str
    tree: Any = field(compare=False, repr=False)
    uses: frozenset[str] = field(default=frozenset(), compare=False)
    failed: list[str] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def parse(cls, expr: str, *, spec: str) -> Condition:
        if not expr.strip():
            msg = f"breakpoint {spec!r}: nothing after 'if' (e.g. 'if lap > 3')"
            raise InvalidOption(msg)
        if len(expr) > MAX_CHARS:
            msg = f"breakpoint {spec[:60]!r}...: the condition is over {MAX_CHARS} characters"
            raise InvalidOption(msg)
        try:
            tree = EvalWithCompoundTypes().parse(expr)
        except SyntaxError as exc:
            msg = f"breakpoint {spec!r}: the condition is not an expression ({exc.msg})"
            raise InvalidOption(msg) from None
        except (ValueError, RecursionError, MemoryError) as exc:
            msg = f"breakpoint {spec!r}: the condition cannot be read ({type(exc).__name__})"
            raise InvalidOption(msg) from None
        if any(isinstance(n, ast.Attribute) and n.attr.startswith("_") for n in ast.walk(tree)):
            msg = f"breakpoint {spec!r}: the condition may use no name starting with '_'"
            raise InvalidOption(msg)
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        unknown = sorted(used - set(NAMES) - set(_CONSTANTS))
        if unknown:
            msg = (f"breakpoint {spec!r}: the condition names {unknown[0]!r}, which is not "
                   f"one of: {', '.join(NAMES)}")
            raise InvalidOption(msg)
        return cls(expr, tree, frozenset(used))

    def holds(self, m: Any, hits: int) -> bool:
        names = values(m, hits, self.uses)
        try:
            ev = EvalWithCompoundTypes(names=names)
            return bool(ev.eval(self.expr, previously_parsed=self.tree))
        except (InvalidExpression, TypeError, ValueError, ArithmeticError, KeyError,
                IndexError, AttributeError, RecursionError) as exc:
            if not self.failed:
                self.failed.append(str(exc))
                import warnings

                warnings.warn(f"looptrace debug: the condition {self.expr!r} failed here "
                              f"({exc}); taken as false", RuntimeWarning, stacklevel=2)
            return False


def values(m: Any, hits: int, uses: frozenset[str] = frozenset(NAMES)) -> dict[str, Any]:
    """The names a condition sees at moment ``m`` (only those it ``uses`` are built:
    text and cost cost something)."""
    out: dict[str, Any] = {"lap": int(m.lap or 0), "hits": hits, "tool": m.tool or "",
                           "model": m.model or "", "node": m.node or "",
                           "tokens": int(m.tokens or 0),
                           "args": m.args if isinstance(m.args, dict) else {}}
    if "text" in uses:
        out["text"] = str(m.text() if m.text is not None else "")
    if "result" in uses:
        out["result"] = str(m.result() if m.result is not None else "")
    if "cost" in uses:
        c = m.cost() if m.cost is not None else None
        out["cost"] = float(c) if c is not None else 0.0
    return out
