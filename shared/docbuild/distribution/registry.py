"""``server.json`` for the official MCP Registry: the PyPI package and each bundle.

The format is the registry's ``server.schema.json`` of 2025-12-11. Beyond that schema, the
registry checks at publish time that ``$schema`` is set, that the PyPI package's description
contains ``mcp-name: NAME``, and that each bundle has a ``fileSha256`` and is a GitHub or GitLab
release download; this file is written to pass those checks too.
"""

from __future__ import annotations

from pathlib import Path

from docserve.doctor import file_sha256

from docbuild.distribution.release import Release

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


def mcp_name_marker(release: Release) -> str:
    """The line the registry looks for in the PyPI description to prove ownership."""
    return f"<!-- mcp-name: {release.registry_name} -->"


def server_json(release: Release, bundles: list[Path]) -> dict[str, object]:
    """The registry entry for ``release`` with the given bundle files."""
    packages: list[dict[str, object]] = [
        {
            "registryType": "pypi",
            "registryBaseUrl": "https://pypi.org",
            "identifier": release.distribution,
            "version": release.version,
            "runtimeHint": "uvx",
            "transport": {"type": "stdio"},
        }
    ]
    packages += [
        {
            "registryType": "mcpb",
            "identifier": release.bundle_url.replace("{file}", bundle.name),
            "fileSha256": file_sha256(bundle),
            "transport": {"type": "stdio"},
        }
        for bundle in bundles
    ]
    data: dict[str, object] = {
        "$schema": SCHEMA_URL,
        "name": release.registry_name,
        "title": release.title,
        "description": release.description,
        "version": release.version,
        "packages": packages,
    }
    host = (release.repository or "").split("/")[2:3]
    if host and host[0] in ("github.com", "gitlab.com"):
        data["repository"] = {"url": release.repository, "source": host[0].split(".")[0]}
    if release.homepage:
        data["websiteUrl"] = release.homepage
    return data
