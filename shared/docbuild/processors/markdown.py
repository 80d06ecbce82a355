"""Markdown: YAML front matter, heading hierarchy, fenced code blocks kept whole."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from docbuild.documents import Document, FileProblem, Section, with_description
from docbuild.processors.text import read_text

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
CUSTOM_ID = re.compile(r"\s*\{#([\w-]+)\}\s*$")


@dataclass
class Fence:
    """An open fenced code block: its marker character and length."""

    char: str
    length: int
    line: int

    def closes(self, line: str) -> bool:
        """True if ``line`` closes this fence."""
        stripped = line.strip()
        return len(stripped) >= self.length and set(stripped) == {self.char}


def open_fence(line: str, number: int) -> Fence | None:
    """Return the fence that ``line`` opens, if it opens one."""
    match = FENCE.match(line)
    if not match:
        return None
    marker = match.group("fence")
    if marker[0] == "`" and "`" in match.group("info"):
        return None  # an inline code span such as ```a``` is not a fence
    return Fence(marker[0], len(marker), number)


def fenced(code: str, language: str = "") -> str:
    """``code`` as a fenced block, its fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.rstrip()}\n{fence}"


def split_front_matter(text: str) -> tuple[dict[str, object], str, str | None]:
    """Split YAML front matter from the body; returns (metadata, body, problem or None)."""
    if not text.startswith("---\n"):
        return {}, text, None
    end = re.search(r"^(---|\.\.\.)[ \t]*$", text[4:], flags=re.MULTILINE)
    if end is None:
        return {}, text, "front matter has no closing '---'; read as body text"
    raw = text[4 : 4 + end.start()]
    body = text[4 + end.end() :].lstrip("\n")
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0]
        return {}, body, f"broken front matter ignored ({first})"
    if data is None:
        return {}, body, None
    if not isinstance(data, dict):
        return {}, body, "front matter is not a mapping; ignored"
    return data, body, None


def slugify(heading: str) -> str:
    """GitHub-style anchor for a heading."""
    text = re.sub(r"[`*_~\[\]()]", "", heading.lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r"\s", "-", text.strip())


def plain_heading(text: str) -> tuple[str, str]:
    """Return (heading text without markup or custom id, anchor)."""
    custom = CUSTOM_ID.search(text)
    if custom:
        text = text[: custom.start()]
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text).strip()
    anchor = custom.group(1) if custom else slugify(text)
    return text, anchor


def split_sections(body: str, title: str) -> tuple[list[Section], str | None]:
    """Split Markdown into sections by ATX heading, never inside a fenced code block.

    Every section's hierarchy starts with the document title (or its H1). Returns the
    sections and a problem note when a code fence is left open at the end of the file.
    """
    stack: list[tuple[int, str]] = []
    sections: list[Section] = []
    lines: list[str] = []
    anchor: str | None = None
    fence: Fence | None = None
    root = title

    def flush() -> None:
        text = "\n".join(lines).strip("\n")
        if text.strip():
            sections.append(Section([root, *(h for _, h in stack)], text, anchor))
        lines.clear()

    for number, line in enumerate(body.split("\n"), start=1):
        if fence is not None:
            lines.append(line)
            if fence.closes(line):
                fence = None
            continue
        fence = open_fence(line, number)
        if fence is not None:
            lines.append(line)
            continue
        heading = ATX_HEADING.match(line)
        if heading:
            level = len(heading.group(1))
            text, new_anchor = plain_heading(heading.group(2))
            if level == 1 and not stack and not "".join(lines).strip():
                root = text or root
            else:
                flush()
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
            anchor = new_anchor if stack else None
            lines.append(line)
            continue
        lines.append(line)
    problem = None
    if fence is not None:
        lines.append(fence.char * fence.length)
        problem = f"code fence opened at line {fence.line} is never closed; closed at end of file"
    flush()
    return merge_heading_only(sections), problem


def merge_heading_only(sections: list[Section]) -> list[Section]:
    """Fold a section that holds only its heading into the section that follows it."""
    merged: list[Section] = []
    pending: str | None = None
    for section in sections:
        text = f"{pending}\n\n{section.text}" if pending else section.text
        pending = None
        if heading_only(text):
            pending = text.strip()
            continue
        merged.append(Section(section.hierarchy, text, section.anchor, section.page))
    if pending and merged:
        merged[-1].text += f"\n\n{pending}"
    return merged


