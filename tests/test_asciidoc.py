"""AsciiDoc: titles, blocks, lists, includes, macros and fragments, then git's real sources."""

from __future__ import annotations

import os
import re
from pathlib import Path

import lxml.html
import pytest
from conftest import corpus
from docbuild.chunker import fence_balanced
from docbuild.documents import Document, FileProblem, SkipFile
from docbuild.readers.asciidoc import AsciidocReader
from docbuild.util.hygiene import furniture


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def parse(
    tmp_path: Path, text: str, name: str = "doc.adoc", **others: str
) -> tuple[Document, list[FileProblem]]:
    """Write ``text`` (and ``others``) into a fresh tree and process ``name``."""
    write(tmp_path, {name: text, **{f"{k.replace('__', '/')}.adoc": v for k, v in others.items()}})
    docs, problems = AsciidocReader("https://x.org/docs", ".html").read(tmp_path / name, name)
    assert len(docs) == 1
    return docs[0], problems


def body(doc: Document) -> str:
    return "\n\n".join(s.text for s in doc.sections)


def test_both_title_styles_make_the_breadcrumb_with_asciidoc_ids(tmp_path):
    doc, problems = parse(
        tmp_path,
        "Guide Title\n=========\n\nIntro.\n\n== First part\n\nOne.\n\n"
        "Second part\n-------------\n\nTwo.\n\nDeeper `x` bit\n~~~~~~~~~~~~\n\nThree.\n\n"
        "Deepest\n^^^^^^^\n\nFour.\n\nLowest\n++++++\n\nFive.\n\n"
        "[[custom-id]]\n=== Explicit\n\nSix.\n",
    )
    assert problems == []
    assert doc.title == "Guide Title" and not doc.title_from_path
    assert doc.url == "https://x.org/docs/doc.html"
    assert [s.hierarchy for s in doc.sections] == [
        ["Guide Title"],
        ["Guide Title", "First part"],
        ["Guide Title", "Second part"],
        ["Guide Title", "Second part", "Deeper x bit"],
        ["Guide Title", "Second part", "Deeper x bit", "Deepest"],
        ["Guide Title", "Second part", "Deeper x bit", "Deepest", "Lowest"],
        ["Guide Title", "Second part", "Explicit"],
    ]
    anchors = [s.anchor for s in doc.sections]
    assert anchors == [
        None,
        "_first_part",
        "_second_part",
        "_deeper_code_x_code_bit",  # asciidoc-py makes ids from the rendered HTML title
        "_deepest",
        "_lowest",
        "custom-id",
    ]
    assert doc.sections[0].text == "# Guide Title\n\nIntro."
    assert doc.sections[3].text.startswith("### Deeper `x` bit\n\nThree.")
    assert doc.sections[5].text.startswith("##### Lowest")


def test_underline_must_match_title_length(tmp_path):
    doc, _ = parse(tmp_path, "= T\n\nNot a title\n-------------------\ncode here\n----\n")
    assert len(doc.sections) == 1
    assert "```\ncode here\n```" in doc.sections[0].text


def test_listing_source_literal_and_indented_blocks_become_fenced_code(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n\n[source,python]\n----\nprint('x')\n----\n\n.Example output\n....\n"
        "literal *not bold*\n....\n\n  indented literal\n    keeps indent\n\n"
        "----\nmarkdown ```fence``` inside\n----\n",
    )
    text = body(doc)
    assert "```python\nprint('x')\n```" in text
    assert "**Example output**\n\n```\nliteral *not bold*\n```" in text
    assert "```\nindented literal\n  keeps indent\n```" in text
    assert "````\nmarkdown ```fence``` inside\n````" in text
    assert fence_balanced(text)


def test_definition_lists_with_continuations_and_nesting(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n\n--soft::\n\tKeeps the index.\n+\nSecond paragraph.\n+\n----\n$ git reset --soft\n"
        "----\n--hard::\n-x;;\n\tBoth terms.\n+\n--\nnested:::\n\tInner text.\n--\n",
    )
    text = doc.sections[0].text
    assert (
        "- **--soft**: Keeps the index.\n\n  Second paragraph.\n\n  ```\n  $ git reset --soft"
        in text
    )
    assert "- **--hard**: " not in text  # --hard and -x;; are different lists
    assert "  - **-x**: Both terms." in text
    assert "    - **nested**: Inner text." in text
    assert "::" not in text and ";;" not in text and "\n+\n" not in text
    assert fence_balanced(text)


