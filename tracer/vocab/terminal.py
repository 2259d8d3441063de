"""Text for a terminal: recorded text never drives it.

Run names, tool names, messages and request paths come from agents, models and
HTTP clients; printed raw, ``ESC ] 0 ; title BEL`` sets the window title,
``ESC [ 2 J`` clears the screen, a bidi override turns the rest of a line around.
``safe_text`` shows every such character as an escape (``\\x1b``, ``\\u202e``)
and leaves all other text as it is. Every human-readable line the command line
prints goes through it; ``--json`` output is printed exact (JSON escapes C0
controls itself, and a JSON reader is no terminal).
"""

from __future__ import annotations

import re

# C0 controls but newline (and tab, with ``keep_tab``), DEL, C1 controls, the bidi
# embeddings, overrides, isolates and marks, and the line and paragraph separators
# (U+2028, U+2029: a terminal may break a line there, or not).
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}\u2028\u2029]")
_UNSAFE_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\u2028\u2029]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` (``str()`` of it) with every terminal control character escaped.

    ``keep_newlines`` leaves ``\\n`` alone, for a block of lines already laid out
    (a table, a diff); a single field (a name in a table cell) escapes it too, so
    it cannot start a line of its own. Tabs are kept."""
    s = text if isinstance(text, str) else str(text)
    pattern = _UNSAFE_KEEP_LINES if keep_newlines else _UNSAFE
    return pattern.sub(_escape, s)


def safe_print(*parts: object, sep: str = " ", **kwargs: object) -> None:
    """``print`` of ``safe_text`` lines (newlines between lines kept)."""
    print(safe_text(sep.join(str(p) for p in parts), keep_newlines=True), **kwargs)  # type: ignore[call-overload]
