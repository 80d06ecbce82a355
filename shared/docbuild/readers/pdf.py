"""PDF: text per page with its page number, headings from the outline when there is one.

pypdfium2 extracts first; when it yields little text, pypdf tries too and the longer text
wins. Encrypted, corrupt and text-less (scanned) PDFs are reported, not fatal.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Self

import pypdfium2 as pdfium

from docbuild.documents import Document, FileProblem, Page, Section, SkipFile, title_from_path, wrap

if TYPE_CHECKING:
    from docbuild.config import ProcessingConfig

MIN_CHARS_PER_PAGE = 80


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)  # words hyphenated across lines
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def extract_pdfium(path: Path) -> tuple[list[str], str | None, list[tuple[int, int, str]]]:
    """Pages' text, the metadata title and the outline as (level, page index, title)."""
    try:
        pdf = pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise SkipFile("encrypted PDF (needs a password)") from None
        raise SkipFile(f"not a readable PDF ({message})") from None
    try:
        pages = []
        for index in range(len(pdf)):
            page = pdf[index]
            textpage = page.get_textpage()
            pages.append(_clean(textpage.get_text_bounded()))
            textpage.close()
            page.close()
        title = (pdf.get_metadata_dict().get("Title") or "").strip()
        title = None if not title or title.lower().endswith((".pdf", ".doc", ".docx")) else title
        outline = []
        for item in pdf.get_toc(max_depth=4):
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            heading = (item.get_title() or "").strip()
            if index is not None and heading:
                outline.append((item.level, index, heading))
        return pages, title, outline
    finally:
        pdf.close()


def extract_pypdf(path: Path) -> list[str]:
    """Pages' text with pypdf, the second extractor."""
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    if reader.is_encrypted:
        raise SkipFile("encrypted PDF (needs a password)")
    return [_clean(page.extract_text() or "") for page in reader.pages]


def _hierarchies(title: str, count: int, outline: list[tuple[int, int, str]]) -> list[list[str]]:
    """For each page, the outline path in force at its start (``[title, 'Page N']`` without one)."""
    if not outline:
        return [[title, f"Page {n + 1}"] for n in range(count)]
    result: list[list[str]] = []
    stack: list[tuple[int, str]] = []
    ordered = sorted(enumerate(outline), key=lambda item: (item[1][1], item[0]))
    position = 0
    for page in range(count):
        while position < len(ordered) and ordered[position][1][1] <= page:
            level, _, heading = ordered[position][1]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, heading))
            position += 1
        result.append([title, *(h for _, h in stack)] if stack else [title, f"Page {page + 1}"])
    return result


class PdfReader:
    """Parse ``.pdf`` files."""

    format = "pdf"

    @classmethod
    def from_config(cls, config: ProcessingConfig) -> Self:
        """The reader set up from a build's config."""
        return cls(config.url_base)

    def __init__(self, url_base: str | None = None) -> None:
        self.url_base = url_base

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one PDF; returns its document and any best-effort notes."""
        if path.stat().st_size == 0:
            raise SkipFile("empty file")
        pages, meta_title, outline = extract_pdfium(path)
        problems: list[FileProblem] = []
        if sum(len(p) for p in pages) < MIN_CHARS_PER_PAGE * max(1, len(pages)):
            try:
                second = extract_pypdf(path)
            except SkipFile:
                raise
            except Exception as exc:  # pypdf raises many types on damaged files
                second = []
                problems.append(
                    FileProblem(relative, f"second extractor failed: {exc}", skipped=False)
                )
            if sum(map(len, second)) > sum(map(len, pages)):
                pages = second
        if not any(pages):
            raise SkipFile("no extractable text (scanned or image-only PDF?)")
        title = meta_title or title_from_path(relative)
        crumbs = _hierarchies(title, len(pages), outline)
        sections = [
            Section(crumbs[n], text, anchor=f"page={n + 1}", page=n + 1)
            for n, text in enumerate(pages)
            if text.strip()
        ]
        url = f"{self.url_base.rstrip('/')}/{relative}" if self.url_base else None
        page = Page(sections, meta_title or None, url, metadata={"pages": len(pages)})
        return [wrap(page, relative)], problems
