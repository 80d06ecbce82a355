"""What a build tells its server: :class:`BuildInfo`, stored in the database's ``build_info``
table (one row per field: its name and its value as JSON), written by the build and read by
the server, the doctor, the tools and the packages in this one shape."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class BuildInfo:
    """One build of a server: the model its vectors came from, its sources and counts, the
    DuckLake snapshot it materializes, its indexes, and its eval scores. Keys a later version of
    the build writes are kept in ``extra``, so an older server still reads the rest."""

    name: str = ""
    tool_version: str | None = None
    duckdb_version: str | None = None
    # the model: in process ("local", with its weights' and quantized encoder's hashes) or a server
    embedding_provider: str = "local"
    model_id: str | None = None
    model_cache_key: str | None = None
    model_sha256: str | None = None
    precision: str | None = None  # the local encoder's; None: fp32 weights or a server
    encoder_file: str | None = None
    encoder_sha256: str | None = None
    dimension: int = 0
    normalized: bool = True
    metric: str = "cosine"
    max_seq_length: int | None = None
    chunking: dict[str, Any] = field(default_factory=dict)
    probe_text: str | None = None  # embedded by the build; the server checks its model with it
    probe_vector: list[float] = field(default_factory=list)
    # the sources: a versioned server's are its default documentation version's
    source_path: str | None = None
    source_revision: str | None = None
    versions: list[dict[str, Any]] = field(default_factory=list)  # oldest first
    default_version: str | None = None
    versions_changed: list[str] | None = None
    file_count: int = 0
    skipped_count: int = 0
    document_count: int = 0
    chunk_count: int = 0
    config_hash: str | None = None
    # the build: its DuckLake snapshot, when it was materialized, and from what
    snapshot_id: int | None = None
    built_at: str | None = None
    materialize_key: str | None = None
    rolled_back_to: int | None = None
    # the indexes and the eval
    fts: dict[str, Any] = field(default_factory=dict)
    hnsw: dict[str, Any] | None = None
    search_index: dict[str, Any] = field(default_factory=dict)
    eval: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, data: dict[str, Any]) -> BuildInfo:
        """The build info ``data`` holds (unknown keys kept in ``extra``)."""
        known = {f.name for f in fields(cls)} - {"extra"}
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**{k: v for k, v in data.items() if k in known}, extra=extra)

    @classmethod
    def read(cls, con: Any) -> BuildInfo:
        """The build info of the database ``con`` is connected to."""
        rows = con.execute("SELECT key, value FROM build_info").fetchall()
        return cls.of({key: json.loads(value) for key, value in rows})

    def as_dict(self) -> dict[str, Any]:
        """Every field by name (``extra``'s keys among them), as plain JSON-ready data."""
        data = asdict(self)
        return {**data.pop("extra"), **data}

    def rows(self) -> list[tuple[str, str]]:
        """The ``build_info`` table's rows: each key and its value as JSON, sorted by key."""
        return [(k, json.dumps(v, default=str)) for k, v in sorted(self.as_dict().items())]

    @property
    def local(self) -> bool:
        """Whether the vectors came from a model run in process (not an embedding server)."""
        return self.embedding_provider == "local"

    @property
    def query_precision(self) -> str | None:
        """The precision of the local encoder queries need (None: an embedding server)."""
        return (self.precision or "fp32") if self.local else None  # before int8: all fp32

    @property
    def version_labels(self) -> list[str]:
        """The documentation versions' labels, oldest first (empty without versions)."""
        return [str(v["label"]) for v in self.versions]