def test_term_lines_in_a_row_share_one_description(tmp_path):
    doc, _ = parse(tmp_path, "= T\n\n-q::\n--quiet::\n\tBe quiet.\n")
    assert "- **-q**, **--quiet**: Be quiet." in doc.sections[0].text


def test_bullets_ordered_lists_and_callouts(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n\n* one\n** one.a\n* two\n\nText.\n\n. first\n. second\n\nText.\n\n1. alpha\n2. beta\n\n"
        "----\n$ git add . <1>\n----\n<1> adds everything\n",
    )
    text = doc.sections[0].text
    assert "- one\n  - one.a\n- two" in text
    assert "1. first\n2. second" in text
    assert "1. alpha\n2. beta" in text
    assert "1. adds everything" in text


def test_verse_keeps_line_breaks_and_quote_blocks(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n\n[verse]\n'git reset' [-q] <paths>\n'git reset' --hard\n\n"
        "____\nQuoted wisdom.\n____\n",
    )
    text = doc.sections[0].text
    assert "*git reset* [-q] <paths>\n*git reset* --hard" in text
    assert "> Quoted wisdom." in text


def test_attributes_builtins_and_unknown_references(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n:product: Frobnicator\n:flag:\n\nUse {product}: {litdd}amend, HEAD{caret}, "
        "HEAD{tilde}2, a{plus}b, x{empty}y, {asterisk}.c and {unknown-thing}.\n\n"
        "ifdef::flag[]\nShown when flag is set.\nendif::flag[]\n"
        "ifndef::flag[]\nHidden when flag is set.\nendif::flag[]\n"
        "ifdef::other[Hidden one-liner.]\nifdef::flag[Shown one-liner.]\n",
    )
    text = doc.sections[0].text
    assert "Use Frobnicator: --amend, HEAD^, HEAD~2, a+b, xy, *.c and {unknown-thing}." in text
    assert "Shown when flag is set." in text and "Shown one-liner." in text
    assert "Hidden" not in text and "ifdef" not in text and ":product:" not in text


def test_includes_found_missing_and_renamed(tmp_path):
    doc, problems = parse(
        tmp_path,
        "= Page\n\nBefore.\n\ninclude::parts/options.adoc[]\n\ninclude::nowhere.adoc[]\n\n"
        "include::renamed.txt[]\n\nAfter.\n",
        parts__options="--all::\n\tEverything.\n\ninclude::../deep.adoc[]\n",
        deep="Deep text.\n",
        renamed="Renamed text.\n",
    )
    text = body(doc)
    for expected in (
        "Before.",
        "- **--all**: Everything.",
        "Deep text.",
        "Renamed text.",
        "After.",
    ):
        assert expected in text
    assert "include::" not in text
    assert len(problems) == 1 and not problems[0].skipped
    assert "include nowhere.adoc not found (line 7)" in problems[0].reason
    assert str((tmp_path / "parts" / "options.adoc").resolve()) in doc.dependencies
    assert str(tmp_path / "nowhere.adoc") in doc.dependencies  # its appearance is noticed


def test_include_cycles_and_depth_are_guarded(tmp_path):
    doc, problems = parse(
        tmp_path,
        "= A\n\nText of a.\n\ninclude::b.adoc[]\n",
        b="Text of b.\n\ninclude::doc.adoc[]\n",
    )
    assert body(doc).count("Text of a.") == 1 and "Text of b." in body(doc)
    assert "include cycle: doc.adoc (b.adoc line 3)" in problems[0].reason
    chain = {f"c{n}": f"Level {n}.\n\ninclude::c{n + 1}.adoc[]\n" for n in range(12)}
    doc, problems = parse(tmp_path / "chain", "= Chain\n\ninclude::c0.adoc[]\n", **chain)
    assert "Level 7." in body(doc) and "Level 8." not in body(doc)  # 8 levels of includes
    assert "nested deeper than 8" in problems[0].reason


