"""Pages whose character set only the HTTP header names are kept as UTF-8.

The build reads a page as UTF-8, else in the charset its ``<meta>`` declares, else as Latin-1: it
never sees the ``Content-Type`` header. So a page served as ``text/html; charset=windows-1251``
without a ``<meta>`` (or with a wrong one) is transcoded to UTF-8 when it is saved; an HTML page
also gets a UTF-8 byte-order mark, which HTML parsers obey before any ``<meta>``. A body that is
already valid UTF-8 is kept as it came: text in another charset is practically never valid UTF-8
once it holds a non-ASCII byte, while servers that label every page with a default charset
(``ISO-8859-1``) over UTF-8 pages are common.
"""

from __future__ import annotations

import codecs
from email.message import Message

BOM = codecs.BOM_UTF8
BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
WEB_NAMES = {  # labels whose web meaning (WHATWG Encoding) is a superset of Python's codec
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "shift_jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "gb2312": "gbk",
    "euc-kr": "cp949",
}


def header_charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a ``Content-Type`` header, lower-cased; None if absent."""
    if not content_type:
        return None
    message = Message()
    message["content-type"] = content_type
    charset = message.get_param("charset")
    return charset.strip().lower() if isinstance(charset, str) and charset.strip() else None


def codec_of(charset: str) -> str | None:
    """The Python codec that decodes ``charset`` as browsers do; None if it is unknown."""
    try:
        return codecs.lookup(WEB_NAMES.get(charset, charset)).name
    except LookupError:
        return None


def as_utf8(body: bytes, content_type: str | None, kind: str) -> bytes:
    """The body to save: transcoded to UTF-8 when the header names another charset and the body
    is not UTF-8 already (see the module's description); else as it came."""
    charset = header_charset(content_type)
    codec = codec_of(charset) if charset and kind in ("html", "md") else None
    if codec in (None, "utf-8") or body.startswith(BOMS) or body.isascii():
        return body
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode(codec, "replace")  # type: ignore[arg-type]
        return (BOM if kind == "html" else b"") + text.encode("utf-8")
    return body
