"""The tools' answers as a plain Python API: Markdown for the model, structured data for programs.

Each method returns an :class:`Answer`; the MCP layer (``server.py``) only wraps it. Bad requests
raise :class:`AnswerError` with a message that says what exists or what to do instead.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .catalog import ALL_VERSIONS, FilterError
from .reading import (
    DocumentAnswer,
    DocumentInfo,
    OutlineAnswer,
    find_section,
    sections_of,
)
from .render import Counter, Renderer, breadcrumb, citation, version_tag
from .search import SearchEngine, SearchInputError, SearchResponse

OUTLINE_PAGE = 200  # documents per outline listing


def braces(text: str) -> str:
    """``text`` safe inside a ``str.format`` template."""
    return text.replace("{", "{{").replace("}", "}}")


class AnswerError(ValueError):
    """The request cannot be answered as asked; the message says why and what to do."""


@dataclass
class Answer:
    """What a tool returns: ``text`` for the model, ``data`` for programs."""

    text: str
    data: dict[str, Any]


class Answers:
    """Answers from one engine, written within ``cap`` tokens."""

    def __init__(self, engine: SearchEngine, counter: Counter, cap: int) -> None:
        self.engine = engine
        self.catalog = engine.store.catalog
        self.renderer = Renderer(counter, cap, self.catalog.several_versions)

    def _version(self, version: str | None) -> str | None:
        try:
            return self.catalog.resolve_version(version)
        except FilterError as exc:
            raise AnswerError(str(exc)) from None

    def _label(self, version: str | None) -> str | None:
        """The version as answers name it: the label, ``all``, or None without versions."""
        return version if version or not self.catalog.versions else ALL_VERSIONS

    def search(self, query: str, **options: Any) -> Answer:
        """``SearchEngine.search`` with its answer cut to the cap."""
        try:
            response = self.engine.search(query, **options)
        except SearchInputError as exc:
            raise AnswerError(str(exc)) from None
        return self.render_search(self.renderer, response, self._label(response.version))

    @staticmethod
    def render_search(renderer: Renderer, response: SearchResponse, version: str | None) -> Answer:
        """A search response as an answer within the renderer's cap (``version``: the label the
        answer names)."""
        data = response.to_dict()
        data["version"] = version
        rendered = renderer.search(data)
        if rendered.shown < len(data["results"]) or rendered.cut:
            left = len(data["results"]) - rendered.shown
            data["results"] = data["results"][: rendered.shown]
            data["notes"].append(
                f"answer limit {renderer.cap} tokens: {left} result(s) left out"
                + (", the last one shortened" if rendered.cut else "")
            )
        return Answer(rendered.text, data)

    def chunk(self, chunk_id: str) -> Answer:
        """One chunk by id."""
        store = self.engine.store
        number = store.row_of(chunk_id) if chunk_id else None
        row = None if number is None else store.rows_at([number]).get(number)
        if row is None:
            raise AnswerError(f"no chunk with id {chunk_id!r}; use the chunk_id of a search result")
        return Answer(self.renderer.chunk(row), row)

    def outline(
        self, path: str | None = None, version: str | None = None, offset: int = 0
    ) -> Answer:
        """Without ``path`` (or with a folder or glob): the documents, paged. With the path of one
        page: its heading tree with each section's chunk range."""
        resolved = self._version(version)
        if offset < 0:
            raise AnswerError(f"offset must be 0 or more (got {offset})")
        if path:
            try:
                return self._page_outline(self.catalog.document(path, resolved))
            except FilterError:
                pass  # not one page: a folder or a glob lists its documents
        documents = sorted(
            self.catalog.documents_of(resolved, path), key=lambda d: (d.path, d.version or "")
        )
        if path and not documents:
            raise AnswerError(
                f"no document matches {path!r}{self._in(resolved)}; top-level entries: "
                f"{', '.join(self.catalog.folders(resolved))}"
            )
        page = documents[offset : offset + OUTLINE_PAGE]
        label = self._label(resolved)
        scope = {None: "", ALL_VERSIONS: " in every version"}.get(label, f" in version {label}")
        scope += f" under {path!r}" if path else ""
        more = f"[More: outline(offset={{next}}{braces(self._args(path, version))})]"
        rendered = self.renderer.document_list(page, offset, len(documents), scope, more)
        shown = page[: rendered.shown]
        next_offset = offset + len(shown) if offset + len(shown) < len(documents) else None
        info = [
            DocumentInfo(d.path, d.title, d.version, d.url, d.sections, d.chunks) for d in shown
        ]
        answer = OutlineAnswer(label, info, len(documents), offset, next_offset)
        return Answer(rendered.text, asdict(answer))

    def _page_outline(self, doc: Any) -> Answer:
        rows = self.engine.store.document_rows(doc.document_id)
        sections = sections_of(rows)
        tag = version_tag(doc.version, self.catalog.several_versions)
        head = f"# {doc.title or doc.path}{tag}\n{doc.path}" + (f" · {doc.url}" if doc.url else "")
        tail = "[{left} more heading(s) left out at the {cap}-token answer limit.]"
        hint = (
            f"Read it with get_document(path={doc.path!r}), or one section with "
            f"get_document(path={doc.path!r}, section=HEADING)."
        )
        rendered = self.renderer.page_outline(head, sections, tail)
        answer = OutlineAnswer(
            doc.version,
            [],
            len(sections),
            0,
            None,
            path=doc.path,
            title=doc.title,
            url=doc.url,
            sections=sections,
        )
        return Answer(f"{rendered.text}\n\n{hint}", asdict(answer))

    def document(
        self,
        path: str,
        section: str | None = None,
        version: str | None = None,
        offset: int = 0,
    ) -> Answer:
        """A page, or one section with its subsections, in reading order from ``offset``."""
        resolved = self._version(version)
        try:
            doc = self.catalog.document(path, resolved)
        except FilterError as exc:
            raise AnswerError(str(exc)) from None
        rows = self.engine.store.document_rows(doc.document_id)
        heading: list[str] | None = None
        note = ""
        if section:
            try:
                chosen, others = find_section(sections_of(rows), section)
            except FilterError as exc:
                raise AnswerError(str(exc)) from None
            heading = chosen.path
            rows = [
                r for r in rows if list(r["section_hierarchy"] or [])[: len(heading)] == heading
            ]
            if others:
                also = ", ".join(repr(" > ".join(s.path)) for s in others[:5])
                note = f"\n(Also matching: {also}; pass the full heading path to choose.)"
        if not 0 <= offset < max(len(rows), 1):
            raise AnswerError(
                f"offset {offset} is past the end: this part has {len(rows)} chunk(s)"
            )
        part = rows[offset:]
        crumbs = breadcrumb(doc.title, heading)
        tag = version_tag(doc.version, self.catalog.several_versions)
        where = citation(part[0]) if heading else (doc.url or doc.path)
        head = f"# {crumbs}{tag}\n{where}{note}"
        if offset:
            head += f"\n(continued from chunk {offset} of {len(rows)})"
        args = f", section={section!r}" if section else ""
        call = f"get_document(path={doc.path!r}{args}{self._args(None, version)}"
        continuation = f"[Continues: {braces(call)}, offset={{next}})]"
        rendered = self.renderer.document(head, [r["content"] for r in part], continuation, offset)
        shown = part[: rendered.shown]
        end = offset + len(shown)
        answer = DocumentAnswer(
            path=doc.path,
            title=doc.title,
            version=doc.version,
            url=doc.url,
            section=heading,
            content=rendered.body,
            chunk_range=[shown[0]["chunk_index"], shown[-1]["chunk_index"]] if shown else [],
            offset=offset,
            next_offset=end if end < len(rows) else None,
            total_chunks=len(rows),
        )
        return Answer(rendered.text, asdict(answer))

    @staticmethod
    def _in(version: str | None) -> str:
        return f" in version {version!r}" if version else ""

    @staticmethod
    def _args(path: str | None, version: str | None) -> str:
        """The extra arguments a follow-up call must repeat."""
        return (f", path={path!r}" if path else "") + (f", version={version!r}" if version else "")
