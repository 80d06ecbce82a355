"""Load a server's YAML configuration with variable substitution and environment overrides.

Values may use ``${PROJECT_ROOT}``, ``${SERVER_ROOT}``, ``${MCP_NAME}``, ``${MCP_NAME_UNDERSCORED}``
and any environment variable. Any key can be overridden from the environment with
``DOCMCP_<SECTION>__<KEY>=value`` (for example ``DOCMCP_EMBEDDING__PROVIDER=openai``).
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from docserve.folder import ServerFolder, underscored
from docserve.settings import SettingsError, load_yaml

from docbuild.formats import FORMATS

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$")
LABEL_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A documentation version's label: it names a folder (git syncs) and shows in ids and URLs."""
RESERVED_LABELS = ("all",)
PRECISIONS = ("fp32", "int8")  # of the local encoder (embedding.precision)
DEFAULT_PRECISION = "fp32"  # for new servers (scaffold): see docs/embedding-runtime.md
"""Labels the runtime gives a meaning of its own: ``search(version="all")`` searches every version."""


ConfigError = SettingsError
"""The configuration is missing, malformed or names something that does not exist."""


def check_label(label: object, where: str = "version label") -> str:
    """``label`` as a string; raises :class:`ConfigError` unless it can label a version."""
    if isinstance(label, float):
        raise ConfigError(
            f"{where}: {label!r} was read as a number: quote the label so that YAML keeps it as "
            f'written (label: "{label}")'
        )
    if isinstance(label, bool) or not isinstance(label, str | int):
        raise ConfigError(f"{where}: a version label must be a string, not {label!r}")
    text = str(label)
    if not text.strip():
        raise ConfigError(f"{where}: a version label must not be empty")
    if text.lower() in RESERVED_LABELS:
        raise ConfigError(
            f'{where}: {text!r} is reserved (the server\'s search(version="all") means every '
            "version): pick another label"
        )
    if not LABEL_PATTERN.match(text):
        raise ConfigError(
            f"{where}: invalid version label {text!r}: use letters, digits, '.', '-' and '_', "
            "starting with a letter or a digit, at most 64 characters (for example 25.1 or v2-beta)"
        )
    return text


