"""The furniture check behind the build's hygiene figures: what it flags and what it leaves alone."""

import pytest
from docbuild.util.hygiene import furniture


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Installing¶", "permalink mark ¶"),
        ("Previous topic", "site chrome 'Previous topic'"),
        ("Quick search:", "site chrome 'Quick search:'"),
        (".. function:: spam(x)", "raw directive"),
        ("See :func:`os.walk` for details.", "raw role"),
        ("System Message: ERROR/3 (page.rst, line 4)", "docutils message"),
        ('Unknown directive type "foo".', "docutils message"),
        ("See linkgit:git-reset[1].", "linkgit macro"),
        ("include::diff-options.txt[]", "include directive"),
        ("OPTIONS\n-------", "setext underline"),
        ('<div class="sidebar">menu</div>', "HTML tag"),
        ("{{< new-in 0.123.0 >}}", "shortcode"),
        ('{{% include "_common/x.md" %}}', "shortcode"),
        ("{% highlight ruby %}", "Liquid tag"),
        ("[where]: /functions/collections/where/", "link reference definition"),
        ("A [page resource](g) is a file.", "glossary link"),
    ],
)
def test_furniture_is_flagged(text: str, kind: str):
    assert kind in furniture(text)


@pytest.mark.parametrize(
    "text",
    [
        "Plain prose about navigation menus and the previous topic of a chapter.",
        "```rst\n.. function:: spam(x)\n\nTitle\n=====\n```",  # inside fenced code
        "Use `<script>` tags or ``:func:`x` `` roles in your own pages.",  # inline code
        "Paragraph.\n\n---\n\nAfter a rule.",  # a Markdown rule, not an underline
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "The meeting is at 10:30: bring notes.",
        "Use `{{< figure >}}` or `{% raw %}` in your templates.",  # inline code
        "A set such as {a, b} and a map {key: value}.",
        "See [the guide](https://example.org/g) and [x][1].",
        "[1]: A footnote, as reStructuredText has them.",
    ],
)
def test_clean_text_passes(text: str):
    assert furniture(text) == []
