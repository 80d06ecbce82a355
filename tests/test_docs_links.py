"""Every link in the README and in docs/ leads somewhere: to a file of this repository and, when
it names an anchor, to a heading of that file (GitHub's anchors). Links are read with a Markdown
parser, not by pattern. The README stays short enough to read on one screen or two."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from conftest import REPO
from markdown_it import MarkdownIt

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
README_MAX_LINES = 200
MD = MarkdownIt("commonmark").enable("table")


def links(path: Path) -> list[str]:
    """The targets of the links and images of a Markdown file."""
    found: list[str] = []
    for token in MD.parse(path.read_text(encoding="utf-8")):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs["href"]))
            elif child.type == "image":
                found.append(str(child.attrs["src"]))
    return found


def slug(text: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated heading gets ``-1``, ``-2``...)."""
    tokens = MD.parse(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    result: set[str] = set()
    for heading, inline in itertools.pairwise(tokens):
        if heading.type != "heading_open":
            continue
        text = "".join(
            c.content for c in inline.children or [] if c.type in ("text", "code_inline")
        )
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves(document: Path):
    broken: list[str] = []
    for target in links(document):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (document.parent / unquote(file)).resolve() if file else document
        if REPO.resolve() not in [resolved, *resolved.parents]:
            broken.append(f"{target}: outside the repository")
        elif not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{document.relative_to(REPO)}: {broken}"


def test_the_readme_fits_on_a_screen_or_two():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move detail to docs/"


def test_the_link_check_catches_a_broken_link(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## Two words\n\n[ok](#two-words) [bad](#three) [gone](nothing.md)\n"
    )
    assert links(page) == ["#two-words", "#three", "nothing.md"]
    assert anchors(page) == {"title", "two-words"}