def project_root() -> Path:
    """Return the repository root (the folder holding ``pyproject.toml`` and ``servers/``)."""
    env = os.environ.get("DOCMCP_PROJECT_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]


def server_root(name: str, root: Path | None = None) -> Path:
    """Return ``servers/NAME`` under the project root."""
    return (root or project_root()) / "servers" / name


MAX_FILE_BYTES = 20_000_000
"""``max_file_bytes``: files larger than this are left out of a build, and pages larger than
this are not kept by a site sync (one limit for both)."""


HOST_NAME = re.compile(r"^[\w.-]+$")
"""Letters (any script), digits, ``-``, ``.`` and ``_``: a host name or an IPv4 address."""


def _whole(value: object, least: int) -> bool:
    """Whether ``value`` is a whole number (not a bool) of at least ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


@dataclass
class CrawlConfig:
    """How a documentation site is fetched (``source.crawl``): which pages, and how politely."""

    include: list[str] = field(default_factory=list)  # globs over page paths; empty: every page
    exclude: list[str] = field(default_factory=list)
    max_pages: int = 5000
    max_link_depth: int = 20  # links followed from the start page, at most (a link trap's guard)
    max_query_variants: int = 100  # URLs of one path that differ only by their query string
    stay_under: str | None = None  # a URL prefix; None: the start URL's folder
    requests_per_second: float = 4.0  # per host; robots.txt's Crawl-delay can only slow it down
    max_in_flight: int = 4  # requests at once per host
    timeout: float = 30.0  # seconds without progress before a request is given up
    deadline: float = 120.0  # seconds a request may take in all, its body included
    retries: int = 3  # after a 429, a 5xx, a timeout or a dropped connection

    def check(self, where: str) -> None:
        """Raise :class:`ConfigError` (naming ``where``) unless every setting is usable."""
        numbers = {
            "requests_per_second": self.requests_per_second,
            "timeout": self.timeout,
            "deadline": self.deadline,
        }
        for key, value in numbers.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"{where}.{key} must be a positive number, not {value!r}")
        counts = {
            "max_pages": (self.max_pages, 1),
            "max_in_flight": (self.max_in_flight, 1),
            "max_link_depth": (self.max_link_depth, 0),
            "max_query_variants": (self.max_query_variants, 0),
            "retries": (self.retries, 0),
        }
        for key, (value, least) in counts.items():
            if not _whole(value, least):
                kind = "a positive whole number" if least else "a whole number ≥ 0"
                raise ConfigError(f"{where}.{key} must be {kind}, not {value!r}")
        for key in ("include", "exclude"):
            patterns = getattr(self, key)
            if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
                raise ConfigError(f"{where}.{key} must be a list of glob patterns")
        if self.stay_under is not None:
            check_site_url(self.stay_under, f"{where}.stay_under")


def check_site_url(url: object, where: str) -> str:
    """``url`` (stripped) if a site can be synced from it; else :class:`ConfigError` saying
    what is wrong with it and what to give instead."""
    text = url.strip() if isinstance(url, str) else ""
    problem = site_url_problem(text)
    if problem:
        raise ConfigError(f"{where}: {url!r} {problem}")
    return text


def site_url_problem(url: str) -> str | None:
    """What makes ``url`` unusable as a site's address (the whole URL is checked: scheme, host,
    port, brackets around an IPv6 address, no credentials); None when it is usable."""
    example = (
        "give the address of a documentation page, for example https://docs.example.org/guide/"
    )
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [ of an IPv6 address
        return f"is not a valid URL: {example}"
    scheme = parts.scheme.lower()
    if scheme == "file":
        return (
            "is a local path: a folder on this machine is read in place, so give it as "
            "--source PATH (source.path in the configuration) instead"
        )
    if scheme not in ("http", "https") or not parts.netloc:
        return f"is not an http(s) URL: {example}"
    if any(c.isspace() for c in url):
        return "contains white space: write a space as %20"
    if "@" in parts.netloc:
        return (
            "holds credentials (user:password@): they would be written into the configuration "
            "and sent to every page; give the address without them"
        )
    host = parts.netloc.rsplit("]", 1)[-1] if parts.netloc.startswith("[") else parts.netloc
    if not parts.netloc.startswith("[") and host.count(":") > 1:
        return "has an IPv6 address without brackets: write it as http://[::1]:8080/"
    if not parts.hostname:
        return f"has no host name: {example}"
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(parts.hostname)
        except ValueError:
            return f"has {parts.hostname!r} in brackets, which is not an IPv6 address"
    elif not HOST_NAME.match(parts.hostname):
        return f"has an invalid host name ({parts.hostname}): {example}"
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port < 65536:
        return (
            f"has an invalid port ({host.rpartition(':')[2]}): a port is a number from 1 to 65535"
        )
    return None


@dataclass
class SourceConfig:
    """Where the build reads the documents, and the git repository or site that fills it.

    A local source is read in place at every build: ``path`` is the user's own folder (or file).
    A git source is cloned into ``path``, a site (``site_url``) fetched into it, by a sync.
    """

    path: Path
    git_url: str | None = None
    git_ref: str | None = None
    git_subfolder: str | None = None
    site_url: str | None = None  # the start page of a documentation site
    crawl: CrawlConfig = field(default_factory=CrawlConfig)

    @property
    def synced(self) -> bool:
        """Whether ``path`` is filled by a sync (from git or a site) rather than the user's own."""
        return bool(self.git_url or self.site_url)


@dataclass
class VersionConfig:
    """One documentation version of a versioned server (an entry of ``versions:``)."""

    label: str
    source: SourceConfig
    url_base: str | None = None  # None: the server's url_base
    url_suffix: str | None = None  # None: the server's url_suffix


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


DEFAULT_OPENAI_URL = "http://127.0.0.1:8000/v1"


