"""Load a server's YAML configuration with variable substitution and environment overrides.

Values may use ``${PROJECT_ROOT}``, ``${SERVER_ROOT}``, ``${MCP_NAME}``, ``${MCP_NAME_UNDERSCORED}``
and any environment variable. Any key can be overridden from the environment with
``DOCMCP_<SECTION>__<KEY>=value`` (for example ``DOCMCP_EMBEDDING__PROVIDER=openai``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docserve.settings import SettingsError, load_yaml

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")


ConfigError = SettingsError
"""The configuration is missing, malformed or names something that does not exist."""


def project_root() -> Path:
    """Return the repository root (the folder holding ``pyproject.toml`` and ``servers/``)."""
    env = os.environ.get("DOCMCP_PROJECT_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]


def underscored(name: str) -> str:
    """Return ``name`` as a Python/file friendly identifier: ``mojo-manual`` → ``mojo_manual``."""
    return name.replace("-", "_")


def server_root(name: str, root: Path | None = None) -> Path:
    """Return ``servers/NAME`` under the project root."""
    return (root or project_root()) / "servers" / name


@dataclass
class SourceConfig:
    """Where the build reads the documents, and the git repository that fills it (if any).

    A local source is read in place at every build: ``path`` is the user's own folder (or file).
    A git source is cloned into ``path`` by an explicit sync.
    """

    path: Path
    git_url: str | None = None
    git_ref: str | None = None
    git_subfolder: str | None = None


@dataclass
class JsonlConfig:
    """Field names of a JSONL export (BEIR's ``corpus.jsonl`` by default)."""

    id_fields: list[str] = field(default_factory=lambda: ["_id", "id"])
    title_field: str = "title"
    text_field: str = "text"
    url_field: str = "url"


@dataclass
class HtmlConfig:
    """How built HTML sites are read."""

    skip_index_pages: bool = True  # genindex, search, module index and pure tables of contents


@dataclass
class ChunkingConfig:
    """Token budgets of the chunker, counted with the embedding model's tokenizer."""

    max_tokens: int = 256
    overlap_tokens: int = 50
    max_breadcrumb_tokens: int = 48


@dataclass
class OpenAIConfig:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    retries: int = 3
    batch_size: int = 64
    auto_start: bool = False
    start_command: str | None = None
    start_timeout: float = 300.0


@dataclass
class EmbeddingConfig:
    """Which embedder the build uses."""

    provider: str = "local"
    model_path: str | None = None
    batch_size: int = 16
    threads: int | None = None
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)


@dataclass
class EvalConfig:
    """A query set the build evaluates the new database on (its report is stored with it)."""

    queries: str | None = None  # JSONL of {id, query, relevant: [{path, heading, page}]}
    beir: str | None = None  # a BEIR folder: queries.jsonl and qrels/SPLIT.tsv
    split: str = "test"
    modes: list[str] = field(default_factory=lambda: ["keyword", "vector", "hybrid"])


