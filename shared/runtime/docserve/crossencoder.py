"""Cross-encoder reranking (BERT sequence classification) on ONNX Runtime, without torch.

Loads a sentence-transformers ``CrossEncoder`` / HF ``BertForSequenceClassification`` folder
(``config.json``, ``model.safetensors``, ``tokenizer.json``), builds the same ONNX graph as
:mod:`docserve.encoder` plus the pooler and classification head, and scores
``(query, passage)`` pairs with it.

Only numpy, onnx, onnxruntime, tokenizers, safetensors and the standard library are used;
the module needs ``encoder.py`` beside it in the same package.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from .encoder import ModelNotFoundError, _build_bert_onnx, _create_session, read_model_id

__all__ = ["CrossEncoder"]


def _normalize_keys(weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Rename old-style LayerNorm ``gamma``/``beta`` keys to ``weight``/``bias``."""
    old_names = {".LayerNorm.gamma": ".LayerNorm.weight", ".LayerNorm.beta": ".LayerNorm.bias"}
    renamed = {}
    for key, value in weights.items():
        for old, new in old_names.items():
            if key.endswith(old):
                key = key.removesuffix(old) + new
        renamed[key] = value
    return renamed


class CrossEncoder:
    """A BERT cross-encoder scoring ``(query, passage)`` pairs, on ONNX Runtime."""

    def __init__(
        self, model_dir: Path | str, threads: int | None = None, max_length: int = 512
    ) -> None:
        """Load the tokenizer and weights from ``model_dir``.

        ``max_length`` caps a pair's wordpieces (including [CLS]/[SEP]); it is further capped
        by the model's ``max_position_embeddings``.
        """
        self.model_dir = Path(model_dir)
        weights_file = self.model_dir / "model.safetensors"
        if not weights_file.is_file():
            raise ModelNotFoundError(
                f"No cross-encoder model in {self.model_dir}: model.safetensors is missing "
                "(expected config.json, model.safetensors and tokenizer.json)"
            )
        for name in ("config.json", "tokenizer.json"):
            if not (self.model_dir / name).is_file():
                raise ModelNotFoundError(f"No {name} in cross-encoder folder {self.model_dir}")
        self.model_id = read_model_id(self.model_dir, "CrossEncoder")
        config = json.loads((self.model_dir / "config.json").read_text(encoding="utf-8"))
        if config.get("hidden_act", "gelu") != "gelu" or (
            config.get("position_embedding_type", "absolute") != "absolute"
        ):
            raise ValueError(
                f"{self.model_dir}: only BERT with exact GELU and absolute positions is "
                f"supported (hidden_act={config.get('hidden_act')!r}, "
                f"position_embedding_type={config.get('position_embedding_type')!r})"
            )
        self.max_length = min(max_length, int(config["max_position_embeddings"]))

        weights = _normalize_keys(load_file(weights_file))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
        required = [
            f"{prefix}embeddings.word_embeddings.weight",
            f"{prefix}pooler.dense.weight",
            "classifier.weight",
        ]
        missing = [key for key in required if key not in weights]
        if missing:
            raise ValueError(
                f"{weights_file} is not a BertForSequenceClassification checkpoint: "
                f"missing {', '.join(missing)}"
            )
        self.num_labels = int(weights["classifier.weight"].shape[0])
        onnx_bytes, graph_weights = _build_bert_onnx(weights, config, prefix, classifier=True)
        del weights
        self._session = _create_session(onnx_bytes, graph_weights, threads)

        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        # Padding is done per batch below; longest_first only trims the (longer) passage
        # unless the query alone takes more than half of max_length, like transformers'
        # ``truncation=True`` used by sentence-transformers.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_length, strategy="longest_first")
        self._pad_id = self.tokenizer.token_to_id("[PAD]") or 0  # masked out anyway

    def score(self, query: str, passages: list[str], batch_size: int = 16) -> np.ndarray:
        """Raw relevance logits (float32, one per passage, in input order).

        With several labels, the last label's logit is returned.
        """
        result = np.empty(len(passages), dtype=np.float32)
        if not passages:
            return result
        encodings = self.tokenizer.encode_batch([(query, passage) for passage in passages])
        # Longest first, so each batch pads to similar lengths; results go back in input order.
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(passages), batch_size):
            index = order[start : start + batch_size]
            batch = [encodings[i] for i in index]
            width = max(len(e.ids) for e in batch)
            ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
            types = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, e in enumerate(batch):
                n = len(e.ids)
                ids[row, :n] = e.ids
                types[row, :n] = e.type_ids
                mask[row, :n] = 1
            (logits,) = self._session.run(
                ["logits"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
            )
            result[index] = logits[:, -1]
        return result
