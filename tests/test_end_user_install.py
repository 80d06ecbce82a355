"""An end user's path, for real: copy a built server folder out of the repository, create a fresh
virtual environment in it, ``pip install -r requirements.txt`` (from the package registry, nothing
from this repository), and launch it exactly as the Claude Desktop snippet in its README says."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from docbuild.config import load_processing_config
from docbuild.pipeline import Build
from docbuild.services.client_config import CLIENTS, client_config
from docbuild.services.scaffold import scaffold

PAGE = "# Cache settings\n\nThe `cache_size` option sets how many query embeddings are kept in memory.\n"


def claude_desktop_entry(readme: Path) -> dict:
    """The one server entry of the README's Claude Desktop JSON snippet."""
    section = readme.read_text().split("## Claude Desktop", 1)[1]
    snippet = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert snippet, "README has no Claude Desktop JSON snippet"
    servers = json.loads(snippet.group(1))["mcpServers"]
    assert len(servers) == 1
    return next(iter(servers.values()))


def test_copied_folder_installs_from_requirements_and_answers(
    project: Path, tmp_path: Path, embedder
):
    source = project / "corpus"
    source.mkdir()
    (source / "cache.md").write_text(PAGE)
    scaffold("user-docs", str(source), "md", root=project)
    config = load_processing_config("user-docs", project)
    Build(config, embedder).run()
    built = config.server_root
    entry = claude_desktop_entry(built / "README.md")
    readme = (built / "README.md").read_text()
    assert entry["command"] == str(built / ".venv" / "bin" / "python")

    copy = tmp_path / "elsewhere" / "user-docs"
    shutil.copytree(built, copy, ignore=shutil.ignore_patterns("build", "__pycache__"))
    assert REPO not in copy.parents
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(copy / ".venv")], check=True, timeout=300)
    install = subprocess.run(
        [
            str(copy / ".venv" / "bin" / "pip"),
            "install",
            "--quiet",
            "-r",
            str(copy / "requirements.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if install.returncode != 0 and "Could not find a version" in install.stderr + install.stdout:
        pytest.skip(f"package registry unreachable: {install.stderr[-300:]}")
    assert install.returncode == 0, install.stderr[-2000:]

    # the README's paths point at the build folder; a user who copied the folder changes them
    command = entry["command"].replace(str(built), str(copy))
    args = [a.replace(str(built), str(copy)) for a in entry["args"]]
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def ask() -> dict:
        async with Client(StdioTransport(command, args, cwd=str(tmp_path)), timeout=120) as client:
            result = await client.call_tool(
                "search", {"query": "how many query embeddings are kept?"}
            )
            return result.structured_content

    answer = asyncio.run(ask())
    assert answer["retrievers"] == ["keyword", "vector"] and not answer["degraded"]
    assert "cache_size" in answer["results"][0]["content"]
    # every client's config for the copied folder launches that same command
    for client in CLIENTS:
        config = client_config("user-docs", copy, client)
        if client == "claude-code":
            assert shlex.split(config) == [
                "claude",
                "mcp",
                "add",
                "user-docs",
                "--",
                command,
                *args,
            ]
            continue
        servers = json.loads(config)["servers" if client == "vscode" else "mcpServers"]
        assert servers["user-docs"]["command"] == command and servers["user-docs"]["args"] == args
        assert client != "vscode" or servers["user-docs"]["type"] == "stdio"
        assert f"```json\n{client_config('user-docs', built, client)}\n```" in readme
