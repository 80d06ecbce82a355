"""Count and cut text in wordpieces of the embedding model's own tokenizer (no weights loaded):
the chunker's budget at build time, the answer budget and the encoder's batching at run time."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tokenizers import Tokenizer

WORD_LEVEL = {
    "normalizer": {
        None,
        "BertNormalizer",
        "Lowercase",
        "NFD",
        "NFC",
        "NFKC",
        "NFKD",
        "StripAccents",
    },
    "pre_tokenizer": {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"},
    "model": {"WordPiece"},
}
"""Tokenizer parts that never join text across whitespace: with only these, a text's count is the
sum of its words' counts."""

MAX_WORDS = 1_000_000
"""Words remembered before the memo starts afresh (about 150 MB at most)."""


class TokenCounter:
    """Wordpiece counts from a sentence-transformers folder's ``tokenizer.json``.

    For a WordPiece tokenizer (MiniLM's, BERT's) a text's count is the sum of the counts of its
    whitespace-separated words, so each distinct word is tokenized once and remembered: the same
    counts as tokenizing every text, over a hundred times faster on real documentation. One
    text is counted (:meth:`count`) and cut (:meth:`truncate`) without the memo, so a server
    that counts answers all day keeps no word list."""

    def __init__(self, model_dir: str | Path) -> None:
        self.path = Path(model_dir) / "tokenizer.json"
        self.tokenizer = Tokenizer.from_file(str(self.path))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.words: dict[str, int] | None = {} if _word_level(self.tokenizer) else None
        self.joined = self._joining_whitespace()

    def with_special(self, texts: list[str]) -> list[int]:
        """Tokens per text including [CLS] and [SEP], as the model sees them."""
        return [len(e) for e in self.tokenizer.encode_batch_fast(texts)] if texts else []

    def __call__(self, texts: list[str]) -> list[int]:
        """Tokens per text without the special tokens (what the chunker budgets)."""
        if self.words is None:
            return self._tokenize(texts)
        words = self.words
        counts: list[int] = []
        pending: list[int] = []
        for i, text in enumerate(texts):
            try:
                counts.append(sum(map(words.__getitem__, text.split())))
            except KeyError:
                counts.append(-1)
                pending.append(i)
        if pending:
            self._learn({w for i in pending for w in texts[i].split() if w not in words})
            for i in pending:
                counts[i] = sum(map(words.__getitem__, texts[i].split()))
        if self.joined and self.joined.search("".join(texts)):  # one scan finds the rare case
            for i, text in enumerate(texts):
                if self.joined.search(text):
                    counts[i] = self._tokenize([text])[0]
        return counts

    def count(self, text: str) -> int:
        """Tokens in ``text`` (special tokens excluded)."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def truncate(self, text: str, budget: int) -> str:
        """The longest prefix of ``text`` within ``budget`` tokens (cut at a token boundary)."""
        encoding = self.tokenizer.encode(text, add_special_tokens=False)
        if len(encoding.ids) <= budget:
            return text
        if budget <= 0:
            return ""
        return text[: encoding.offsets[budget - 1][1]]

    def _tokenize(self, texts: list[str]) -> list[int]:
        return [len(e) for e in self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    def _learn(self, new: set[str]) -> None:
        assert self.words is not None
        if len(self.words) + len(new) > MAX_WORDS:
            self.words.clear()
        fresh = list(new)
        self.words.update(zip(fresh, self._tokenize(fresh), strict=True))

    def _joining_whitespace(self) -> re.Pattern[str] | None:
        """Characters Python splits words at but the tokenizer deletes (so joins the words
        around them): a text holding one is tokenized whole. Found by asking the tokenizer."""
        if self.words is None:
            return None
        spaced = self.tokenizer.encode("a b", add_special_tokens=False).ids
        joining = [
            c
            for c in map(chr, range(0x3001))  # U+3000 is the last character Python splits at
            if c.isspace()
            and self.tokenizer.encode(f"a{c}b", add_special_tokens=False).ids != spaced
        ]
        return re.compile("[" + re.escape("".join(joining)) + "]") if joining else None


def _word_level(tokenizer: Tokenizer) -> bool:
    """True when ``tokenizer`` is made only of parts that keep counts additive over words."""
    spec = json.loads(tokenizer.to_str())
    for part, allowed in WORD_LEVEL.items():
        node = spec.get(part) or {}
        steps = node.get("normalizers") or node.get("pretokenizers") or [node]
        if any(step.get("type") not in allowed for step in steps):
            return False
    return True
