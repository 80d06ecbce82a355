"""Extra index terms for code identifiers, shared by the build (documents) and the runtime (queries).

The full-text index keeps ``array_cosine_distance`` as one term, so a search for "cosine
distance" would miss it, and it splits ``1.2.3`` into three digits. ``code_terms`` lists, for
each identifier, its parts (``array cosine distance``, ``unsafe pointer`` for ``UnsafePointer``)
and a joined form of dotted names (``os_path_join``, ``1_2_3``), so both the whole identifier
and its words are findable. Documents and queries get the same treatment.
"""

from __future__ import annotations

import re

IDENTIFIER = re.compile(
    r"[A-Za-z0-9_]+(?:[.:]+[A-Za-z0-9_]+)+|[A-Za-z0-9]*_[A-Za-z0-9_]*|[a-z0-9]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
)
MARKED_WORD = re.compile(r"(?<![A-Za-z0-9_.:])[A-Za-z0-9]*(?:[_.:]|[a-z0-9][A-Z])[A-Za-z0-9_.:]*")
"""A run of the characters identifiers are made of that holds what any identifier holds (an
underscore, a dot or colon, a lower-to-upper change): every identifier lies within one, and the
runs without it (most words) are passed over by this one scan before ``IDENTIFIER`` runs."""
CODE_MARKS = re.compile(r"`|(?:^|\s)--?[A-Za-z]|@\w|\w\(|\{\{|\$\w")
"""What code looks like besides identifiers: backticks, flags, decorators, calls, template
actions, variables."""
SEPARATORS = re.compile(r"[_.:]+")
DOTS = re.compile(r"[.:]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_identifier(identifier: str) -> list[str]:
    """``array_cosine_distance`` → [array, cosine, distance]; ``UnsafePointer`` → [Unsafe, Pointer]."""
    return [part for piece in SEPARATORS.split(identifier) for part in CAMEL.findall(piece)]


def code_terms(text: str) -> str:
    """Space-separated extra terms for the identifiers in ``text`` (empty when there are none)."""
    terms: list[str] = []
    found = [i for word in MARKED_WORD.findall(text) for i in IDENTIFIER.findall(word)]
    for match in found:
        identifier = match.strip("_.:")
        parts = split_identifier(identifier)
        if len(parts) > 1:
            terms.extend(parts)
        if "." in identifier or ":" in identifier:
            terms.append(DOTS.sub("_", identifier))
    return " ".join(terms)


def looks_like_code(text: str) -> bool:
    """Whether ``text`` names something as code does: an identifier (``os.path``, ``snake_case``,
    ``CamelCase``), a flag, a decorator, a call, backticks."""
    return bool(CODE_MARKS.search(text) or code_terms(text))
