"""AsciiDoc blocks to Markdown: titles, listings, lists with continuations, verse, quotes,
admonitions, block titles and tables, read line by line after preprocessing."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

from docbuild.readers.asciidoc.inline import Context, auto_id, inline, underline_level
from docbuild.readers.asciidoc.preprocess import set_attribute
from docbuild.readers.asciidoc.syntax import (
    ADMONITION,
    ADMONITIONS,
    ATTRIBUTE_ENTRY,
    ATTRIBUTE_LIST,
    BLOCK_ANCHOR,
    BLOCK_MACRO,
    BLOCK_TITLE,
    CALLOUT,
    COMMENT_LINE,
    DELIMITER,
    HARD_BREAK,
    LABELED,
    NESTED_LIST,
    ONE_LINE_TITLE,
    ORDERED,
    RULE,
    TABLE_SEPARATOR,
    TOC_LABEL,
    UNORDERED,
)
from docbuild.readers.markdown_text import fenced, pipe_table


@dataclass
class Heading:
    """A section title: its level (1 = ``==``), Markdown and plain text, and anchor."""

    level: int
    markdown: str
    text: str
    anchor: str | None


Event = Heading | str


@dataclass
class Meta:
    """Block attributes, anchor and title that apply to the next block."""

    style: str | None = None
    positional: list[str] = field(default_factory=list)
    named: dict[str, str] = field(default_factory=dict)
    anchor: str | None = None
    title: str | None = None


def parse_attribute_list(text: str) -> tuple[list[str], dict[str, str]]:
    """``source,python,linenums`` / ``cols="1,2",options="header"`` → positional, named."""
    positional: list[str] = []
    named: dict[str, str] = {}
    for match in re.finditer(r'\s*(?:(\w[\w-]*)\s*=\s*)?("[^"]*"|[^,]*)\s*(?:,|$)', text):
        if not match.group(0):
            continue
        value = match.group(2).strip().strip('"')
        if match.group(1):
            named[match.group(1).lower()] = value
        else:
            positional.append(value)
    return positional, named


@dataclass
class Item:
    """A list item line: its kind, its marker (which tells lists apart), term and text."""

    kind: str
    marker: str
    text: str
    term: str = ""


def list_item(line: str) -> Item | None:
    """The list item that ``line`` starts, if it starts one."""
    for kind, pattern in (("unordered", UNORDERED), ("ordered", ORDERED), ("ordered", CALLOUT)):
        match = pattern.match(line)
        if match:
            marker = match["marker"]
            if pattern is CALLOUT:
                marker = "<>"
            elif kind == "ordered" and not marker.startswith("."):
                marker = _number_style(marker)
            return Item(kind, marker, match["text"])
    match = LABELED.match(line)
    if match and not COMMENT_LINE.match(line):
        return Item("labeled", match["marker"], match["text"] or "", match["term"].strip())
    return None


def _number_style(marker: str) -> str:
    if marker[:-1].isdigit():
        return "arabic"
    if marker.endswith(")"):
        return "roman"
    return "alpha"


def _escape_line(line: str) -> str:
    """Keep a prose line from reading as a Markdown heading, quote or setext underline."""
    stripped = line.lstrip()
    if stripped.startswith(("#", ">")) or re.fullmatch(r"[=\-~^+_*]{3,}", stripped):
        return line[: len(line) - len(stripped)] + "\\" + stripped
    return line


def _bold(text: str) -> str:
    return f"**{text}**" if text and "*" not in text else text


def _indent(text: str, width: int) -> str:
    pad = " " * width
    return "\n".join(pad + line if line.strip() else "" for line in text.split("\n"))


class BlockReader:
    """Turns preprocessed AsciiDoc lines into Markdown blocks and section headings."""

    def __init__(self, lines: list[str], origins: list[str], context: Context) -> None:
        self.lines = lines
        self.origins = origins
        self.context = context
        self.pos = 0
        self.open_lists: list[str] = []
        self.ids: set[str] = set()
        self.title: str | None = None
        self.problems: list[str] = []

    # -- line access

    def current(self) -> str | None:
        """The line at the reading position (None at the end)."""
        return self.lines[self.pos] if self.pos < len(self.lines) else None

    def skip_blank(self) -> None:
        """Move past blank lines and comment lines."""
        while self.pos < len(self.lines) and (
            not self.lines[self.pos].strip() or COMMENT_LINE.match(self.lines[self.pos])
        ):
            self.pos += 1

    def read_until(self, stop: Callable[[str], bool]) -> list[str]:
        """Lines up to (not including) the first for which ``stop`` is true; comments dropped."""
        taken = []
        while (line := self.current()) is not None and not stop(line):
            if not COMMENT_LINE.match(line):
                taken.append(line)
            self.pos += 1
        return taken

    def inline(self, text: str, plain: bool = False) -> str:
        """Inline markup of ``text`` with the attributes defined so far."""
        return inline(text, self.context, plain)

    # -- documents

    def parse(self) -> list[Event]:
        """All blocks of the document; the level-0 title is kept in ``self.title``."""
        return self.blocks(None, top=True)

    def blocks(self, closing: str | None, top: bool = False) -> list[Event]:
        """Blocks up to the line ``closing`` (the end of a delimited block) or the end."""
        events: list[Event] = []
        while True:
            meta = self.meta()
            line = self.current()
            if line is None or (closing is not None and self._closes(closing, line)):
                return events
            events.extend(self.block(meta, top))

    @staticmethod
    def _closes(opening: str, line: str) -> bool:
        """True if ``line`` ends the delimited block that ``opening`` began."""
        if opening.startswith("`"):
            return line == "```"
        if opening == "--":
            return line == opening
        return len(line) >= 4 and set(line) == set(opening)

    def meta(self) -> Meta:
        """Consume attribute lists, anchors, block titles and attribute entries before a block."""
        meta = Meta()
        while True:
            self.skip_blank()
            line = self.current()
            if line is None:
                return meta
            if anchor := BLOCK_ANCHOR.match(line):
                meta.anchor = anchor["id"]
                if anchor["label"]:
                    self.context.anchors.setdefault(anchor["id"], anchor["label"])
            elif entry := ATTRIBUTE_ENTRY.match(line):
                set_attribute(self.context.attributes, entry)
            elif attributes := ATTRIBUTE_LIST.match(line):
                self._apply_attribute_list(meta, attributes["list"])
            elif title := BLOCK_TITLE.match(line):
                meta.title = title["title"]
            else:
                return meta
            self.pos += 1

    @staticmethod
    def _apply_attribute_list(meta: Meta, text: str) -> None:
        positional, named = parse_attribute_list(text)
        first = positional[0] if positional else ""
        if first.startswith(("#", ".", "%")) or not first:  # asciidoctor shorthand: [#id.role]
            ident = re.match(r"[^#]*#([\w:.-]+)", first)
            meta.anchor = ident.group(1) if ident else meta.anchor
            style = re.match(r"^([\w-]+)", first)
            first = style.group(1) if style else ""
        meta.style = first or meta.style
        meta.positional = positional
        meta.named.update(named)
        meta.anchor = named.get("id", meta.anchor)

    def title_at(self) -> tuple[int, str, int] | None:
        """(level, title, lines it takes) when a section title starts here."""
        line = self.current()
        if line is None:
            return None
        one = ONE_LINE_TITLE.match(line)
        if one:
            return len(one["marks"]) - 1, one["title"], 1
        if self.pos + 1 < len(self.lines):
            level = underline_level(line, self.lines[self.pos + 1])
            if level is not None:
                return level, line.strip(), 2
        return None

    def block(self, meta: Meta, top: bool) -> list[Event]:
        """One block starting at the current line."""
        line = self.current() or ""
        title = self.title_at()
        if title:
            self.pos += title[2]
            return self.section_title(title[0], title[1], meta, top)
        if DELIMITER.match(line):
            return self.delimited(meta)
        if item := list_item(line):
            return self.titled(meta, [self.parse_list(item)])
        if BLOCK_MACRO.match(line) or RULE.match(line) or line == "+":
            self.pos += 1
            return []
        if TOC_LABEL.match(line):
            self.skip_table_of_contents()
            return []
        if line[:1].isspace():
            lines = self.read_until(_paragraph_end)
            return self.titled(meta, [fenced(textwrap.dedent("\n".join(lines)))])
        return self.titled(meta, [self.paragraph(meta)])

    def skip_table_of_contents(self) -> None:
        """A "Table of contents:" line and the list below it: navigation, not content."""
        self.pos += 1
        self.skip_blank()
        if item := list_item(self.current() or ""):
            self.parse_list(item)

    def titled(self, meta: Meta, blocks: list[str]) -> list[Event]:
        """Blocks preceded by their block title (``.Title``) as a bold line."""
        blocks = [b for b in blocks if b.strip()]
        if meta.title and blocks:
            return [_bold(self.inline(meta.title)), *blocks]
        return blocks

    def section_title(self, level: int, raw: str, meta: Meta, top: bool) -> list[Event]:
        """The document title (kept aside), a section heading, or a bold line for a floating
        title or one inside a block."""
        markdown, text = self.inline(raw), self.inline(raw, plain=True)
        if level == 0 and self.title is None and top:
            self.title = text
            self._skip_header_lines()
            return []
        if not top or meta.style in ("float", "discrete"):
            return [_bold(markdown)]
        anchor = meta.anchor
        if anchor is None and not (level == 1 and text == "NAME" and self.manpage):
            anchor = auto_id(raw, self.context, self.ids)
        if meta.anchor:
            self.context.anchors.setdefault(meta.anchor, text)
        return [Heading(max(level, 1), markdown, text, anchor)]

    @property
    def manpage(self) -> bool:
        """Git-style man page: the title reads ``name(section)``."""
        return bool(self.title and re.fullmatch(r"\S+\(\w+\)", self.title))

    def _skip_header_lines(self) -> None:
        """The author and revision lines right below the document title."""
        for _ in range(2):
            line = self.current()
            if not line or ATTRIBUTE_ENTRY.match(line) or COMMENT_LINE.match(line):
                return
            if DELIMITER.match(line) or ATTRIBUTE_LIST.match(line) or BLOCK_ANCHOR.match(line):
                return
            if self.title_at() or list_item(line):
                return
            self.pos += 1

    # -- paragraphs

    def paragraph(self, meta: Meta, in_list: bool = False) -> str:
        """A paragraph, rendered by its style (verse, quote, listing, admonition...)."""
        first = self.lines[self.pos]
        self.pos += 1
        lines = [first, *self.read_until(self._list_text_end if in_list else _paragraph_end)]
        style = meta.style
        if style in ("listing", "literal", "source"):
            return fenced(textwrap.dedent("\n".join(lines)), self._language(meta))
        if style == "verse":
            return "\n".join(_escape_line(s) for s in self.inline("\n".join(lines)).split("\n"))
        text = self._join(lines)
        admonition = ADMONITION.match(text)
        if admonition and style is None:
            style, text = admonition["kind"], admonition["text"]
        body = _escape_line(self.inline(text))
        if style in ADMONITIONS:
            return f"**{style.capitalize()}:** {body}"
        if style == "quote":
            return "> " + body.replace("\n", "\n> ")
        return body

    @staticmethod
    def _join(lines: list[str]) -> str:
        """Paragraph lines as one line, hard line breaks (``" +"``) kept as newlines."""
        parts = []
        for line in lines:
            line = line.strip()
            if HARD_BREAK.search(line):
                parts.append(line[:-1].rstrip() + "\n")
            else:
                parts.append(line + " ")
        return "".join(parts).strip()

    def _language(self, meta: Meta) -> str:
        if meta.style == "source":
            language = meta.positional[1] if len(meta.positional) > 1 else ""
            return (
                language
                or meta.named.get("language", "")
                or self.context.attributes.get("source-language", "")
            )
        return ""

    def _list_text_end(self, line: str) -> bool:
        return _paragraph_end(line) or list_item(line) is not None

    # -- delimited blocks

    def delimited(self, meta: Meta) -> list[Event]:
        """A delimited block: listing, literal, example, sidebar, quote, open, table..."""
        opening = self.lines[self.pos]
        where = self.origins[self.pos]
        self.pos += 1
        char = opening[0]
        if char in "-.`+/" and opening != "--":
            lines = self._raw_until(opening, where)
            if char in "+/":
                return []  # passthrough (raw backend markup) and comment blocks
            if meta.style in ("verse", "quote"):
                return self.titled(meta, [self._quote_lines(lines)])
            language = self._language(meta) or (opening[3:].strip() if char == "`" else "")
            return self.titled(meta, [fenced("\n".join(lines), language)])
        if char == "|":
            lines = self._raw_until(opening, where)
            return self.titled(meta, [self.table(lines, meta)])
        saved, self.open_lists = self.open_lists, []
        inner = [e for e in self.blocks(opening) if isinstance(e, str)]
        self.open_lists = saved
        if self.current() is None:
            self.problems.append(f"block opened at {where} is never closed")
        else:
            self.pos += 1
        return self.titled(meta, self._compound(char, meta, inner))

    def _raw_until(self, opening: str, where: str) -> list[str]:
        lines = []
        while (line := self.current()) is not None and not self._closes(opening, line):
            lines.append(line)
            self.pos += 1
        if line is None:
            self.problems.append(f"block opened at {where} is never closed")
        else:
            self.pos += 1
        return lines

    def _quote_lines(self, lines: list[str]) -> str:
        return "\n".join("> " + _escape_line(s) for s in self.inline("\n".join(lines)).split("\n"))

    def _compound(self, char: str, meta: Meta, inner: list[str]) -> list[str]:
        """Example, sidebar, quote and open blocks: their content, marked by style."""
        if meta.style in ADMONITIONS and inner:
            label = f"**{meta.style.capitalize()}:**"
            if inner[0].startswith(("```", "- ", "|", ">")):
                return [label, *inner]
            return [f"{label} {inner[0]}", *inner[1:]]
        if char == "_" or meta.style == "quote":
            return ["\n".join("> " + s if s else ">" for s in b.split("\n")) for b in inner]
        return inner

    # -- lists

    def parse_list(self, first: Item) -> str:
        """The list that starts with item ``first`` (and lists nested in it) as Markdown."""
        self.open_lists.append(first.marker)
        items: list[str] = []
        item: Item | None = first
        while item and item.marker == first.marker:
            items.append(self.list_entry(item, len(items) + 1))
            self.skip_blank()
            item = list_item(self.current() or "")
        self.open_lists.pop()
        joiner = "\n\n" if any("\n\n" in item for item in items) else "\n"
        return joiner.join(items)

    def list_entry(self, item: Item, number: int) -> str:
        """One item: its text, then continued (``+``) and nested blocks, indented under it."""
        if item.kind == "labeled":
            head, text = self._terms(item.marker)
            if not text:  # the description may follow after blank lines
                self.skip_blank()
        else:
            head, text = "", item.text
            self.pos += 1
        lines = ([text] if text else []) + self.read_until(self._list_text_end)
        first = self.inline(self._join(lines)) if lines else ""
        if head and first:
            first = f"{head}{' ' if head.rstrip('*`').endswith((':', '?')) else ': '}{first}"
        elif head:
            first = head
        content = first
        for block in self._item_blocks():
            joiner = "\n" if content and NESTED_LIST.match(block) else "\n\n"
            content = f"{content}{joiner}{block}" if content else block
        bullet = f"{number}. " if item.kind == "ordered" else "- "
        return bullet + _indent(content, len(bullet))[len(bullet) :]

    def _terms(self, marker: str) -> tuple[str, str]:
        """A labeled entry's terms (``a::`` lines in a row) and the text on the last one."""
        terms: list[str] = []
        text = ""
        while (item := list_item(self.current() or "")) and item.marker == marker:
            text = item.text
            terms.append(_bold(self.inline(item.term)))
            self.pos += 1
            if text:
                break
            after = self.pos
            self.skip_blank()
            following = list_item(self.current() or "")
            if not following or following.marker != marker:
                self.pos = after
                break
        return ", ".join(terms), text

    def _item_blocks(self) -> list[str]:
        """Blocks that belong to the current item: continuations and nested lists."""
        blocks: list[str] = []
        while True:
            start = self.pos
            continued = self.current() == "+"
            if continued:
                self.pos += 1
            meta = self.meta()
            line = self.current()
            item = list_item(line or "")
            if (
                line is None
                or (not continued and meta.title)
                or (item and item.marker in self.open_lists)
            ):
                self.pos = start
                break
            if item:
                blocks.append(self.parse_list(item))
            elif continued and not self._starts_special(line):
                blocks.append(self.paragraph(meta, in_list=True))
            elif continued or line[:1].isspace():
                blocks.extend(e for e in self.block(meta, top=False) if isinstance(e, str))
            else:
                self.pos = start
                break
        return [b for b in blocks if b.strip()]

    def _starts_special(self, line: str) -> bool:
        return bool(
            DELIMITER.match(line)
            or BLOCK_MACRO.match(line)
            or line[:1].isspace()
            or self.title_at()
            or RULE.match(line)
        )

    # -- tables

    def table(self, lines: list[str], meta: Meta) -> str:
        """A ``|===`` table as a Markdown table (the first row as its header)."""
        text = "\n".join(lines)
        cells: list[tuple[int, str]] = []
        separators = list(TABLE_SEPARATOR.finditer(text))
        for n, separator in enumerate(separators):
            end = separators[n + 1].start() if n + 1 < len(separators) else len(text)
            content = text[separator.end() : end]
            spec = separator["spec"] or ""
            span = int(re.match(r"(\d+)\+", spec).group(1)) if re.match(r"\d+\+", spec) else 1
            repeat = int(re.match(r"(\d+)\*", spec).group(1)) if re.match(r"\d+\*", spec) else 1
            cell = self.inline(" ".join(content.replace("\\|", "|").split()))
            cells.extend([(span, cell)] * repeat)
        if not cells:
            return ""
        columns = self._columns(meta, lines) or len(cells)
        rows: list[list[str]] = [[]]
        used = 0
        for span, cell in cells:
            if used >= columns:
                rows.append([])
                used = 0
            rows[-1].extend([cell] + [""] * (span - 1))
            used += span
        return pipe_table(rows)

    @staticmethod
    def _columns(meta: Meta, lines: list[str]) -> int:
        cols = meta.named.get("cols", "")
        if cols.isdigit():
            return int(cols)
        if cols:
            count = 0
            for spec in re.split(r"[,;]", cols):
                repeat = re.match(r"\s*(\d+)\*", spec)
                count += int(repeat.group(1)) if repeat else 1
            return count
        first = next((line for line in lines if line.strip()), "")
        return len(TABLE_SEPARATOR.findall(first))


def _paragraph_end(line: str) -> bool:
    return (
        not line.strip()
        or line == "+"
        or bool(ATTRIBUTE_LIST.match(line))
        or bool(DELIMITER.match(line))
    )
