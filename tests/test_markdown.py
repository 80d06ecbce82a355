"""Markdown: front matter, sections, fences, URLs, best-effort notes."""

from pathlib import Path

from docbuild.readers.commonmark import sections_of
from docbuild.readers.markdown import MarkdownReader, split_front_matter
from docbuild.readers.markdown_text import document_url


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


def test_reader_title_fallbacks(tmp_path: Path):
    (tmp_path / "no-title.md").write_text("Just text.\n")
    (docs, problems) = MarkdownReader("https://x.org").read(tmp_path / "no-title.md", "no-title.md")
    assert docs[0].title == "No title" and not problems
    assert docs[0].url == "https://x.org/no-title"


def test_the_front_matter_description_opens_the_page():
    """What a page is for, often in words its body never uses, is read, embedded and indexed."""
    parse = MarkdownReader().parse
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


HUGO_PAGE = """---
title: Figures
---

Use the figure shortcode {{< new-in 0.123.0 >}} to show a [page resource](g).
See [where] and the [docs](https://gohugo.io/docs/) for more.

{{< code-toggle file=hugo >}}
[markup.goldmark]
unsafe = true
{{< /code-toggle >}}

{{< code-toggle config=privacy.x />}}

{{< highlight go "linenos=table" >}}
fmt.Println("hi")
{{< /highlight >}}

{{< figure
  src="zion.jpg"
  caption="Zion National Park"
>}}{class="wide"}

{{% details summary="Why not YAML?" %}}
Because **TOML** came first.
{{% /details %}}

{{< deprecated-in 0.120.0 >}}
Use `.Site.Params` instead.
{{< /deprecated-in >}}

{{% include "_common/note.md" %}}

```go-html-template
{{< figure src="kept-in-code.jpg" >}}
```

> [!WARNING]
> Back up your site first.

A push[^1] triggers a build. Press <kbd>Ctrl</kbd> and replace <file> with yours.

[where]: /functions/collections/where/
[^1]: The repository holds the project.
"""


def test_hugo_markup_is_translated_not_leaked(tmp_path: Path):
    from docbuild.util.hygiene import furniture

    (tmp_path / "_common").mkdir()
    (tmp_path / "_common" / "note.md").write_text(
        "---\n_comment: Do not remove front matter.\n---\n\nIncluded text about caches.\n\n"
        "## Included heading\n\nUnder its own heading.\n"
    )
    (tmp_path / "figures.md").write_text(HUGO_PAGE)
    (doc,), problems = MarkdownReader().read(tmp_path / "figures.md", "figures.md")
    assert not problems
    text = "\n\n".join(s.text for s in doc.sections)
    assert furniture(text) == []  # no shortcode, link reference line or (g) link left
    assert "New in 0.123.0 to show a page resource." in text
    assert "See where and the [docs](https://gohugo.io/docs/) for more." in text
    assert "```toml\n[markup.goldmark]\nunsafe = true\n```" in text
    assert '```go\nfmt.Println("hi")\n```' in text
    assert "Zion National Park" in text and "zion.jpg" not in text
    assert "Why not YAML?: Because **TOML** came first." in text
    assert "Deprecated in 0.120.0: Use `.Site.Params` instead." in text
    assert "Included text about caches." in text and "_comment" not in text
    assert '{{< figure src="kept-in-code.jpg" >}}' in text  # code is code
    assert "> Warning: Back up your site first." in text
    assert "A push[1] triggers a build." in text and "[1] The repository holds" in text
    assert "Press Ctrl and replace <file> with yours." in text
    assert "/functions/collections/where/" not in text and "privacy" not in text
    assert doc.dependencies == [str((tmp_path / "_common" / "note.md").resolve())]
    included = next(s for s in doc.sections if "Under its own heading." in s.text)
    assert included.hierarchy == ["Figures", "Included heading"]  # its heading is a section


def test_other_generators_markup_is_translated():
    from docbuild.util.hygiene import furniture

    body = """Intro.

!!! note "Mind the cache"
    Clear it after an upgrade.

    Then restart.

{% highlight ruby %}
puts "hi"
{% endhighlight %}

{% include footer.html %}

:::tip Faster builds
Use the cache.
:::

<details><summary>More</summary><p>Hidden text.</p></details>
"""
    (section,) = sections_of(body, "T", "T").sections
    assert furniture(section.text) == []
    assert "Note: Mind the cache: Clear it after an upgrade.\n\nThen restart." in section.text
    assert '```ruby\nputs "hi"\n```' in section.text and "footer" not in section.text
    assert "Tip: Faster builds: Use the cache." in section.text
    assert "More\n\nHidden text." in section.text and "<details>" not in section.text


def test_links_to_other_pages_become_absolute_with_a_url_base():
    body = (
        "See [where](/functions/where/), [setup](setup.md#install), [the index](../index.md),\n"
        "a [term](g), [below](#later) and [Go](https://go.dev/).\n"
    )
    (doc,), _ = MarkdownReader("https://x.org/docs").parse(body, "guide/intro.md")
    text = doc.sections[0].text
    assert "[where](https://x.org/functions/where/)" in text
    assert "[setup](https://x.org/docs/guide/setup#install)" in text
    assert "[the index](https://x.org/docs/)" in text
    assert "a term, below and [Go](https://go.dev/)." in text
    (doc,), _ = MarkdownReader().parse(body, "guide/intro.md")  # no URL: links read as text
    assert doc.sections[0].text.startswith("See where, setup, the index,\na term, below and [Go]")
