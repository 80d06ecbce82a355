"""MCP Bundles (``.mcpb``): the server folder plus its libraries, for one platform each.

A bundle is a zip with ``manifest.json`` at its root (manifest version 0.3, server type
``python``). Claude Desktop unpacks it and runs ``mcp_config``: the user's ``python3.X`` with
``PYTHONPATH`` set to the bundle's ``server/lib``. Compiled dependencies (DuckDB and its
extensions, numpy, ONNX Runtime, tokenizers) differ by operating system, CPU and Python version,
so each bundle serves one platform and one Python minor version; its libraries are fetched from
PyPI for that platform, so a maintainer on Linux can make the macOS and Windows bundles too.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from docserve.doctor import INSTALL_FILE
from docserve.folder import ServerFolder

from docbuild.distribution.release import Release
from docbuild.distribution.wheel import FIXED_TIME, json_bytes, tree
from docbuild.stages.package import RUNTIME_PACKAGE, RUNTIME_SOURCE, encoder_files

MANIFEST_VERSION = "0.3"


@dataclass(frozen=True)
class Platform:
    """One bundle target: uv's ``--python-platform`` and the manifest's platform name."""

    name: str
    uv_target: str
    os: str  # darwin | linux | win32

    def python_command(self, python: str) -> str:
        """The interpreter the host runs: ``python3.X`` names the version the libraries need
        (python.org, Homebrew and Linux distributions install it); Windows has ``python``."""
        return "python" if self.os == "win32" else f"python{python}"


PLATFORMS = {
    p.name: p
    for p in (
        Platform("linux-x86_64", "x86_64-manylinux_2_28", "linux"),
        Platform("linux-arm64", "aarch64-manylinux_2_28", "linux"),
        Platform("macos-arm64", "aarch64-apple-darwin", "darwin"),
        Platform("macos-x86_64", "x86_64-apple-darwin", "darwin"),
        Platform("windows-x86_64", "x86_64-pc-windows-msvc", "win32"),
    )
}

# What the server offers, for the manifest (a test checks it against the running server).
TOOLS = {
    "search": "Hybrid (meaning + keyword) search over the documentation, with citations",
    "outline": "The documentation's pages, or one page's headings",
    "get_document": "A page or one of its sections, in reading order",
    "get_chunk": "One passage by its id",
    "stats": "What the index holds, how it was built, and whether this install is healthy",
}
# Folders in the libraries that the server never imports (tests, build tools, console scripts).
LIB_PRUNE = ("bin", "onnx/backend/test", "numpy/_core/tests", "numpy/tests")


class BundleError(RuntimeError):
    """A bundle could not be made; the message says why and what to do."""


def host_platform() -> Platform:
    """The platform this machine runs."""
    arch = "arm64" if platform.machine().lower() in ("arm64", "aarch64") else "x86_64"
    system = {"darwin": "macos", "win32": "windows"}.get(sys.platform, "linux")
    return PLATFORMS[f"{system}-{arch}"]


def platform_named(name: str) -> Platform:
    if name == "host":
        return host_platform()
    if name not in PLATFORMS:
        raise BundleError(f"unknown platform {name!r}: use host or one of {', '.join(PLATFORMS)}")
    return PLATFORMS[name]


def python_range(python: str) -> str:
    """The manifest's ``runtimes.python`` for one minor version, e.g. ``>=3.11.0 <3.12.0``."""
    major, minor = (int(part) for part in python.split(".")[:2])
    return f">={major}.{minor}.0 <{major}.{minor + 1}.0"


