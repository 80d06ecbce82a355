"""Markdown: front matter, sections, fences, URLs, best-effort notes."""

from pathlib import Path

from docbuild.processors.commonmark import sections_of
from docbuild.processors.markdown import MarkdownProcessor, split_front_matter
from docbuild.processors.markdown_text import document_url


def split_sections(body: str, title: str | None) -> tuple[list, str | None]:
    """Sections of ``body`` under ``title`` (None: its H1, else "fallback"), and the note on an
    unclosed fence."""
    read = sections_of(body, title, "fallback")
    note = f"never closed at line {read.unclosed_fence}" if read.unclosed_fence else None
    return read.sections, note


def test_front_matter_parsed_and_broken_front_matter_reported():
    meta, body, note = split_front_matter("---\ntitle: Hello\ntags: [a, b]\n---\nBody\n")
    assert meta == {"title": "Hello", "tags": ["a", "b"]} and body == "Body\n" and note is None
    meta, body, note = split_front_matter("---\ntitle: [unclosed\n---\nBody\n")
    assert meta == {} and body == "Body\n" and "broken front matter" in note
    meta, body, note = split_front_matter("---\ntitle: x\nno end\n")
    assert meta == {} and "no closing" in note and body.startswith("---")


def test_sections_follow_headings_but_not_inside_code():
    body = (
        "Intro.\n\n## A\n\ntext a\n\n```bash\n# not a heading\n```\n\n### A.1\n\ndeep\n\n## B\n\nb"
    )
    sections, note = split_sections(body, "Doc")
    assert note is None
    assert [s.hierarchy for s in sections] == [
        ["Doc"],
        ["Doc", "A"],
        ["Doc", "A", "A.1"],
        ["Doc", "B"],
    ]
    assert "# not a heading" in sections[1].text
    assert sections[2].anchor == "a1"


def test_h1_becomes_root_and_heading_only_sections_merge_forward():
    sections, _ = split_sections("# Title\n\n## Empty\n\n### Child\n\ncontent", None)
    assert len(sections) == 1
    assert sections[0].hierarchy == ["Title", "Empty", "Child"]
    assert sections[0].text.startswith("# Title")


def test_unclosed_fence_is_closed_and_reported():
    sections, note = split_sections("## Code\n\n```python\nprint(1)\n## still code", "T")
    assert "never closed" in note
    assert len(sections) == 1 and sections[0].text.endswith("```")


def test_custom_heading_id_and_url():
    sections, _ = split_sections("## Install it {#setup}\n\ntext", "T")
    assert sections[0].hierarchy == ["T", "Install it"] and sections[0].anchor == "setup"
    assert document_url("https://x.org/docs/", "a/b.mdx", {}) == "https://x.org/docs/a/b"
    assert document_url("https://x.org/docs", "a/index.md", {}) == "https://x.org/docs/a"
    assert document_url(None, "a.md", {}) is None


def test_processor_title_fallbacks(tmp_path: Path):
    (tmp_path / "no-title.md").write_text("Just text.\n")
    (docs, problems) = MarkdownProcessor("https://x.org").process(
        tmp_path / "no-title.md", "no-title.md"
    )
    assert docs[0].title == "No title" and not problems
    assert docs[0].url == "https://x.org/no-title"


def test_the_front_matter_description_opens_the_page():
    """What a page is for, often in words its body never uses, is read, embedded and indexed."""
    parse = MarkdownProcessor().parse
    meta = "---\ntitle: strings.Truncate\ndescription: Shortens text without cutting words.\n---\n"
    (doc,), _ = parse(meta + "\nSince templates are HTML-aware...\n\n## Examples\n\nx\n", "t.md")
    assert [s.hierarchy for s in doc.sections] == [
        ["strings.Truncate"],
        ["strings.Truncate", "Examples"],
    ]
    assert (
        doc.sections[0].text
        == "Shortens text without cutting words.\n\nSince templates are HTML-aware..."
    )
    # after the title's own heading line; a page without an opening gets one
    h1 = "---\ndescription: Shortens text without cutting words.\n---\n\n# Truncate\n\nBody.\n"
    (doc,), _ = parse(h1, "t.md")
    assert doc.sections[0].text == "# Truncate\n\nShortens text without cutting words.\n\nBody."
    (doc,), _ = parse(meta + "\n## Settings\n\nBody.\n", "t.md")
    assert [(s.hierarchy, s.text) for s in doc.sections[:1]] == [
        (["strings.Truncate"], "Shortens text without cutting words.")
    ]
    # said already: not twice
    (doc,), _ = parse(meta + "\nShortens text without\ncutting words. More.\n", "t.md")
    assert doc.sections[0].text.count("Shortens") == 1
