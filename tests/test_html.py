"""HTML pages of built sites: main content only, sections, code, tables, API entries, skips."""

from pathlib import Path

import lxml.html
import pytest
from conftest import corpus
from docbuild.chunker import fence_balanced
from docbuild.documents import Document, SkipFile
from docbuild.readers.html import HtmlReader
from docbuild.util.hygiene import MARKERS, furniture

SPHINX_PAGE = """<!DOCTYPE html>
<html><head><title>widgets — Widget handling &#8212; Gadget 2.0 documentation</title>
<script>var x = "<div>never</div>";</script><style>p { color: red }</style></head>
<body>
<div class="related" role="navigation"><h3>Navigation</h3>
  <ul><li><a href="genindex.html">index</a></li><li><a href="prev.html">previous</a> |</li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper">
<div class="body" role="main">
<section id="module-widgets">
<span id="widgets-label"></span><h1><code class="xref py py-mod docutils literal"><span class="pre">widgets</span></code> — Widget handling<a class="headerlink" href="#module-widgets" title="Permalink to this heading">¶</a></h1>
<p>The <a class="reference internal" href="#widgets.Spinner"><code class="xref py py-class docutils literal"><span class="pre">Spinner</span></code></a> class spins <em>things</em>.</p>
<div class="toctree-wrapper compound"><ul><li class="toctree-l1"><a href="sub.html">A child page</a></li></ul></div>
<div class="admonition note"><p class="admonition-title">Note</p><p>Spinning is idempotent.</p></div>
<aside class="sidebar"><p class="sidebar-title">Tip</p><p>Spin gently.</p></aside>
<section id="api-reference">
<h2>API reference<a class="headerlink" href="#api-reference">¶</a></h2>
<dl class="py class">
<dt class="sig sig-object py" id="widgets.Spinner">
<em class="property"><span class="pre">class</span><span class="w"> </span></em><span class="sig-prename descclassname"><span class="pre">widgets.</span></span><span class="sig-name descname"><span class="pre">Spinner</span></span><span class="sig-paren">(</span><em class="sig-param"><span class="n"><span class="pre">speed</span></span><span class="o"><span class="pre">=</span></span><span class="default_value"><span class="pre">1</span></span></em><span class="sig-paren">)</span><a class="reference internal" href="_modules/widgets.html"><span class="viewcode-link">[source]</span></a><a class="headerlink" href="#widgets.Spinner" title="Permalink to this definition">¶</a></dt>
<dd><p>Make a spinner.</p>
<div class="highlight-python3 notranslate"><div class="highlight"><pre><span></span><span class="kn">import</span> <span class="nn">widgets</span>
<span class="k">if</span> <span class="kc">True</span><span class="p">:</span>
    <span class="n">widgets</span><span class="o">.</span><span class="n">Spinner</span><span class="p">()</span>
</pre></div></div>
<div class="versionadded"><p><span class="versionmodified added">New in version 1.2.</span></p></div>
<dl class="py method">
<dt class="sig sig-object py" id="widgets.Spinner.spin"><span class="sig-name descname"><span class="pre">spin</span></span><span class="sig-paren">(</span><span class="sig-paren">)</span><a class="headerlink" href="#widgets.Spinner.spin">¶</a></dt>
<dd><p>Spin once.</p></dd></dl>
</dd></dl>
<section id="limits">
<h3>Limits<a class="headerlink" href="#limits">¶</a></h3>
<table class="docutils align-default">
<thead><tr class="row-odd"><th class="head"><p>Name</p></th><th class="head"><p>Value</p></th></tr></thead>
<tbody><tr class="row-even"><td><p><code class="docutils literal"><span class="pre">a|b</span></code></p></td><td><p>first line
second line</p></td></tr>
<tr class="row-odd"><td colspan="2"><p>spanning</p></td></tr></tbody>
</table>
<div class="admonition seealso"><p class="admonition-title">See also</p>
<dl class="simple"><dt><a href="x.html">Gizmo guide</a></dt><dd><p>How gizmos work.</p></dd></dl></div>
</section></section></section>
<div class="clearer"></div></div></div></div>
<div class="sphinxsidebar" role="navigation"><div class="sphinxsidebarwrapper">
  <h4>Previous topic</h4><p><a href="prev.html">Earlier</a></p>
  <h3>This Page</h3><ul><li><a href="_sources/widgets.rst.txt">Show Source</a></li></ul>
  <div id="searchbox"><h3>Quick search</h3><form><input type="text" name="q"/></form></div>
</div></div></div>
<div class="footer">&copy; Copyright 2024. Last updated on Jan 01.</div>
</body></html>
"""

