"""Tiny random-weight models in the Hugging Face folder layouts, for tests that need no download."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from docserve.encoder import default_model_dir
from safetensors.numpy import save_file

TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
)

TINY_BERT_CONFIG = {
    "architectures": ["BertForSequenceClassification"],
    "model_type": "bert",
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
    "max_position_embeddings": 64,
    "position_embedding_type": "absolute",
    "type_vocab_size": 2,
    "pad_token_id": 0,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "initializer_range": 0.02,
}


def tiny_bert_weights(config: dict, num_labels: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Random float32 ``BertForSequenceClassification`` weights, keyed with the ``bert.`` prefix.

    The scales are larger than BERT's initialisation so that the output depends visibly on
    every token and layer.
    """
    rng = np.random.default_rng(seed)
    hidden, inter = config["hidden_size"], config["intermediate_size"]

    def normal(*shape: int, scale: float = 0.2) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    weights = {
        "bert.embeddings.word_embeddings.weight": normal(config["vocab_size"], hidden, scale=1.0),
        "bert.embeddings.position_embeddings.weight": normal(
            config["max_position_embeddings"], hidden, scale=0.5
        ),
        "bert.embeddings.token_type_embeddings.weight": normal(
            config["type_vocab_size"], hidden, scale=0.5
        ),
    }

    def layer_norm(name: str) -> None:
        weights[f"{name}.weight"] = 1.0 + normal(hidden, scale=0.1)
        weights[f"{name}.bias"] = normal(hidden, scale=0.1)

    def linear(name: str, n_out: int, n_in: int) -> None:
        # torch Linear layout: [out, in].
        weights[f"{name}.weight"] = normal(n_out, n_in, scale=n_in**-0.5)
        weights[f"{name}.bias"] = normal(n_out, scale=0.1)

    layer_norm("bert.embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = f"bert.encoder.layer.{i}"
        for part in ("query", "key", "value"):
            linear(f"{p}.attention.self.{part}", hidden, hidden)
        linear(f"{p}.attention.output.dense", hidden, hidden)
        layer_norm(f"{p}.attention.output.LayerNorm")
        linear(f"{p}.intermediate.dense", inter, hidden)
        linear(f"{p}.output.dense", hidden, inter)
        layer_norm(f"{p}.output.LayerNorm")
    linear("bert.pooler.dense", hidden, hidden)
    linear("classifier", num_labels, hidden)
    return weights


def make_tiny_cross_encoder(
    folder: Path, *, prefix: str = "bert.", num_labels: int = 1, seed: int = 0
) -> Path:
    """Write a tiny random ``BertForSequenceClassification`` cross-encoder into ``folder``.

    2 layers, hidden 32, 2 heads, intermediate 64, 64 positions, with the all-MiniLM-L6-v2
    tokenizer (and so its 30522-token vocabulary). ``prefix`` replaces the ``bert.`` prefix
    of the encoder weights (``""`` for checkpoints saved without it). Returns ``folder``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    source = default_model_dir()
    for name in TOKENIZER_FILES:
        shutil.copyfile(source / name, folder / name)
    vocab_size = len((source / "vocab.txt").read_text(encoding="utf-8").splitlines())
    config = {
        **TINY_BERT_CONFIG,
        "vocab_size": vocab_size,
        "num_labels": num_labels,
        "id2label": {str(i): f"LABEL_{i}" for i in range(num_labels)},
        "label2id": {f"LABEL_{i}": i for i in range(num_labels)},
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    weights = {
        prefix + key.removeprefix("bert.") if key.startswith("bert.") else key: value
        for key, value in tiny_bert_weights(config, num_labels, seed).items()
    }
    save_file(weights, str(folder / "model.safetensors"))
    return folder