@dataclass
class OpenAIConfig:
    """OpenAI-compatible ``/v1/embeddings`` endpoints serving one model: ``base_url``, or a fleet
    in ``base_urls`` with ``concurrency`` requests in flight across it."""

    base_url: str | None = None  # None: DEFAULT_OPENAI_URL, unless base_urls lists the endpoints
    base_urls: list[str] | None = None
    concurrency: int | None = None  # requests in flight across the endpoints; None: one each
    model: str = "sentence-transformers/all-MiniLM-L6-v2"
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    retries: int = 3
    batch_size: int = 64
    auto_start: bool = False
    start_command: str | None = None
    start_timeout: float = 300.0

    def urls(self) -> list[str]:
        """The endpoints, without a trailing ``/``; raises :class:`ConfigError` if unusable."""
        if self.base_urls is None:
            return [(self.base_url or DEFAULT_OPENAI_URL).rstrip("/")]
        urls = self.base_urls
        if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
            raise ConfigError(
                "embedding.openai.base_urls must be a non-empty list of URLs, e.g. "
                "[http://127.0.0.1:8000/v1, http://127.0.0.1:8001/v1]"
            )
        urls = [u.strip().rstrip("/") for u in urls]
        for url in urls:
            if not re.match(r"^https?://[^/\s]", url):
                raise ConfigError(f"embedding.openai.base_urls: {url!r} is not an http(s) URL")
        twice = sorted({u for u in urls if urls.count(u) > 1})
        if twice:
            raise ConfigError(
                f"embedding.openai.base_urls lists {', '.join(twice)} more than once: list each "
                "endpoint once (concurrency sets the requests in flight)"
            )
        if self.base_url and self.base_url.strip().rstrip("/") not in urls:
            raise ConfigError(
                f"embedding.openai: base_url {self.base_url!r} is not one of base_urls: give "
                "the endpoints in base_urls only (set base_url to null)"
            )
        return urls

    def in_flight(self) -> int:
        """Requests in flight across the endpoints: ``concurrency``, by default one per endpoint."""
        if self.concurrency is None:
            return len(self.urls())
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int):
            raise ConfigError(
                f"embedding.openai.concurrency must be a whole number, not {self.concurrency!r}"
            )
        if self.concurrency < 1:
            raise ConfigError(
                "embedding.openai.concurrency must be at least 1 (or null: one per endpoint)"
            )
        return self.concurrency

    def check(self, path: Path) -> None:
        """Raise :class:`ConfigError` (naming ``path``) unless the settings fit together."""
        try:
            urls = self.urls()
            self.in_flight()
            if self.auto_start and len(urls) > 1:
                raise ConfigError(
                    "embedding.openai.auto_start starts one server (start_command), so it needs "
                    "one endpoint: give one base_url, or start the servers in base_urls yourself "
                    "and set auto_start to false"
                )
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None


@dataclass
class EmbeddingConfig:
    """Which embedder the build uses."""

    provider: str = "local"
    model_path: str | None = None
    batch_size: int = 16
    threads: int | None = None
    precision: str = "fp32"  # the local encoder's: fp32, or int8 (quantized once per machine)
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)

    def check(self, path: Path) -> None:
        """Raise :class:`ConfigError` for a precision that is unknown or does not apply."""
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"{path}: embedding.precision must be one of {', '.join(PRECISIONS)}, "
                f"not {self.precision!r}"
            )
        if self.precision != "fp32" and self.provider != "local":
            raise ConfigError(
                f"{path}: embedding.precision {self.precision} applies to the local encoder; "
                f"the {self.provider} provider's server has its own: remove the setting"
            )


@dataclass
class EvalConfig:
    """A query set the build evaluates the new database on (its report is stored with it)."""

    queries: str | None = None  # JSONL of {id, query, relevant: [{path, heading, page}]}
    beir: str | None = None  # a BEIR folder: queries.jsonl and qrels/SPLIT.tsv
    split: str = "test"
    modes: list[str] = field(default_factory=lambda: ["keyword", "vector", "hybrid"])


@dataclass
class IndexConfig:
    """Optional indexes of the runtime database."""

    hnsw: bool = False  # an HNSW index on the embeddings, for SQL users (the runtime never uses it)
    partition_from: int = 200_000  # chunks from which vectors are partitioned (k-means)


@dataclass
class PackageConfig:
    """What ``docbuild package`` writes into the wheel, the MCP Bundle and ``server.json``."""

    name: str | None = None  # the Python distribution and its command; None: the server's name
    version: str | None = None  # None: the build's date and snapshot, e.g. 2026.1123.4
    title: str | None = None  # a display name; None: made from the name
    description: str | None = None  # one line, at most 100 characters
    author: str | None = None
    author_email: str | None = None
    license: str | None = None  # an SPDX expression, e.g. MIT
    homepage: str | None = None
    repository: str | None = None  # https://github.com/OWNER/REPO
    registry_name: str | None = None  # io.github.OWNER/NAME; None: from a GitHub repository
    bundle_url: str | None = None  # where bundles are downloaded; {version} and {file} substituted
    platforms: list[str] = field(default_factory=lambda: ["host"])  # bundles to make
    python: str | None = None  # the Python (3.11, 3.12, ...) bundles are made for; None: this one


