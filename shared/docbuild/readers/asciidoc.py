"""AsciiDoc (``.adoc``, ``.asciidoc``, ``.asc``): a focused line-oriented reader to Markdown.

asciidoc-py (the implementation git uses) was measured as a library first: about 160 ms a file
on git's documentation, before any HTML to Markdown step, several times the build's budget.

The preprocessor expands ``include::`` relative to the including file (a missing ``.txt``
target is also looked up as ``.adoc``, the name git's sources have since 2.45; a missing file,
a cycle or nesting deeper than ``MAX_INCLUDE_DEPTH`` is reported with its line and left out),
evaluates ``ifdef``/``ifndef``/``endif`` against the attributes defined so far (``ifeval`` keeps
its content), records ``:name: value`` entries, and drops ``////`` comment blocks and the mail
header of git's how-tos (keeping its ``Abstract``).

The block reader turns titles (``= Title`` and underlined ones: ``=`` level 0, ``-`` 1, ``~`` 2,
``^`` 3, ``+`` 4) into ATX headings, listing, source and literal blocks and indented paragraphs
into fenced code, bulleted, numbered and labeled lists (``term::``) into Markdown lists with
their ``+`` continuations indented under the item, ``[verse]`` into lines kept as they are,
quote blocks into ``>`` quotes, admonitions into ``**Note:** ...``, block titles into a bold
line, and ``|===`` tables into pipe tables (the first row as header). Inline markup becomes
Markdown; macros become their text (``linkgit:git-reset[1]`` → ``git-reset(1)``, ``link:`` and
URL macros → their text, ``<<id,text>>`` → text or the title of section ``id``); images,
comments, passthrough blocks and index terms are dropped; unknown attribute references are kept
as written. No typographic replacements are made (``--`` stays ``--``).

Section anchors are the explicit ``[[id]]`` or the id asciidoc-py's HTML backend generates
(``_options``), so URLs agree with git's HTML pages. A file that another file of the same tree
includes is skipped as a fragment: it is indexed as part of the pages that include it.
"""

from __future__ import annotations

import html
import os
import re
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Self

import lxml.html

from docbuild.documents import Document, FileProblem, Page, Section, SkipFile, title_from_path, wrap
from docbuild.readers.markdown_text import (
    document_url,
    fenced,
    merge_heading_only,
)
from docbuild.readers.text import read_text

if TYPE_CHECKING:
    from docbuild.config import ProcessingConfig

SUFFIXES = (".adoc", ".asciidoc", ".asc")
MAX_INCLUDE_DEPTH = 8

BUILTIN_ATTRIBUTES = {
    "amp": "&",
    "apostrophe": "'",
    "asterisk": "*",
    "backslash": "\\",
    "backtick": "`",
    "brvbar": "¦",
    "caret": "^",
    "cpp": "C++",
    "deg": "°",
    "empty": "",
    "endsb": "]",
    "gt": ">",
    "ldquo": "“",
    "litdd": "--",
    "lsquo": "‘",
    "lt": "<",
    "nbsp": "\u00a0",
    "plus": "+",
    "pp": "++",
    "quot": '"',
    "rdquo": "”",
    "rsquo": "’",
    "sp": " ",
    "startsb": "[",
    "tilde": "~",
    "two-colons": "::",
    "two-semicolons": ";;",
    "vbar": "|",
    "wj": "\u2060",
    "zwsp": "\u200b",
}
"""Attributes every AsciiDoc reader (and git's ``asciidoc.conf``) defines."""

ADMONITIONS = {"NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION"}
MAIL_FIELDS = {"from", "to", "cc", "date", "subject", "message-id", "content-type", "abstract"}

