"""``--doctor``: can this install answer? One line per check, and for each failure its fix.

An install is one of three forms, described by ``install.json`` beside ``config/`` (no file: the
server folder as the build left it):

- ``folder``: ``servers/NAME`` copied as is; dependencies from its ``requirements.txt``.
- ``wheel``: the Python package (``pip install NAME``, ``uvx NAME``); the model comes from a
  model package that several servers share.
- ``bundle``: an MCP Bundle (``.mcpb``) unpacked by the client, with its libraries in ``lib/``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from .folder import ServerFolder

INSTALL_FILE = "install.json"
CHECKSUMS_FILE = "checksums.sha256"
MIN_PYTHON = (3, 11)
FORMS = ("folder", "wheel", "bundle")


@dataclass(frozen=True)
class Install:
    """How this server was installed, and the commands that repair each form."""

    name: str
    root: Path
    form: str = "folder"
    version: str | None = None
    distribution: str | None = None  # the wheel's distribution name
    model_package: str | None = None  # the shared model wheel's import name (wheel form)
    model_distribution: str | None = None
    model_version: str | None = None
    python: str | None = None  # bundle: the Python (major.minor) its lib/ was built for
    requirements: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, name: str, root: Path) -> Install:
        """The install described by ``root/install.json``, else the folder form."""
        path = root / INSTALL_FILE
        if not path.is_file():
            folder = ServerFolder(root, name)
            return cls(name, root, requirements=requirements_file(folder.requirements))
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        known = set(cls.__dataclass_fields__) - {"name", "root"}
        return cls(name, root, **{k: v for k, v in data.items() if k in known})

    @property
    def model_dir(self) -> Path | None:
        """Where the embedding model's files are (None: the model package is not installed)."""
        if not self.model_package:
            return ServerFolder(self.root, self.name).model
        spec = find_spec(self.model_package)
        if spec is None or spec.origin is None:
            return None
        return Path(spec.origin).resolve().parent / "model"

    def install_command(self, requirement: str, reinstall: bool = False) -> str:
        """The command that installs ``requirement`` into this Python."""
        force = "--force-reinstall --no-deps " if reinstall else ""
        if self.form == "bundle":
            return self.reinstall_bundle
        if _installer(self.distribution) == "uv":
            return f"uv pip install --python {sys.executable} {force}'{requirement}'"
        return f"{sys.executable} -m pip install {force}'{requirement}'"

    @property
    def reinstall_bundle(self) -> str:
        return (
            f"reinstall {self.name}-{self.version}.mcpb (Claude Desktop: Settings > Extensions, "
            "remove it, then open the .mcpb file again)"
        )

    @property
    def restore_data(self) -> str:
        """The fix for a missing or damaged database or server file."""
        if self.form == "wheel":
            return self.install_command(f"{self.distribution}=={self.version}", reinstall=True)
        if self.form == "bundle":
            return self.reinstall_bundle
        return f"copy the server folder again, or rebuild it with `tools/build_mcp.sh {self.name}`"

    @property
    def repair_config(self) -> str:
        """The fix for a configuration file that cannot be read."""
        if self.form == "folder":
            return "correct the file as the error says, or copy the server folder again"
        return self.restore_data

    @property
    def restore_model(self) -> str:
        """The fix for missing or changed model files."""
        if self.form == "wheel" and self.model_distribution:
            return self.install_command(
                f"{self.model_distribution}=={self.model_version}", reinstall=True
            )
        return self.restore_data


@dataclass
class Check:
    """One line of the doctor's report."""

    name: str
    ok: bool
    detail: str
    fix: str | None = None

    def line(self) -> str:
        text = f"{'ok  ' if self.ok else 'FAIL'}  {self.name:<22} {self.detail}"
        return text if self.ok or not self.fix else f"{text}\n      fix: {self.fix}"


_YAML_MARK = re.compile(r'^\s+in ".*", line (\d+), column (\d+)', re.MULTILINE)


def reason(exc: BaseException) -> str:
    """An exception's message on one line; a YAML error keeps its problem and where it is."""
    text = str(exc)
    marks = _YAML_MARK.findall(text)
    if not marks:
        return text.split("\n")[0]
    said = [line for line in text.split("\n") if line.strip() and not line[0].isspace()]
    line, column = marks[-1]
    return f"{'; '.join(said)} (line {line}, column {column})"


