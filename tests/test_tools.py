"""The shell tools, run as a maintainer runs them, against a throw-away project root."""

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from docbuild.config import load_processing_config
from docbuild.services.scaffold import scaffold
from docbuild.services.sync import SyncError, source_revision, sync_source


def tool(name: str, *args: str, root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(root)}
    return subprocess.run(
        [str(REPO / "tools" / name), *args], capture_output=True, text=True, env=env, timeout=600
    )


def test_help_exits_zero(project: Path):
    for name in ("build_mcp.sh", "scaffold_new_mcp.sh", "sync_documentation.sh", "add_version.sh"):
        result = tool(name, "--help", root=project)
        assert result.returncode == 0 and "usage:" in result.stdout
    formats = tool("scaffold_new_mcp.sh", "--help", root=project).stdout
    for fmt in ("html", "rst", "asciidoc", "notebook", "auto"):
        assert fmt in formats


def test_scaffold_renders_templates_and_refuses_bad_names(project: Path, tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    ok = tool(
        "scaffold_new_mcp.sh",
        "my-docs",
        "--source",
        str(src),
        "--format",
        "md",
        "--url-base",
        "https://x.org/docs",
        root=project,
    )
    assert ok.returncode == 0, ok.stderr
    server = project / "servers" / "my-docs"
    for name in (
        "config/processing_config.yaml",
        "config/server_config.yaml",
        "requirements.txt",
        "README.md",
    ):
        assert (server / name).is_file()
    config = load_processing_config("my-docs", project)
    assert config.source.path == src  # read in place, never copied
    assert config.format == "md" and config.url_base == "https://x.org/docs"
    assert config.database_path == server / "runtime" / "my_docs.db"
    for rendered in server.rglob("*"):
        if rendered.is_file():
            assert "{{" not in rendered.read_text(), rendered  # every scaffold placeholder filled

    again = tool("scaffold_new_mcp.sh", "my-docs", "--source", str(src), root=project)
    assert again.returncode == 2 and "already exists" in again.stderr
    for bad in ("My_Docs", "1docs", "docs--x", "../escape"):
        result = tool("scaffold_new_mcp.sh", bad, "--source", str(src), root=project)
        assert result.returncode == 2 and "invalid name" in result.stderr, bad
    missing = tool("scaffold_new_mcp.sh", "other", "--source", str(tmp_path / "nope"), root=project)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_build_of_unknown_server_or_empty_source_fails_non_zero(project: Path, tmp_path: Path):
    unknown = tool("build_mcp.sh", "ghost", root=project)
    assert unknown.returncode == 2 and "scaffold_new_mcp.sh ghost" in unknown.stderr
    src = tmp_path / "empty"
    src.mkdir()
    (src / "note.md").write_text("")
    assert (
        tool("scaffold_new_mcp.sh", "empty-docs", "--source", str(src), root=project).returncode
        == 0
    )
    result = tool("build_mcp.sh", "empty-docs", root=project)
    assert result.returncode == 1 and "no documents to index" in result.stderr


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def upstream(tmp_path: Path) -> tuple[Path, str]:
    """A git repository with docs/manual/page.md; returns it and its head commit."""
    repo = tmp_path / "upstream"
    (repo / "docs" / "manual").mkdir(parents=True)
    (repo / "docs" / "manual" / "page.md").write_text("# Page\n\ntext\n")
    (repo / "README.md").write_text("not part of the docs\n")
    git("init", "-q", "-b", "main", cwd=repo)
    git(
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "init",
        cwd=repo,
    )
    git("add", ".", cwd=repo)
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "docs", cwd=repo)
    return repo, git("rev-parse", "HEAD", cwd=repo)


