"""Package a built server for end users: ``servers/NAME/dist/``.

- ``NAME-VERSION-py3-none-any.whl``: the server (``pip install``, ``uv tool install``, ``uvx``);
- ``docs_mcp_model_SLUG-X-py3-none-any.whl``: the embedding model, shared by every server built
  with it;
- ``NAME-VERSION-PLATFORM.mcpb``: an MCP Bundle per platform, for Claude Desktop;
- ``server.json``: the MCP Registry entry for the PyPI package and the bundles.

Everything is written to ``dist.tmp/`` and swapped in whole, so a failure leaves the previous
``dist/`` as it was.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docserve.build_info import BuildInfo
from docserve.store import open_read_only

from docbuild.config import ConfigError, load_processing_config
from docbuild.distribution.bundle import make_bundle, platform_named
from docbuild.distribution.python_package import (
    model_package,
    model_wheel,
    requirements,
    server_wheel,
)
from docbuild.distribution.registry import mcp_name_marker, server_json
from docbuild.distribution.release import Release, resolve
from docbuild.distribution.wheel import json_bytes, write_wheel
from docbuild.embedding.local import model_folder
from docbuild.services.client_config import CLIENTS, client_config
from docbuild.services.scaffold import TEMPLATES, render
from docbuild.stages.package import WEIGHTS_FILE, bundle_model, write_checksums


@dataclass
class Packaged:
    """What ``package`` wrote."""

    release: Release
    dist: Path
    server_wheel: Path
    model_wheel: Path
    bundles: list[Path]
    server_json: Path

    @property
    def files(self) -> list[Path]:
        return [self.server_wheel, self.model_wheel, *self.bundles, self.server_json]


def build_info_of(database: Path) -> BuildInfo:
    """The database's build info."""
    con = open_read_only(database)
    try:
        return BuildInfo.read(con)
    finally:
        con.close()


def package_readme(release: Release, info: BuildInfo, model_distribution: str) -> str:
    """The wheel's long description (the PyPI page), with the registry's ownership marker."""
    configs = {
        client.replace("-", "_"): client_config(release.distribution, Path("."), client, "uvx")
        for client in CLIENTS
    }
    return render(
        (TEMPLATES / "package_README.md").read_text(),
        {
            "tools_table": (TEMPLATES / "tools_table.md").read_text(),
            "name": release.server,
            "title": release.title,
            "description": release.description,
            "distribution": release.distribution,
            "version": release.version,
            **configs,
            "documents": str(info.document_count),
            "chunks": str(info.chunk_count),
            "built_at": str(info.built_at or "?"),
            "model": str(info.model_id or "?"),
            "model_distribution": model_distribution,
            "mcp_name": mcp_name_marker(release),
        },
    )


def package(
    name: str,
    root: Path | None = None,
    platforms: list[str] | None = None,
    python: str | None = None,
    bundles: bool = True,
    log: Any = None,
) -> Packaged:
    """Write the wheels, the bundles and ``server.json`` of server ``name`` into its ``dist/``."""
    say = log or (lambda message: print(message, file=sys.stderr))
    config = load_processing_config(name, root)
    folder = config.folder
    server_root, database, model_dir = folder.root, folder.database, folder.model
    if not database.is_file() or not model_dir.is_dir():
        raise ConfigError(
            f"{name} is not built ({database} or {model_dir} is missing): run "
            f"`tools/build_mcp.sh {name}` first"
        )
    if not (model_dir / "checksums.sha256").is_file():  # built before checksums were recorded
        write_checksums(model_dir)
    info = build_info_of(database)
    release = resolve(name, config.package, info)
    for warning in release.warnings:
        say(f"warning: {warning}")
    python = python or config.package.python or f"{sys.version_info[0]}.{sys.version_info[1]}"
    targets = [platform_named(p) for p in (platforms or config.package.platforms or ["host"])]
    dist = folder.dist
    staging = dist.with_name("dist.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        if not (model_dir / WEIGHTS_FILE).is_file():  # an int8 server's folder has no weights,
            # but the model wheel, which every server built with this model shares, needs them
            source = model_folder(config.embedding.model_path)
            model_dir = bundle_model(source, folder.build / "model")
        model = model_package(model_dir)
        say(f"model wheel {model.distribution} {model.version} ...")
        model_file = write_wheel(model_wheel(model_dir, model), staging)
        readme = package_readme(release, info, model.distribution)
        say(f"server wheel {release.distribution} {release.version} ...")
        wheel_file = write_wheel(server_wheel(release, server_root, model, readme), staging)
        work = folder.build / "bundles"
        bundle_files = []
        for target in targets if bundles else []:
            say(f"bundle for {target.name}, Python {python} (libraries from PyPI) ...")
            bundle_files.append(
                make_bundle(
                    release, server_root, requirements(folder), target, python, staging, work
                )
            )
        (staging / "server.json").write_bytes(json_bytes(server_json(release, bundle_files)))
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(dist, ignore_errors=True)
    staging.rename(dist)
    return Packaged(
        release,
        dist,
        dist / wheel_file.name,
        dist / model_file.name,
        [dist / b.name for b in bundle_files],
        dist / "server.json",
    )


def describe(packaged: Packaged) -> str:
    """What was written, with sizes, and what to do next."""
    lines = [f"Packaged {packaged.release.distribution} {packaged.release.version}:"]
    for path in packaged.files:
        lines.append(f"  {path}  ({path.stat().st_size / 1e6:.1f} MB)")
    name = packaged.release.distribution
    wheel = packaged.server_wheel.name
    lines += [
        f"Try it: uvx --find-links {packaged.dist} --from {packaged.dist / wheel} {name} --doctor",
        "Publish: uv publish "
        f"{packaged.dist}/*.whl; attach the .mcpb files to the release that bundle_url names; "
        "then mcp-publisher publish (in dist/). See docs/distribution.md.",
    ]
    return "\n".join(lines)