OBJECT_STORES = {"s3": "httpfs", "r2": "httpfs", "gcs": "httpfs", "gs": "httpfs"}
"""URL schemes ``lake.data_path`` may use, and the DuckDB extension each needs."""
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD = re.compile(r"password\s*=|://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)


@dataclass
class LakeConfig:
    """Where the build history (DuckLake) lives: a catalog and a place for its data files."""

    catalog: str | None = None  # None/"local": build/lake/catalog.ducklake; "postgres:CONNINFO"
    data_path: str | None = None  # None: build/lake/data/; an absolute folder; an s3:// URL

    def check(self, path: Path) -> None:
        """Raise :class:`ConfigError` unless both keys name something usable."""
        catalog = str(self.catalog or "local")
        if catalog != "local" and not (catalog.startswith("postgres:") and catalog[9:].strip()):
            raise ConfigError(
                f"{path}: unknown lake.catalog {catalog!r}: use null or 'local' (a DuckDB file "
                "under build/lake/) or 'postgres:CONNINFO' (e.g. 'postgres:dbname=docs host=db')"
            )
        if _PASSWORD.search(catalog):
            raise ConfigError(
                f"{path}: lake.catalog must not hold a password: set PGPASSWORD or use ~/.pgpass"
            )
        data_path = str(self.data_path or "")
        scheme = _URL_SCHEME.match(data_path)
        if scheme and scheme.group(1).lower() not in OBJECT_STORES:
            raise ConfigError(
                f"{path}: lake.data_path {data_path!r} has an unsupported URL scheme: use a "
                f"folder or one of {', '.join(f'{s}://' for s in OBJECT_STORES)}"
            )
        if data_path and not scheme and not Path(data_path).is_absolute():
            raise ConfigError(
                f"{path}: lake.data_path {data_path!r} must be an absolute folder or a URL "
                "(for example ${PROJECT_ROOT}/lake-data)"
            )


@dataclass
class ProcessingConfig:
    """Everything ``build`` needs, from ``config/processing_config.yaml``."""

    name: str
    server_root: Path
    source: SourceConfig
    format: str = "auto"
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    max_file_bytes: int = 20_000_000
    max_depth: int = 32
    url_base: str | None = None
    url_suffix: str = ""  # appended to page URLs made from sources, e.g. ".html" for Sphinx
    html: HtmlConfig = field(default_factory=HtmlConfig)
    jsonl: JsonlConfig = field(default_factory=JsonlConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    lake: LakeConfig = field(default_factory=LakeConfig)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def database_path(self) -> Path:
        """The runtime database: ``servers/NAME/runtime/NAME_UNDERSCORED.db``."""
        return self.server_root / "runtime" / f"{underscored(self.name)}.db"

    @property
    def work_dir(self) -> Path:
        """Build artefacts kept between builds (Parquet, DuckLake, embedding cache)."""
        return self.server_root / "build"


def _section(data: dict[str, Any], key: str, cls: type, path: Path) -> Any:
    values = data.get(key) or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: '{key}' must be a mapping")
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in '{key}': {', '.join(unknown)}")
    return cls(**values)


def _format(value: object, path: Path) -> str:
    from docbuild.processors import FORMATS

    if value not in FORMATS:
        raise ConfigError(f"{path}: unknown format {value!r}: use one of {', '.join(FORMATS)}")
    return str(value)


def variables_for(name: str, root: Path) -> dict[str, str]:
    """The variables every config template may use."""
    return {
        "PROJECT_ROOT": str(root),
        "SERVER_ROOT": str(server_root(name, root)),
        "MCP_NAME": name,
        "MCP_NAME_UNDERSCORED": underscored(name),
    }


def load_processing_config(name: str, root: Path | None = None) -> ProcessingConfig:
    """Load ``servers/NAME/config/processing_config.yaml``."""
    root = root or project_root()
    srv = server_root(name, root)
    if not srv.is_dir():
        raise ConfigError(
            f"no server named {name!r} (looked in {srv}); create it with "
            f"`tools/scaffold_new_mcp.sh {name} --source PATH`"
        )
    path = srv / "config" / "processing_config.yaml"
    data = load_yaml(path, variables_for(name, root))
    source = data.get("source") or {}
    git = source.get("git") or {}
    if source.get("local") and git.get("url"):
        raise ConfigError(f"{path}: give source.local or source.git.url, not both")
    # source.local (written by earlier scaffolds) is read in place, like source.path
    read_from = source.get("local") or source.get("path")
    if not read_from:
        raise ConfigError(f"{path}: 'source.path' is required")
    embedding = dict(data.get("embedding") or {})
    openai = _section(embedding, "openai", OpenAIConfig, path)
    embedding["openai"] = openai
    lake = _section(data, "lake", LakeConfig, path)
    lake.check(path)
    return ProcessingConfig(
        name=name,
        server_root=srv,
        source=SourceConfig(
            path=Path(read_from).expanduser(),
            git_url=git.get("url"),
            git_ref=git.get("ref"),
            git_subfolder=git.get("subfolder"),
        ),
        format=_format(data.get("format", "auto"), path),
        include=list(data.get("include") or []),
        exclude=list(data.get("exclude") or []),
        max_file_bytes=int(data.get("max_file_bytes", 20_000_000)),
        max_depth=int(data.get("max_depth", 32)),
        url_base=data.get("url_base") or None,
        url_suffix=str(data.get("url_suffix") or ""),
        html=_section(data, "html", HtmlConfig, path),
        jsonl=_section(data, "jsonl", JsonlConfig, path),
        chunking=_section(data, "chunking", ChunkingConfig, path),
        embedding=_section({"embedding": embedding}, "embedding", EmbeddingConfig, path),
        eval=_section(data, "eval", EvalConfig, path),
        lake=lake,
        raw=data,
    )
