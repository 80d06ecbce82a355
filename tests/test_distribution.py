"""``tools/package_mcp.sh``'s artefacts, each used as an end user would, away from the repository.

One tiny server is built and packaged once (``package``); then the wheel is installed with pip
into a fresh virtual environment and launched by its console command through a real MCP client;
the same wheel runs through ``uvx --from FILE``; the MCP Bundle is unpacked and validated by the
official ``mcpb`` CLI and launched exactly as its manifest's ``mcp_config`` says, with a Python
that has none of our dependencies; ``server.json`` is validated against the MCP Registry's
published schema; ``--doctor`` passes on each good install and fails, naming a fix that works, on
broken ones. Installs fetch the runtime's dependencies from the package registry (PyPI).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO
from docbuild.config import load_processing_config
from docbuild.distribution import Packaged, package
from docbuild.distribution.bundle import TOOLS, host_platform, read_manifest
from docbuild.distribution.registry import SCHEMA_URL
from docbuild.pipeline import Build
from docbuild.services.scaffold import scaffold

NAME = "tiny-docs-mcp"
PAGES = {
    "cache.md": "# Cache settings\n\nThe `cache_size` option sets how many query embeddings are "
    "kept in memory.\n\n## Eviction\n\nThe least recently used embedding is dropped first.\n",
    "install.md": "# Installing\n\nRun `pip install tiny-docs-mcp` and then `tiny-docs-mcp "
    "--doctor` to check the install.\n",
}
MCPB = REPO / ".tools" / "mcpb" / "node_modules" / ".bin" / "mcpb"
SCHEMA = REPO / ".tools" / "registry-schema" / "server.schema.json"
BASE_PYTHON = Path(getattr(sys, "_base_executable", sys.executable))
QUERY = "how many query embeddings are kept in memory?"


@pytest.fixture(scope="module")
def packaged(tmp_path_factory, embedder) -> Packaged:
    """A two-page server, built with the real model and packaged (wheels, host bundle, server.json)."""
    root = tmp_path_factory.mktemp("dist-project")
    (root / "servers").mkdir()
    source = root / "corpus"
    source.mkdir()
    for name, text in PAGES.items():
        (source / name).write_text(text)
    scaffold(NAME, str(source), "md", root=root)
    config_file = root / "servers" / NAME / "config" / "processing_config.yaml"
    text = config_file.read_text()
    for key, value in {
        "repository": "https://github.com/example-org/tiny-docs",
        "author": "Example Org",
        "description": '"Search the tiny docs offline"',
    }.items():
        text, count = re.subn(rf"(\n  {key}:) null", rf"\1 {value}", text)
        assert count == 1, key
    config_file.write_text(text)
    Build(load_processing_config(NAME, root), embedder).run()
    return package(NAME, root, log=lambda message: None)


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=900, **kwargs)


def ask(command: str, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> dict:
    """List the tools and search once through a real MCP client over stdio."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async def talk() -> dict:
        transport = StdioTransport(command, args, env=env, cwd=str(cwd))
        async with Client(transport, timeout=120) as client:
            tools = [tool.name for tool in await client.list_tools()]
            found = await client.call_tool("search", {"query": QUERY})
            stats = await client.call_tool("stats", {})
            return {
                "tools": tools,
                "text": found.content[0].text,
                "search": found.structured_content,
                "stats": stats.structured_content,
                "stats_text": stats.content[0].text,
            }

    return asyncio.run(talk())