OBJECT_STORES = {"s3": "httpfs", "r2": "httpfs", "gcs": "httpfs", "gs": "httpfs"}
"""URL schemes ``lake.data_path`` may use, and the DuckDB extension each needs."""
_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD = re.compile(r"password\s*=|://[^/@\s]*:[^/@\s]*@", re.IGNORECASE)
S3_CREDENTIAL_KEYS = ("key_id", "secret", "access_key_id", "secret_access_key", "session_token")
"""Keys refused in ``lake.s3``: credentials come from the environment or a DuckDB secret."""


@dataclass(frozen=True)
class S3Config:
    """How to reach the object store of an ``s3://`` data path; never credentials."""

    endpoint: str | None = None  # host[:port] or http(s)://host[:port]; None: AWS S3
    url_style: str | None = None  # "path" or "vhost"; None: path with an endpoint, else vhost
    use_ssl: bool | None = None  # None: from the endpoint's scheme, else true
    region: str | None = None  # None: AWS_REGION or AWS_DEFAULT_REGION

    def check(self, path: Path) -> None:
        """Raise :class:`ConfigError` unless every key is usable."""
        scheme, _, host = str(self.endpoint or "").rpartition("://")
        host = host.rstrip("/")
        if self.endpoint is not None and (scheme not in ("", "http", "https") or not host):
            raise ConfigError(
                f"{path}: lake.s3.endpoint {self.endpoint!r} must be host[:port] or "
                "http(s)://host[:port] (for example 'http://127.0.0.1:9000')"
            )
        if "/" in host:
            raise ConfigError(f"{path}: lake.s3.endpoint {self.endpoint!r} must not have a path")
        if self.url_style not in (None, "path", "vhost"):
            raise ConfigError(f"{path}: lake.s3.url_style must be 'path' or 'vhost'")
        if self.use_ssl is not None and not isinstance(self.use_ssl, bool):
            raise ConfigError(f"{path}: lake.s3.use_ssl must be true or false")
        if self.use_ssl is not None and scheme and self.use_ssl != (scheme == "https"):
            raise ConfigError(f"{path}: lake.s3.use_ssl contradicts the {scheme}:// endpoint")
        if self.region is not None and not str(self.region).strip():
            raise ConfigError(f"{path}: lake.s3.region must not be empty")


@dataclass
class LakeConfig:
    """Where the build history (DuckLake) lives: a catalog and a place for its data files."""

    catalog: str | None = None  # None/"local": build/lake/catalog.ducklake; "postgres:CONNINFO"
    data_path: str | None = None  # None: build/lake/data/; an absolute folder; an s3:// URL
    s3: S3Config = field(default_factory=S3Config)  # endpoint and options of an s3:// data_path

    def check(self, path: Path) -> None:
        """Raise :class:`ConfigError` unless every key names something usable."""
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
        self.s3.check(path)