def requirements_file(path: Path) -> list[str]:
    """The requirements listed in a ``requirements.txt`` (none if it is missing)."""
    if not path.is_file():
        return []
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def _installer(distribution: str | None) -> str:
    """``pip`` or ``uv``: what installed ``distribution`` (pip when unknown)."""
    if not distribution:
        return "pip"
    from importlib import metadata  # (imported when needed: it costs a server's start 30 ms)

    try:
        return (metadata.distribution(distribution).read_text("INSTALLER") or "pip").strip()
    except metadata.PackageNotFoundError:
        return "pip"


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def check_requirement(requirement: str, install: Install) -> Check:
    """Is ``requirement`` installed, in a version it allows?"""
    match = _NAME.match(requirement)
    name = match.group(1) if match else requirement
    fix = install.install_command(requirement)
    from importlib import metadata

    try:
        version = metadata.version(name)
    except metadata.PackageNotFoundError:
        return Check(name, False, f"not installed (needs {requirement})", fix)
    try:
        from packaging.requirements import Requirement
    except ImportError:  # packaging comes with fastmcp; without it, presence is all we check
        return Check(name, True, version)
    spec = Requirement(requirement).specifier
    if spec and not spec.contains(version, prereleases=True):
        return Check(name, False, f"{version} installed, needs {spec}", fix)
    return Check(name, True, f"{version}" + (f" ({spec})" if spec else ""))


def check_python(install: Install) -> Check:
    found = ".".join(map(str, sys.version_info[:3]))
    if install.python and f"{sys.version_info[0]}.{sys.version_info[1]}" != install.python:
        return Check(
            "python",
            False,
            f"{found} at {sys.executable}; this bundle's libraries are built for {install.python}",
            f"install Python {install.python} (python.org or your package manager), or ask for "
            f"the bundle built for Python {sys.version_info[0]}.{sys.version_info[1]}",
        )
    if sys.version_info[:2] < MIN_PYTHON:
        wanted = ".".join(map(str, MIN_PYTHON))
        return Check(
            "python", False, f"{found}; needs {wanted} or newer", f"install Python {wanted}+"
        )
    return Check("python", True, f"{found} ({sys.executable})")


def check_extension(name: str, install: Install) -> Check:
    """Does the DuckDB extension load from its PyPI package?"""
    label = f"duckdb extension {name}"
    try:
        from .duck import connect, extension_path

        path = extension_path(name)
        connect(extensions=(name,)).close()
    except Exception as exc:
        version = _version_of("duckdb") or "1.4.4"
        return Check(
            label,
            False,
            reason(exc),
            install.install_command(f"duckdb-ext-{name}=={version}.*"),
        )
    return Check(label, True, f"loads ({path.parent.name})")