def test_sync_from_git_subfolder_and_local_path(project: Path, tmp_path: Path):
    repo, head = upstream(tmp_path)
    scaffold("from-git", git_url=f"file://{repo}", git_subfolder="docs/manual", root=project)
    result = tool("sync_documentation.sh", "from-git", root=project)
    assert result.returncode == 0, result.stderr
    target = project / "source-documentation" / "from-git"
    assert sorted(p.name for p in target.iterdir()) == [".sync.json", "page.md"]
    assert source_revision(target) == head

    # a local folder is read in place: there is nothing to sync, and the tool says so
    scaffold("from-dir", str(repo / "docs"), root=project)
    assert load_processing_config("from-dir", project).source.path == repo / "docs"
    result = tool("sync_documentation.sh", "from-dir", root=project)
    assert result.returncode == 0 and "nothing to sync" in result.stdout
    assert not (project / "source-documentation" / "from-dir").exists()
    assert source_revision(repo / "docs") == head  # a local git checkout still records its commit


def test_sync_of_a_versioned_server_syncs_each_git_version(project: Path, tmp_path: Path):
    repo, head = upstream(tmp_path)
    made = tool(
        "scaffold_new_mcp.sh",
        "versioned",
        "--git",
        f"file://{repo}",
        "--subfolder",
        "docs/manual",
        "--version",
        "1.0",
        root=project,
    )
    assert made.returncode == 0, made.stderr
    added = tool("add_version.sh", "versioned", "2.0", "--source", str(repo / "docs"), root=project)
    assert added.returncode == 0, added.stderr
    result = tool("sync_documentation.sh", "versioned", root=project)
    assert result.returncode == 0, result.stderr
    synced, local = result.stdout.splitlines()
    target = project / "source-documentation" / "versioned" / "1.0"
    assert synced.startswith(f"version 1.0: synced file://{repo} → {target}") and head in synced
    assert "versioned version 2.0 reads" in local and "nothing to sync" in local
    assert sorted(p.name for p in target.iterdir()) == [".sync.json", "page.md"]
    assert source_revision(target) == head
    assert sorted(p.name for p in target.parent.iterdir()) == [
        "1.0"
    ]  # a local version is read in place


def test_sync_offline_is_a_clear_error(project: Path):
    scaffold("offline", git_url="https://127.0.0.1:9/nobody/repo.git", root=project)
    with pytest.raises(SyncError, match=r"could not fetch https://127\.0\.0\.1:9.*Offline\?"):
        sync_source(load_processing_config("offline", project))
    result = tool("sync_documentation.sh", "offline", root=project)
    assert result.returncode == 1 and "could not fetch" in result.stderr


def test_client_config_prints_each_clients_entry(project: Path, tmp_path: Path):
    source = tmp_path / "docs"
    source.mkdir()
    (source / "a.md").write_text("# A\n\nText.\n")
    env = {**os.environ, "DOCMCP_PROJECT_ROOT": str(project)}
    docbuild = str(REPO / ".venv" / "bin" / "docbuild")
    subprocess.run([docbuild, "scaffold", "my-docs", "--source", str(source)], env=env, check=True)
    root = project / "servers" / "my-docs"
    python, script = str(root / ".venv/bin/python"), str(root / "runtime/my_docs_server.py")

    def config(*args: str) -> str:
        run = subprocess.run(
            [docbuild, "client-config", "my-docs", *args], env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        return run.stdout

    desktop = json.loads(config("--client", "claude-desktop"))["mcpServers"]["my-docs"]
    assert desktop == {"command": python, "args": [script]}
    assert json.loads(config("--client", "cursor"))["mcpServers"]["my-docs"] == desktop
    vscode = json.loads(config("--client", "vscode"))["servers"]["my-docs"]
    assert vscode == {"type": "stdio", **desktop}
    assert shlex.split(config("--client", "claude-code")) == [
        "claude",
        "mcp",
        "add",
        "my-docs",
        "--",
        python,
        script,
    ]
    uvx = json.loads(config("--client", "vscode", "--installed", "uvx"))["servers"]["my-docs"]
    assert uvx == {"type": "stdio", "command": "uvx", "args": ["my-docs"]}
    missing = subprocess.run(
        [docbuild, "client-config", "nope", "--client", "vscode"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "scaffold_new_mcp.sh nope" in missing.stderr