def doctor(command: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run([*command, "--doctor"], env=env)


def fix_of(report: str, check: str) -> str:
    """The fix the doctor printed under the failed ``check``."""
    found = re.search(rf"^FAIL\s+{re.escape(check)}\b.*\n\s+fix: (.+)$", report, re.MULTILINE)
    assert found, f"no failed {check!r} check with a fix in:\n{report}"
    return found.group(1)


def assert_answers(answer: dict, form: str) -> None:
    assert sorted(answer["tools"]) == sorted(TOOLS), "the manifest lists the server's tools"
    assert "cache_size" in answer["text"] and "Cache settings" in answer["text"]
    assert answer["search"]["retrievers"] == ["keyword", "vector"]
    assert not answer["search"]["degraded"]
    install = answer["stats"]["install"]
    assert install["form"] == form and all(check["ok"] for check in install["checks"])
    assert (
        f"install: {form}" in answer["stats_text"]
        and "doctor checks: all pass" in answer["stats_text"]
    )


def test_package_writes_the_artefacts(packaged: Packaged):
    release = packaged.release
    assert release.version == packaged.server_wheel.name.split("-")[1]
    assert re.fullmatch(r"20\d\d\.\d{3,4}\.\d+", release.version)  # YEAR.MMDD.SNAPSHOT
    assert packaged.server_wheel.name == f"tiny_docs_mcp-{release.version}-py3-none-any.whl"
    assert packaged.model_wheel.name.startswith("docs_mcp_model_all_minilm_l6_v2-")
    (bundle,) = packaged.bundles  # the host's
    assert bundle.name == f"{NAME}-{release.version}-{host_platform().name}.mcpb"
    with zipfile.ZipFile(packaged.server_wheel) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(f"tiny_docs_mcp-{release.version}.dist-info/METADATA").decode()
    # the server wheel carries no model: the shared model wheel does, once for every server
    assert not [n for n in names if n.endswith(".safetensors")]
    assert "tiny_docs_mcp/runtime/tiny_docs_mcp.db" in names
    assert "Requires-Dist: docs-mcp-model-all-minilm-l6-v2==" in metadata
    assert "Requires-Dist: duckdb==1.4.4" in metadata and "docbuild" not in metadata
    assert packaged.server_wheel.stat().st_size < 5e6
    assert packaged.model_wheel.stat().st_size < 100e6  # under PyPI's default file limit

    # the agent skill, the same text in the server folder, the wheel and the bundle
    skill = (packaged.dist.parent / "SKILL.md").read_text()
    front, body = skill.removeprefix("---\n").split("\n---\n", 1)
    meta = yaml.safe_load(front)
    assert meta["name"] == f"{NAME}-search" and f"({info_counts(packaged)})" in meta["description"]
    for tool in ("search(query)", "get_document(path, section)", "outline(path)", "version"):
        assert tool in body
    with zipfile.ZipFile(packaged.server_wheel) as wheel:
        assert wheel.read("tiny_docs_mcp/SKILL.md").decode() == skill
    with zipfile.ZipFile(bundle) as mcpb:
        assert mcpb.read("server/SKILL.md").decode() == skill


def info_counts(packaged: Packaged) -> str:
    """``N pages, M passages`` as the built database counts them."""
    from docbuild.distribution import build_info_of

    info = build_info_of(next((packaged.dist.parent / "runtime").glob("*.db")))
    return f"{info.document_count} pages, {info.chunk_count} passages"


def test_wheels_are_reproducible(packaged: Packaged, tmp_path: Path):
    from docbuild.distribution.python_package import model_package, model_wheel
    from docbuild.distribution.wheel import write_wheel

    model_dir = packaged.dist.parent / "runtime" / "model"
    again = write_wheel(model_wheel(model_dir, model_package(model_dir)), tmp_path)
    assert again.read_bytes() == packaged.model_wheel.read_bytes()


def test_wheel_installs_with_pip_in_a_fresh_venv_answers_and_doctors(
    packaged: Packaged, tmp_path: Path
):
    venv = tmp_path / "venv"
    run([str(BASE_PYTHON), "-m", "venv", str(venv)]).check_returncode()
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    # the model wheel is not on PyPI here: pip finds it in dist/ (a user gets it from PyPI)
    env = {**os.environ, "PIP_FIND_LINKS": str(packaged.dist), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    installed = run([*pip, "install", "--quiet", str(packaged.server_wheel)], env=env)
    if installed.returncode and "Could not find a version" in installed.stderr:
        pytest.skip(f"package registry unreachable: {installed.stderr[-300:]}")
    assert installed.returncode == 0, installed.stderr[-2000:]
    command = venv / "bin" / NAME
    assert command.is_file(), "the console command is named after the server"

    answer = ask(str(command), [], cwd=tmp_path)
    assert_answers(answer, "wheel")
    good = doctor([str(command)], env)
    assert good.returncode == 0 and "All checks passed." in good.stdout, good.stdout

    site = Path(
        run(
            [
                str(venv / "bin" / "python"),
                "-c",
                "import tiny_docs_mcp, sys; print(tiny_docs_mcp.__file__)",
            ]
        ).stdout.strip()
    ).parent.parent
    model_file = site / "docs_mcp_model_all_minilm_l6_v2" / "model" / "vocab.txt"
    database = site / "tiny_docs_mcp" / "runtime" / "tiny_docs_mcp.db"
    breakages = {
        "model": lambda: model_file.write_text(model_file.read_text() + "extra\n"),
        "database": database.unlink,
        "duckdb extension fts": lambda: run(
            [*pip, "uninstall", "--yes", "--quiet", "duckdb-ext-fts"]
        ).check_returncode(),
    }
    for check, damage in breakages.items():
        damage()
        broken = doctor([str(command)], env)
        assert broken.returncode == 1, broken.stdout
        fix = fix_of(broken.stdout, check)
        assert fix.startswith(f"{venv / 'bin' / 'python'} -m pip install"), fix
        assert run(shlex.split(fix), env=env).returncode == 0, fix
        healed = doctor([str(command)], env)
        assert healed.returncode == 0, f"after `{fix}`:\n{healed.stdout}"


def test_wheel_runs_with_uvx_from_the_file(packaged: Packaged, tmp_path: Path):
    uvx = Path(sys.executable).parent / "uvx"
    if not uvx.is_file():
        pytest.skip("uvx is not installed in this environment")
    args = ["--find-links", str(packaged.dist), "--from", str(packaged.server_wheel), NAME]
    # the user's environment (index, certificates, cache), outside any virtual environment
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    assert_answers(ask(str(uvx), args, cwd=tmp_path, env=env), "wheel")


def mcpb(*args: str) -> subprocess.CompletedProcess:
    if not MCPB.is_file():
        pytest.skip("the mcpb CLI is not installed: run tools/install_mcpb.sh")
    return run([str(MCPB), *args])


def test_bundle_validates_and_runs_as_its_manifest_says(packaged: Packaged, tmp_path: Path):
    if sys.platform != "linux":
        pytest.skip("the host bundle is tested on Linux")
    (bundle,) = packaged.bundles
    unpacked = tmp_path / "Claude Extensions" / NAME  # hosts unpack into paths with spaces
    unpacked.mkdir(parents=True)
    done = mcpb("unpack", str(bundle), str(unpacked))
    assert done.returncode == 0, done.stdout + done.stderr
    validated = mcpb("validate", str(unpacked))
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "Manifest schema validation passes" in validated.stdout
    manifest = json.loads((unpacked / "manifest.json").read_text())
    assert manifest == read_manifest(bundle)
    assert manifest["manifest_version"] == "0.3" and manifest["server"]["type"] == "python"
    assert manifest["compatibility"]["platforms"] == ["linux"]

    config = manifest["server"]["mcp_config"]

    def substitute(value: str) -> str:
        return value.replace("${__dirname}", str(unpacked))

    # a host's environment: a Python on PATH that has none of our packages, plus the manifest's
    path = os.pathsep.join([str(BASE_PYTHON.parent), "/usr/bin", "/bin"])
    env = {
        "PATH": path,
        "HOME": str(tmp_path),
        **{k: substitute(v) for k, v in config["env"].items()},
    }
    command = shutil.which(config["command"], path=path)
    assert command, f"no {config['command']} on {path}"
    args = [substitute(a) for a in config["args"]]
    assert_answers(ask(command, args, cwd=tmp_path, env=env), "bundle")
    good = doctor([command, *args], env)
    assert good.returncode == 0 and "(bundle install" in good.stdout, good.stdout

    (unpacked / "server" / "runtime" / "tiny_docs_mcp.db").unlink()
    broken = doctor([command, *args], env)
    assert broken.returncode == 1
    assert f"reinstall {NAME}-{packaged.release.version}.mcpb" in fix_of(broken.stdout, "database")


def test_server_json_is_valid_for_the_registry(packaged: Packaged):
    if not SCHEMA.is_file():
        pytest.skip("the registry schema is not installed: run tools/install_registry_schema.sh")
    from jsonschema import Draft7Validator

    schema = json.loads(SCHEMA.read_text())
    assert schema["$id"] == SCHEMA_URL
    data = json.loads(packaged.server_json.read_text())
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]
    assert not errors
    # what the registry checks at publish time, beyond the schema
    assert data["$schema"] == SCHEMA_URL
    assert data["name"] == f"io.github.example-org/{NAME}"
    pypi, *bundles = data["packages"]
    assert pypi["registryType"] == "pypi" and pypi["runtimeHint"] == "uvx"
    assert (pypi["identifier"], pypi["version"]) == (NAME, packaged.release.version)
    with zipfile.ZipFile(packaged.server_wheel) as wheel:
        metadata = wheel.read(f"tiny_docs_mcp-{packaged.release.version}.dist-info/METADATA")
    assert f"mcp-name: {data['name']}".encode() in metadata
    assert len(bundles) == len(packaged.bundles)
    for entry, bundle in zip(bundles, packaged.bundles, strict=True):
        assert entry["registryType"] == "mcpb" and "mcp" in entry["identifier"].lower()
        assert entry["identifier"] == (
            "https://github.com/example-org/tiny-docs/releases/download/"
            f"v{packaged.release.version}/{bundle.name}"
        )
        assert entry["fileSha256"] == hashlib.sha256(bundle.read_bytes()).hexdigest()

    broken = {**data, "description": "x" * 101}
    assert list(validator.iter_errors(broken)), "the schema catches what the registry refuses"


def test_a_failed_package_leaves_the_previous_dist(packaged: Packaged):
    before = {p.name: p.read_bytes() for p in packaged.dist.iterdir() if p.suffix != ".mcpb"}
    root = packaged.dist.parents[2]
    with pytest.raises(Exception, match="could not fetch the libraries"):
        package(NAME, root, python="3.99", log=lambda message: None)
    after = {p.name: p.read_bytes() for p in packaged.dist.iterdir() if p.suffix != ".mcpb"}
    assert after == before
    assert not (packaged.dist.parent / "dist.tmp").exists()


# --- names and versions, without a build ------------------------------------------------------


def test_release_defaults_come_from_the_build_and_the_repository():
    from docbuild.config import PackageConfig
    from docbuild.distribution.release import resolve
    from docserve.build_info import BuildInfo

    info = BuildInfo(built_at="2026-01-05T10:00:00+00:00", snapshot_id=12)
    release = resolve("My_Docs", PackageConfig(repository="https://github.com/acme/docs"), info)
    assert release.version == "2026.105.12"  # January 5th: sorts before 2026.1123.x
    assert release.distribution == "my-docs" and release.package == "my_docs"
    assert release.registry_name == "io.github.acme/my-docs" and not release.warnings
    assert release.bundle_url == (
        "https://github.com/acme/docs/releases/download/v2026.105.12/{file}"
    )
    anonymous = resolve("my-docs", PackageConfig(), info)
    assert anonymous.registry_name == "io.github.YOUR-GITHUB-USER/my-docs"
    assert any("set package.repository" in w for w in anonymous.warnings)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"version": "latest"}, "not a version pip accepts"),
        ({"description": "x" * 101}, "at most 100"),
        ({"registry_name": "no-slash"}, "NAMESPACE/NAME"),
    ],
)
def test_release_refuses_what_registries_refuse(config: dict, message: str):
    from docbuild.config import ConfigError, PackageConfig
    from docbuild.distribution.release import resolve
    from docserve.build_info import BuildInfo

    info = BuildInfo(built_at="2026-11-23T10:00:00+00:00", snapshot_id=1)
    with pytest.raises(ConfigError, match=message):
        resolve("my-docs", PackageConfig(**config), info)
