"""AsciiDoc's line and inline syntax: the regular expressions every part of the reader matches
against, and the attributes every AsciiDoc processor defines."""

from __future__ import annotations

import re

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
