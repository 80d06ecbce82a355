"""Markdown: YAML front matter, then the body read by a CommonMark parser
(:mod:`docbuild.readers.commonmark`) into sections by heading, code blocks kept whole."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from docbuild.confine import inside, refused_include, source_root
from docbuild.documents import Document, FileProblem, Page, title_from_path, wrap
from docbuild.readers.commonmark import Include, sections_of
from docbuild.readers.source import SourceReader
from docbuild.readers.text import read_text


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


class MarkdownReader(SourceReader):
    """Parse ``.md`` files."""

    format = "md"

    def clean(self, body: str) -> str:
        """Hook for dialects (MDX) that need markup removed before sectioning."""
        return body

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one file; returns its document and any best-effort notes."""
        return self.parse(read_text(path), relative, path)

    def parse(
        self, text: str, relative: str, path: Path | None = None
    ) -> tuple[list[Document], list[FileProblem]]:
        """Parse Markdown ``text`` read from ``relative`` (at ``path``, whose includes are read
        from the source folder)."""
        problems: list[FileProblem] = []
        metadata, body, note = split_front_matter(text)
        if note:
            problems.append(FileProblem(relative, note, skipped=False))
        body = self.clean(body)
        given = str(metadata.get("title") or "").strip() or None
        url = self.url(relative, metadata)
        include = self.includer(path, relative)
        read = sections_of(body, given, title_from_path(relative), include, url)
        if read.unclosed_fence is not None:
            note = f"code fence opened at line {read.unclosed_fence} is never closed; closed at end of file"
            problems.append(FileProblem(relative, note, skipped=False))
        description = metadata.get("description")
        page = Page(
            read.sections,
            read.title if read.named else None,
            url,
            description if isinstance(description, str) else None,
            _scalar_metadata(metadata),
            self.read_includes,
        )
        doc = wrap(page, relative)
        return ([doc] if doc.sections else []), problems + self.refused

    def includer(self, path: Path | None, relative: str) -> Include | None:
        """Reads the files a page includes (Hugo's ``include``), from the source folder's root;
        an include that leads out of it is refused and reported."""
        self.read_includes: list[str] = []
        self.refused: list[FileProblem] = []
        if path is None or not relative or not str(path).endswith(relative):
            return None
        root = source_root(path, relative)

        def read(name: str) -> str | None:
            target = root / name.lstrip("/")
            if not inside(root, target):
                self.refused.append(refused_include(relative, name))
                return None
            if not target.is_file():
                return None
            self.read_includes.append(str(target.resolve()))
            try:
                return read_text(target)
            except (OSError, ValueError):
                return None

        return read


def _scalar_metadata(metadata: dict[str, object]) -> dict[str, object]:
    """Keep front matter values that are plain scalars or lists of them (JSON-friendly)."""
    keep: dict[str, object] = {}
    for key, value in metadata.items():
        if isinstance(value, str | int | float | bool) or (
            isinstance(value, list) and all(isinstance(v, str | int | float) for v in value)
        ):
            keep[str(key)] = value
    return keep
