"""Shared fixtures: corpora beside the repository, a throw-away project root, one loaded model."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"


def corpus(*parts: str) -> Path:
    """Path of a corpus under ``../shared/corpora``; skips the test when it is absent."""
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"corpus {path} not available (../shared/corpora is provided beside the repo)")
    return path


@pytest.fixture(scope="session")
def embedder():
    """The default local embedder, loaded once per test session."""
    from docbuild.embedding.local import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture(scope="session")
def counter():
    """Wordpiece counter of the default model."""
    from docbuild.tokens import TokenCounter

    return TokenCounter()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project root with a ``servers/`` folder."""
    (tmp_path / "servers").mkdir()
    return tmp_path
