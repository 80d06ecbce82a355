"""Count wordpieces with the embedding model's own tokenizer (no model weights loaded)."""

from __future__ import annotations

from pathlib import Path

from docserve.encoder import default_model_dir
from tokenizers import Tokenizer


class TokenCounter:
    """Wordpiece counts from a sentence-transformers folder's ``tokenizer.json``."""

    def __init__(self, model_dir: str | Path | None = None) -> None:
        folder = Path(model_dir) if model_dir else default_model_dir()
        self.path = folder / "tokenizer.json"
        self.tokenizer = Tokenizer.from_file(str(self.path))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def with_special(self, texts: list[str]) -> list[int]:
        """Tokens per text including [CLS] and [SEP], as the model sees them."""
        return [len(e) for e in self.tokenizer.encode_batch_fast(texts)] if texts else []

    def __call__(self, texts: list[str]) -> list[int]:
        """Tokens per text without the special tokens (what the chunker budgets)."""
        return [n - 2 for n in self.with_special(texts)]