ASCIIDOC_PAGE = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en"><head>
<meta name="generator" content="AsciiDoc 10.2.0" /><title>frob-tool(1)</title></head>
<body class="manpage">
<div id="header"><h1>frob-tool(1) Manual Page</h1>
<h2>NAME</h2><div class="sectionbody"><p>frob-tool - Frobnicate the widgets</p></div></div>
<div id="content">
<div class="sect1"><h2 id="_synopsis">SYNOPSIS</h2><div class="sectionbody">
<div class="verseblock"><pre class="content"><em>frob-tool</em> [--fast] &lt;file&gt;&#8230;</pre></div></div></div>
<div class="sect1"><h2 id="_options">OPTIONS</h2><div class="sectionbody">
<div class="dlist"><dl>
<dt class="hdlist1">-f</dt><dt class="hdlist1">--fast</dt>
<dd><p>Frobnicate quickly.</p>
<div class="listingblock"><div class="content"><pre><code>$ frob-tool --fast a.txt</code></pre></div></div></dd>
</dl></div>
<div class="admonitionblock"><table><tr><td class="icon"><div class="title">Note</div></td>
<td class="content">Fast mode skips <code>fsck</code>.</td></tr></table></div>
<div class="sidebarblock"><div class="content"><div class="title">Aside</div>
<div class="paragraph"><p>Sidebar blocks are content.</p></div></div></div>
<div class="sect2"><h3 id="_more">More</h3>
<div class="ulist"><ul><li><p>one</p></li><li><p>two</p>
<div class="olist arabic"><ol class="arabic"><li><p>nested</p></li></ol></div></li></ul></div>
</div></div></div>
</div>
<div id="footnotes"><hr /></div>
<div id="footer"><div id="footer-text">Last updated 2024-05-31 00:35:55 UTC</div></div>
</body></html>
"""

GENERIC_PAGE = """<!doctype html><html><head><title>Install | Acme Docs</title></head><body>
<a class="skip-link" href="#main">Skip to content</a>
<div id="cookie-banner" class="consent">We use cookies. <button>Accept</button></div>
<header class="site-header"><h1>Acme Docs</h1><nav><a href="/">Home</a></nav></header>
<div class="layout">
<aside class="docs-sidebar"><ul><li><a href="/a">Sidebar link</a></li></ul></aside>
<main>
<nav aria-label="breadcrumbs" class="breadcrumbs"><a href="/">Docs</a> / Install</nav>
<article>
<header><h1 id="install">Install Acme</h1></header>
<p>Acme installs with one command.</p>
<h2 id="linux">On Linux<a class="hash-link" href="#linux">#</a></h2>
<pre><code class="language-bash">curl -sSL https://acme.test/install | sh
echo "done"</code></pre>
<div class="theme-doc-toc-mobile">On this page</div>
<h2>On macOS</h2><p>Use <code>brew install acme</code>.</p>
<img src="shot.png" alt="A screenshot">
</article>
<nav class="pagination-nav"><a href="/prev">« Previous</a><a href="/next">Next »</a></nav>
<footer class="theme-doc-footer">Edit this page</footer>
</main>
<div class="table-of-contents">On this page: On Linux</div>
</div>
<footer>&copy; 2024 Acme Inc.</footer>
</body></html>
"""

MKDOCS_MATERIAL_PAGE = """<html><head><title>Setup - MyProj</title></head><body>
<header class="md-header"><nav class="md-header__inner"><div class="md-header__title">MyProj</div></nav></header>
<main class="md-main"><div class="md-main__inner md-grid">
<div class="md-sidebar md-sidebar--primary"><nav class="md-nav"><ul><li>Sidebar link</li></ul></nav></div>
<div class="md-sidebar md-sidebar--secondary"><nav class="md-nav"><label>On this page</label></nav></div>
<div class="md-content"><article class="md-content__inner md-typeset">
<a href="https://git.test/edit/setup.md" title="Edit this page" class="md-content__button"><svg/></a>
<h1 id="setup">Setup</h1><p>Intro text.</p>
<h2 id="install">Install<a class="headerlink" href="#install" title="Permanent link">&para;</a></h2>
<div class="admonition warning"><p class="admonition-title">Careful</p><p>Root needed.</p></div>
<div class="language-bash highlight"><pre><span></span><code><span class="w">pip install x</span></code></pre></div>
<aside class="md-source-file"><span>Last updated: 2024</span></aside>
</article></div></div></main>
<footer class="md-footer"><nav><a class="md-footer__link--prev">Previous Home</a></nav></footer></body></html>
"""

DOCUSAURUS_PAGE = """<html><head><title>Setup | Docu</title></head><body>
<div role="region"><a class="skipToContent_fXgn skip-link" href="#main">Skip to content</a></div>
<nav class="navbar navbar--fixed-top">Docu Docs Blog</nav>
<aside class="theme-doc-sidebar-container"><nav class="menu">Sidebar link</nav></aside>
<main class="docMainContainer_TBSr"><div class="row"><div class="col"><article>
<nav class="theme-doc-breadcrumbs"><ul class="breadcrumbs"><li>Home</li></ul></nav>
<div class="tocCollapsible_ETCw theme-doc-toc-mobile"><button>On this page</button></div>
<div class="theme-doc-markdown markdown"><header><h1>Setup</h1></header><p>Intro text.</p>
<h2 class="anchor" id="install">Install<a href="#install" class="hash-link" aria-label="Direct link">&#8203;</a></h2>
<div class="theme-admonition alert alert--warning"><div class="admonitionHeading_Gvgb">Careful</div>
<div class="admonitionContent_BuS1"><p>Root needed.</p></div></div>
<div class="language-bash theme-code-block"><pre class="prism-code language-bash"><code><span class="token-line">pip install x</span><br></code></pre>
<div class="buttonGroup__atx"><button title="Copy">Copy</button></div></div></div>
<footer class="theme-doc-footer"><a href="edit">Edit this page</a></footer></article>
<nav class="pagination-nav"><a>Previous</a></nav></div>
<div class="col col--3"><div class="tableOfContents_bqdL theme-doc-toc-desktop"><ul class="table-of-contents"><li>On this page</li></ul></div></div>
</div></main><footer class="footer">Copyright 2024</footer></body></html>
"""

FURNITURE_TEXT = [
    "Navigation",
    "Previous topic",
    "Quick search",
    "Show Source",
    "Copyright",
    "Last updated",
    "Skip to content",
    "cookies",
    "Sidebar link",
    "Edit this page",
    "On this page",
    "Previous",
    "Acme Docs",
    "never",
    "color: red",
]


def parse(html: str, relative: str = "page.html", **options) -> Document:
    """Parse ``html`` written to no file; the document it makes."""
    (doc,), problems = HtmlReader(**options).parse(html, relative)
    assert problems == []
    return doc


def page_text(doc: Document) -> str:
    return "\n\n".join(section.text for section in doc.sections)


def test_sphinx_page_keeps_content_and_drops_furniture():
    doc = parse(SPHINX_PAGE, "library/widgets.html", url_base="https://gadget.test/2.0/")
    text = page_text(doc)
    assert doc.title == "widgets — Widget handling" and not doc.title_from_path
    assert doc.url == "https://gadget.test/2.0/library/widgets.html"
    assert [s.hierarchy for s in doc.sections] == [
        ["widgets — Widget handling"],
        ["widgets — Widget handling", "API reference"],
        ["widgets — Widget handling", "API reference", "Limits"],
    ]
    assert [s.anchor for s in doc.sections] == ["module-widgets", "api-reference", "limits"]
    assert doc.sections[0].text.startswith("# widgets — Widget handling\n\nThe `Spinner` class")
    assert doc.sections[1].text.startswith("## API reference\n\n")
    assert doc.sections[2].text.startswith("### Limits\n\n")
    assert "Note: Spinning is idempotent." in text
    assert "Tip: Spin gently." in text  # docutils' sidebar directive is content
    assert "A child page" not in text  # a toctree is navigation
    assert "`class widgets.Spinner(speed=1)`\nMake a spinner." in text
    assert "`spin()`\nSpin once." in text and "[source]" not in text
    assert "New in version 1.2." in text
    assert "See also:\n**Gizmo guide**\nHow gizmos work." in text
    for word in FURNITURE_TEXT:
        assert word not in text, word
    assert all(furniture(section.text) == [] for section in doc.sections)


def test_code_is_fenced_verbatim_with_the_highlighters_language():
    text = page_text(parse(SPHINX_PAGE))
    assert (
        "```python\nimport widgets\nif True:\n    widgets.Spinner()\n```" in text
    )  # spans dissolved, indentation kept, leading empty span gone
    assert "<span" not in text


@pytest.mark.parametrize(
    ("wrapper", "language"),
    [
        (
            '<div class="highlight-python3 notranslate"><div class="highlight"><pre>{}</pre></div></div>',
            "python",
        ),
        (
            '<div class="highlight-pycon notranslate"><div class="highlight"><pre>{}</pre></div></div>',
            "pycon",
        ),
        (
            '<div class="highlight-none notranslate"><div class="highlight"><pre>{}</pre></div></div>',
            "",
        ),
        (
            '<div class="highlight-text notranslate"><div class="highlight"><pre>{}</pre></div></div>',
            "",
        ),
        (
            '<div class="highlight-default notranslate"><div class="highlight"><pre>{}</pre></div></div>',
            "",
        ),
        (
            '<div class="doctest highlight-default notranslate"><div class="highlight"><pre>{}</pre></div></div>',
            "pycon",
        ),
        (
            '<div class="highlight-shell-session"><div class="highlight"><pre>{}</pre></div></div>',
            "shell-session",
        ),
        ('<pre><code class="language-rust">{}</code></pre>', "rust"),
        ('<pre class="lang-go">{}</pre>', "go"),
        ('<pre><code data-lang="toml">{}</code></pre>', "toml"),
        (
            '<div class="listingblock"><div class="content"><pre><code>{}</code></pre></div></div>',
            "",
        ),
    ],
)
def test_code_language_mapping(wrapper: str, language: str):
    html = "<main><h1>T</h1><p>Intro.</p>" + wrapper.format("x = 1<br>y = 2") + "</main>"
    assert f"```{language}\nx = 1\ny = 2\n```" in page_text(parse(html))


def test_code_with_backticks_gets_a_longer_fence():
    text = page_text(parse("<main><h1>T</h1><pre>```\ninner\n```</pre></main>"))
    assert "````\n```\ninner\n```\n````" in text
    assert fence_balanced(text)


def test_table_becomes_markdown():
    text = page_text(parse(SPHINX_PAGE))
    assert (
        "| Name | Value |\n|---|---|\n| `a\\|b` | first line second line |\n| spanning |  |" in text
    )


def test_layout_table_becomes_blocks():
    html = (
        "<main><h1>Home</h1><p>Welcome to the documentation of the frobnicator.</p>"
        "<table><tr><td><p><a href='a.html'>Tutorial</a></p><p>start here</p></td>"
        "<td><p><a href='b.html'>Reference</a></p><p>every option</p></td></tr></table></main>"
    )
    text = page_text(parse(html))
    assert "|" not in text and "Tutorial\n\nstart here\n\nReference\n\nevery option" in text


def test_lists_and_definition_lists():
    html = (
        "<main><h1>T</h1><ul><li>one<ul><li>one.a</li></ul></li><li>two</li></ul>"
        "<ol start='3'><li><p>third</p></li><li><p>fourth</p><pre>code</pre></li></ol>"
        "<dl><dt>--fast</dt><dt>-f</dt><dd><p>Go fast.</p><p>Really.</p></dd></dl></main>"
    )
    text = page_text(parse(html))
    assert "- one\n  - one.a\n- two" in text
    assert "3. third\n\n4. fourth\n\n   ```\n   code\n   ```" in text
    assert "**--fast**\n**-f**\nGo fast.\n\nReally." in text
    assert fence_balanced(text)


def test_asciidoc_page():
    doc = parse(ASCIIDOC_PAGE, "frob-tool.html")
    text = page_text(doc)
    assert doc.title == "frob-tool(1) Manual Page"
    assert doc.sections[0].hierarchy == ["frob-tool(1) Manual Page", "NAME"]
    assert doc.sections[0].text.startswith("# frob-tool(1) Manual Page\n\n## NAME\n\nfrob-tool -")
    anchors = {s.hierarchy[-1]: s.anchor for s in doc.sections}
    assert anchors == {
        "NAME": None,
        "SYNOPSIS": "_synopsis",
        "OPTIONS": "_options",
        "More": "_more",
    }
    assert doc.sections[-1].hierarchy == ["frob-tool(1) Manual Page", "OPTIONS", "More"]
    assert "```\nfrob-tool [--fast] <file>…\n```" in text
    assert "**-f**\n**--fast**\nFrobnicate quickly.\n\n```\n$ frob-tool --fast a.txt\n```" in text
    assert "Note: Fast mode skips `fsck`." in text
    assert "Aside: Sidebar blocks are content." in text
    assert "- one\n- two\n  1. nested" in text
    assert "Last updated" not in text and "|" not in text


def test_generic_site_keeps_only_the_article():
    doc = parse(GENERIC_PAGE, "install.html")
    text = page_text(doc)
    assert doc.title == "Install Acme"
    assert [s.hierarchy for s in doc.sections] == [
        ["Install Acme"],
        ["Install Acme", "On Linux"],
        ["Install Acme", "On macOS"],
    ]
    assert [s.anchor for s in doc.sections] == ["install", "linux", None]
    assert "## On Linux\n\n```bash\ncurl -sSL https://acme.test/install | sh" in text
    assert "Use `brew install acme`." in text
    assert "screenshot" not in text and "#\n" not in text
    for word in FURNITURE_TEXT:
        assert word not in text, word


@pytest.mark.parametrize(
    ("html", "top_anchor"),
    [(MKDOCS_MATERIAL_PAGE, "setup"), (DOCUSAURUS_PAGE, None)],
    ids=["mkdocs", "docusaurus"],
)
def test_static_site_generators(html: str, top_anchor: str | None):
    doc = parse(html, "setup.html")
    assert doc.title == "Setup"
    assert [(s.hierarchy, s.anchor) for s in doc.sections] == [
        (["Setup"], top_anchor),
        (["Setup", "Install"], "install"),
    ]
    assert doc.sections[0].text == "# Setup\n\nIntro text."
    assert doc.sections[1].text == (
        "## Install\n\nCareful: Root needed.\n\n```bash\npip install x\n```"
    )


def test_page_without_main_element_drops_furniture_from_body():
    html = GENERIC_PAGE.replace("<main>", "<div>").replace("</main>", "</div>")
    html = html.replace("<article>", "<div>").replace("</article>", "</div>")
    text = page_text(parse(html))
    assert "Acme installs with one command." in text and "```bash" in text
    for word in FURNITURE_TEXT:
        assert word not in text, word


def test_broken_html_loses_no_content():
    html = (
        "<html><body><div class='body' role='main'><h1>Broken\n<p>first <b>bold <i>italic"
        "<p>second paragraph<ul><li>item one<li>item two</ul><table><tr><td>a<td>b<tr><td>c"
        "</table><h2 id='x'>Next<p>after <pre>code\n  kept"
    )
    doc = parse(html)
    text = page_text(doc)
    for piece in ["first", "bold", "italic", "second paragraph", "item one", "item two"]:
        assert piece in text
    assert "| a | b |\n|---|---|\n| c |  |" in text
    assert doc.sections[-1].hierarchy[-1] == "Next" and doc.sections[-1].anchor == "x"
    assert "after" in text and "```\ncode\n  kept\n```" in text


def test_markdown_lookalikes_in_text_are_escaped():
    html = "<main><h1>T</h1><p>```not a fence</p><p># not a heading</p><p>-----</p></main>"
    text = page_text(parse(html))
    assert "\\```not a fence" in text and "\\# not a heading" in text and "\\-----" in text
    assert fence_balanced(text) and furniture(text) == []


def test_index_pages_are_skipped():
    genindex = (
        "<div role='main'><h1>Index</h1><table class='indextable genindextable'><tr><td><ul>"
        "<li><a href='a.html#x'>abs() (built-in function)</a></li></ul></td></tr></table></div>"
    )
    with pytest.raises(SkipFile, match="index page"):
        parse(genindex, "genindex-A.html")
    search = "<div role='main'><h1>Search</h1><p>Words.</p><div id='search-results'></div></div>"
    with pytest.raises(SkipFile, match="search page"):
        parse(search, "search.html")
    toctree = (
        "<div role='main'><section id='t'><h1>Library</h1><div class='toctree-wrapper'><ul>"
        "<li><a href='a.html'>Alpha module</a></li><li><a href='b.html'>Beta module</a></li>"
        "</ul></div></section></div>"
    )
    with pytest.raises(SkipFile, match="no text besides headings"):
        parse(toctree, "library/index.html")
    links = "<main><h1>Guides</h1><ul>" + "<li><a href='g.html'>Guide to a thing</a></li>" * 9
    with pytest.raises(SkipFile, match="table of contents"):
        parse(links + "</ul><p>Pick one.</p></main>", "guides.html")
    assert parse(genindex, "genindex-A.html", skip_index_pages=False).sections


def test_api_page_with_many_links_is_kept():
    entry = (
        "<dl class='py function'><dt class='sig sig-object py' id='m.f{0}'>"
        "<span class='sig-name descname'><span class='pre'>f{0}</span></span>()</dt>"
        "<dd><p>Like <a href='#m.g'><code>g()</code></a>, see <a href='x.html'>X</a>.</p></dd></dl>"
    )
    html = "<div role='main'><h1>m</h1>" + "".join(entry.format(n) for n in range(20)) + "</div>"
    doc = parse(html)
    assert "`f7()`\nLike `g()`, see X." in page_text(doc)


def test_content_named_like_furniture_is_kept():
    html = (
        "<div role='main'><h1>grep</h1><section id='search'><h2>Search</h2><p>Finds lines.</p>"
        "<dl class='std cmdoption'><dt class='sig sig-object std' id='cmdoption-toc'>"
        "<span class='sig-name descname'>--toc</span></dt><dd><p>Print a toc.</p></dd></dl>"
        "<dl class='glossary'><dt id='term-header'>header</dt><dd><p>The first line.</p></dd></dl>"
        "<h2><a class='toc-backref' href='#id1'>Navigation keys</a></h2><p>Arrows.</p>"
        "<h3 id='_related_links'>Related links</h3><p>More.</p>"
        "</section></div>"
    )
    doc = parse(html)
    text = page_text(doc)
    assert [s.hierarchy[-1] for s in doc.sections] == ["Search", "Navigation keys", "Related links"]
    assert doc.sections[0].anchor == "search"
    assert "`--toc`\nPrint a toc." in text and "**header**\nThe first line." in text


def test_title_fallbacks(tmp_path: Path):
    doc = parse(
        "<html><head><title>Usage — Tool 1.0 documentation</title></head>"
        "<body><div role='main'><p>Run it.</p></div></body></html>"
    )
    assert doc.title == "Usage" and doc.sections[0].text == "# Usage\n\nRun it."
    doc = parse("<p>Just text.</p>", "guide/getting-started.html")
    assert doc.title == "Getting started" and doc.title_from_path
    assert doc.url is None


def test_unusable_files_are_skipped(tmp_path: Path):
    reader = HtmlReader()
    empty = tmp_path / "empty.html"
    empty.write_text("  \n")
    with pytest.raises(SkipFile, match="empty"):
        reader.read(empty, "empty.html")
    comment = tmp_path / "comment.html"
    comment.write_text("<!-- nothing here -->")
    with pytest.raises(SkipFile):
        reader.read(comment, "comment.html")
    only_nav = tmp_path / "nav.html"
    only_nav.write_text("<body><nav><a href='a.html'>A</a></nav><footer>(c)</footer></body>")
    with pytest.raises(SkipFile):
        HtmlReader(skip_index_pages=False).read(only_nav, "nav.html")


HTML_TAG = dict(MARKERS)["HTML tag"]


def leaked_furniture(text: str, shown: str) -> list[str]:
    """Furniture in ``text``; a tag-like word the page itself shows as text (a ``<style>``
    placeholder, ``<div>`` in inline code) is content, not leaked markup."""
    found = furniture(text)
    if "HTML tag" in found and all(m.group() in shown for m in HTML_TAG.finditer(text)):
        found = [kind for kind in found if kind != "HTML tag"]
    return found


def check_corpus_pages(root: Path, relatives: list[str]) -> dict[str, Document]:
    """Parse pages of a real site; assert clean, balanced sections; return the documents."""
    reader = HtmlReader("https://docs.test/")
    docs: dict[str, Document] = {}
    for relative in relatives:
        try:
            (doc,), problems = reader.read(root / relative, relative)
        except SkipFile:
            continue
        page = lxml.html.document_fromstring((root / relative).read_bytes())
        shown = " ".join(page.xpath("//body//text()[not(ancestor::script or ancestor::style)]"))
        assert problems == [] and doc.url == f"https://docs.test/{relative}"
        assert doc.sections[0].text.startswith(f"# {doc.title}\n")
        for section in doc.sections:
            assert section.hierarchy[0] == doc.title
            assert section.text.startswith("#")
            assert leaked_furniture(section.text, shown) == [], (relative, section.hierarchy)
            assert fence_balanced(section.text), (relative, section.hierarchy)
            assert "¶" not in section.text
        docs[relative] = doc
    return docs


def test_python_docs_corpus_slice():
    root = corpus("python-docs-3.11", "html")
    pages = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html"))
    pages = [p for p in pages if not p.startswith("_")]
    chosen = [
        "library/csv.html",
        "library/os.html",
        *(p for p in pages if p.startswith("tutorial/")),
    ]
    chosen += [p for p in pages[::37] if p not in chosen]
    docs = check_corpus_pages(root, chosen)
    assert len(chosen) >= 30 and len(docs) >= len(chosen) - 3
    csv_text = page_text(docs["library/csv.html"])
    assert "`class csv.DictReader(f, fieldnames=None, restkey=None, restval=None" in csv_text
    assert any(s.anchor == "module-contents" for s in docs["library/csv.html"].sections)
    assert "`os.getcwd()`" in page_text(docs["library/os.html"])


def test_git_docs_corpus_slice():
    root = corpus("git-docs", "html")
    pages = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html"))
    chosen = ["git-add.html", "user-manual.html", *pages[::8]]
    docs = check_corpus_pages(root, chosen)
    assert len(docs) == len(set(chosen)) >= 30  # none skipped
    add = docs["git-add.html"]
    assert add.title == "git-add(1) Manual Page"
    assert ["git-add(1) Manual Page", "OPTIONS"] in [s.hierarchy for s in add.sections]
    assert "**--dry-run**" in page_text(add)


def test_a_page_in_a_declared_legacy_charset_is_decoded(tmp_path: Path):
    page = (
        '<html><head><meta charset="iso-8859-1"><title>Menu</title></head><body><main>'
        "<h1>Caf\xe9 cr\xe8me</h1><p>Cr\xe8me br\xfbl\xe9e, step by step.</p></main></body></html>"
    )
    path = tmp_path / "latin.html"
    path.write_bytes(page.encode("latin-1"))
    (doc,) = HtmlReader().read(path, "latin.html")[0]
    assert doc.title == "Café crème" and "Crème brûlée, step by step." in doc.sections[0].text