def _version_of(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def file_sha256(path: Path) -> str:
    """The hex SHA-256 digest of a file."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def model_checksums(model_dir: Path) -> dict[str, str]:
    """The recorded SHA-256 of each model file (``checksums.sha256``, sha256sum's format)."""
    lines = (model_dir / CHECKSUMS_FILE).read_text(encoding="utf-8").splitlines()
    return {name.lstrip("*"): digest for digest, name in (line.split(None, 1) for line in lines)}


def check_model(install: Install) -> tuple[Check, str | None]:
    """The model files against their recorded hashes; returns the check and the weights' hash."""
    model_dir = install.model_dir
    if model_dir is None:
        return Check(
            "model",
            False,
            f"model package {install.model_package} is not installed",
            install.restore_model,
        ), None
    if not (model_dir / CHECKSUMS_FILE).is_file():
        return Check(
            "model", False, f"{model_dir / CHECKSUMS_FILE} is missing", install.restore_model
        ), None
    recorded = model_checksums(model_dir)
    bad = []
    for relative, digest in recorded.items():
        path = model_dir / relative
        if not path.is_file():
            bad.append(f"{relative} missing")
        elif file_sha256(path) != digest:
            bad.append(f"{relative} changed")
    if bad:
        return Check("model", False, f"{model_dir}: {', '.join(bad)}", install.restore_model), None
    return (
        Check("model", True, f"{len(recorded)} files match their recorded hashes ({model_dir})"),
        recorded.get("model.safetensors"),
    )


def check_database(database: Path, weights: str | None, install: Install) -> list[Check]:
    """The database opens, holds passages, and was built with this model."""
    if not database.is_file():
        return [Check("database", False, f"{database} not found", install.restore_data)]
    try:
        from .build_info import BuildInfo
        from .store import open_read_only

        con = open_read_only(database)
        info = BuildInfo.read(con)
        con.close()
    except Exception as exc:
        why = reason(exc)
        fix = (
            "close the program that holds the database open (the error names its PID), then "
            "try again"
            if "Could not set lock" in why
            else install.restore_data
        )
        return [Check("database", False, f"{database} cannot be read: {why}", fix)]
    checks = [
        Check(
            "database",
            True,
            f"{database.name}: {info.chunk_count} passages, "
            f"snapshot {info.snapshot_id}, built {info.built_at}",
        )
    ]
    encoder = info.encoder_file
    if encoder:  # a quantized encoder ships beside the database
        path = database.parent / str(encoder)
        found = file_sha256(path) if path.is_file() else None
        state = "missing" if found is None else f"changed (SHA-256 {found[:12]})"
        ok = found == info.encoder_sha256
        checks.append(
            Check(
                "encoder",
                ok,
                f"{info.precision} encoder {encoder}: " + ("as the build made it" if ok else state),
                install.restore_data,
            )
        )
    built_with = info.model_sha256
    if weights and built_with and weights != built_with:
        checks.append(
            Check(
                "database vs model",
                False,
                f"built with model {str(built_with)[:12]}, the installed model is {weights[:12]}",
                install.restore_model,
            )
        )
    elif weights:
        checks.append(
            Check(
                "database vs model",
                True,
                f"same model ({info.model_id}, {info.dimension} dims)",
            )
        )
    return checks


def run_checks(install: Install, config_path: Path | None = None) -> list[Check]:
    """Every check, in the order a repair should follow."""
    checks = [check_python(install)]
    checks += [check_requirement(r, install) for r in install.requirements]
    if any(c.name == "duckdb" and not c.ok for c in checks):
        return checks  # nothing below can run without DuckDB
    for name in ("vss", "fts"):
        checks.append(check_extension(name, install))
    return checks + server_checks(install, config_path)


def server_checks(install: Install, config_path: Path | None = None) -> list[Check]:
    """The checks of the server's own files, in repair order: its configuration, its model and
    its database (``--doctor`` runs them after Python's and the packages'; the maintainers' page
    shows the ones that fail)."""
    database = ServerFolder(install.root, install.name).database

    def config() -> list[Check]:
        nonlocal database
        from .config import load_settings
        from .settings import SettingsError

        try:
            settings = load_settings(install.name, install.root, config_path)
        except SettingsError as exc:
            return [Check("config", False, reason(exc), install.repair_config)]
        database = settings.database
        return [Check("config", True, str(settings.config_path or "defaults (no config file)"))]

    checks = _guarded("config", config, install)
    model, weights = check_model(install)
    checks.append(model)
    checks += _guarded("database", lambda: check_database(database, weights, install), install)
    return checks


def _guarded(name: str, run: Callable[[], list[Check]], install: Install) -> list[Check]:
    """The checks ``run`` makes, or one failure saying why they could not run."""
    try:
        return run()
    except Exception as exc:  # e.g. a dependency that failed its own check above
        return [Check(name, False, reason(exc), install.restore_data)]


def report(install: Install, config_path: Path | None = None) -> int:
    """Print the checks (to stdout) and return the exit status: 0 when all pass."""
    label = f"{install.form} install" + (f", version {install.version}" if install.version else "")
    print(f"{install.name} doctor ({label}, {install.root})")
    checks = run_checks(install, config_path)
    for check in checks:
        print(check.line())
    failed = sum(not c.ok for c in checks)
    print(f"{failed} of {len(checks)} checks failed." if failed else "All checks passed.")
    return 1 if failed else 0
