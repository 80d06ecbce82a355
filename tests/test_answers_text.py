"""The pieces behind the model's text: path filters, section lookup, passage cuts, the cap."""

from __future__ import annotations

from pathlib import Path

import pytest
from docserve.catalog import FilterError, path_matcher
from docserve.reading import HeadingSpan, find_section
from docserve.render import CharCounter, Renderer, citation, cut_passage, without_heading
from docserve.tokens import TokenCounter

PATHS = [
    "index.md",
    "library/csv.rst",
    "library/os.path.rst",
    "manual/pointers/index.mdx",
    "manual/pointers/unsafe-pointers.mdx",
    "pointers.md",
    "report.pdf",
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("library/", ["library/csv.rst", "library/os.path.rst"]),
        ("library", ["library/csv.rst", "library/os.path.rst"]),
        ("./library/", ["library/csv.rst", "library/os.path.rst"]),
        ("pointers", ["pointers.md"]),  # a page without its extension, not manual/pointers/
        ("manual/pointers/index", ["manual/pointers/index.mdx"]),
        ("**/pointers/*", ["manual/pointers/index.mdx", "manual/pointers/unsafe-pointers.mdx"]),
        ("*.md", ["index.md", "pointers.md"]),  # * stays within one folder
        ("**/*.md", ["index.md", "pointers.md"]),
        ("**/index.*", ["index.md", "manual/pointers/index.mdx"]),
        ("library/[co]*.rst", ["library/csv.rst", "library/os.path.rst"]),
        ("library/[!c]*", ["library/os.path.rst"]),
        ("*.pdf", ["report.pdf"]),
        ("nothing/", []),
    ],
)
def test_path_filters(spec: str, expected: list[str]):
    match = path_matcher(spec)
    assert [p for p in PATHS if match(p)] == expected


SECTIONS = [
    HeadingSpan("Pointers", 1, ["Pointers"], 0, 9, None),
    HeadingSpan("Unsafe pointers", 2, ["Pointers", "Unsafe pointers"], 2, 5, None),
    HeadingSpan("Lifecycle", 3, ["Pointers", "Unsafe pointers", "Lifecycle"], 4, 5, None),
    HeadingSpan("Lifecycle", 2, ["Pointers", "Lifecycle"], 6, 9, None),
]


def test_sections_are_found_by_heading_words_or_path():
    assert find_section(SECTIONS, "unsafe POINTERS")[0] is SECTIONS[1]
    chosen, others = find_section(SECTIONS, "lifecycle")
    assert chosen is SECTIONS[2] and others == [SECTIONS[3]]
    assert find_section(SECTIONS, "Pointers > Lifecycle")[0] is SECTIONS[3]
    assert find_section(SECTIONS, "Pointers › Lifecycle")[0] is SECTIONS[3]
    assert find_section(SECTIONS, "unsafe")[0] is SECTIONS[1]  # words of a heading
    with pytest.raises(FilterError, match="'Unsafe pointers'"):
        find_section(SECTIONS, "references")


@pytest.fixture(scope="module")
def tokens() -> TokenCounter:
    from docserve.encoder import default_model_dir

    return TokenCounter(Path(default_model_dir()))


def test_a_cut_passage_ends_at_a_boundary_and_keeps_fences_closed(tokens: TokenCounter):
    prose = " ".join(f"Sentence {n} says something about pointers." for n in range(10))
    passage = f"{prose}\n\n```python\n" + "\n".join(f"x{n} = {n}" for n in range(200)) + "\n```"
    cut = cut_passage(passage, 400, tokens)
    assert tokens.count(cut) <= 400 + 8 and cut.endswith("[…]")
    assert cut.count("```") % 2 == 0
    assert cut.split("\n")[-3].startswith("x")  # cut between code lines, not inside one
    assert cut_passage("short", 100, tokens) == "short"


def test_a_heading_the_header_names_is_not_repeated():
    assert without_heading("## Cosine distance\n\nText.", "Cosine distance") == "Text."
    assert without_heading("Cosine distance is\nthe angle", "Cosine distance").startswith("Cos")
    assert without_heading("## Other\n\nText.", "Cosine distance").startswith("## Other")


def test_citations():
    assert citation({"section_url": "https://x/a#b", "url": "https://x/a"}) == "https://x/a#b"
    assert citation({"url": "https://x/r.pdf#page=2", "page": 2}) == "https://x/r.pdf#page=2"
    assert citation({"path": "r.pdf", "page": 2, "url": None}) == "r.pdf, page 2"
    assert citation({"path": "notes/a.md", "url": None, "section_url": None}) == "notes/a.md"


def test_results_that_do_not_fit_are_left_out_whole(tokens: TokenCounter):
    renderer = Renderer(tokens, 600, several_versions=True)
    results = [
        {
            "title": "Guide",
            "section_hierarchy": ["Guide", f"Part {n}"],
            "url": f"https://x/guide#{n}",
            "section_url": None,
            "content": f"Part {n}. " + "Words about this part of the guide. " * 25,
            "version": "2.0",
        }
        for n in range(1, 6)
    ]
    answer = {"query": "q", "notes": [], "results": results}
    rendered = renderer.search(answer)
    assert 0 < rendered.shown < 5 and not rendered.cut
    assert tokens.count(rendered.text) <= 600
    assert rendered.text.startswith("[1] Guide › Part 1 (version 2.0)\nhttps://x/guide#1\n")
    assert f"[{5 - rendered.shown} more result(s) left out" in rendered.text
    assert "Part 5." not in rendered.text


def test_without_the_tokenizer_four_characters_count_as_a_token():
    counter = CharCounter()
    assert counter.count("x" * 400) == 100 and len(counter.truncate("y" * 1000, 10)) == 40


def test_what_a_better_result_already_shows_is_not_repeated(tokens: TokenCounter):
    carried = "The carried sentence that both neighbouring chunks hold, word for word."
    first = f"## Lifecycle\n\nThe opening of the section. {carried}"
    second = f"{carried} The rest of the section, only in the second chunk."
    common = {"title": "Pointers", "document_id": "p.md", "url": "https://x/p", "version": None}
    lifecycle = {
        **common,
        "section_hierarchy": ["Pointers", "Lifecycle"],
        "section_url": "https://x/p#l",
    }
    results = [
        {**lifecycle, "chunk_index": 3, "content": first},
        {
            **common,
            "section_hierarchy": ["Pointers"],
            "section_url": "https://x/p",
            "chunk_index": 0,
            "content": "Intro.",
        },
        {**lifecycle, "chunk_index": 4, "content": second},
        {
            **lifecycle,
            "section_url": "https://x/p",
            "section_hierarchy": ["Pointers", "Other"],
            "chunk_index": 9,
            "content": "Elsewhere.",
        },
    ]
    text = (
        Renderer(tokens, 4000, several_versions=False)
        .search({"query": "q", "notes": [], "results": results})
        .text
    )
    blocks = text.split("\n\n[")
    assert text.count(carried) == 1
    assert blocks[2] == "3] continues [1]\n… The rest of the section, only in the second chunk."
    assert blocks[3] == "4] Pointers › Other\n(link as [2])\nElsewhere."