def test_macros_render_as_their_text(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n\nSee linkgit:git-reset[1], link:howto/a_b.html[the howto], "
        "https://example.com/x_y[Example] and https://example.com/bare_url.\n\n"
        "Also <<details,the details>>, <<details>> and <<nowhere>>.\n\n"
        "image::diagram.png[A diagram]\n\nAn image:icon.png[icon] inline.\n\n"
        "Text.footnote:[A note.] kbd:[Ctrl+C]\n\n[[details]]\n== Details\n\nMore.\n",
    )
    text = body(doc)
    assert "See git-reset(1), the howto, Example and https://example.com/bare_url." in text
    assert "Also the details, Details and [nowhere]." in text
    assert "diagram" not in text and "icon" not in text and "An  inline." in text
    assert "Text. (A note.) Ctrl+C" in text
    assert "linkgit" not in text and "<<" not in text and "[[" not in text


def test_inline_formatting_becomes_markdown(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n\n*bold* _em_ 'old em' `mono *x*` +plus mono+ ``quoted'' don't users' "
        "snake_case_name \\*not bold* +++<b>pass</b>+++ pass:[a*b*c] a <style> placeholder\n\n"
        "Line one +\nline two\n",
    )
    text = doc.sections[0].text
    assert (
        "**bold** *em* *old em* `mono *x*` `plus mono` \"quoted\" don't users' snake_case_name "
        "*not bold* pass a*b*c a <style> placeholder" in text
    )
    assert "Line one\nline two" in text
    assert furniture(text) == []


def test_table_becomes_markdown_table(tmp_path):
    doc, _ = parse(
        tmp_path,
        '= T\n\n.Sizes\n[cols="1,2,1",options="header"]\n|===\n|Name |Value |Unit\n'
        "|pipe \\| in cell |`code` |b\n|two\nlines\n2+|spanned\n|===\n",
    )
    text = doc.sections[0].text
    assert (
        "**Sizes**\n\n| Name | Value | Unit |\n|---|---|---|\n"
        "| pipe \\| in cell | `code` | b |\n| two lines | spanned |  |" in text
    )


def test_admonitions_sidebars_and_comments(tmp_path):
    doc, _ = parse(
        tmp_path,
        "= T\n\nNOTE: Mind the gap.\n\n[WARNING]\n====\nDanger ahead.\n\nMore danger.\n====\n\n"
        ".Aside\n****\nSidebar text.\n****\n\n// a comment line\n////\nA comment block.\n////\n"
        "Visible.\n",
    )
    text = doc.sections[0].text
    assert "**Note:** Mind the gap." in text
    assert "**Warning:** Danger ahead.\n\nMore danger." in text
    assert "**Aside**\n\nSidebar text." in text
    assert "comment" not in text and "Visible." in text


def test_man_page_name_section_and_mail_header(tmp_path):
    doc, _ = parse(
        tmp_path,
        "git-frob(1)\n===========\n\nNAME\n----\ngit-frob - Frob things\n\n"
        "SYNOPSIS\n--------\n[verse]\n'git frob' <thing>\n",
        name="git-frob.adoc",
    )
    assert doc.title == "git-frob(1)"
    assert doc.sections[0].text == "# git-frob(1)\n\n## NAME\n\ngit-frob - Frob things"
    assert [s.anchor for s in doc.sections] == [None, "_synopsis"]
    howto, _ = parse(
        tmp_path / "howto",
        "From: A <a@b.c>\nSubject: x\nAbstract: What this is\n about.\nContent-type: text/asciidoc"
        "\n\nHow to frob\n===========\n\nBody.\n",
    )
    assert howto.title == "How to frob"
    assert howto.sections[0].text == "# How to frob\n\nWhat this is about.\n\nBody."


def test_broken_input_is_read_best_effort(tmp_path):
    doc, problems = parse(tmp_path, "No title here.\n\n----\nunclosed code\n\nifdef::x[]\n")
    assert doc.title == "Doc" and doc.title_from_path
    assert fence_balanced(body(doc)) and "unclosed code" in body(doc)
    assert "never closed" in problems[0].reason and "line 3" in problems[0].reason
    with pytest.raises(SkipFile, match="empty"):
        parse(tmp_path / "empty", "\n\n")


