"""Chunking: token budgets with the real tokenizer, whole code blocks, breadcrumbs, stable ids."""

from docbuild.chunker import Chunker, fence_balanced, split_blocks
from docbuild.config import ChunkingConfig
from docbuild.documents import Document, Section

PROSE = " ".join(
    f"Sentence number {i} explains how the parser handles nested blocks and their offsets."
    for i in range(120)
)


def doc(*sections: Section, doc_id: str = "guide.md") -> Document:
    return Document(doc_id, doc_id, "Guide", list(sections), "https://x.org/guide")


def test_every_chunk_fits_the_model_with_breadcrumb(counter):
    chunks = Chunker(counter).chunk_document(doc(Section(["Guide", "Parsing"], PROSE, "parsing")))
    assert len(chunks) > 3
    lengths = counter.with_special([c.embedding_text for c in chunks])
    assert max(lengths) <= 256
    assert all(c.section_hierarchy == ["Guide", "Parsing"] for c in chunks)
    assert chunks[0].section_url == "https://x.org/guide#parsing"
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))


def test_consecutive_prose_chunks_overlap(counter):
    chunks = Chunker(counter, ChunkingConfig(overlap_tokens=50)).chunk_document(
        doc(Section(["Guide"], PROSE))
    )
    first_tail = chunks[0].content.split(". ")[-1]
    assert first_tail and first_tail in chunks[1].content
    no_overlap = Chunker(counter, ChunkingConfig(overlap_tokens=0)).chunk_document(
        doc(Section(["Guide"], PROSE))
    )
    assert len(no_overlap) < len(chunks)


def test_code_block_that_fits_is_never_split(counter):
    code = (
        "```python\n" + "\n".join(f"value_{i} = compute({i}) < limit" for i in range(15)) + "\n```"
    )
    text = f"{PROSE[:1500]}\n\n{code}\n\nAfter the code."
    chunks = Chunker(counter).chunk_document(doc(Section(["Guide"], text)))
    holders = [c for c in chunks if "value_0 =" in c.content]
    assert len(holders) == 1 and code in holders[0].content and holders[0].has_code
    assert all(fence_balanced(c.content) for c in chunks)


def test_oversized_code_block_is_split_at_lines_and_refenced(counter):
    lines = [
        f"    result_{i} = transform(items[{i}], factor={i} * 2)  # step {i}" for i in range(200)
    ]
    code = "```python\n" + "\n".join(lines) + "\n```"
    chunks = Chunker(counter).chunk_document(doc(Section(["Guide"], code)))
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.content.startswith("```python\n") and chunk.content.endswith("\n```")
        assert fence_balanced(chunk.content)
    body = [line for c in chunks for line in c.content.split("\n")[1:-1]]
    assert body == lines  # every line once, in order, none cut


def test_unsplittable_word_is_cut(counter):
    blob = "x" * 5000
    chunks = Chunker(counter).chunk_document(doc(Section(["Guide"], blob)))
    assert max(counter.with_special([c.embedding_text for c in chunks])) <= 256
    assert "".join(c.content for c in chunks) == blob


def test_chunk_ids_depend_on_content_not_position(counter):
    chunker = Chunker(counter)
    a = Section(["Guide", "A"], "Alpha section text.")
    b = Section(["Guide", "B"], "Beta section text.")
    before = {c.content: c.chunk_id for c in chunker.chunk_document(doc(a, b))}
    inserted = Section(["Guide", "New"], "A new section at the top.")
    after = {c.content: c.chunk_id for c in chunker.chunk_document(doc(inserted, a, b))}
    assert after["Alpha section text."] == before["Alpha section text."]
    assert after["Beta section text."] == before["Beta section text."]
    other = {c.content: c.chunk_id for c in chunker.chunk_document(doc(a, b, doc_id="other.md"))}
    assert other["Alpha section text."] != before["Alpha section text."]


def test_split_blocks_keeps_fences_and_tables():
    text = "Para one.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n\nmore code\n```\nTail."
    blocks = split_blocks(text)
    assert blocks == [
        ("Para one.", False),
        ("| a | b |\n|---|---|\n| 1 | 2 |", False),
        ("```\ncode\n\nmore code\n```", True),
        ("Tail.", False),
    ]


