"""What the model reads: each tool's answer as compact Markdown, within a token cap.

A search result is a header line (rank, title › headings, version when the server has several),
a citation line (the URL with its anchor, or path and page), then the passage. No ids, scores or
nulls: programs read those from the structured content. An answer that would exceed the cap is
cut at a passage boundary and says what was left out and how to get it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .catalog import DocumentEntry
from .context import merge_overlapping, overlap_length
from .reading import HeadingSpan


class Counter(Protocol):
    """Counts and cuts text in tokens."""

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, budget: int) -> str: ...


class CharCounter:
    """A stand-in when the model's tokenizer is missing: four characters per token."""

    def count(self, text: str) -> int:
        """Estimated tokens of ``text``."""
        return (len(text) + 3) // 4

    def truncate(self, text: str, budget: int) -> str:
        """About ``budget`` tokens of ``text``."""
        return text[: max(budget, 0) * 4]


def breadcrumb(title: str, hierarchy: list[str] | None) -> str:
    """``Title › Heading › Subheading`` without repeating a title that is also the first heading."""
    crumbs = [h for h in hierarchy or [] if h]
    if title and (not crumbs or crumbs[0] != title):
        crumbs.insert(0, title)
    return " › ".join(crumbs) or "(untitled)"


def citation(item: dict[str, Any]) -> str:
    """Where a passage is from: its section URL, else page URL, else path; with the PDF page."""
    where = item.get("section_url") or item.get("url") or item.get("path") or ""
    page = item.get("page")
    return f"{where}, page {page}" if page and not where.endswith(f"#page={page}") else where


def without_heading(passage: str, heading: str) -> str:
    """``passage`` without its first line when that line is ``heading`` (the header says it)."""
    first, _, rest = passage.partition("\n")
    if heading and first.lstrip("#").strip() == heading and first.startswith("#"):
        return rest.lstrip("\n") or passage
    return passage


@dataclass
class Earlier:
    """A better-ranked result with the same link as this one (and perhaps the same section)."""

    rank: int
    same_section: bool


MIN_REPEAT = 24  # shorter overlaps between neighbouring chunks are left alone


@dataclass
class Linked:
    """A result's passage without the text that a better result next to it already shows."""

    passage: str
    notes: list[str]  # "continues [2]" and/or "leads into [3]"


def without_repeats(results: list[dict[str, Any]]) -> list[Linked | None]:
    """For each result, its passage without the overlap it shares with a better-ranked result
    that is its neighbour in the same document (consecutive chunks repeat the carried prose)."""
    shown: dict[tuple[str, int], tuple[int, str]] = {}
    linked: list[Linked | None] = []
    for rank, item in enumerate(results, 1):
        if item.get("chunk_range") is not None:  # a merged neighbourhood: shown as it is
            linked.append(None)
            continue
        passage, notes = item["content"], []
        where = (item.get("document_id") or "", item.get("chunk_index", -1))
        before = shown.get((where[0], where[1] - 1))
        after = shown.get((where[0], where[1] + 1))
        if before and (size := overlap_length(before[1], passage)) >= MIN_REPEAT:
            passage = "…" + passage[size:]
            notes.append(f"continues [{before[0]}]")
        if after and (size := overlap_length(passage, after[1])) >= MIN_REPEAT:
            passage = passage[:-size] + "…"
            notes.append(f"leads into [{after[0]}]")
        shown[where] = (rank, item["content"])
        linked.append(Linked(passage, notes) if notes else None)
    return linked


def library_tag(item: dict[str, Any]) -> str:
    """``mojo: `` before a hub's result or section (empty on a single server)."""
    return f"{item['library']}: " if item.get("library") else ""


def version_tag(version: str | None, show: bool) -> str:
    """`` (version 25.7)`` when answers must name their version."""
    return f" (version {version})" if show and version else ""


def cut_passage(text: str, budget: int, counter: Counter) -> str:
    """At most ``budget`` tokens of ``text``, ending at a paragraph or line boundary when one is
    close enough, and never inside an unclosed code fence."""
    cut = counter.truncate(text, budget)
    if len(cut) >= len(text):
        return text
    for boundary in ("\n\n", "\n"):
        at = cut.rfind(boundary)
        if at > len(cut) // 2:
            cut = cut[:at]
            break
    if cut.count("```") % 2:
        cut += "\n```"
    return cut.rstrip() + "\n[…]"


