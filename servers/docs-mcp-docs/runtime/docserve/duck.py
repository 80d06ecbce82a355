"""Open DuckDB connections with the vss/fts/ducklake extensions loaded from PyPI packages.

DuckDB's online extension repository is never contacted: the extensions come from the
``duckdb-ext-*`` wheels, which install them under ``site-packages/duckdb_ext/extensions``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import duckdb


class ExtensionNotInstalledError(RuntimeError):
    """A DuckDB extension is not installed as a Python package."""


def extension_directory() -> Path:
    """Return the folder that holds the extensions shipped by the ``duckdb-ext-*`` wheels."""
    spec = importlib.util.find_spec("duckdb_ext")
    if spec is None or not spec.submodule_search_locations:
        raise ExtensionNotInstalledError(
            "DuckDB extensions not found: install them with "
            "`pip install 'duckdb-ext-vss==1.4.4.*' 'duckdb-ext-fts==1.4.4.*'`"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "extensions"


def extension_path(name: str) -> Path:
    """Return the ``.duckdb_extension`` file for ``name`` matching the installed DuckDB."""
    version = duckdb.__version__
    matches = sorted(extension_directory().glob(f"v{version}/*/{name}.duckdb_extension"))
    if not matches:
        raise ExtensionNotInstalledError(
            f"DuckDB extension {name!r} for DuckDB {version} is not installed: "
            f"`pip install 'duckdb-ext-{name}=={version}.*'`"
        )
    return matches[0]


def connect(
    database: str | Path = ":memory:",
    *,
    read_only: bool = False,
    extensions: tuple[str, ...] = ("vss", "fts"),
) -> duckdb.DuckDBPyConnection:
    """Connect to ``database`` and load ``extensions`` from their installed packages."""
    config = {
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
        "extension_directory": str(extension_directory()),
    }
    con = duckdb.connect(str(database), read_only=read_only, config=config)
    for name in extensions:
        con.execute(f"LOAD '{extension_path(name)}'")
    return con