def test_a_long_list_or_table_is_split_between_items_and_keeps_its_lines(counter):
    items = [f"- **`check{n}`**: (ERROR) object {n} has a malformed header line" for n in range(60)]
    rows = [f"| `opt{n}` | what option {n} does to the parser |" for n in range(60)]
    for lines, marker in ((items, "- **"), (["| name | meaning |", "|---|---|", *rows], "|")):
        chunks = Chunker(counter).chunk_document(doc(Section(["Guide"], "\n".join(lines))))
        assert len(chunks) > 2
        kept = [line for chunk in chunks for line in chunk.content.split("\n")]
        assert all(line.startswith(marker) for line in kept)  # no item glued to another
        assert set(kept) == set(lines)  # every item and row whole, on its own line


def test_a_table_split_over_chunks_repeats_its_header_rows(counter):
    """A chunk that continues a table starts with the table's header and delimiter rows, so an
    agent reading it alone still knows the columns; every chunk still fits the model."""
    header = "| Audit event | Arguments |\n|:---|---|"
    rows = [f"| `module{n}.call` | `name`, `mode`, `flags{n}` |" for n in range(80)]
    text = f"Events raised by the runtime.\n\n{header}\n" + "\n".join(rows) + "\n\nThe end."
    for overlap in (0, 50):
        chunks = Chunker(counter, ChunkingConfig(overlap_tokens=overlap)).chunk_document(
            doc(Section(["Guide", "Audit events"], text))
        )
        tables = [c.content for c in chunks if "| `module" in c.content]
        assert len(tables) > 2
        assert all(t.count(header) == 1 for t in tables)
        assert all(t.startswith(header) for t in tables[1:])
        assert max(counter.with_special([c.embedding_text for c in chunks])) <= 256
        body = [line for t in tables for line in t.split("\n") if line.startswith("| `module")]
        assert set(body) == set(rows)  # every row kept whole


def test_hygiene_lengths_equal_a_recount_and_catch_a_miscount(counter):
    """The build's token lengths (the chunker's counts plus the breadcrumb's) equal tokenizing
    every embedded text again; a chunk near the limit whose count is wrong is still caught."""
    from dataclasses import replace

    from docbuild.util.hygiene import measure_hygiene

    code = (
        "```python\n"
        + "\n".join(f"value_{i} = compute(item_{i}, scale={i})" for i in range(60))
        + "\n```"
    )
    chunks = Chunker(counter).chunk_document(
        doc(Section(["Guide", "Parsing"], PROSE + "\n\n" + code), Section([], PROSE[:900]))
    )
    limit = ChunkingConfig().max_tokens
    exact = counter.with_special([c.embedding_text for c in chunks])
    hygiene = measure_hygiene(chunks, counter, limit)
    assert len(chunks) > 3 and hygiene.max_tokens == max(exact) and hygiene.over_limit == 0
    # a chunk whose count claims it just fits, while its text does not: the recount catches it
    lying = replace(
        chunks[0],
        section_hierarchy=[],
        content=chunks[0].content + " extra words" * 40,
        token_count=limit - 3,
    )
    miscounted = measure_hygiene([*chunks, lying], counter, limit)
    assert miscounted.over_limit == 1 and miscounted.max_tokens > limit


def test_code_block_with_a_long_info_string_splits_within_the_budget(counter):
    """An opening fence line carrying a long info string (attributes, or prose a broken page
    glued to it) does not repeat in every piece: pieces open with the fence and its language."""
    info = " ".join(f"attribute{i}=value{i}" for i in range(80))
    lines = [f"step_{i} = run({i})" for i in range(120)]
    code = f"```python {info}\n" + "\n".join(lines) + "\n```"
    chunks = Chunker(counter).chunk_document(doc(Section(["Guide"], code)))
    assert len(chunks) > 1
    assert max(counter.with_special([c.embedding_text for c in chunks])) <= 256
    assert all(c.content.startswith("```python\n") and fence_balanced(c.content) for c in chunks)
    assert [line for c in chunks for line in c.content.split("\n")[1:-1]] == lines
