"""The ``openai`` embedding provider against Modular MAX (``max serve``), the original design's server.

Outside the default run (marker ``max``; pyproject's addopts has ``-m "not max"``). To run it:
``tools/install_test_servers.sh --max`` and then ``pytest -m max tests/test_max_provider.py``.
MAX's first start compiles the model (about 75 to 220 s here; faster with its compile cache in
``~/.cache/modular``). It serves the model under the ``--model-path`` it was given, returns
unnormalized vectors (the client normalizes them) and does not truncate: a text over its 512
token limit is an HTTP 500, and one of 257 to 512 wordpieces is embedded whole where the local
model truncates at 256, so only texts within 256 wordpieces are compared.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from docbuild.config import OpenAIConfig
from docbuild.embedding import EmbeddingError
from docbuild.embedding.openai import OpenAIEmbedder
from test_openai_provider import (
    MODEL_DIR,
    OFFLINE_ENV,
    REPO,
    TEXTS,
    ServerProcess,
    free_ports,
    rowwise_cosine,
)

pytestmark = pytest.mark.max

MAX = REPO / ".venv-max" / "bin" / "max"
MODEL_NAME = str(MODEL_DIR)
READY_TIMEOUT = 600.0
SHORT_TEXTS = TEXTS[:-1]  # the last one is over 512 wordpieces


@pytest.fixture(scope="module")
def max_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a running ``max serve`` for the local model folder, on 127.0.0.1."""
    if not MAX.exists():
        pytest.skip(f"{MAX} not installed: run tools/install_test_servers.sh --max")
    port, metrics_port = free_ports(2)
    env = {
        **OFFLINE_ENV,
        "MAX_SERVE_HOST": "127.0.0.1",
        "MAX_SERVE_METRICS_ENDPOINT_PORT": str(metrics_port),  # 8001 by default
        "MAX_SERVE_DISABLE_TELEMETRY": "1",
    }
    command = [
        str(MAX),
        *("serve", "--model-path", MODEL_NAME, "--devices", "cpu"),
        *("--task", "embeddings_generation", "--port", str(port)),
    ]
    log_path = tmp_path_factory.mktemp("max") / "max.log"
    server = ServerProcess(command, log_path, env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        seconds = server.wait_ready(base_url, MODEL_NAME, READY_TIMEOUT)
        print(f"max serve ready in {seconds:.1f} s")
        yield base_url
    finally:
        server.stop()


def test_max_vectors_agree_with_the_local_embedder(max_server, embedder):
    remote = OpenAIEmbedder(OpenAIConfig(base_url=max_server, model=MODEL_NAME, batch_size=4))
    try:
        remote.check()
        vectors = remote.embed_batch(SHORT_TEXTS)
    finally:
        remote.stop()
    assert vectors.shape == (len(SHORT_TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    cosines = rowwise_cosine(vectors, embedder.embed_batch(SHORT_TEXTS))
    assert cosines.min() >= 0.999, dict(zip(SHORT_TEXTS, cosines.round(5).tolist(), strict=True))


def test_max_errors_name_the_endpoint(max_server):
    wrong = OpenAIEmbedder(OpenAIConfig(base_url=max_server, model="no-such-model", retries=0))
    with pytest.raises(EmbeddingError, match=r"HTTP 400.*") as caught:
        wrong.embed_batch(["hello"])
    assert "'no-such-model'" in str(caught.value) and max_server in str(caught.value)

    too_long = OpenAIEmbedder(OpenAIConfig(base_url=max_server, model=MODEL_NAME, retries=0))
    with pytest.raises(EmbeddingError, match="HTTP 500"):
        too_long.embed_batch([TEXTS[-1]])
