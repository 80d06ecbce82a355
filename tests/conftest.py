"""Shared fixtures: corpora beside the repository, a throw-away project root, one loaded model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from docbuild.build_report import BuildReport
    from docbuild.config import ProcessingConfig

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"


def corpus(*parts: str) -> Path:
    """Path of a test corpus (``CORPORA``, see docs/testing.md); skips the test when absent."""
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"corpus {path} not available (the test corpora are not in the repository)")
    return path


@pytest.fixture(scope="session")
def embedder():
    """The default local embedder, loaded once per test session."""
    from docbuild.embedding.local import LocalEmbedder

    return LocalEmbedder()


@pytest.fixture(scope="session")
def counter():
    """Wordpiece counter of the default model."""
    from docserve.encoder import default_model_dir
    from docserve.tokens import TokenCounter

    return TokenCounter(default_model_dir())


def build_pages(
    root: Path,
    name: str,
    pages: dict[str, str],
    embedder: object,
    edits: dict[str, tuple[str, str]] | None = None,
) -> tuple[ProcessingConfig, BuildReport]:
    """Write ``pages`` (file name: Markdown) into ``root/corpus``, scaffold server ``name`` over
    them in the project ``root``, apply ``edits`` (config file name: (text, replacement)) to its
    config, and build it with ``embedder``: what a user does with the README's tools."""
    from docbuild.config import load_processing_config
    from docbuild.pipeline import Build
    from docbuild.services.scaffold import scaffold

    (root / "servers").mkdir(exist_ok=True)
    source = root / "corpus"
    source.mkdir()
    for file, text in pages.items():
        (source / file).write_text(text)
    server = scaffold(name, str(source), "md", root=root)
    for file, (text, replacement) in (edits or {}).items():
        path = server / "config" / file
        assert text in path.read_text(), f"{text!r} not in {path}"
        path.write_text(path.read_text().replace(text, replacement))
    config = load_processing_config(name, root)
    return config, Build(config, embedder).run()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project root with a ``servers/`` folder."""
    (tmp_path / "servers").mkdir()
    return tmp_path


MOJO_VERSIONS = {"25.1": "mojo-manual", "25.7": "mojo-manual-2025-11"}
"""Two documentation versions of the Mojo manual in the test corpora, oldest first."""
MOJO_VERSIONS_INCLUDE = ["decorators/**", "structs.mdx"]
"""The pages both versions are built from (about 100 chunks, 82 texts to embed: cheap in CI)."""


@pytest.fixture(scope="session")
def mojo_two_versions_build(tmp_path_factory, embedder):
    """The build behind :func:`mojo_two_versions`: (server root, its BuildReport)."""
    from docbuild.config import load_processing_config
    from docbuild.pipeline import Build
    from docbuild.services.doc_versions import add_version
    from docbuild.services.scaffold import scaffold

    folders = {label: corpus(name, "docs") for label, name in MOJO_VERSIONS.items()}
    root = tmp_path_factory.mktemp("mojo-versions-project")
    (root / "servers").mkdir()
    (first, older), *newer = folders.items()
    url_base = "https://docs.modular.com/mojo/manual"
    target = scaffold("mojo-versions", str(older), "auto", url_base, root=root, version=first)
    for label, folder in newer:
        add_version("mojo-versions", label, str(folder), root=root)
    config_file = target / "config" / "processing_config.yaml"
    text = config_file.read_text()
    assert "\ninclude: []" in text
    config_file.write_text(text.replace("\ninclude: []", f"\ninclude: {MOJO_VERSIONS_INCLUDE}"))
    return target, Build(load_processing_config("mojo-versions", root), embedder).run()


@pytest.fixture(scope="session")
def mojo_two_versions(mojo_two_versions_build) -> Path:
    """A server with two versions of the Mojo manual, ``25.1`` (March 2025, older) and ``25.7``
    (November 2025, newer and the default), each restricted to ``MOJO_VERSIONS_INCLUDE``, built
    once per session with the real model. Returns the server root (``servers/mojo-versions``
    under a throw-away project root, ``root.parents[1]``); skips when the corpora are absent."""
    return mojo_two_versions_build[0]


FAST_MODULES = frozenset(
    {
        "test_arrays",
        "test_asciidoc",
        "test_build_lock",
        "test_chunker",
        "test_context",
        "test_docs_links",
        "test_encoder",
        "test_evaluate",
        "test_fusion",
        "test_html",
        "test_hygiene",
        "test_keyword",
        "test_markdown",
        "test_mdx",
        "test_notebook",
        "test_rst",
        "test_site_sync",
        "test_sources",
        "test_step_cache",
        "test_tokens",
    }
)
"""The inner loop (``tools/run_tests.sh --fast``, under two minutes): readers, chunking, search
parts, links and site syncs; no large corpus built, no outside server started. Tests marked
``slow`` in these modules are left out too."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="only the tests of FAST_MODULES not marked slow (the inner loop, under 2 minutes)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--fast``, deselect what the inner loop leaves to the full run."""
    if not config.getoption("--fast"):
        return
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        fast = item.module.__name__ in FAST_MODULES and item.get_closest_marker("slow") is None
        (keep if fast else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    items[:] = keep
