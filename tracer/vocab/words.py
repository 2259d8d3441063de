"""Small helpers for sentences shown to a person (captions, CLI lines, the app)."""

from __future__ import annotations

from typing import Any


def plural(n: Any, word: str, many: str | None = None) -> str:
    """``"1 message"``, ``"3 messages"``.

    Args:
        n: the count (anything that prints).
        word: the singular.
        many: an irregular plural (default: ``word + "s"``).

    Returns:
        The count and the word, as one says it.
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"


__all__ = ["plural"]
