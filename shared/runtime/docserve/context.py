"""Context for the client: neighbouring chunks merged around a hit, and a token budget.

Consecutive chunks of a document overlap (the chunker carries prose forward); merging drops the
repeated text (the answer's token budget is counted by :mod:`.tokens`).
"""

from __future__ import annotations


def overlap_length(first: str, second: str, longest: int = 4000) -> int:
    """Characters of the longest suffix of ``first`` that starts ``second`` (0: none)."""
    for size in range(min(len(first), len(second), longest), 0, -1):
        if first.endswith(second[:size]):
            return size
    return 0


def merge_overlapping(first: str, second: str, longest: int = 4000) -> str:
    """``first`` + ``second`` with the longest suffix of ``first`` that starts ``second`` said once."""
    size = overlap_length(first, second, longest)
    if not size:
        return f"{first}\n\n{second}"
    rest = second[size:]
    return first + rest if rest.startswith(("\n", " ")) or not rest else f"{first} {rest.lstrip()}"


def merge_chunks(contents: list[str]) -> str:
    """One text from consecutive chunk contents, overlaps removed."""
    merged = contents[0] if contents else ""
    for content in contents[1:]:
        merged = merge_overlapping(merged, content)
    return merged
