"""Jupyter notebooks: Markdown cells as Markdown, code cells as fenced code, short text outputs.

The notebook is read with ``json`` (nbformat 4, and 3's ``worksheets``), turned into one
Markdown body and sectioned by the Markdown reader, so headings in Markdown cells make the
breadcrumb. Images, HTML, widget state and other rich outputs are dropped; text outputs are
kept up to ``MAX_OUTPUT_LINES`` lines and ``MAX_OUTPUT_CHARS`` characters.
"""

from __future__ import annotations

import json
from pathlib import Path

from docbuild.documents import Document, FileProblem, SkipFile
from docbuild.readers.markdown import MarkdownReader
from docbuild.readers.markdown_text import fenced
from docbuild.readers.text import read_text

MAX_OUTPUT_LINES = 12
MAX_OUTPUT_CHARS = 800


def _text(value: object) -> str:
    """Notebook text fields are a string or a list of lines."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def _language(notebook: dict) -> str:
    metadata = notebook.get("metadata") or {}
    info = metadata.get("language_info") or {}
    kernel = metadata.get("kernelspec") or {}
    return str(info.get("name") or kernel.get("language") or "python").lower()


def _cells(notebook: dict) -> list[dict]:
    if "cells" in notebook:
        return [c for c in notebook["cells"] if isinstance(c, dict)]
    return [  # nbformat 3
        c for sheet in notebook.get("worksheets") or [] for c in sheet.get("cells") or []
    ]


def _output_text(output: dict) -> str:
    """The text of one output: streams, plain-text results and error names; nothing else."""
    kind = output.get("output_type")
    if kind == "stream":
        return _text(output.get("text"))
    if kind in ("execute_result", "display_data", "pyout"):
        data = output.get("data") or {}
        return _text(data.get("text/plain", output.get("text")))
    if kind in ("error", "pyerr"):
        return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"
    return ""


def shorten(text: str) -> str:
    """At most ``MAX_OUTPUT_LINES`` lines and ``MAX_OUTPUT_CHARS`` characters, marked when cut."""
    lines = text.rstrip("\n").split("\n")
    short = "\n".join(lines[:MAX_OUTPUT_LINES])[:MAX_OUTPUT_CHARS]
    return short if short == text.rstrip("\n") else short.rstrip() + "\n…"


def to_markdown(notebook: dict) -> str:
    """One Markdown body for the whole notebook."""
    language = _language(notebook)
    parts: list[str] = []
    for cell in _cells(notebook):
        kind = cell.get("cell_type")
        source = _text(cell.get("source", cell.get("input"))).strip("\n")
        if kind == "markdown" and source.strip():
            parts.append(source)
        elif kind == "heading" and source.strip():  # nbformat 3
            parts.append(f"{'#' * int(cell.get('level', 1))} {source.strip()}")
        elif kind == "code" and source.strip():
            parts.append(fenced(source, language))
            outputs = [_output_text(o) for o in cell.get("outputs") or [] if isinstance(o, dict)]
            text = "\n".join(t.rstrip("\n") for t in outputs if t.strip())
            if text:
                parts.append("Output:\n\n" + fenced(shorten(text), "text"))
    return "\n\n".join(parts) + "\n"


class NotebookReader(MarkdownReader):
    """Parse ``.ipynb`` files."""

    format = "notebook"

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one notebook; a file that is not notebook JSON is skipped with the reason."""
        try:
            notebook = json.loads(read_text(path))
        except json.JSONDecodeError as exc:
            raise SkipFile(f"not a notebook: invalid JSON at line {exc.lineno}") from None
        if not isinstance(notebook, dict) or not _cells(notebook):
            raise SkipFile("not a notebook: no cells")
        return self.parse(to_markdown(notebook), relative)