def manifest(release: Release, target: Platform, python: str) -> dict[str, object]:
    """The bundle's ``manifest.json`` (version 0.3, type ``python``)."""
    script = f"server/runtime/{release.server.replace('-', '_')}_server.py"
    data: dict[str, object] = {
        "manifest_version": MANIFEST_VERSION,
        "name": release.distribution,
        "display_name": release.title,
        "version": release.version,
        "description": release.description,
        "author": {
            k: v for k, v in (("name", release.author), ("email", release.author_email)) if v
        },
        "server": {
            "type": "python",
            "entry_point": script,
            "mcp_config": {
                "command": target.python_command(python),
                "args": [f"${{__dirname}}/{script}"],
                "env": {"PYTHONPATH": "${__dirname}/server/lib", "PYTHONNOUSERSITE": "1"},
            },
        },
        "tools": [{"name": name, "description": text} for name, text in TOOLS.items()],
        "tools_generated": False,
        "keywords": ["documentation", "search", "offline"],
        "compatibility": {"platforms": [target.os], "runtimes": {"python": python_range(python)}},
    }
    if release.license:
        data["license"] = release.license
    if release.homepage:
        data["homepage"] = release.homepage
    if release.repository:
        data["repository"] = {"type": "git", "url": release.repository}
    return data


def bundle_filename(release: Release, target: Platform) -> str:
    return f"{release.distribution}-{release.version}-{target.name}.mcpb"


def install_libraries(requirements: list[str], lib: Path, target: Platform, python: str) -> None:
    """Fetch the runtime's dependencies for ``target`` and ``python`` from PyPI into ``lib``."""
    from uv import find_uv_bin

    command = [
        find_uv_bin(),
        "pip",
        "install",
        "--quiet",
        "--target",
        str(lib),
        "--python-platform",
        target.uv_target,
        "--python-version",
        python,
        "--only-binary",
        ":all:",
        *requirements,
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BundleError(
            f"could not fetch the libraries for {target.name}, Python {python}:\n"
            f"{done.stderr.strip()}\n(is PyPI reachable? does every requirement publish a "
            "wheel for this platform?)"
        )
    for relative in LIB_PRUNE:
        shutil.rmtree(lib / relative, ignore_errors=True)


def stage(
    release: Release,
    server_root: Path,
    requirements: list[str],
    target: Platform,
    python: str,
    staging: Path,
) -> Path:
    """Lay out the bundle's folder in ``staging``; returns it."""
    shutil.rmtree(staging, ignore_errors=True)
    server = staging / "server"
    folder = ServerFolder(server_root, release.server)
    copies = {
        **tree(RUNTIME_SOURCE / RUNTIME_PACKAGE, f"runtime/{RUNTIME_PACKAGE}"),
        **tree(folder.model, "runtime/model"),
        **{
            path.relative_to(folder.root).as_posix(): path
            for path in (folder.script, folder.database, *encoder_files(folder.runtime))
        },
        **{
            path.relative_to(folder.root).as_posix(): path
            for path in (folder.server_config, folder.requirements, folder.skill)
        },
    }
    for relative, source in copies.items():
        (server / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, server / relative)
    install = {
        "name": release.server,
        "form": "bundle",
        "version": release.version,
        "distribution": release.distribution,
        "python": python,
        "requirements": requirements,
    }
    (server / INSTALL_FILE).write_bytes(json_bytes(install))
    install_libraries(requirements, server / "lib", target, python)
    (staging / "manifest.json").write_bytes(json_bytes(manifest(release, target, python)))
    return staging


def pack(staging: Path, target: Path) -> Path:
    """Zip ``staging`` into ``target`` (entries sorted, fixed timestamps: reproducible)."""
    partial = target.with_name(target.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            relative = path.relative_to(staging).as_posix()
            if "__pycache__" in relative or relative.endswith(".pyc"):
                continue
            info = zipfile.ZipInfo(relative, FIXED_TIME)
            info.external_attr = (0o755 if path.stat().st_mode & 0o100 else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as source, archive.open(info, "w") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
    partial.replace(target)
    return target


def make_bundle(
    release: Release,
    server_root: Path,
    requirements: list[str],
    target: Platform,
    python: str,
    out_dir: Path,
    work_dir: Path,
) -> Path:
    """Stage and pack the bundle for ``target``; returns the ``.mcpb`` file."""
    staging = stage(release, server_root, requirements, target, python, work_dir / target.name)
    try:
        return pack(staging, out_dir / bundle_filename(release, target))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def read_manifest(bundle: Path) -> dict[str, object]:
    """The manifest inside a ``.mcpb`` file."""
    with zipfile.ZipFile(bundle) as archive:
        return json.loads(archive.read("manifest.json"))
