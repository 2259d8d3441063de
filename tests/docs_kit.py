"""The documentation as the docs tests read it: README.md and every page under docs/
(docs/*.md and the folders: guide/, reference/, dev/).

A page added anywhere under docs/ is picked up with no change here: its code blocks are run by
``tests/docs/test_readme.py`` by their language tag, its facts and links checked.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"(^```[\w-]*\n.*?^```$)", re.MULTILINE | re.DOTALL)


def doc_files() -> list[Path]:
    """README.md, then every docs/**/*.md in path order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def doc_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def all_docs() -> str:
    """Every page, one after the other (a blank line between)."""
    return "\n\n".join(doc_text(p) for p in doc_files())


def code_blocks() -> list[tuple[Path, str, str, str]]:
    """(page, the heading it is under, its language tag, its code) for every fenced block."""
    out = []
    for path in doc_files():
        heading = ""
        for part in FENCE.split(doc_text(path)):
            if part.startswith("```"):
                first, rest = part.split("\n", 1)
                out.append((path, heading, first[3:], rest.rsplit("```", 1)[0]))
                continue
            found = re.findall(r"^#+ (.+)$", part, re.MULTILINE)
            if found:
                heading = found[-1]
    return out