def test_include_fragments_are_skipped_until_no_longer_included(tmp_path):
    write(tmp_path, {"page.adoc": "= Page\n\ninclude::frag.adoc[]\n", "frag.adoc": "Shared.\n"})
    reader = AsciidocReader()
    with pytest.raises(SkipFile) as skipped:
        reader.read(tmp_path / "frag.adoc", "frag.adoc")
    assert str(skipped.value) == "include fragment (included by page.adoc)"
    assert skipped.value.dependencies == [str((tmp_path / "page.adoc").resolve())]
    page = tmp_path / "page.adoc"
    page.write_text("= Page\n\nNo include now.\n", encoding="utf-8")
    later = page.stat().st_mtime_ns + 10**9
    os.utime(page, ns=(later, later))
    docs, _ = reader.read(tmp_path / "frag.adoc", "frag.adoc")
    assert "Shared." in docs[0].sections[0].text


# ---------------------------------------------------------------------------- git's sources

SLICE = [
    "git-reset.adoc",
    "git-commit.adoc",
    "git-rebase.adoc",
    "git-config.adoc",
    "gittutorial.adoc",
    "user-manual.adoc",
    "gitfaq.adoc",
    "giteveryday.adoc",
]


def corpus_slice(root: Path) -> list[str]:
    howto = sorted(p.relative_to(root).as_posix() for p in (root / "howto").glob("*.adoc"))
    technical = sorted(p.relative_to(root).as_posix() for p in (root / "technical").glob("*.adoc"))
    return SLICE + howto + technical


def test_git_docs_slice_is_clean_markdown():
    root = corpus("git-docs", "asciidoc")
    reader = AsciidocReader("https://git-scm.com/docs", ".html")
    pages = 0
    for relative in corpus_slice(root):
        try:
            docs, problems = reader.read(root / relative, relative)
        except SkipFile as exc:
            assert str(exc).startswith("include fragment (included by "), relative
            continue
        pages += 1
        assert all(p.reason.startswith("include ") for p in problems), (relative, problems)
        for section in docs[0].sections:
            assert furniture(section.text) == [], (relative, section.hierarchy)
            assert fence_balanced(section.text), (relative, section.hierarchy)
            assert section.hierarchy[0] == docs[0].title
        text = "\n".join(s.text for s in docs[0].sections)
        source = (root / relative).read_text(encoding="utf-8")
        for target, volume in re.findall(r"linkgit:([\w-]+)\[(\d)\]", source):
            assert f"{target}({volume})" in text, (relative, target)
    assert pages >= 45


def test_git_reset_reads_like_its_man_page():
    root = corpus("git-docs", "asciidoc")
    docs, _ = AsciidocReader("https://git-scm.com/docs", ".html").read(
        root / "git-reset.adoc", "git-reset.adoc"
    )
    doc = docs[0]
    assert doc.title == "git-reset(1)" and doc.url == "https://git-scm.com/docs/git-reset.html"
    assert "git-reset - Reset current HEAD to the specified state" in doc.sections[0].text
    options = next(s for s in doc.sections if s.hierarchy == ["git-reset(1)", "DESCRIPTION"])
    assert "  - **--hard**: Resets the index and working tree." in options.text
    assert "git-restore(1)" in options.text


def test_section_anchors_match_git_html_ids():
    root = corpus("git-docs", "asciidoc")
    html = corpus("git-docs", "html")
    reader = AsciidocReader()
    for name in ("git-reset", "git-commit", "git-rebase", "git-config", "gittutorial", "git"):
        docs, _ = reader.read(root / f"{name}.adoc", f"{name}.adoc")
        tree = lxml.html.parse(str(html / f"{name}.html"))
        ids = {e.get("id") for e in tree.xpath("//h2[@id] | //h3[@id] | //h4[@id]")}
        anchors = {s.anchor for s in docs[0].sections if s.anchor}
        assert anchors and anchors <= ids, (name, anchors - ids)


def test_git_fragments_are_skipped_with_their_includers():
    root = corpus("git-docs", "asciidoc")
    reader = AsciidocReader()
    with pytest.raises(SkipFile, match=r"include fragment \(included by git-fetch.adoc, git-pull"):
        reader.read(root / "fetch-options.adoc", "fetch-options.adoc")
    docs, _ = reader.read(root / "git-fetch.adoc", "git-fetch.adoc")
    text = "\n".join(s.text for s in docs[0].sections)
    assert "**--all**: Fetch all remotes." in text  # from fetch-options.adoc
