"""The exception at an error pause, as the person debugging needs it: its type, its
message and the traceback frames of their own code (not LangChain's, LangGraph's,
looptrace's or Python's own), as JSON in what is pending (``pending["exception"]``,
which the terminal, the app and MCP ``get_pending`` show) and as lines of text.

Example:
    ```python
    try:
        {}["XYZ"]
    except KeyError as exc:
        print("\\n".join(raised_lines({"exception": exception_json(exc)})))
    ```
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from functools import cache
from typing import Any

__all__ = ["MAX_FRAMES", "exception_json", "raised_lines"]

MAX_FRAMES = 12  # the innermost frames of the user's code
MAX_MESSAGE = 2_000  # characters of the exception's message


@cache
def _not_users() -> tuple[str, ...]:
    """Folders whose files are not the user's code: the installed packages, Python's
    own library, and looptrace."""
    paths = sysconfig.get_paths()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # (tracer/)
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.abspath(d) + os.sep for d in {*dirs, here} if d)


def _users(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return not any(path.startswith(d) for d in _not_users()) and (
        f"{os.sep}site-packages{os.sep}" not in path)


def exception_json(exc: BaseException) -> dict[str, Any]:
    """``{"type", "message", "frames": [{"file", "line", "function", "code"}]}``: the
    frames of the user's code the exception passed through, outermost first (the
    innermost ``MAX_FRAMES``)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _users(f.filename)]
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else (
        f"{kind.__module__}.{kind.__qualname__}")
    return {
        "type": name,
        "message": str(exc)[:MAX_MESSAGE],
        "frames": [{"file": f.filename, "line": f.lineno, "function": f.name,
                    "code": (f.line or "")[:300]} for f in frames[-MAX_FRAMES:]],
    }


def raised_lines(pend: dict[str, Any]) -> list[str]:
    """What an error pause shows: ``Type: message``, then each frame of the user's code
    as a traceback prints it (two lines a frame); the recorded ``repr`` when the pause
    holds no ``exception`` (a file written before it did)."""
    exc = pend.get("exception")
    if not isinstance(exc, dict):
        return [str(pend.get("error") or "")]
    message = str(exc.get("message") or "")
    out = [f"{exc.get('type')}: {message}" if message else str(exc.get("type"))]
    frames = exc.get("frames") or []
    if frames:
        out.append("Traceback (your code, most recent call last):")
    for f in frames:
        out.append(f'  File "{f.get("file")}", line {f.get("line")}, in {f.get("function")}')
        if f.get("code"):
            out.append(f"    {f['code']}")
    return out
