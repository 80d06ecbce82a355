"""Split documents into chunks that fit the embedding model, code blocks kept whole.

Budgets are counted with the model's own tokenizer. A chunk's embedded text is its heading
breadcrumb plus its content, and that whole text fits ``max_tokens`` (special tokens
included), so nothing is truncated by the model. Sections split at blocks (paragraphs,
lists, tables, fenced code), then sentences, then words; a fenced code block is split only
when it alone exceeds the budget, at line boundaries, each piece re-fenced with its language.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from docserve.codeterms import code_terms

from docbuild.config import ChunkingConfig
from docbuild.documents import Document, Section
from docbuild.readers.markdown_text import Fence, open_fence

CountTokens = Callable[[list[str]], list[int]]
"""Counts wordpieces of each text, excluding the model's special tokens (a
:class:`docserve.tokens.TokenCounter`, or any function for tests)."""

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[*_`]?[A-Z0-9])")
LINE_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*+]|\d+[.)])[ \t]|[ \t]*\|)")
"""A line break before a list item or a table row: a long list or table splits there first, so
its items and rows keep their own lines."""
TABLE_DELIMITER = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
"""A table's delimiter row: ``|---|:--:|``."""


@dataclass
class Chunk:
    """One retrievable piece of a document (the runtime ``chunks`` row, minus its embedding)."""

    chunk_id: str
    document_id: str
    path: str
    title: str
    section_hierarchy: list[str]
    section_url: str | None
    url: str | None
    content: str
    token_count: int
    has_code: bool
    page: int | None
    chunk_index: int
    content_hash: str
    title_from_path: bool = False
    version: str | None = None  # the documentation version's label; None when unversioned
    code_terms: str = ""  # the identifiers' parts (docserve.codeterms) of breadcrumb and content

    @property
    def embedding_text(self) -> str:
        """What the model embeds: the breadcrumb, a blank line, the content."""
        return embedding_text(embedded_breadcrumb(self.section_hierarchy, self), self.content)


def embedded_breadcrumb(hierarchy: list[str], doc: Document | Chunk) -> list[str]:
    """The breadcrumb that is embedded: without a title made from the file name, so that renaming
    the file changes no embedded text (nothing is embedded again)."""
    if doc.title_from_path and hierarchy[:1] == [doc.title]:
        return hierarchy[1:]
    return hierarchy


def embedding_text(hierarchy: list[str], content: str) -> str:
    """The text embedded for a chunk with this breadcrumb and content."""
    return f"{' > '.join(hierarchy)}\n\n{content}" if hierarchy else content


def text_hash(text: str) -> str:
    """SHA-256 of ``text`` (UTF-8), hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Unit:
    """An indivisible piece of a section: a sentence, a table row run or a code block (piece)."""

    text: str
    tokens: int
    code: bool
    sep: str  # whitespace joining it to the previous unit when both are in one chunk
    header: str | None = None  # a table row's header and delimiter rows, repeated in a new chunk


def split_blocks(text: str) -> list[tuple[str, bool]]:
    """Split section text into (block, is_code) at blank lines, fenced code kept whole."""
    blocks: list[tuple[str, bool]] = []
    prose: list[str] = []
    code: list[str] = []
    fence: Fence | None = None

    def flush_prose() -> None:
        joined = "\n".join(prose).strip("\n")
        for part in re.split(r"\n[ \t]*\n", joined):
            if part.strip():
                blocks.append((part.rstrip(), False))
        prose.clear()

    for number, line in enumerate(text.split("\n")):
        if fence is not None:
            code.append(line)
            if fence.closes(line):
                blocks.append(("\n".join(code), True))
                code.clear()
                fence = None
            continue
        fence = open_fence(line, number)
        if fence is not None:
            flush_prose()
            code.append(line)
        else:
            prose.append(line)
    if code:  # unclosed: close it so every chunk stays balanced
        blocks.append(("\n".join([*code, fence.char * fence.length if fence else "```"]), True))
    flush_prose()
    return blocks


def table_header(block: str) -> str | None:
    """The header and delimiter rows of a Markdown table block (None: not a table)."""
    lines = block.split("\n", 2)
    if len(lines) > 2 and lines[0].lstrip().startswith("|") and TABLE_DELIMITER.match(lines[1]):
        return f"{lines[0]}\n{lines[1]}"
    return None


def sentence_spans(block: str) -> list[tuple[str, str]]:
    """A prose block's sentences and list items, each with the separator that preceded it."""
    spans: list[tuple[str, str]] = []
    start, sep = 0, ""
    for match in sorted(
        [*LINE_ITEM.finditer(block), *SENTENCE_END.finditer(block)], key=lambda m: m.start()
    ):
        if match.start() < start:  # a sentence end that spans a list item's line break
            continue
        spans.append((block[start : match.start()], sep))
        start, sep = match.end(), match.group()
    spans.append((block[start:], sep))
    return spans


