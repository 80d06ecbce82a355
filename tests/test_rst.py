"""reStructuredText with Sphinx's directives and roles: clean Markdown sections, nothing raw."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import corpus
from docbuild.chunker import fence_balanced
from docbuild.documents import Document, FileProblem, SkipFile
from docbuild.readers.rst import RstReader
from docbuild.util.hygiene import furniture
from docutils.parsers.rst import directives, roles

RAW_MARKERS = ("System Message", "Unknown", ".. ", "::", ":func:", "(ERROR/", "(WARNING/")


def process(
    tmp_path: Path, text: str, name: str = "page.rst"
) -> tuple[Document, list[FileProblem]]:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    docs, problems = RstReader("https://docs.example.org", ".html").read(path, name)
    assert len(docs) == 1
    return docs[0], problems


def text_of(doc: Document) -> str:
    return "\n\n".join(section.text for section in doc.sections)


def assert_clean(doc: Document) -> None:
    for section in doc.sections:
        assert furniture(section.text) == [], section.text
        assert fence_balanced(section.text)
        outside_code = [line for line in section.text.split("\n") if not line.startswith("```")]
        for marker in RAW_MARKERS:
            assert not any(marker in line for line in outside_code if "`" not in line), marker


def test_sections_anchors_title_and_url(tmp_path: Path):
    doc, problems = process(
        tmp_path,
        "Guide Title\n===========\n\nIntro text.\n\n.. _custom-label:\n\n"
        "Module Contents\n---------------\n\nBody one.\n\nDeeper *part*\n~~~~~~~~~~~~~\n\n"
        "Body two.\n\nOther\n-----\n\nBody three.\n",
        "lib/guide.rst",
    )
    assert problems == []
    assert doc.title == "Guide Title" and not doc.title_from_path
    assert doc.url == "https://docs.example.org/lib/guide.html"
    assert [s.hierarchy for s in doc.sections] == [
        ["Guide Title"],
        ["Guide Title", "Module Contents"],
        ["Guide Title", "Module Contents", "Deeper part"],
        ["Guide Title", "Other"],
    ]
    assert [s.anchor for s in doc.sections] == [
        "guide-title",
        "module-contents",
        "deeper-part",
        "other",
    ]
    assert doc.sections[0].text == "# Guide Title\n\nIntro text."
    assert doc.sections[2].text.startswith("### Deeper *part*\n\nBody two.")


def test_a_label_named_like_its_section_gives_the_section_its_id(tmp_path: Path):
    doc, _ = process(tmp_path, ".. _glossary:\n\nGlossary\n========\n\nText.\n")
    assert doc.sections[0].anchor == "glossary"  # not docutils' clash id "id1", as Sphinx does


def test_file_without_sections_takes_its_title_from_the_path(tmp_path: Path):
    doc, _ = process(tmp_path, "Just a paragraph.\n", "how-to/first-steps.rst")
    assert doc.title == "First steps" and doc.title_from_path
    assert doc.sections[0].hierarchy == ["First steps"]
    assert doc.sections[0].text == "Just a paragraph."


def test_code_blocks_keep_their_language(tmp_path: Path):
    doc, _ = process(
        tmp_path,
        "T\n=\n\n.. code-block:: bash\n\n   echo hi\n\nDefault block::\n\n   x = 1\n\n"
        "Session::\n\n   >>> 1 + 1\n   2\n\n.. highlight:: c\n\nNow C::\n\n   int x;\n\n"
        ".. doctest::\n\n   >>> f()\n\n.. testcode::\n\n   print(1)\n\n"
        ".. testsetup::\n\n   import secret_setup\n\n"
        ".. code-block:: text\n\n   has ``` inside\n",
    )
    text = text_of(doc)
    assert "```bash\necho hi\n```" in text
    assert "Default block:\n\n```python\nx = 1\n```" in text
    assert "```pycon\n>>> 1 + 1\n2\n```" in text
    assert "Now C:\n\n```c\nint x;\n```" in text
    assert "```pycon\n>>> f()\n```" in text and "```python\nprint(1)\n```" in text
    assert "secret_setup" not in text
    assert "````text\nhas ``` inside\n````" in text
    assert_clean(doc)


def test_objects_are_qualified_with_module_and_class(tmp_path: Path):
    doc, _ = process(
        tmp_path,
        ":mod:`csv` --- CSV\n==================\n\n.. module:: csv\n   :synopsis: CSV files.\n\n"
        ".. function:: reader(csvfile, dialect='excel')\n\n   Return a reader.\n\n"
        ".. class:: DictReader(f, fieldnames=None)\n\n   Maps rows.\n\n"
        "   .. method:: close()\n\n      Closes it.\n\n"
        "   .. attribute:: DictReader.line_num\n\n      Lines read.\n\n"
        ".. function:: first(a)\n              first(a, b)\n\n   Two signatures.\n\n"
        ".. currentmodule:: os.path\n\n.. function:: join(a, *p)\n\n   Joins.\n\n"
        ".. exception:: Error\n\n   Bad.\n\n"
        ".. c:function:: PyObject* PyList_New(Py_ssize_t len)\n\n   New list.\n\n"
        ".. envvar:: PYTHONPATH\n\n   Search path.\n",
    )
    text = text_of(doc)
    assert doc.title == "csv \N{EM DASH} CSV"
    assert doc.sections[0].anchor == "module-csv"  # Sphinx ids the section by its module
    for line in (
        "`csv.reader(csvfile, dialect='excel')`\n\nReturn a reader.",
        "`class csv.DictReader(f, fieldnames=None)`\n\nMaps rows.",
        "`csv.DictReader.close()`\n\nCloses it.",
        "`csv.DictReader.line_num`\n\nLines read.",
        "`csv.first(a)`\n\n`csv.first(a, b)`\n\nTwo signatures.",
        "`os.path.join(a, *p)`",
        "`exception os.path.Error`",
        "`PyObject* PyList_New(Py_ssize_t len)`\n\nNew list.",
        "`PYTHONPATH`\n\nSearch path.",
    ):
        assert line in text
    assert "synopsis" not in text
    assert_clean(doc)


def test_admonitions_and_version_notes_keep_their_text(tmp_path: Path):
    doc, _ = process(
        tmp_path,
        "T\n=\n\n.. note:: Be careful.\n\n.. versionadded:: 3.2\n\n"
        ".. versionchanged:: 3.4 Now *faster*.\n\n.. versionchanged:: 3.5\n   It is now::\n\n"
        "      x = 2\n\n.. deprecated-removed:: 3.4 3.6\n   Use *other*.\n\n"
        ".. seealso:: :pep:`305`\n\n.. impl-detail::\n\n   CPython only.\n\n"
        ".. availability:: Unix, not WASI.\n\n.. audit-event:: os.chdir path os.chdir\n",
    )
    text = text_of(doc)
    for expected in (
        "Note: Be careful.",
        "New in version 3.2.",
        "Changed in version 3.4: Now *faster*.",
        "Changed in version 3.5: It is now:\n\nx = 2",  # as Sphinx: no "::" in an argument
        "Deprecated since version 3.4, will be removed in version 3.6: Use *other*.",
        "See also: PEP 305",
        "CPython implementation detail: CPython only.",
        "Availability: Unix, not WASI.",
        "Raises an auditing event `os.chdir` with argument `path`.",
    ):
        assert expected in text
    assert_clean(doc)


def test_structure_directives_are_dropped_and_a_toc_only_file_is_skipped(tmp_path: Path):
    doc, _ = process(
        tmp_path,
        ":tocdepth: 2\n\nT\n=\n\n.. index:: single: hidden entry\n\n"
        ".. sectionauthor:: Someone <a@b.c>\n\n.. tabularcolumns:: |l|L|\n\n"
        ".. toctree::\n   :maxdepth: 2\n\n   intro\n   other\n\n"
        ".. only:: latex\n\n   Print only.\n\n.. only:: html\n\n   Web text.\n\n"
        ".. contents::\n\n.. raw:: html\n\n   <div>raw</div>\n\n.. rubric:: Footnotes\n\nKept.\n",
    )
    text = text_of(doc)
    for dropped in ("hidden entry", "Someone", "|l|L|", "intro", "Print only", "raw", "tocdepth"):
        assert dropped not in text
    assert "Web text." in text and "Footnotes\n\nKept." in text
    (tmp_path / "contents.rst").write_text("Contents\n========\n\n.. toctree::\n\n   a\n   b\n")
    with pytest.raises(SkipFile, match="table of contents only"):
        RstReader().read(tmp_path / "contents.rst", "contents.rst")


def test_roles_become_their_text(tmp_path: Path):
    doc, problems = process(
        tmp_path,
        "T\n=\n\n:func:`~os.path.join` and :func:`os.getcwd` and :meth:`!dict.get`, "
        ":class:`list`, :py:func:`len`, :c:func:`PyList_New`, :mod:`csv`.\n\n"
        "See :ref:`the guide <guide-label>`, :ref:`plain-label`, :doc:`/tutorial/index`, "
        ":term:`file objects <file object>`, :pep:`8`, :rfc:`2616#section-3`, :issue:`123`, "
        ":gh:`456`, :envvar:`PATH`, :file:`{dir}/setup.py`, :samp:`print({x})`, "
        ":kbd:`Ctrl-C`, :menuselection:`File --> Open`, :abbr:`LIFO (last-in, first-out)`, "
        ":program:`python`, :source:`Lib/csv.py`, :madeup:`custom text`, "
        ":sup:`up`, :code:`a | b`, :class:`.datetime` and :meth:`~.date.replace`.\n",
    )
    text = text_of(doc)
    for expected in (
        "`join()` and `os.getcwd()` and `dict.get()`",
        "`list`, `len()`, `PyList_New()`, `csv`.",
        "See the guide, plain-label, /tutorial/index, file objects, PEP 8, RFC 2616, bpo-123",
        "gh-456, `PATH`, `dir/setup.py`, `print(x)`, `Ctrl-C`, File \N{TRIANGULAR BULLET} Open",
        "LIFO (last-in, first-out), python, Lib/csv.py, custom text, up, `a | b`, "
        "`datetime` and `replace()`.",  # a leading dot is Sphinx's lookup, never shown
    ):
        assert expected in text
    assert problems == []
    assert_clean(doc)


def test_unknown_directive_keeps_its_content_and_is_reported(tmp_path: Path):
    doc, problems = process(
        tmp_path,
        "T\n=\n\nBefore.\n\n.. fancybox:: arg\n   :colour: red\n\n   Inside the *box*.\n\nAfter.\n",
    )
    text = text_of(doc)
    assert "Inside the *box*." in text and "fancybox" not in text and "colour" not in text
    assert [p.reason for p in problems] == [
        'parsed best-effort: line 6: unknown directive "fancybox"; its content kept as text'
    ]
    assert not problems[0].skipped
    assert_clean(doc)


def test_broken_markup_is_reported_never_written(tmp_path: Path, capfd):
    doc, problems = process(
        tmp_path,
        "T\n=\n\n.. versionadded::\n\nGood text.\n\n"
        "+-----+-----+\n| a   | b   |\n+-----+\n| c   | d   |\n+-----+-----+\n\n"
        ".. image::\n\nStill here with *unclosed emphasis.\n\n|undefined| substitution.\n",
    )
    text = text_of(doc)
    assert "Good text." in text and "Still here" in text and "undefined substitution" in text
    assert "Malformed" not in text and "argument" not in text and "+-----" not in text
    reasons = [p.reason for p in problems]
    assert 1 <= len(reasons) <= 3 and all(
        r.startswith("parsed best-effort: line ") for r in reasons
    )
    assert "(and " in reasons[-1]  # more than three notes are summed up, not listed
    assert capfd.readouterr() == ("", "")  # docutils printed nothing
    assert_clean(doc)


def test_includes_inside_the_source_folder_only(tmp_path: Path):
    parts = tmp_path / "docs" / "parts"
    parts.mkdir(parents=True)
    (parts / "shared.inc").write_text("Included *paragraph*.\n")
    (parts / "example.py").write_text("# header\ndef f():\n    return 1\n")
    (tmp_path.parent / "outside.txt").write_text("secret outside\n")
    doc, problems = process(
        tmp_path,
        "T\n=\n\n.. include:: parts/shared.inc\n\n.. include:: /docs/parts/shared.inc\n\n"
        ".. include:: parts/missing.rst\n\n.. include:: ../../outside.txt\n\n"
        ".. literalinclude:: parts/example.py\n   :start-after: # header\n\n"
        ".. literalinclude:: parts/gone.py\n",
        "docs/page.rst",
    )
    text = text_of(doc)
    assert text.count("Included *paragraph*.") == 2
    assert "```python\ndef f():\n    return 1\n```" in text and "# header" not in text
    assert "(example file parts/gone.py is not included here)" in text
    assert "secret outside" not in text
    assert doc.dependencies == [str(parts / "shared.inc"), str(parts / "example.py")]
    reasons = " ".join(p.reason for p in problems)
    assert 'include "parts/missing.rst" not found' in reasons
    refused = [p for p in problems if p.skipped]
    assert [p.path for p in refused] == ["docs/page.rst (includes ../../outside.txt)"]
    assert "outside the source folder" in refused[0].reason
    assert_clean(doc)


def test_tables_lists_and_definitions(tmp_path: Path):
    doc, _ = process(
        tmp_path,
        "T\n=\n\n+-------+----------+\n| Op    | Meaning  |\n+=======+==========+\n"
        "| ``|`` | or       |\n+-------+----------+\n| span cell        |\n"
        "+-------+----------+\n\n.. list-table:: Caption\n   :header-rows: 1\n\n"
        "   * - A\n     - B\n   * - 1\n     - 2\n\n"
        "- one\n\n  - nested\n\n- two::\n\n     code\n\n#. first\n#. second\n\n"
        "term\n   Definition.\n\n:param x: The x.\n\n-v, --verbose  Talk more.\n",
    )
    text = text_of(doc)
    assert "| Op | Meaning |\n|---|---|\n| `\\|` | or |\n| span cell |  |" in text
    assert "Caption\n\n| A | B |\n|---|---|\n| 1 | 2 |" in text
    assert "- one\n\n  - nested\n- two:\n\n  ```python\n  code\n  ```" in text
    assert "1. first\n2. second" in text
    assert "**term**\nDefinition." in text
    assert "- param x: The x." in text
    assert "- `-v`, `--verbose`: Talk more." in text
    assert_clean(doc)


def test_substitutions_resolve_or_keep_their_name(tmp_path: Path):
    doc, problems = process(
        tmp_path, "T\n=\n\n.. |tool| replace:: *Tool*\n\nUse |tool| for Python |version|.\n"
    )
    assert "Use *Tool* for Python version." in text_of(doc)
    assert problems == []


def test_docutils_global_registry_is_left_untouched(tmp_path: Path):
    original = directives.directive
    process(tmp_path, "T\n=\n\n.. versionadded:: 1.0\n\n:func:`f`\n")
    assert directives.directive is original
    assert "versionadded" not in directives._directives
    assert "func" not in roles._roles


PYTHON_SLICE = [
    "library/csv.rst",
    "library/os.rst",
    "library/functions.rst",
    "library/stdtypes.rst",
    "library/argparse.rst",
    "library/enum.rst",
    "library/datetime.rst",
    "library/logging.rst",
    "library/subprocess.rst",
    "library/token.rst",
    "reference/datamodel.rst",
    "reference/expressions.rst",
    "reference/lexical_analysis.rst",
    "using/windows.rst",
    "extending/extending.rst",
    "faq/general.rst",
    "howto/logging.rst",
    "howto/regex.rst",
    "glossary.rst",
    "license.rst",
]


@pytest.fixture(scope="module")
def python_docs() -> dict[str, tuple[Document, list[FileProblem]]]:
    root = corpus("python-docs-3.11", "rst")
    names = PYTHON_SLICE + sorted(f"tutorial/{p.name}" for p in (root / "tutorial").glob("*.rst"))
    reader = RstReader("https://docs.python.org/3.11", ".html")
    done = {}
    for name in names:
        docs, problems = reader.read(root / name, name)
        done[name] = (docs[0], problems)
    return done


def test_python_docs_slice_is_clean(python_docs):
    assert len(python_docs) >= 37
    for name, (doc, _) in python_docs.items():
        assert doc.sections, name
        for section in doc.sections:
            assert furniture(section.text) == [], (name, section.hierarchy)
            assert fence_balanced(section.text), (name, section.hierarchy)
            for message in ("System Message", "Unknown directive", "Unknown interpreted"):
                assert message not in section.text, (name, section.hierarchy)
            assert section.hierarchy[0] == doc.title and section.anchor


def test_python_docs_objects_are_findable_by_qualified_name(python_docs):
    csv_text = text_of(python_docs["library/csv.rst"][0])
    assert "`class csv.DictReader(f, fieldnames=None" in csv_text
    assert "`csv.Sniffer.sniff(sample, delimiters=None)`" in csv_text
    assert "`os.path`" in text_of(python_docs["library/os.rst"][0])
    datamodel = text_of(python_docs["reference/datamodel.rst"][0])
    assert "`object.__init__(self[, ...])`" in datamodel
    anchors = {s.anchor for s in python_docs["library/csv.rst"][0].sections}
    assert {"module-csv", "module-contents", "dialects-and-formatting-parameters"} <= anchors


def test_python_docs_notes_are_only_the_missing_includes(python_docs):
    problems = [p for _, found in python_docs.values() for p in found]
    assert all(not p.skipped for p in problems)
    missing = {"library/subprocess.rst", "library/token.rst", "library/datetime.rst"}
    assert {p.path for p in problems} == missing
    assert all("include" in p.reason and "not found" in p.reason for p in problems)


def test_the_module_synopsis_opens_the_page(tmp_path: Path):
    doc, _ = process(
        tmp_path,
        ":mod:`csv` --- CSV files\n=======================\n\n.. module:: csv\n"
        "   :synopsis: Write and read tabular data to and from delimited files.\n\n"
        "The so-called CSV format.\n\nReader\n------\n\nText.\n",
    )
    assert doc.sections[0].text == (
        "# `csv` — CSV files\n\nWrite and read tabular data to and from delimited files.\n\n"
        "The so-called CSV format."
    )
    assert len(doc.sections) == 2 and "delimited" not in doc.sections[1].text