# Preprocessor lines
INCLUDE = re.compile(r"^include1?::(?P<target>[^\[\s][^\[]*)\[(?P<options>.*)\]$")
CONDITIONAL = re.compile(
    r"^(?P<kind>ifdef|ifndef|ifeval|endif)::(?P<names>[^\[]*)\[(?P<text>.*)\]$"
)
ATTRIBUTE_ENTRY = re.compile(
    r"^:(?P<unset>!?)(?P<name>\w[\w-]*)(?P<unset2>!?):(?:\s+(?P<value>.*))?$"
)
COMMENT_BLOCK = re.compile(r"^/{4,}$")
COMMENT_LINE = re.compile(r"^//(?!//)")
MAIL_HEADER = re.compile(r"^(?P<name>[A-Za-z][\w-]*):\s*(?P<value>.*)$")

# Block lines
ONE_LINE_TITLE = re.compile(r"^(?P<marks>={1,6})\s+(?P<title>\S.*?)(?:\s+=+)?$")
UNDERLINES = "=-~^+"
DELIMITER = re.compile(r"^(?:-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|\|={3,}|```.*)$")
ATTRIBUTE_LIST = re.compile(r"^\[(?P<list>[\w\"{#%].*)\]$")
BLOCK_ANCHOR = re.compile(r"^\[\[(?P<id>[\w:][\w:.-]*)(?:,\s*(?P<label>.*))?\]\]$")
BLOCK_TITLE = re.compile(r"^\.(?P<title>[^.\s].*)$")
BLOCK_MACRO = re.compile(r"^(?:image|video|audio|toc)::\S*\[.*\]$")
TOC_LABEL = re.compile(r"^table of contents:?$", re.IGNORECASE)
RULE = re.compile(r"^(?:'{3,}|<{3,})$")
ADMONITION = re.compile(r"^(?P<kind>NOTE|TIP|IMPORTANT|WARNING|CAUTION):\s+(?P<text>.*)$")
UNORDERED = re.compile(r"^\s*(?P<marker>-|\*{1,5})\s+(?P<text>\S.*)$")
ORDERED = re.compile(r"^\s*(?P<marker>\.{1,5}|\d+\.|[a-zA-Z]\.|[ivxIVX]+\))\s+(?P<text>\S.*)$")
CALLOUT = re.compile(r"^<(?P<marker>\d+)>\s+(?P<text>\S.*)$")
LABELED = re.compile(r"^\s*(?P<term>.*[^:;])(?P<marker>::::|:::|::|;;)(?:\s+(?P<text>.*))?$")
NESTED_LIST = re.compile(r"(?:-|\d+\.) ")
HARD_BREAK = re.compile(r"\s\+$")
TABLE_SEPARATOR = re.compile(
    r"(?:(?<!\S)(?P<spec>(?:\d+(?:\.\d+)?[*+])?[<^>.]{0,3}[a-z]?))?(?<!\\)\|"
)

# Inline markup
PASS_TRIPLE = re.compile(r"(?s)\+\+\+(?P<text>.*?)\+\+\+|\$\$(?P<text2>.*?)\$\$")
PASS_MACRO = re.compile(r"(?s)pass:[a-z,]*\[(?P<text>.*?)(?<!\\)\]")
LITERAL = re.compile(r"(?s)(?<![`\w])(?P<escape>\\?)`(?P<text>[^`\s]|[^`\s].*?\S)`(?![`\w])")
ESCAPE = re.compile(r"\\(?P<char>[*_'`+#{\[<~^$(-])")
ATTRIBUTE_REF = re.compile(r"\{(?P<name>\w[\w-]*)\}")
LINKGIT = re.compile(r"(?<![\w\\])(?:linkgit|gitlink):(?P<target>[^\s\[]+)\[(?P<section>[^\]]*)\]")
NAMED_LINK = re.compile(
    r"(?<![\w\\])(?P<name>https?|ftp|file|irc|mailto|link|xref):(?P<target>[^\s\[]*)"
    r"\[(?P<text>[^\]]*)\]"
)
ANGLE_URL = re.compile(r"<(?P<url>(?:https?|ftp|file|irc)://[^\s<>]+)>")
BARE_URL = re.compile(r"(?<![\w\"'=/\x00])(?P<url>(?:https?|ftp|file|irc)://[^\s<>\[\]\x00]*[\w/])")
EMAIL = re.compile(r"(?<![\w.\-/:@\x00])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
XREF = re.compile(r"<<(?P<id>[\w\":][^,>]*?)(?:,\s*(?P<text>[^>]*?))?>>")
BIBLIO_ANCHOR = re.compile(r"\[\[\[(?P<id>[\w:][\w:.-]*)\]\]\]")
INLINE_ANCHOR = re.compile(r"\[\[(?P<id>[\w\":][^\]]*)\]\]|anchor:[\w:.-]+\[[^\]]*\]")
FOOTNOTE = re.compile(r"(?P<name>footnote|footnoteref):\S*?\[(?P<text>.*?)(?<!\\)\]")
INLINE_IMAGE = re.compile(r"image:[^\s\[:]\S*?\[[^\]]*\]")
UI_MACRO = re.compile(r"(?P<name>kbd|btn|menu):(?P<target>[^\s\[]*)\[(?P<text>[^\]]*)\]")
INDEX_TERM = re.compile(
    r"\(\(\((?P<hidden>.*?)\)\)\)|\(\((?P<term>[^\s(].*?)\)\)|indexterm2?:\[.*?\]"
)
ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[a-zA-Z]\w*);")
PLACEHOLDER = re.compile("\x00(\\d+)\x00")
STRONG, EMPHASIS, CODE = "\x01", "\x02", "\x03"