def heading_only(text: str) -> bool:
    """True when every line of ``text`` that is not blank is a heading; reads only as far as the
    first line that is not (a section's second line, mostly), not the whole text."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.strip() and not ATX_HEADING.match(line):
            return False
        start = end + 1
    return True


def document_url(
    url_base: str | None, relative: str, metadata: dict[str, object], suffix: str = ""
) -> str | None:
    """The published URL of a page made from a source file (Markdown, reStructuredText, ...).

    ``url_base`` + the path without its extension; with ``suffix`` (``url_suffix`` in the config,
    e.g. ``.html`` for a Sphinx site) that suffix is appended, otherwise ``index`` pages map to
    their folder. A front-matter ``slug`` replaces the file name (or the whole path if absolute).
    """
    if not url_base:
        return None
    base = url_base.rstrip("/")
    slug = metadata.get("slug")
    if isinstance(slug, str) and slug.startswith("/"):
        return base + slug
    stem = (
        str(PurePosixPath(relative).with_suffix(""))
        if "." in PurePosixPath(relative).name
        else relative
    )
    if isinstance(slug, str) and slug:
        stem = f"{stem.rsplit('/', 1)[0]}/{slug}" if "/" in stem else slug
    if suffix:
        return f"{base}/{stem}{suffix}"
    if stem == "index" or stem.endswith("/index") or stem.endswith("/_index"):
        stem = stem.rsplit("index", 1)[0].rstrip("_").rstrip("/")
    return f"{base}/{stem}".rstrip("/")


def title_from_path(relative: str) -> str:
    """A readable title from a file name: ``decorators/always-inline.mdx`` → ``Always inline``."""
    stem = Path(relative).stem
    if stem in {"index", "_index", "README"}:
        stem = Path(relative).parent.name or stem
    return stem.replace("-", " ").replace("_", " ").strip().capitalize()


class MarkdownProcessor:
    """Parse ``.md`` files."""

    format = "md"

    def __init__(self, url_base: str | None = None, url_suffix: str = "") -> None:
        self.url_base = url_base
        self.url_suffix = url_suffix

    def clean(self, body: str) -> str:
        """Hook for dialects (MDX) that need markup removed before sectioning."""
        return body

    def process(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one file; returns its document and any best-effort notes."""
        return self.parse(read_text(path), relative)

    def parse(self, text: str, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Parse Markdown ``text`` read from ``relative``."""
        problems: list[FileProblem] = []
        metadata, body, note = split_front_matter(text)
        if note:
            problems.append(FileProblem(relative, note, skipped=False))
        body = self.clean(body)
        named = str(metadata.get("title") or "").strip() or _first_h1(body)
        title = named or title_from_path(relative)
        sections, note = split_sections(body, title)
        if note:
            problems.append(FileProblem(relative, note, skipped=False))
        description = metadata.get("description")
        sections = with_description(
            sections, title, description if isinstance(description, str) else None
        )
        url = document_url(self.url_base, relative, metadata, self.url_suffix)
        doc = Document(
            relative,
            relative,
            title,
            sections,
            url,
            _scalar_metadata(metadata),
            title_from_path=not named,
        )
        return ([doc] if sections else []), problems


def _first_h1(body: str) -> str | None:
    fence: Fence | None = None
    for number, line in enumerate(body.split("\n")):
        if fence is not None:
            fence = None if fence.closes(line) else fence
            continue
        fence = open_fence(line, number)
        heading = ATX_HEADING.match(line) if fence is None else None
        if heading and len(heading.group(1)) == 1:
            return plain_heading(heading.group(2))[0]
    return None


def _scalar_metadata(metadata: dict[str, object]) -> dict[str, object]:
    """Keep front matter values that are plain scalars or lists of them (JSON-friendly)."""
    keep: dict[str, object] = {}
    for key, value in metadata.items():
        if isinstance(value, str | int | float | bool) or (
            isinstance(value, list) and all(isinstance(v, str | int | float) for v in value)
        ):
            keep[str(key)] = value
    return keep
