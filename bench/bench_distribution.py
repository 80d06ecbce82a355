"""Benchmark what end users get from ``tools/package_mcp.sh``: sizes, install time, cold start.

    .venv/bin/python bench/bench_distribution.py [NAME]     (default: docs-mcp-docs, built first)

Prints:
  - the time to package the server, and each artefact's size;
  - the time to install the wheel with pip into a fresh virtual environment (dependencies from
    the package registry, through pip's cache as a user who installed them before has it, and
    with ``--no-cache-dir`` as a first-time user), and with ``uv tool install``;
  - cold start to the first search answer over stdio: the installed wheel's console command, the
    unpacked MCP Bundle run as its manifest says, ``uvx --from FILE`` and the server folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import cold_start, script_command
from docbuild.config import load_processing_config
from docbuild.distribution import package

BASE_PYTHON = Path(getattr(sys, "_base_executable", sys.executable))


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env, timeout=1800)
    return time.perf_counter() - start


def fresh_install(wheel: Path, dist: Path, folder: Path, no_cache: bool) -> tuple[float, Path]:
    """Seconds to create a venv and pip install ``wheel``; returns them and the console command."""
    env = {**os.environ, "PIP_FIND_LINKS": str(dist), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    start = time.perf_counter()
    subprocess.run([str(BASE_PYTHON), "-m", "venv", str(folder)], check=True)
    extra = ["--no-cache-dir"] if no_cache else []
    pip = [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", *extra, str(wheel)]
    subprocess.run(pip, check=True, env=env, timeout=1800)
    return time.perf_counter() - start, folder / "bin" / wheel.name.split("-")[0].replace("_", "-")


def unpack_bundle(bundle: Path, folder: Path) -> tuple[list[str], dict[str, str]]:
    """Unpack ``bundle``; return the command its manifest's ``mcp_config`` runs, and its env."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(folder)
    config = json.loads((folder / "manifest.json").read_text())["server"]["mcp_config"]
    path = f"{BASE_PYTHON.parent}:/usr/bin:/bin"
    env = {k: v.replace("${__dirname}", str(folder)) for k, v in config.get("env", {}).items()}
    command = shutil.which(config["command"], path=path)
    args = [a.replace("${__dirname}", str(folder)) for a in config["args"]]
    return [str(command), *args], {"PATH": path, "HOME": str(folder), **env}


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "docs-mcp-docs"
    config = load_processing_config(name)
    script = config.server_root / "runtime" / f"{name.replace('-', '_')}_server.py"
    start = time.perf_counter()
    packaged = package(name, log=lambda message: None)
    print(f"{name} {packaged.release.version}: packaged in {time.perf_counter() - start:.1f} s")
    for path in packaged.files:
        print(f"  {path.name:<60} {path.stat().st_size / 1e6:8.1f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for no_cache in (False, True):
            seconds, command = fresh_install(
                packaged.server_wheel, packaged.dist, work / f"venv{int(no_cache)}", no_cache
            )
            label = "no pip cache" if no_cache else "pip cache warm"
            print(f"  venv + pip install of the wheel ({label}):  {seconds:.1f} s")
        uv_env = {
            **os.environ,
            "UV_TOOL_DIR": str(work / "tools"),
            "UV_TOOL_BIN_DIR": str(work / "bin"),
        }
        uv = [str(Path(sys.executable).parent / "uv"), "tool", "install", "--quiet"]
        links = ["--find-links", str(packaged.dist)]
        seconds = timed([*uv, *links, str(packaged.server_wheel)], uv_env)
        print(f"  uv tool install of the wheel (uv cache warm):  {seconds:.1f} s")
        venv_size = sum(f.stat().st_size for f in (work / "venv0").rglob("*") if f.is_file())
        print(f"  installed size of the venv:                   {venv_size / 1e6:.0f} MB")
        started, rss = cold_start([str(command)])
        print(f"  cold start, installed wheel:    {started}   RSS {rss:.0f} MB")
        uvx = Path(sys.executable).parent / "uvx"
        args = [str(uvx), "--find-links", str(packaged.dist), "--from"]
        started, _ = cold_start([*args, str(packaged.server_wheel), packaged.release.distribution])
        print(f"  cold start, uvx --from FILE:    {started}")
        if packaged.bundles:
            command, env = unpack_bundle(packaged.bundles[0], work / "bundle")
            started, rss = cold_start(command, env=env)
            print(f"  cold start, unpacked bundle:    {started}   RSS {rss:.0f} MB")
        started, rss = cold_start(script_command(script))
        print(f"  cold start, server folder:      {started}   RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