@dataclass
class ProcessingConfig:
    """Everything ``build`` needs, from ``config/processing_config.yaml``."""

    name: str
    server_root: Path
    source: SourceConfig
    format: str = "auto"
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    max_file_bytes: int = MAX_FILE_BYTES
    max_depth: int = 32
    url_base: str | None = None
    url_suffix: str = ""  # appended to page URLs made from sources, e.g. ".html" for Sphinx
    html: HtmlConfig = field(default_factory=HtmlConfig)
    jsonl: JsonlConfig = field(default_factory=JsonlConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    lake: LakeConfig = field(default_factory=LakeConfig)
    package: PackageConfig = field(default_factory=PackageConfig)
    versions: list[VersionConfig] = field(default_factory=list)  # empty: one unversioned source
    default_version: str | None = None  # as configured (see default_label)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def default_label(self) -> str | None:
        """The version searched when none is asked for: ``default_version``, else the last one."""
        if not self.versions:
            return None
        return self.default_version or self.versions[-1].label

    def doc_versions(self) -> list[DocVersion]:
        """What the build indexes, one entry per documentation version (oldest first); an
        unversioned server has one entry, labelled None, that is this config itself."""
        if not self.versions:
            return [DocVersion(None, "source.path", self)]
        return [
            DocVersion(
                v.label,
                f"versions[{i}].source.path",
                replace(
                    self,
                    source=v.source,
                    url_base=self.url_base if v.url_base is None else (v.url_base or None),
                    url_suffix=self.url_suffix if v.url_suffix is None else v.url_suffix,
                ),
            )
            for i, v in enumerate(self.versions)
        ]

    @property
    def folder(self) -> ServerFolder:
        """The server's folder, every path in it named."""
        return ServerFolder(self.server_root, self.name)

    @property
    def database_path(self) -> Path:
        """The runtime database: ``servers/NAME/runtime/NAME_UNDERSCORED.db``."""
        return self.folder.database

    @property
    def work_dir(self) -> Path:
        """Build artefacts kept between builds (Parquet, DuckLake, embedding cache)."""
        return self.folder.build


@dataclass
class DocVersion:
    """One documentation version as the build sees it: its label (None for an unversioned
    server), the config key of its source (for messages), and the server's config with this
    version's source and URL settings in place."""

    label: str | None
    key: str
    config: ProcessingConfig


def _section(data: dict[str, Any], key: str, cls: type, path: Path) -> Any:
    values = data.get(key) or {}
    if not isinstance(values, dict):
        raise ConfigError(f"{path}: '{key}' must be a mapping")
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in '{key}': {', '.join(unknown)}")
    return cls(**values)


def _lake(data: dict[str, Any], path: Path) -> LakeConfig:
    """The ``lake`` section, checked; its ``s3`` mapping must not hold credentials."""
    lake = _section(data, "lake", LakeConfig, path)
    if isinstance(lake.s3, dict) and set(lake.s3) & set(S3_CREDENTIAL_KEYS):
        raise ConfigError(
            f"{path}: lake.s3 must not hold credentials: set AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY in the environment or create a DuckDB secret"
        )
    lake = replace(lake, s3=_section(data.get("lake") or {}, "s3", S3Config, path))
    lake.check(path)
    return lake


def _max_file_bytes(value: object, path: Path) -> int:
    """``max_file_bytes``, checked: the size limit of a file in a build and of a synced page."""
    if not _whole(value, 1):
        raise ConfigError(f"{path}: max_file_bytes must be a positive whole number, not {value!r}")
    return int(value)  # type: ignore[arg-type]


def _format(value: object, path: Path) -> str:
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
    path = ServerFolder(srv, name).processing_config
    data = load_yaml(path, variables_for(name, root))
    versions = _versions(data, path, root, name)
    default = _default(data, versions, path) if versions else None
    source = (  # a versioned server's `source` is its default version's
        next(v.source for v in versions if v.label == default)
        if versions
        else _source(data.get("source") or {}, "source", path)
    )
    embedding = dict(data.get("embedding") or {})
    openai = _section(embedding, "openai", OpenAIConfig, path)
    openai.check(path)
    embedding["openai"] = openai
    embedding_config = _section({"embedding": embedding}, "embedding", EmbeddingConfig, path)
    embedding_config.check(path)
    lake = _lake(data, path)
    return ProcessingConfig(
        name=name,
        server_root=srv,
        source=source,
        format=_format(data.get("format", "auto"), path),
        include=list(data.get("include") or []),
        exclude=list(data.get("exclude") or []),
        max_file_bytes=_max_file_bytes(data.get("max_file_bytes", MAX_FILE_BYTES), path),
        max_depth=int(data.get("max_depth", 32)),
        url_base=data.get("url_base") or None,
        url_suffix=str(data.get("url_suffix") or ""),
        html=_section(data, "html", HtmlConfig, path),
        jsonl=_section(data, "jsonl", JsonlConfig, path),
        chunking=_section(data, "chunking", ChunkingConfig, path),
        embedding=embedding_config,
        eval=_section(data, "eval", EvalConfig, path),
        index=_section(data, "index", IndexConfig, path),
        lake=lake,
        package=_section(data, "package", PackageConfig, path),
        versions=versions,
        default_version=default if data.get("default_version") is not None else None,
        raw=data,
    )


SOURCE_KEYS = ("path", "local", "git", "url", "crawl")


def _source(
    source: object, where: str, path: Path, default_path: str | None = None
) -> SourceConfig:
    """A ``source`` mapping: ``path`` (or the legacy ``local``), and an optional ``git`` or
    ``url`` (a site, with its ``crawl`` settings) that fills it."""
    if not isinstance(source, dict):
        raise ConfigError(f"{path}: '{where}' must be a mapping (path, and git or url)")
    unknown = sorted(set(source) - set(SOURCE_KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in '{where}': {', '.join(map(str, unknown))}")
    git = source.get("git") or {}
    if not isinstance(git, dict):
        raise ConfigError(f"{path}: '{where}.git' must be a mapping (url, ref, subfolder)")
    site_url = source.get("url")
    if site_url is not None:
        site_url = check_site_url(site_url, f"{path}: {where}.url")
    if site_url and git.get("url"):
        raise ConfigError(f"{path}: give {where}.git or {where}.url (a site), not both")
    if source.get("local") and (git.get("url") or site_url):
        raise ConfigError(f"{path}: give {where}.local or a git or site source, not both")
    if source.get("crawl") is not None and not site_url:
        raise ConfigError(f"{path}: {where}.crawl applies to a site: set {where}.url too")
    crawl = _section(source, "crawl", CrawlConfig, path)
    crawl.check(f"{path}: {where}.crawl")
    # source.local (written by earlier scaffolds) is read in place, like source.path
    read_from = source.get("local") or source.get("path")
    if not read_from and (git.get("url") or site_url):
        read_from = default_path
    if not read_from:
        raise ConfigError(f"{path}: '{where}.path' is required")
    return SourceConfig(
        path=Path(str(read_from)).expanduser(),
        git_url=git.get("url"),
        git_ref=git.get("ref"),
        git_subfolder=git.get("subfolder"),
        site_url=site_url,
        crawl=crawl,
    )


VERSION_KEYS = ("label", "source", "url_base", "url_suffix")


def _versions(data: dict[str, Any], path: Path, root: Path, name: str) -> list[VersionConfig]:
    """The ``versions`` list (empty for an unversioned server), validated."""
    entries = data.get("versions")
    if entries is None:
        if data.get("default_version") is not None:
            raise ConfigError(f"{path}: default_version needs a 'versions' list")
        return []
    if data.get("source") is not None:
        raise ConfigError(
            f"{path}: give 'source' (one documentation set) or 'versions' (several), not both: "
            "make the source the first entry of versions (tools/add_version.sh NAME LABEL ... "
            "--label-existing OLD_LABEL does it for a server that has only 'source')"
        )
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: 'versions' must be a non-empty list of {{label, source}}")
    versions: list[VersionConfig] = []
    seen: dict[str, int] = {}
    for i, entry in enumerate(entries):
        where = f"versions[{i}]"
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: '{where}' must be a mapping with label and source")
        unknown = sorted(set(entry) - set(VERSION_KEYS))
        if unknown:
            raise ConfigError(
                f"{path}: unknown key(s) in '{where}': {', '.join(map(str, unknown))}"
            )
        if "label" not in entry:
            raise ConfigError(f"{path}: '{where}.label' is required")
        label = check_label(entry["label"], f"{path}: {where}.label")
        if label.lower() in seen:
            raise ConfigError(
                f"{path}: {where}.label {label!r} is already the label of "
                f"versions[{seen[label.lower()]}]: each version needs its own label"
            )
        seen[label.lower()] = i
        default_path = f"{root}/source-documentation/{name}/{label}"
        url_suffix = entry.get("url_suffix")
        versions.append(
            VersionConfig(
                label=label,
                source=_source(entry.get("source"), f"{where}.source", path, default_path),
                url_base=entry.get("url_base"),
                url_suffix=None if url_suffix is None else str(url_suffix),
            )
        )
    folders = [Path(os.path.abspath(v.source.path)) for v in versions]
    for i, outer in enumerate(folders):
        for j, inner in enumerate(folders):
            if i != j and (inner == outer or outer in inner.parents):
                how = "is the same as" if inner == outer else "lies inside"
                raise ConfigError(
                    f"{path}: versions[{j}].source.path ({inner}) {how} versions[{i}].source.path "
                    f"({outer}): give each version a folder of its own"
                )
    return versions


def _default(data: dict[str, Any], versions: list[VersionConfig], path: Path) -> str:
    """The label of the default version: ``default_version`` (checked) or the last one."""
    wanted = data.get("default_version")
    if wanted is None:
        return versions[-1].label
    label = check_label(wanted, f"{path}: default_version")
    labels = [v.label for v in versions]
    if label not in labels:
        raise ConfigError(
            f"{path}: default_version {label!r} is not a version label: use one of "
            f"{', '.join(labels)} (or null for the last one)"
        )
    return label