def _constrained(left: str, right: str) -> re.Pattern[str]:
    """asciidoc-py's constrained quote: a word boundary on both sides."""
    lq, rq = re.escape(left), re.escape(right)
    return re.compile(rf"(?s)(?<![\w;:}}])(?:\[[^\[\]]+?\])?{lq}(?P<text>\S|\S.*?\S){rq}(?=\W|$)")


def _unconstrained(mark: str) -> re.Pattern[str]:
    """asciidoc-py's unconstrained quote: anywhere, even inside a word."""
    quoted = re.escape(mark)
    return re.compile(rf"(?s)(?:\[[^\[\]]+?\])?{quoted}(?P<text>.+?){quoted}")


QUOTES: list[tuple[re.Pattern[str], str]] = [
    (_unconstrained("**"), "strong"),
    (_constrained("*", "*"), "strong"),
    (_constrained("``", "''"), "double"),
    (_constrained("'", "'"), "emphasis"),
    (_constrained("`", "'"), "single"),
    (_unconstrained("++"), "code"),
    (_constrained("+", "+"), "code"),
    (_unconstrained("__"), "emphasis"),
    (_constrained("_", "_"), "emphasis"),
]
"""Quoted text in asciidoc-py's order (``asciidoc.conf`` ``[quotes]``)."""

HTML_QUOTES = {"strong": "strong", "emphasis": "em", "code": "code"}
TYPOGRAPHY = [  # asciidoc-py replacements that leave entity digits in generated ids
    (re.compile(r"(\w)--(?=\w)"), r"\1&#8212;&#8203;"),
    (re.compile(r"(^|\s)--(\s|$)"), r"&#8201;&#8212;&#8201;"),
    (re.compile(r"(\w)'(?=\w)"), r"\1&#8217;"),
    (re.compile(r"\.\.\."), "&#8230;"),
    (re.compile(r"\(C\)"), "&#169;"),
    (re.compile(r"\(R\)"), "&#174;"),
    (re.compile(r"\(TM\)"), "&#8482;"),
]


