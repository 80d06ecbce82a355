"""What one release of a server is called, numbered and described, from its config and build."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from docserve.build_info import BuildInfo
from docserve.folder import underscored
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from docbuild.config import ConfigError, PackageConfig

PLACEHOLDER_OWNER = "YOUR-GITHUB-USER"
_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?$")
_REGISTRY_NAME = re.compile(
    r"^[a-zA-Z0-9][a-zA-Z0-9.-]*[a-zA-Z0-9]/[a-zA-Z0-9][a-zA-Z0-9._-]*[a-zA-Z0-9]$"
)
MAX_DESCRIPTION = 100  # the MCP Registry's limit


@dataclass(frozen=True)
class Release:
    """The names, version and words every artefact of one release shares."""

    server: str  # the server's name (servers/NAME)
    distribution: str  # the Python distribution, also the console command
    version: str
    title: str
    description: str
    registry_name: str
    bundle_url: str  # with {file} left to substitute
    author: str
    author_email: str | None
    license: str | None
    homepage: str | None
    repository: str | None
    warnings: tuple[str, ...] = ()

    @property
    def package(self) -> str:
        """The import name of the server's Python package."""
        return underscored(self.distribution).replace(".", "_")

    @property
    def wheel_stem(self) -> str:
        """``{distribution}-{version}`` as wheel file names spell it."""
        return f"{self.package}-{Version(self.version)}"


def default_version(build_info: BuildInfo) -> str:
    """``YEAR.MMDD.SNAPSHOT`` of the build (valid for PEP 440 and SemVer, and increasing)."""
    built = datetime.fromisoformat(str(build_info.built_at))
    return f"{built.year}.{built.month * 100 + built.day}.{build_info.snapshot_id}"


def resolve(name: str, config: PackageConfig, build_info: BuildInfo) -> Release:
    """The release of server ``name`` as configured, with defaults filled in."""
    warnings: list[str] = []
    distribution = str(canonicalize_name(config.name or name))
    version = str(config.version or default_version(build_info))
    try:
        Version(version)
    except InvalidVersion:
        raise ConfigError(
            f"package.version {version!r} is not a version pip accepts (e.g. 1.2.0 or 2026.1123.4)"
        ) from None
    title = config.title or name.replace("-", " ").replace("_", " ").title()
    description = config.description or f"Search the {title} documentation offline (MCP server)."
    if len(description) > MAX_DESCRIPTION:
        raise ConfigError(
            f"package.description has {len(description)} characters; the MCP Registry takes at "
            f"most {MAX_DESCRIPTION}: shorten it"
        )
    github = _GITHUB.match(config.repository or "")
    if config.repository and not github:
        warnings.append(
            f"package.repository {config.repository!r} is not a GitHub URL: set registry_name "
            "and bundle_url yourself"
        )
    owner, repo = (github.group(1), github.group(2)) if github else (PLACEHOLDER_OWNER, "REPO")
    registry_name = config.registry_name or f"io.github.{owner}/{distribution}"
    if not _REGISTRY_NAME.match(registry_name):
        raise ConfigError(
            f"package.registry_name {registry_name!r} is not NAMESPACE/NAME "
            "(e.g. io.github.OWNER/my-docs-mcp)"
        )
    bundle_url = config.bundle_url or (
        f"https://github.com/{owner}/{repo}/releases/download/v{{version}}/{{file}}"
    )
    if not config.registry_name and not github:
        warnings.append(
            f"server.json names the server {registry_name} and its bundle "
            f"{bundle_url.format(version=version, file='FILE')}: set package.repository (or "
            "registry_name and bundle_url) in processing_config.yaml before publishing"
        )
    author = config.author or (owner if github else None)
    if author is None:
        author = name
        warnings.append(f"package.author is not set: the bundle names {name!r} as its author")
    return Release(
        server=name,
        distribution=distribution,
        version=version,
        title=title,
        description=description,
        registry_name=registry_name,
        bundle_url=bundle_url.replace("{version}", version),
        author=author,
        author_email=config.author_email,
        license=config.license,
        homepage=config.homepage,
        repository=config.repository,
        warnings=tuple(warnings),
    )
