"""Every relative link and picture in README.md and every page under docs/ leads
somewhere: the file exists, and an ``#anchor`` names a heading of the page it points to
(GitHub's slugs).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_kit import FENCE, ROOT, doc_files, doc_text

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    prose = FENCE.sub("", doc_text(path))
    return {slug(h) for h in re.findall(r"^#+ (.+)$", prose, re.MULTILINE)}


def links(path: Path) -> list[str]:
    """The relative targets of the page's links and pictures (outside code blocks)."""
    prose = re.sub(r"`[^`\n]*`", "", FENCE.sub("", doc_text(path)))
    return [t for t in LINK.findall(prose) if not re.match(r"[a-z]+:", t)]


def broken(path: Path) -> list[str]:
    out = []
    for target in links(path):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            out.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            out.append(f"{target}: no heading #{anchor} in {file or path.name}")
    return out


@pytest.mark.parametrize("page", doc_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_broken_relative_link(page: Path) -> None:
    assert broken(page) == []


def test_the_readme_links_the_docs_and_shows_the_app() -> None:
    """(the test above has links to follow: the README's tour and its list of pages)"""
    readme = links(ROOT / "README.md")
    assert sum(t.startswith("docs/img/") for t in readme) >= 4
    assert {"docs/guide/tracing.md", "docs/reference/cli.md", "docs/reference/schema.md",
            "docs/dev/performance.md", "docs/guide/workshop.md", "docs/guide/wire.md",
            "docs/glossary.md", "docs/dev/README.md"} <= set(readme)
    assert "glossary.md" in " ".join(links(ROOT / "docs" / "dev" / "README.md"))


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    """The checker itself: a missing file, a missing anchor, a good link of each kind."""
    (tmp_path / "other.md").write_text("# Other page\n\n## A `code` heading: yes\n")
    (tmp_path / "img.png").write_bytes(b"")
    page = tmp_path / "page.md"
    page.write_text("# Page\n\n[ok](other.md) [ok](other.md#a-code-heading-yes) "
                    "![ok](img.png) [ok](#page) [web](https://example.com/x)\n"
                    "[bad](missing.md) [bad](other.md#nowhere) ![bad](img/none.png)\n"
                    "```text\n[not a link](inside-code.md)\n```\n")
    assert broken(page) == ["missing.md: no such file",
                            "other.md#nowhere: no heading #nowhere in other.md",
                            "img/none.png: no such file"]