class Stash:
    """Text set aside from further substitution, put back at the end."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def put(self, text: str) -> str:
        """A placeholder for ``text``."""
        self.parts.append(text)
        return f"\x00{len(self.parts) - 1}\x00"

    def restore(self, text: str) -> str:
        """``text`` with every placeholder replaced by what it stands for."""
        return PLACEHOLDER.sub(lambda m: self.restore(self.parts[int(m.group(1))]), text)


@dataclass
class Context:
    """What inline conversion needs: attributes defined so far and titles of anchors."""

    attributes: dict[str, str]
    anchors: dict[str, str] = field(default_factory=dict)


def code_span(text: str) -> str:
    """``text`` as a Markdown code span."""
    if "`" not in text:
        return f"`{text}`"
    return f"`` {text} ``"


def _pass_text(text: str) -> str:
    """Passthrough content as text; markup in it (HTML) parsed away."""
    if "</" in text or "/>" in text or "<br>" in text:
        return lxml.html.fragment_fromstring(text, create_parent="div").text_content()
    return text


def _attribute(match: re.Match[str], context: Context, stash: Stash) -> str:
    name = match["name"].lower()
    if name in context.attributes:
        return _passthroughs(context.attributes[name], stash)
    if name in BUILTIN_ATTRIBUTES:
        return stash.put(BUILTIN_ATTRIBUTES[name])
    return stash.put(match[0])  # unknown: left as written


def _link_text(match: re.Match[str], context: Context, stash: Stash) -> str:
    name, target, text = match["name"], match["target"], match["text"].strip()
    if "=" in text:  # an attribute list: the text is its first entry
        text = text.split(",", 1)[0]
    text = text.strip().strip('"').rstrip("^")
    if text:
        return text
    if name == "xref":
        return context.anchors.get(target, stash.put(f"[{target}]"))
    if name in ("link", "mailto"):
        return stash.put(target)
    return stash.put(f"{name}:{target}")


def _xref_text(match: re.Match[str], context: Context, stash: Stash) -> str:
    if match["text"]:
        return match["text"].strip().strip('"')
    target = match["id"].strip('"')
    return context.anchors.get(target, stash.put(f"[{target}]"))


def _footnote(match: re.Match[str]) -> str:
    text = match["text"]
    if match["name"] == "footnoteref":
        text = text.split(",", 1)[1] if "," in text else ""
    return f" ({text.strip()})" if text.strip() else ""


def _ui_text(match: re.Match[str]) -> str:
    if match["name"] == "menu":
        return " > ".join(p.strip() for p in [match["target"], *match["text"].split(">")] if p)
    return match["text"]


def _macros(text: str, context: Context, stash: Stash) -> str:
    """Inline macros as their text: links, cross references, footnotes; images dropped."""
    text = LINKGIT.sub(
        lambda m: stash.put(f"{m['target']}({m['section']})" if m["section"] else m["target"]),
        text,
    )
    text = INLINE_IMAGE.sub("", text)
    text = NAMED_LINK.sub(lambda m: _link_text(m, context, stash), text)
    text = ANGLE_URL.sub(lambda m: stash.put(m["url"]), text)
    text = BARE_URL.sub(lambda m: stash.put(m["url"]), text)
    text = EMAIL.sub(lambda m: stash.put(m[0]), text)
    text = XREF.sub(lambda m: _xref_text(m, context, stash), text)
    text = BIBLIO_ANCHOR.sub(lambda m: stash.put(f"[{m['id']}]"), text)
    text = INLINE_ANCHOR.sub("", text)
    text = FOOTNOTE.sub(_footnote, text)
    text = UI_MACRO.sub(_ui_text, text)
    return INDEX_TERM.sub(lambda m: m["term"] or "", text)


def _quote(kind: str, text: str, stash: Stash) -> str:
    if kind == "strong":
        return f"{STRONG}{text}{STRONG}"
    if kind == "emphasis":
        return f"{EMPHASIS}{text}{EMPHASIS}"
    if kind == "code":
        return f"{CODE}{text}{CODE}"
    mark = stash.put('"' if kind == "double" else "'")
    return f"{mark}{text}{mark}"


def _passthroughs(text: str, stash: Stash) -> str:
    """Passthroughs, inline literals and escaped characters, set aside untouched."""
    text = PASS_TRIPLE.sub(lambda m: stash.put(_pass_text(m["text"] or m["text2"] or "")), text)
    text = PASS_MACRO.sub(lambda m: stash.put(_pass_text(m["text"])), text)
    text = LITERAL.sub(lambda m: stash.put(m[0][1:] if m["escape"] else code_span(m["text"])), text)
    return ESCAPE.sub(lambda m: stash.put(m["char"]), text)


def inline(text: str, context: Context, plain: bool = False) -> str:
    """AsciiDoc inline markup as Markdown (or, with ``plain``, as text without markers)."""
    stash = Stash()
    text = ENTITY.sub(lambda m: stash.put(html.unescape(m[0])), text)
    text = _passthroughs(text, stash)
    text = ATTRIBUTE_REF.sub(lambda m: _attribute(m, context, stash), text)
    text = _macros(text, context, stash)
    for pattern, kind in QUOTES:
        text = pattern.sub(lambda m, kind=kind: _quote(kind, m["text"], stash), text)
    text = stash.restore(text)
    marks = {STRONG: "**", EMPHASIS: "*", CODE: "`"}
    for marker, markdown in marks.items():
        text = text.replace(marker, "" if plain else markdown)
    if plain:
        text = re.sub(r"`([^`]*)`", r"\1", text)
    return text


def html_title(title: str, context: Context) -> str:
    """A title roughly as asciidoc-py's HTML backend renders it (section ids are made from it)."""
    stash = Stash()
    text = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = LITERAL.sub(lambda m: stash.put(f"<code>{m['text']}</code>"), text)
    text = LINKGIT.sub(
        lambda m: stash.put(f'<a href="{m["target"]}.html">{m["target"]}({m["section"]})</a>'),
        text,
    )
    text = NAMED_LINK.sub(lambda m: stash.put(_html_link(m)), text)
    text = BARE_URL.sub(lambda m: stash.put(f'<a href="{m["url"]}">{m["url"]}</a>'), text)
    text = EMAIL.sub(lambda m: stash.put(f'<a href="mailto:{m[0]}">{m[0]}</a>'), text)
    text = INLINE_ANCHOR.sub(lambda m: f'<a id="{m["id"]}"></a>', text)
    text = ATTRIBUTE_REF.sub(lambda m: _entity_attribute(m, context), text)
    for pattern, kind in QUOTES:
        text = pattern.sub(lambda m, kind=kind: _html_quote(kind, m["text"]), text)
    for pattern, replacement in TYPOGRAPHY:
        text = pattern.sub(replacement, text)
    return stash.restore(text)


