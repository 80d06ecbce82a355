"""The layout of a server folder (``servers/NAME``, or an installed server's package): every
path in it named once, for the build that writes it and the server that reads it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SKILL_FILE = "SKILL.md"


def underscored(name: str) -> str:
    """``name`` as a Python and file friendly identifier: ``mojo-manual`` → ``mojo_manual``."""
    return name.replace("-", "_")


@dataclass(frozen=True)
class ServerFolder:
    """One server's folder: ``config/`` (what its maintainer sets), ``runtime/`` (what its
    users run: code, database, model), ``build/`` (what builds keep), ``eval/`` and ``dist/``."""

    root: Path
    name: str

    @property
    def config(self) -> Path:
        """``config/``: the build's and the server's settings."""
        return self.root / "config"

    @property
    def processing_config(self) -> Path:
        """How the documentation is built: ``config/processing_config.yaml``."""
        return self.config / "processing_config.yaml"

    @property
    def server_config(self) -> Path:
        """How the server searches: ``config/server_config.yaml``."""
        return self.config / "server_config.yaml"

    @property
    def runtime(self) -> Path:
        """``runtime/``: everything the server runs with."""
        return self.root / "runtime"

    @property
    def database(self) -> Path:
        """The search database: ``runtime/NAME_UNDERSCORED.db``."""
        return self.runtime / f"{underscored(self.name)}.db"

    @property
    def script(self) -> Path:
        """The server's entry script: ``runtime/NAME_UNDERSCORED_server.py``."""
        return self.runtime / f"{underscored(self.name)}_server.py"

    @property
    def model(self) -> Path:
        """The query embedding model's files: ``runtime/model/``."""
        return self.runtime / "model"

    @property
    def build(self) -> Path:
        """``build/``: what builds keep between runs (caches, Parquet, the DuckLake, reports)."""
        return self.root / "build"

    @property
    def eval(self) -> Path:
        """``eval/``: the latest eval report and the history of eval runs."""
        return self.root / "eval"

    @property
    def dist(self) -> Path:
        """``dist/``: the packages made for end users."""
        return self.root / "dist"

    @property
    def requirements(self) -> Path:
        """``requirements.txt``: what the server needs installed."""
        return self.root / "requirements.txt"

    @property
    def readme(self) -> Path:
        """The server's README."""
        return self.root / "README.md"

    @property
    def skill(self) -> Path:
        """The agent skill the server ships: ``SKILL.md``."""
        return self.root / SKILL_FILE

    def is_server(self) -> bool:
        """Whether the folder holds a server's config or runtime."""
        return self.server_config.is_file() or self.runtime.is_dir()
