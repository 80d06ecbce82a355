"""docserve.crossencoder on a tiny random BERT cross-encoder, against a pure-numpy forward pass."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from docserve.crossencoder import CrossEncoder
from docserve.encoder import ModelNotFoundError
from safetensors.numpy import load_file
from tiny_models import make_tiny_cross_encoder
from tokenizers import Tokenizer

QUERY = "How do I configure the search index?"
UNICODE_QUERY = "Ünïcödé: naïve café — 日本語の検索 🙂?"
LONG_PASSAGE = " ".join(
    f"Paragraph {i}: the index is configured in processing_config.yaml." for i in range(40)
)
PASSAGES = [
    "The search index is configured in the YAML file.",
    "Bananas are rich in potassium.",
    LONG_PASSAGE,
    "Straße, Œuvre, ça va? Ελληνικά, русский, 中文, emoji 🚀🔥.",
    "",
    "index",
    "A medium passage about configuring DuckDB full-text search, vectors and HNSW indexes.",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("models") / "tiny-cross-encoder")


@pytest.fixture(scope="module")
def cross_encoder(model_dir: Path) -> CrossEncoder:
    return CrossEncoder(model_dir, threads=1)


# --- Independent reference: tokenisation assembled by hand, forward pass in float64 numpy ---


def reference_inputs(model_dir: Path, query: str, passage: str, max_length: int) -> tuple:
    """``[CLS] query [SEP] passage [SEP]`` ids and token types, truncated to ``max_length``.

    Truncation follows the fast tokenizers' ``longest_first`` (what sentence-transformers
    uses): the shorter side keeps up to half the room, the longer side gets the rest; so a
    query shorter than half of the room is kept whole and only the passage is cut.
    """
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    q = tokenizer.encode(query, add_special_tokens=False).ids
    p = tokenizer.encode(passage, add_special_tokens=False).ids
    room = max_length - 3
    if len(q) + len(p) > room:
        shorter = min(len(q), len(p), room // 2)
        if len(q) <= len(p):
            q, p = q[:shorter], p[: room - shorter]
        else:
            q, p = q[: room - shorter], p[:shorter]
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    ids = [cls, *q, sep, *p, sep]
    types = [0] * (len(q) + 2) + [1] * (len(p) + 1)
    return np.array(ids), np.array(types)


_erf = np.vectorize(math.erf)


def _layer_norm(x: np.ndarray, w: dict, name: str, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w[f"{name}.weight"] + w[f"{name}.bias"]


def _linear(x: np.ndarray, w: dict, name: str) -> np.ndarray:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def reference_logits(model_dir: Path, ids: np.ndarray, types: np.ndarray) -> np.ndarray:
    """BertForSequenceClassification logits of one unpadded sequence."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    w = {
        k.removeprefix("bert."): v.astype(np.float64)
        for k, v in load_file(model_dir / "model.safetensors").items()
    }
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n, hidden = len(ids), config["hidden_size"]
    d = hidden // heads
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][np.arange(n)]
        + w["embeddings.token_type_embeddings.weight"][types]
    )
    x = _layer_norm(x, w, "embeddings.LayerNorm", eps)
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        context = np.empty((n, hidden))
        q = _linear(x, w, f"{p}.attention.self.query")
        k = _linear(x, w, f"{p}.attention.self.key")
        v = _linear(x, w, f"{p}.attention.self.value")
        for h in range(heads):
            cols = slice(h * d, (h + 1) * d)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(d)
            probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs /= probs.sum(axis=-1, keepdims=True)
            context[:, cols] = probs @ v[:, cols]
        attended = _linear(context, w, f"{p}.attention.output.dense")
        x = _layer_norm(attended + x, w, f"{p}.attention.output.LayerNorm", eps)
        inter = _linear(x, w, f"{p}.intermediate.dense")
        gelu = 0.5 * inter * (1.0 + _erf(inter / math.sqrt(2.0)))
        x = _layer_norm(_linear(gelu, w, f"{p}.output.dense") + x, w, f"{p}.output.LayerNorm", eps)
    pooled = np.tanh(_linear(x[0], w, "pooler.dense"))
    return _linear(pooled, w, "classifier")


def reference_scores(model_dir: Path, query: str, passages: list[str], max_length: int) -> list:
    return [
        float(reference_logits(model_dir, *reference_inputs(model_dir, query, p, max_length))[-1])
        for p in passages
    ]


# --- Tests ---


def test_metadata(cross_encoder: CrossEncoder, model_dir: Path) -> None:
    assert cross_encoder.model_dir == model_dir
    assert cross_encoder.model_id == "tiny-cross-encoder"
    assert cross_encoder.max_length == 64  # min(512, max_position_embeddings)
    assert cross_encoder.num_labels == 1