def _html_link(match: re.Match[str]) -> str:
    target = match["target"]
    href = target if match["name"] in ("link", "xref") else f"{match['name']}:{target}"
    return f'<a href="{href}">{match["text"] or href}</a>'


def _entity_attribute(match: re.Match[str], context: Context) -> str:
    name = match["name"].lower()
    if name in context.attributes:
        return context.attributes[name]
    value = BUILTIN_ATTRIBUTES.get(name)
    return match[0] if value is None else "".join(f"&#{ord(c)};" for c in value)


def _html_quote(kind: str, text: str) -> str:
    if kind == "double":
        return f"&#8220;{text}&#8221;"
    if kind == "single":
        return f"&#8216;{text}&#8217;"
    tag = HTML_QUOTES[kind]
    return f"<{tag}>{text}</{tag}>"


def auto_id(title: str, context: Context, used: set[str]) -> str:
    """asciidoc-py's generated section id: ``_`` + the rendered title in lower case, non-word
    runs as ``_``, and ``_2``, ``_3``... for repeats."""
    base = "_" + re.sub(r"\W+", "_", html_title(title, context)).strip("_").lower()
    candidate, n = base, 1
    while candidate in used:
        n += 1
        candidate = f"{base}_{n}"
    used.add(candidate)
    return candidate


def underline_level(title: str, underline: str) -> int | None:
    """The level of a two-line title, or None when these lines are not one."""
    if len(underline) < 2 or underline[0] not in UNDERLINES or set(underline) != {underline[0]}:
        return None
    if abs(len(title) - len(underline)) > 2 or not re.search(r"\w", title):
        return None
    if title[0].isspace() or DELIMITER.match(title) or BLOCK_TITLE.match(title):
        return None
    return UNDERLINES.index(underline[0])


# ---------------------------------------------------------------------------- preprocessing


def resolve_include(base: Path, target: str) -> tuple[Path | None, list[Path]]:
    """The file an include names (or None) and every path tried (dependencies)."""
    path = base / target
    tried = [path]
    if path.suffix == ".txt":
        tried += [path.with_suffix(suffix) for suffix in SUFFIXES]
    for candidate in tried:
        if candidate.is_file():
            return candidate.resolve(), tried
    return None, tried