@dataclass
class Rendered:
    """A tool's text, and how many of its items fit the cap."""

    text: str
    shown: int
    cut: bool = False  # the last item shown was itself shortened
    body: str = ""  # get_document: the page text alone, without header and continuation


class Renderer:
    """Writes answers for the model within ``cap`` tokens."""

    def __init__(self, counter: Counter, cap: int, several_versions: bool) -> None:
        self.counter = counter
        self.cap = cap
        self.several_versions = several_versions

    def fit(self, head: str, blocks: list[str], tail_if_cut: str, footer: str = "") -> Rendered:
        """``head`` then as many ``blocks`` as fit (the first is shortened if it alone is over);
        ``tail_if_cut`` (with ``{left}`` for the number left out) ends a shortened answer, and
        ``footer`` ends every answer."""
        reserve = self.counter.count(tail_if_cut) + 8
        used = self.counter.count(head) + (self.counter.count(footer) + 2 if footer else 0)
        parts = [head] if head else []
        shown, cut = 0, False
        for block in blocks:
            tokens = self.counter.count(block)
            if used + tokens + reserve > self.cap:
                if shown == 0:
                    parts.append(cut_passage(block, self.cap - used - reserve, self.counter))
                    shown, cut = 1, True
                break
            parts.append(block)
            used += tokens
            shown += 1
        if shown < len(blocks) or cut:
            parts.append(tail_if_cut.format(left=len(blocks) - shown, cap=self.cap))
        if footer:
            parts.append(footer)
        return Rendered("\n\n".join(parts), shown, cut)

    def result_block(
        self,
        rank: int | None,
        item: dict[str, Any],
        link: Linked | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        """Header (``[rank] title › headings``), citation and passage of one result or chunk.
        What an ``earlier`` result already said (its section, its link) is referred to, not
        repeated."""
        hierarchy = item.get("section_hierarchy") or []
        number = f"[{rank}] " if rank is not None else ""
        notes = "; ".join(link.notes) if link else ""
        passage = without_heading(
            (link.passage if link else item["content"]).strip(), hierarchy[-1] if hierarchy else ""
        )
        if earlier and earlier.same_section:
            return f"{number}{notes or f'same section as [{earlier.rank}]'}\n{passage}"
        crumbs = library_tag(item) + breadcrumb(item.get("title") or "", hierarchy)
        tag = version_tag(item.get("version"), self.several_versions)
        where = f"(link as [{earlier.rank}])" if earlier else citation(item)
        note = f" ({notes})" if notes else ""
        return f"{number}{crumbs}{tag}{note}\n{where}\n{passage}"

    def search(self, answer: dict[str, Any]) -> Rendered:
        """A search answer: notes first (degraded search, capped values), then the results."""
        results = answer["results"]
        head = "\n".join(f"> {note}" for note in answer["notes"])
        if not results:
            scope = describe_scope(answer.get("version"), answer.get("filters") or {})
            text = f"No results for {answer['query']!r}{scope}."
            return Rendered("\n\n".join(p for p in (head, text) if p), 0)
        cited: dict[str, tuple[int, str]] = {}  # citation -> (first rank, its breadcrumb)
        blocks = []
        for n, (item, link) in enumerate(zip(results, without_repeats(results), strict=True), 1):
            crumbs = breadcrumb(item.get("title") or "", item.get("section_hierarchy"))
            rank, first_crumbs = cited.setdefault(citation(item), (n, crumbs))
            earlier = Earlier(rank, first_crumbs == crumbs) if rank != n else None
            blocks.append(self.result_block(n, item, link, earlier))
        tail = (
            "[{left} more result(s) left out to stay within this server's {cap}-token answer "
            "limit: ask for fewer with top_k, narrow with path or section, or read one page with "
            "get_document.]"
        )
        return self.fit(head, blocks, tail, self.nearest(answer.get("nearest_sections") or []))

    def nearest(self, sections: list[dict[str, Any]]) -> str:
        """The line a weak answer ends with: the other sections nearest the question."""
        if not sections:
            return ""
        lines = [
            "No passage stands out for this question. The other sections nearest it "
            "(read one with get_document(path, section), or ask in the docs' words):"
        ]
        for item in sections:
            page = f", page {item['page']}" if item.get("page") else ""
            tag = version_tag(item.get("version"), self.several_versions)
            crumbs = breadcrumb(item.get("title") or "", item.get("section_hierarchy"))
            lines.append(f"- {library_tag(item)}{item['path']}{page}: {crumbs}{tag}")
        return "\n".join(lines)

    def chunk(self, row: dict[str, Any]) -> str:
        """One chunk by id."""
        block = self.result_block(None, row)
        where = f"chunk {row['chunk_index']} of {row['path']}"
        return self.fit("", [f"{block}\n\n({where})"], "[cut at the answer limit]").text

    def document_list(
        self, documents: list[DocumentEntry], offset: int, total: int, scope: str, more: str
    ) -> Rendered:
        """One page of the document listing; ``more`` (with ``{next}``, the offset to go on
        from) ends a listing that goes on, whether the page or the cap ended it."""
        head = f"{total} document(s){scope}" + (
            f", from number {offset + 1}:" if documents else f"; none from offset {offset}."
        )
        lines = [
            f"- {doc.path} — {doc.title or '(untitled)'} ({doc.sections} section(s))"
            f"{version_tag(doc.version, self.several_versions)}"
            for doc in documents
        ]
        rendered = self.fit_lines(head, lines, more)
        if offset + rendered.shown < total:
            rendered.text += "\n" + more.format(next=offset + rendered.shown)
        return rendered

    def page_outline(self, head: str, sections: list[HeadingSpan], continuation: str) -> Rendered:
        """A page's heading tree, one indented line per heading with its chunk range."""
        lines = [
            f"{'  ' * (s.level - 1)}- {s.heading} (chunks {s.first_chunk}–{s.last_chunk})"
            if s.first_chunk != s.last_chunk
            else f"{'  ' * (s.level - 1)}- {s.heading} (chunk {s.first_chunk})"
            for s in sections
        ]
        rendered = self.fit_lines(head, lines, continuation)
        if rendered.shown < len(lines):
            rendered.text += "\n" + continuation.format(
                left=len(lines) - rendered.shown, cap=self.cap
            )
        return rendered

    def document(self, head: str, contents: list[str], continuation: str, offset: int) -> Rendered:
        """``head`` then the chunks' text merged in reading order (overlaps said once), as much
        as fits; ``continuation`` (with ``{next}``, the offset to read on from ``offset``) ends a
        part that is not the last."""
        budget = self.cap - self.counter.count(head) - self.counter.count(continuation) - 16
        merged, used, shown, cut = "", 0, 0, False
        for content in contents:
            candidate = merge_overlapping(merged, content) if merged else content
            tokens = self.counter.count(candidate[len(merged) :])
            if used + tokens > budget:
                if shown == 0:
                    merged, shown, cut = cut_passage(content, budget, self.counter), 1, True
                break
            merged, used, shown = candidate, used + tokens, shown + 1
        parts = [head, merged.strip()]
        if shown < len(contents):
            parts.append(continuation.format(next=offset + shown))
        return Rendered("\n\n".join(parts), shown, cut, merged.strip())

    def fit_lines(self, head: str, lines: list[str], tail: str) -> Rendered:
        """``head`` and the one-line items that fit with room left for ``tail`` (which the caller
        appends when it needs it)."""
        budget = self.cap - self.counter.count(head) - self.counter.count(tail) - 16
        shown, used = 0, 0
        for line in lines:
            used += self.counter.count(line) + 1
            if used > budget:
                break
            shown += 1
        return Rendered("\n".join([head, *lines[:shown]]), shown)


def describe_scope(version: str | None, filters: dict[str, str]) -> str:
    """`` in version 25.7, path 'guide/'`` for messages (empty when unfiltered)."""
    parts = [f"version {version}" if version else ""]
    parts += [f"{key} {value!r}" for key, value in filters.items()]
    joined = ", ".join(p for p in parts if p)
    return f" in {joined}" if joined else ""
