"""JSONL exports: one document per line (BEIR's ``corpus.jsonl`` as is by default)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Self

from docbuild.config import JsonlConfig, ProcessingConfig
from docbuild.documents import Document, FileProblem, Page, Section, wrap
from docbuild.links import url_of_path
from docbuild.readers.text import read_text


class JsonlReader:
    """Parse ``.jsonl`` files; the record's id becomes its ``document_id``."""

    format = "jsonl"

    @classmethod
    def from_config(cls, config: ProcessingConfig) -> Self:
        """The reader set up from a build's config."""
        return cls(config.url_base, config.jsonl)

    def __init__(self, url_base: str | None = None, fields: JsonlConfig | None = None) -> None:
        self.url_base = url_base
        self.fields = fields or JsonlConfig()

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read every record; a bad line is reported and skipped, the rest is kept."""
        documents: list[Document] = []
        bad: list[str] = []
        seen: set[str] = set()
        for number, line in enumerate(read_text(path).split("\n"), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                bad.append(f"line {number}: invalid JSON ({exc.msg})")
                continue
            doc, reason = self._document(record, relative)
            if doc is None:
                bad.append(f"line {number}: {reason}")
            elif doc.document_id in seen:
                bad.append(f"line {number}: duplicate id {doc.document_id!r}")
            else:
                seen.add(doc.document_id)
                documents.append(doc)
        problems = []
        if bad:
            shown = "; ".join(bad[:5]) + (f"; and {len(bad) - 5} more" if len(bad) > 5 else "")
            problems.append(
                FileProblem(relative, f"{len(bad)} record(s) skipped: {shown}", skipped=False)
            )
        return documents, problems

    def _document(self, record: object, relative: str) -> tuple[Document | None, str]:
        if not isinstance(record, dict):
            return None, "not a JSON object"
        doc_id = next(
            (record[f] for f in self.fields.id_fields if record.get(f) not in (None, "")), None
        )
        if doc_id is None:
            return None, f"no id (looked for {', '.join(self.fields.id_fields)})"
        text = str(record.get(self.fields.text_field) or "").strip()
        title = str(record.get(self.fields.title_field) or "").strip()
        if not text and not title:
            return None, f"no {self.fields.text_field!r} or {self.fields.title_field!r}"
        doc_id = str(doc_id)
        title = title or doc_id
        given = record.get(self.fields.url_field)
        url = given if isinstance(given, str) and given.strip() else None
        if url is None and self.url_base:
            url = url_of_path(self.url_base, doc_id)
        page = Page([Section([title], text or title)], title, url, document_id=doc_id)
        return wrap(page, relative), ""