def _mail_header(lines: list[str]) -> tuple[int, str | None]:
    """Length of a leading mail header (git's how-tos) and its ``Abstract``, if there is one."""
    end = lines.index("") if "" in lines else len(lines)
    fields: dict[str, str] = {}
    last = ""
    for line in lines[:end]:
        header = MAIL_HEADER.match(line)
        if line[:1].isspace() and last:
            fields[last] += " " + line.strip()
        elif header and header["name"].lower() in MAIL_FIELDS:
            last = header["name"].lower()
            fields[last] = header["value"].strip()
        else:
            return 0, None
    if not fields or not ({"from", "subject", "content-type"} & fields.keys()):
        return 0, None
    return end, fields.get("abstract")


@dataclass
class Preprocessor:
    """Expands includes and conditionals; collects attribute entries and problems."""

    attributes: dict[str, str]
    lines: list[str] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    dependencies: set[str] = field(default_factory=set)
    conditions: list[tuple[bool, str]] = field(default_factory=list)

    def read(self, text: str, path: Path, name: str, stack: tuple[Path, ...] = ()) -> None:
        """Append the lines of ``text`` (read from ``path``, shown as ``name``)."""
        in_comment = False
        for number, raw in enumerate(text.replace("\x00", "").split("\n"), start=1):
            line = raw.rstrip()
            where = f"{name} line {number}" if stack else f"line {number}"
            if in_comment:
                in_comment = not COMMENT_BLOCK.match(line)
                continue
            condition = CONDITIONAL.match(line)
            if condition:
                self._conditional(condition, where)
                continue
            if not all(ok for ok, _ in self.conditions):
                continue
            if COMMENT_BLOCK.match(line):
                in_comment = True
                continue
            include = INCLUDE.match(line)
            if include:
                self._include(include["target"], path, where, (*stack, path))
                continue
            entry = ATTRIBUTE_ENTRY.match(line)
            if entry:
                set_attribute(self.attributes, entry)
            self.lines.append(line)
            self.origins.append(where)

    def finish(self) -> None:
        """Note conditionals left open at the end of the document."""
        for _, where in self.conditions:
            self.problems.append(f"conditional at {where} has no endif")

    def _conditional(self, match: re.Match[str], where: str) -> None:
        kind = match["kind"]
        if kind == "endif":
            if self.conditions:
                self.conditions.pop()
            else:
                self.problems.append(f"endif without ifdef at {where}; ignored")
            return
        ok = True if kind == "ifeval" else self._defined(match["names"]) == (kind == "ifdef")
        if match["text"] and kind != "ifeval":  # single-line form: ifdef::name[text]
            if ok and all(c for c, _ in self.conditions):
                self.lines.append(match["text"])
                self.origins.append(where)
            return
        self.conditions.append((ok, where))

    def _defined(self, names: str) -> bool:
        if "+" in names:
            return all(n.lower() in self.attributes for n in names.split("+"))
        return any(n.lower() in self.attributes for n in names.split(","))

    def _include(self, target: str, path: Path, where: str, stack: tuple[Path, ...]) -> None:
        target = ATTRIBUTE_REF.sub(lambda m: self.attributes.get(m["name"].lower(), m[0]), target)
        found, tried = resolve_include(path.parent, target)
        self.dependencies.update(str(p) for p in tried)
        if found is None:
            self.problems.append(f"include {target} not found ({where})")
        elif found in stack:
            self.problems.append(f"include cycle: {target} ({where}) is already being read")
        elif len(stack) > MAX_INCLUDE_DEPTH:
            self.problems.append(
                f"include {target} ({where}) nested deeper than {MAX_INCLUDE_DEPTH}"
            )
        else:
            try:
                text = read_text(found)
            except SkipFile as exc:
                self.problems.append(f"include {target} ({where}) unreadable: {exc}")
                return
            self.read(text, found, target, stack)


