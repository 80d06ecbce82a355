"""The server's run-time settings (``config/server_config.yaml``), with safe defaults.

A missing file is fine: every setting has a default. Any key can be overridden from the
environment with ``DOCMCP_<SECTION>__<KEY>=value`` (for example ``DOCMCP_EMBEDDING__PROVIDER``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .folder import ServerFolder, underscored
from .settings import SettingsError, apply_env_overrides, load_yaml, substitute

FUSIONS = ("convex", "rrf")
DEFAULT_RESPONSE_TOKENS = 4000  # clients warn at 10k tokens per tool answer and fail at 25k
MIN_RESPONSE_TOKENS, MAX_RESPONSE_TOKENS = 500, 20000


@dataclass
class SearchSettings:
    """Fusion and result limits."""

    top_k: int = 5
    max_top_k: int = 50
    candidates: int = 200
    fusion: str = "convex"  # convex | rrf
    rrf_k: int = 10
    vector_weight: float = 1.0
    keyword_weight: float = 1.0
    # a question in plain words (no code-like token, and no passage among the keyword search's
    # best three holds half its terms): its keyword weight; None = keyword_weight
    prose_keyword_weight: float | None = 0.3
    # no passage stands out when the best vector score is within this cosine of the fifth best:
    # the answer then ends with the other sections nearest the question; None = never
    weak_margin: float | None = 0.05
    max_query_chars: int = 2000
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    vector_probes: int = 32  # partitions scored per query (large databases)
    keyword_postings_cap: int = 200_000  # postings read per query term, best first
    field_weights: dict[str, float] = field(
        default_factory=lambda: {"title": 2.0, "headings": 2.0, "content": 1.0, "code_terms": 1.0}
    )


@dataclass
class EmbedderSettings:
    """How queries are embedded: in process (``local``) or by an OpenAI-compatible server."""

    provider: str = "local"
    model_path: str | None = None
    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 5.0
    retry_after: float = 10.0
    cache_size: int = 1024


@dataclass
class RerankSettings:
    """Optional second-stage reranking of the fused candidates (off by default)."""

    provider: str = "none"  # none | http | cross-encoder
    url: str | None = None
    style: str = "tei"  # tei | cohere (the HTTP request/response shape)
    model: str | None = None
    model_path: str | None = None
    candidates: int = 20
    timeout: float = 10.0
    api_key_env: str | None = None


@dataclass
class TransportSettings:
    """Where the HTTP transport listens, whom it answers, and its optional bearer token."""

    host: str = "127.0.0.1"
    port: int = 8765
    bearer_token_env: str | None = "DOCMCP_BEARER_TOKEN"
    allowed_hosts: list[str] = field(default_factory=list)  # beyond loopback names; "*" = any
    allowed_origins: list[str] = field(default_factory=list)  # beyond loopback; "*" = any


@dataclass
class ServerSettings:
    """Everything the runtime reads from ``server_config.yaml``."""

    name: str
    database: Path
    search: SearchSettings = field(default_factory=SearchSettings)
    embedding: EmbedderSettings = field(default_factory=EmbedderSettings)
    rerank: RerankSettings = field(default_factory=RerankSettings)
    transport: TransportSettings = field(default_factory=TransportSettings)
    max_response_tokens: int = DEFAULT_RESPONSE_TOKENS  # cap on each tool's text
    config_path: Path | None = None  # the file read (None: defaults only)
    description: str | None = None  # one line on what the docs cover (a hub's list_libraries)


def response_cap(value: Any, source: Path) -> int:
    """``max_response_tokens`` as an int within sensible bounds."""
    try:
        cap = int(value)
    except (TypeError, ValueError):
        cap = 0
    if not MIN_RESPONSE_TOKENS <= cap <= MAX_RESPONSE_TOKENS:
        raise SettingsError(
            f"{source}: max_response_tokens is {value!r}; use a number from "
            f"{MIN_RESPONSE_TOKENS} to {MAX_RESPONSE_TOKENS} (default {DEFAULT_RESPONSE_TOKENS})"
        )
    return cap


def _section(data: dict[str, Any], key: str, cls: type, source: Path) -> Any:
    values = data.get(key) or {}
    if not isinstance(values, dict):
        raise SettingsError(f"{source}: '{key}' must be a mapping")
    unknown = sorted(set(values) - set(cls.__dataclass_fields__))
    if unknown:
        raise SettingsError(f"{source}: unknown key(s) in '{key}': {', '.join(unknown)}")
    return cls(**values)


def configured_search(path: Path) -> SearchSettings:
    """The ``search`` section of the server config file ``path`` as written (no environment
    overrides: the build reads it, and the build's environment configures the build)."""
    if not path.is_file():
        return SearchSettings()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path} is not valid YAML: {exc}") from None
    return _section(data if isinstance(data, dict) else {}, "search", SearchSettings, path)


def load_settings(name: str, server_root: Path, config_path: Path | None = None) -> ServerSettings:
    """Read the server config (``server_root/config/server_config.yaml`` by default)."""
    folder = ServerFolder(server_root, name)
    path = config_path or folder.server_config
    variables = {
        "SERVER_ROOT": str(server_root),
        "MCP_NAME": name,
        "MCP_NAME_UNDERSCORED": underscored(name),
    }
    if path.is_file():
        data = load_yaml(path, variables)
    elif config_path is not None:
        raise SettingsError(f"configuration file not found: {path}")
    else:  # defaults, but the environment overrides still apply
        data = substitute(apply_env_overrides({}), variables)
    database = Path(data.get("database") or folder.database)
    search = _section(data, "search", SearchSettings, path)
    if search.fusion not in FUSIONS:
        raise SettingsError(
            f"{path}: search.fusion is {search.fusion!r}; use one of {', '.join(FUSIONS)}"
        )
    return ServerSettings(
        name=name,
        database=database if database.is_absolute() else server_root / database,
        search=search,
        embedding=_section(data, "embedding", EmbedderSettings, path),
        rerank=_section(data, "rerank", RerankSettings, path),
        transport=_section(data, "transport", TransportSettings, path),
        max_response_tokens=response_cap(
            data.get("max_response_tokens", DEFAULT_RESPONSE_TOKENS), path
        ),
        config_path=path if path.is_file() else None,
        description=str(data["description"]).strip() if data.get("description") else None,
    )
