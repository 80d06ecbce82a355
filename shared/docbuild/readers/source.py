"""What the readers of documentation sources (Markdown, MDX, notebooks, reStructuredText,
AsciiDoc) share: their settings, and the URL each file is published at."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from docbuild.readers.markdown_text import document_url

if TYPE_CHECKING:
    from docbuild.config import ProcessingConfig


class SourceReader:
    """A reader of source files a site generator publishes: a page's URL is ``url_base`` and
    its path without the extension (with ``url_suffix`` appended when set)."""

    format: str

    def __init__(self, url_base: str | None = None, url_suffix: str = "") -> None:
        self.url_base = url_base
        self.url_suffix = url_suffix

    @classmethod
    def from_config(cls, config: ProcessingConfig) -> Self:
        """The reader set up from a build's config."""
        return cls(config.url_base, config.url_suffix)

    def url(self, relative: str, metadata: dict[str, object] | None = None) -> str | None:
        """The published URL of the file at ``relative`` (its front matter's ``slug`` applied)."""
        return document_url(self.url_base, relative, metadata or {}, self.url_suffix)