def set_attribute(attributes: dict[str, str], entry: re.Match[str]) -> None:
    """Apply an attribute entry ``:name: value`` (or ``:name!:`` to unset)."""
    name = entry["name"].lower()
    if entry["unset"] or entry["unset2"]:
        attributes.pop(name, None)
        return
    value = (entry["value"] or "").strip()
    attributes[name] = ATTRIBUTE_REF.sub(lambda m: attributes.get(m["name"].lower(), m[0]), value)


# ---------------------------------------------------------------------------- include fragments

Stamps = tuple[tuple[str, int, int], ...]
_FRAGMENTS: dict[tuple[Path, tuple[str, ...]], tuple[Stamps, dict[Path, list[Path]]]] = {}


def _tree_stamps(folder: str, suffixes: tuple[str, ...]) -> Iterator[tuple[str, int, int]]:
    """(path, mtime, size) of every file under ``folder`` with one of ``suffixes``, hidden
    folders left out."""
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                yield from _tree_stamps(entry.path, suffixes)
            elif entry.name.endswith(suffixes) and entry.is_file():
                info = entry.stat()
                yield entry.path, info.st_mtime_ns, info.st_size


def _includes_of(path: Path) -> list[Path]:
    """Files of the tree that ``path`` includes (found ones only)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for line in text.split("\n"):
        match = INCLUDE.match(line.rstrip()) if line.startswith("include") else None
        target = resolve_include(path.parent, match["target"])[0] if match else None
        if target is not None and target != path:
            found.append(target)
    return found


def _scan(files: list[Path]) -> dict[Path, list[Path]]:
    """Fragments of the tree with the files that include them.

    A fragment is a file reached through includes from a file that nothing includes; files
    that only include each other (a cycle) stay pages of their own.
    """
    edges = {path.resolve(): _includes_of(path) for path in files}
    included = {target for targets in edges.values() for target in targets}
    todo = [path for path in edges if path not in included]
    reached: set[Path] = set()
    while todo:
        for target in edges.get(todo.pop(), []):
            if target not in reached:
                reached.add(target)
                todo.append(target)
    includers: dict[Path, list[Path]] = {}
    for source, targets in edges.items():
        for target in targets:
            if target in reached:
                includers.setdefault(target, []).append(source)
    return includers


def fragment_includers(root: Path, path: Path) -> list[Path]:
    """The files of ``root`` that include ``path`` (empty when ``path`` is a page).

    Files with the AsciiDoc suffixes (and ``path``'s own, say ``.txt`` in older git trees) are
    scanned; the scan is cached per root and made again when any of those files changes.
    """
    key = (root, tuple(sorted({*SUFFIXES, path.suffix})))
    signature = tuple(_tree_stamps(str(root), key[1]))
    cached = _FRAGMENTS.get(key)
    if cached is None or cached[0] != signature:
        cached = (signature, _scan([Path(p) for p, _, _ in signature]))
        _FRAGMENTS[key] = cached
    return sorted(cached[1].get(path.resolve(), []))


def source_root(path: Path, relative: str) -> Path:
    """The folder ``relative`` is relative to."""
    root = path
    for _ in PurePosixPath(relative).parts:
        root = root.parent
    return root


# ---------------------------------------------------------------------------- blocks


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


def markdown_table(rows: list[list[str]]) -> str:
    """Rows of cell Markdown as a pipe table, the first row as its header."""
    width = max(len(row) for row in rows)
    lines = []
    for n, row in enumerate(rows):
        cells = [c.replace("|", "\\|") for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append("|" + "---|" * width)
    return "\n".join(lines)


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
        return markdown_table(rows)

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


# ---------------------------------------------------------------------------- documents


def _anchor_titles(lines: list[str], context: Context) -> dict[str, str]:
    """Titles of the sections that carry an explicit anchor, for ``<<id>>`` references."""
    titles: dict[str, str] = {}
    for n, line in enumerate(lines):
        anchor = BLOCK_ANCHOR.match(line) or re.match(r"^\[#(?P<id>[\w:.-]+)\]$", line)
        if not anchor:
            continue
        k = n + 1
        while k < len(lines) and (ATTRIBUTE_LIST.match(lines[k]) or BLOCK_ANCHOR.match(lines[k])):
            k += 1
        following = lines[k] if k < len(lines) else ""
        one = ONE_LINE_TITLE.match(following)
        if one:
            titles[anchor["id"]] = inline(one["title"], context, plain=True)
        elif k + 1 < len(lines) and underline_level(following, lines[k + 1]) is not None:
            titles[anchor["id"]] = inline(following.strip(), context, plain=True)
    return titles


def summarize(notes: list[str], shown: int = 5) -> str:
    """Best-effort notes of one file as one reason, the first few in full."""
    more = f"; and {len(notes) - shown} more" if len(notes) > shown else ""
    return "; ".join(notes[:shown]) + more


def _promote_title(events: list[Event]) -> str | None:
    """Without a level-0 title, a first title above every other one becomes the page title."""
    first = events[0] if events else None
    if not isinstance(first, Heading):
        return None
    if any(isinstance(e, Heading) and e.level <= first.level for e in events[1:]):
        return None
    events.pop(0)
    return first.text


def build_sections(events: list[Event], title: str, named: bool) -> list[Section]:
    """Sections from blocks and headings; the page title heads the first section."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    blocks: list[str] = [f"# {title}"] if named else []
    anchor: str | None = None

    def flush() -> None:
        text = "\n\n".join(blocks).strip("\n")
        if text.strip():
            sections.append(Section([title, *(t for _, t in stack)], text, anchor))

    for event in events:
        if isinstance(event, Heading):
            flush()
            blocks.clear()
            while stack and stack[-1][0] >= event.level:
                stack.pop()
            stack.append((event.level, event.text))
            anchor = event.anchor
            blocks.append(f"{'#' * min(event.level + 1, 6)} {event.markdown}")
        else:
            blocks.append(event)
    flush()
    return merge_heading_only(sections)


class AsciidocReader:
    """Parse AsciiDoc files (git's documentation among them)."""

    format = "asciidoc"

    @classmethod
    def from_config(cls, config: ProcessingConfig) -> Self:
        """The reader set up from a build's config."""
        return cls(config.url_base, config.url_suffix)

    def __init__(self, url_base: str | None = None, url_suffix: str = "") -> None:
        self.url_base = url_base
        self.url_suffix = url_suffix

    def read(self, path: Path, relative: str) -> tuple[list[Document], list[FileProblem]]:
        """Read one file (with what it includes); a fragment others include is skipped."""
        root = source_root(path, relative)
        includers = fragment_includers(root, path)
        if includers:
            names = [p.relative_to(root.resolve()).as_posix() for p in includers]
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            raise SkipFile(f"include fragment (included by {shown})", [str(p) for p in includers])
        return self.parse(read_text(path), relative, path)

    def parse(
        self, text: str, relative: str, path: Path
    ) -> tuple[list[Document], list[FileProblem]]:
        """Parse AsciiDoc ``text`` read from ``path`` (includes resolve next to it)."""
        lines = text.split("\n")
        skip, abstract = _mail_header(lines)
        reader = Preprocessor(attributes={})
        reader.read("\n".join([""] * skip + lines[skip:]), path.resolve(), relative)
        reader.finish()
        anchors = _anchor_titles(reader.lines, Context(dict(reader.attributes)))
        context = Context({}, anchors)
        blocks = BlockReader(reader.lines, reader.origins, context)
        events = blocks.parse()
        if blocks.title is None:
            blocks.title = _promote_title(events)
        if abstract:
            events.insert(0, inline(abstract, context))
        title = blocks.title or title_from_path(relative)
        sections = build_sections(events, title, named=blocks.title is not None)
        notes = reader.problems + blocks.problems
        problems = [FileProblem(relative, summarize(notes), skipped=False)] if notes else []
        url = document_url(self.url_base, relative, {}, self.url_suffix)
        page = Page(sections, blocks.title, url, dependencies=sorted(reader.dependencies))
        return ([wrap(page, relative)] if sections else []), problems