@pytest.mark.parametrize("query", [QUERY, UNICODE_QUERY, LONG_PASSAGE[:400]])
def test_matches_numpy_reference(cross_encoder: CrossEncoder, model_dir: Path, query: str) -> None:
    scores = cross_encoder.score(query, PASSAGES, batch_size=4)
    assert scores.dtype == np.float32
    assert scores.shape == (len(PASSAGES),)
    expected = np.array(reference_scores(model_dir, query, PASSAGES, cross_encoder.max_length))
    difference = np.abs(scores - expected).max()
    print(f"max |onnx - numpy| = {difference:.3g}")
    assert difference < 1e-4, (scores, expected)
    assert np.ptp(expected) > 0.1  # the random model does discriminate between passages


def test_long_passage_is_truncated(cross_encoder: CrossEncoder, model_dir: Path) -> None:
    (encoding,) = cross_encoder.tokenizer.encode_batch([(QUERY, LONG_PASSAGE)])
    assert len(encoding.ids) == cross_encoder.max_length == 64
    ids, types = reference_inputs(model_dir, QUERY, LONG_PASSAGE, 64)
    assert encoding.ids == ids.tolist()
    assert encoding.type_ids == types.tolist()
    query_tokens = len(cross_encoder.tokenizer.encode(QUERY, add_special_tokens=False).ids)
    assert encoding.type_ids.count(0) == query_tokens + 2  # the query is kept whole
    # A smaller explicit max_length cuts the passage further; with a room of 21 wordpieces
    # the 11-wordpiece query is over half of it, so longest_first trims it to 10.
    short = CrossEncoder(model_dir, threads=1, max_length=24)
    assert short.max_length == 24
    (encoding,) = short.tokenizer.encode_batch([(QUERY, LONG_PASSAGE)])
    assert len(encoding.ids) == 24
    assert (query_tokens, encoding.type_ids.count(0)) == (11, 10 + 2)
    (score,) = short.score(QUERY, [LONG_PASSAGE])
    (expected,) = reference_scores(model_dir, QUERY, [LONG_PASSAGE], 24)
    assert abs(score - expected) < 1e-4


def test_order_preserved_with_mixed_lengths(cross_encoder: CrossEncoder) -> None:
    passages = PASSAGES * 3
    permutation = np.random.default_rng(0).permutation(len(passages))
    shuffled = [passages[i] for i in permutation]
    alone = np.array([cross_encoder.score(QUERY, [p])[0] for p in shuffled])
    # Batches of mixed lengths, padded per batch, give each pair its own unpadded score.
    for batch_size in (1, 3, 16, 100):
        np.testing.assert_allclose(
            cross_encoder.score(QUERY, shuffled, batch_size=batch_size), alone, atol=1e-5
        )
    np.testing.assert_allclose(alone, cross_encoder.score(QUERY, passages)[permutation], atol=1e-5)


def test_empty_passages(cross_encoder: CrossEncoder) -> None:
    scores = cross_encoder.score(QUERY, [])
    assert scores.shape == (0,)
    assert scores.dtype == np.float32


def test_missing_weights_names_folder(tmp_path: Path) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "broken")
    (folder / "model.safetensors").unlink()
    with pytest.raises(ModelNotFoundError, match=re.escape(str(folder))):
        CrossEncoder(folder)
    with pytest.raises(ModelNotFoundError, match=re.escape(str(tmp_path / "nowhere"))):
        CrossEncoder(tmp_path / "nowhere")


def test_keys_with_and_without_bert_prefix(cross_encoder: CrossEncoder, tmp_path: Path) -> None:
    bare = make_tiny_cross_encoder(tmp_path / "bare", prefix="")
    keys = load_file(bare / "model.safetensors").keys()
    assert "embeddings.word_embeddings.weight" in keys
    assert not any(k.startswith("bert.") for k in keys)
    scores = CrossEncoder(bare, threads=1).score(QUERY, PASSAGES)
    np.testing.assert_array_equal(scores, cross_encoder.score(QUERY, PASSAGES))


def test_multiple_labels_scores_last(tmp_path: Path) -> None:
    folder = make_tiny_cross_encoder(tmp_path / "three-labels", num_labels=3, seed=1)
    model = CrossEncoder(folder, threads=1)
    assert model.num_labels == 3
    passages = PASSAGES[:3]
    scores = model.score(QUERY, passages)
    for passage, score in zip(passages, scores, strict=True):
        logits = reference_logits(folder, *reference_inputs(folder, QUERY, passage, 64))
        assert logits.shape == (3,)
        assert abs(score - logits[-1]) < 1e-4