def fence_balanced(content: str) -> bool:
    """True when every code fence opened in ``content`` is closed in it."""
    fence: Fence | None = None
    for number, line in enumerate(content.split("\n")):
        if fence is not None:
            fence = None if fence.closes(line) else fence
        else:
            fence = open_fence(line, number)
    return fence is None


class Chunker:
    """Turns documents into chunks within a token budget."""

    def __init__(self, count_tokens: CountTokens, config: ChunkingConfig | None = None) -> None:
        self.count_tokens = count_tokens
        self.config = config or ChunkingConfig()
        self.max_content = self.config.max_tokens - 2  # [CLS] and [SEP]
        self.known: dict[str, int] = {}  # counts of the current document's pieces
        self.spans: dict[str, list[tuple[str, str]]] = {}  # its prose blocks' sentences

    def count(self, texts: list[str]) -> list[int]:
        """Tokens per text; pieces counted earlier for this document are not counted again."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.known))
        if missing:
            self.known.update(zip(missing, self.count_tokens(missing), strict=True))
        return [self.known[t] for t in texts]

    def _count_pieces(self, doc: Document) -> None:
        """Count every breadcrumb, code block and sentence of ``doc`` in one call, so the
        tokenizer sees one large batch (which it spreads over the cores) instead of many small
        ones."""
        self.known, self.spans = {}, {}
        pieces: list[str] = []
        for section in doc.sections:
            crumbs = [h for h in section.hierarchy if h.strip()]
            pieces += [" > ".join(crumbs), *crumbs]
            for block, is_code in split_blocks(section.text):
                if is_code:
                    pieces.append(block)
                else:
                    self.spans[block] = sentence_spans(block)
                    pieces += [span for span, _ in self.spans[block]]
        self.count(pieces)

    def chunk_documents(self, documents: Iterable[Document]) -> list[Chunk]:
        """Chunk every document, in order."""
        return [chunk for doc in documents for chunk in self.chunk_document(doc)]

    def chunk_document(self, doc: Document) -> list[Chunk]:
        """Chunk one document; ``chunk_index`` runs across its sections."""
        chunks: list[Chunk] = []
        seen: dict[str, int] = {}
        self._count_pieces(doc)
        for section in doc.sections:
            hierarchy = self._breadcrumb(section.hierarchy)
            budget = self.max_content - (self.count([" > ".join(hierarchy)])[0] if hierarchy else 0)
            for content, tokens, has_code in self._pack(self._units(section.text, budget), budget):
                digest = text_hash(embedding_text(embedded_breadcrumb(hierarchy, doc), content))
                occurrence = seen.get(digest, 0)
                seen[digest] = occurrence + 1
                chunk_id = text_hash(f"{doc.document_id}\0{digest}\0{occurrence}")[:24]
                chunks.append(
                    Chunk(
                        chunk_id=chunk_id,
                        document_id=doc.document_id,
                        path=doc.path,
                        title=doc.title,
                        section_hierarchy=hierarchy,
                        section_url=_section_url(doc.url, section),
                        url=doc.url,
                        content=content,
                        token_count=tokens,
                        has_code=has_code,
                        page=section.page,
                        chunk_index=len(chunks),
                        content_hash=digest,
                        title_from_path=doc.title_from_path,
                        version=doc.version,
                        code_terms=code_terms(f"{' '.join(hierarchy)} {content}"),
                    )
                )
        return chunks

    def _breadcrumb(self, hierarchy: list[str]) -> list[str]:
        """Drop the outermost headings while the breadcrumb exceeds its token cap."""
        crumbs = [h for h in hierarchy if h.strip()]
        while (
            len(crumbs) > 1
            and self.count([" > ".join(crumbs)])[0] > self.config.max_breadcrumb_tokens
        ):
            crumbs = crumbs[1:]
        if crumbs and self.count(crumbs[:1])[0] > self.config.max_breadcrumb_tokens:
            crumbs = [" ".join(crumbs[0].split()[:20])]
        return crumbs

    def _units(self, text: str, budget: int) -> list[Unit]:
        units: list[Unit] = []
        for block, is_code in split_blocks(text):
            pieces = self._code_pieces(block, budget) if is_code else self._sentences(block, budget)
            header = None if is_code else table_header(block)
            for n, (piece, tokens, sep) in enumerate(pieces):
                row = piece.lstrip().startswith("|") and piece not in str(header).split("\n")
                units.append(
                    Unit(piece, tokens, is_code, "\n\n" if n == 0 else sep, header if row else None)
                )
        return units

    def _code_pieces(self, block: str, budget: int) -> list[tuple[str, int, str]]:
        tokens = self.count([block])[0]
        if tokens <= budget:
            return [(block, tokens, "\n")]
        lines = block.split("\n")
        opening, body = lines[0], lines[1:]
        fence = open_fence(opening, 0)
        marker = fence.char * fence.length if fence else "```"
        closing = body.pop() if body and fence and fence.closes(body[-1]) else marker
        if self.count([opening])[0] > budget // 4:  # a long info string: keep its first word
            opening = opening.split()[0]
        fence_tokens = sum(self.count([opening, closing]))
        room = max(8, budget - fence_tokens)
        pieces: list[tuple[str, int, str]] = []
        current: list[str] = []
        used = 0
        for line, count in zip(body, self.count(body) if body else [], strict=True):
            parts = [(line, count)] if count <= room else self._words(line, room)
            for part, part_count in parts:
                if current and used + part_count > room:
                    pieces.append(
                        ("\n".join([opening, *current, closing]), used + fence_tokens, "\n")
                    )
                    current, used = [], 0
                current.append(part)
                used += part_count
        if current:
            pieces.append(("\n".join([opening, *current, closing]), used + fence_tokens, "\n"))
        return pieces

    def _sentences(self, block: str, budget: int) -> list[tuple[str, int, str]]:
        spans = self.spans.get(block) or sentence_spans(block)
        counts = self.count([s for s, _ in spans])
        result: list[tuple[str, int, str]] = []
        for (sentence, sep), count in zip(spans, counts, strict=True):
            if count <= budget:
                result.append((sentence, count, sep))
                continue
            for n, (part, part_count) in enumerate(self._words(sentence, budget)):
                result.append((part, part_count, sep if n == 0 else " "))
        return result

    def _words(self, text: str, budget: int) -> list[tuple[str, int]]:
        """Split an over-long run of text at spaces (or characters) into pieces within ``budget``."""
        words = text.split()
        counts = self.count(words)
        pieces: list[tuple[str, int]] = []
        current: list[str] = []
        used = 0
        for word, count in zip(words, counts, strict=True):
            if count > budget:  # one enormous "word" (minified code, a hash dump)
                step = max(1, len(word) * budget // (count + 1))
                for i in range(0, len(word), step):
                    piece = word[i : i + step]
                    pieces.append((piece, self.count([piece])[0]))
                continue
            if current and used + count > budget:
                pieces.append((" ".join(current), used))
                current, used = [], 0
            current.append(word)
            used += count
        if current:
            pieces.append((" ".join(current), used))
        return pieces

    def _pack(self, units: list[Unit], budget: int) -> list[tuple[str, int, bool]]:
        """Greedily fill chunks with units, carrying up to ``overlap_tokens`` of prose forward."""
        chunks: list[tuple[str, int, bool]] = []
        current: list[Unit] = []
        used = 0

        def emit() -> None:
            content = current[0].text + "".join(u.sep + u.text for u in current[1:])
            chunks.append((content.strip("\n"), used, any(u.code for u in current)))

        for unit in units:
            if current and used + unit.tokens > budget:
                emit()
                carried = self._overlap(current, budget - unit.tokens)
                if unit.header:
                    carried = self._with_header(unit, carried, budget)
                current, used = carried, sum(u.tokens for u in carried)
            current.append(unit)
            used += unit.tokens
        if current:
            emit()
        return chunks

    def _with_header(self, row: Unit, carried: list[Unit], budget: int) -> list[Unit]:
        """What a chunk that continues a table starts with: the table's header rows, then the
        rows carried over, so its rows keep their column names (as far as the budget allows)."""
        header = str(row.header)
        head = Unit(header, self.count([header])[0], False, "\n\n")
        rows = [u for u in carried if u.header == header]
        if rows == carried and head.tokens + sum(u.tokens for u in rows) + row.tokens <= budget:
            return [head, *rows]
        return [head] if head.tokens + row.tokens <= budget else carried

    def _overlap(self, previous: list[Unit], room: int) -> list[Unit]:
        """Trailing prose units of the previous chunk, within the overlap and the room left."""
        limit = min(self.config.overlap_tokens, room)
        carried: list[Unit] = []
        total = 0
        for unit in reversed(previous[1:]):
            if unit.code or total + unit.tokens > limit:
                break
            carried.insert(0, unit)
            total += unit.tokens
        return carried


def _section_url(url: str | None, section: Section) -> str | None:
    if not url:
        return None
    return f"{url}#{section.anchor}" if section.anchor else url
