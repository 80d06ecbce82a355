"""The server as Python packages: its own wheel, and the model wheel it shares with other servers.

The server wheel holds a package named after the server (``my_docs``) laid out as the server
folder is: ``docserve/`` (the runtime), ``config/``, ``runtime/NAME.db`` and ``install.json``; its
console command, named after the distribution, runs :func:`docserve.launch.main` on that folder.
The model comes from ``docs-mcp-model-SLUG``, which the server wheel pins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from docserve.doctor import CHECKSUMS_FILE, INSTALL_FILE, model_checksums, requirements_file
from docserve.encoder import read_model_id
from docserve.folder import SKILL_FILE, ServerFolder

from docbuild import __version__
from docbuild.distribution.release import Release
from docbuild.distribution.wheel import WheelSpec, json_bytes, tree
from docbuild.stages.package import RUNTIME_PACKAGE, RUNTIME_SOURCE, encoder_files

MODEL_PREFIX = "docs-mcp-model-"


@dataclass(frozen=True)
class ModelPackage:
    """The shared model wheel's names and the hash of the weights it carries."""

    distribution: str
    package: str
    version: str
    model_id: str
    weights_sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"


def requirements(folder: ServerFolder) -> list[str]:
    """The runtime's requirements (the server folder's ``requirements.txt``)."""
    return requirements_file(folder.requirements)


def model_package(model_dir: Path) -> ModelPackage:
    """Names for the wheel of the model in ``model_dir`` (from its Hugging Face id)."""
    model_id = read_model_id(model_dir)
    slug = re.sub(r"[^a-z0-9]+", "-", model_id.rsplit("/", 1)[-1].lower()).strip("-")
    distribution = MODEL_PREFIX + slug
    return ModelPackage(
        distribution=distribution,
        package=distribution.replace("-", "_"),
        version=__version__,
        model_id=model_id,
        weights_sha256=model_checksums(model_dir)["model.safetensors"],
    )


SPDX = {"apache-2.0": "Apache-2.0", "mit": "MIT", "bsd-3-clause": "BSD-3-Clause"}


def _model_license(model_dir: Path) -> str | None:
    """The SPDX licence the model card declares in its front matter (``license: apache-2.0``)."""
    card = model_dir / "README.md"
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    found = re.search(r"^license:\s*(\S+)\s*$", text, re.MULTILINE)
    return SPDX.get(found.group(1).lower()) if found else None


def model_wheel(model_dir: Path, model: ModelPackage) -> WheelSpec:
    """The wheel that carries the model's files and their recorded hashes."""
    if not (model_dir / CHECKSUMS_FILE).is_file():
        raise FileNotFoundError(f"{model_dir / CHECKSUMS_FILE} is missing: rebuild the server")
    init = (
        f'"""The embedding model {model.model_id}, packaged for docs-mcp servers."""\n\n'
        "from pathlib import Path\n\n"
        f"MODEL_ID = {model.model_id!r}\n"
        f"WEIGHTS_SHA256 = {model.weights_sha256!r}\n"
        'MODEL_DIR = Path(__file__).resolve().parent / "model"\n'
    )
    return WheelSpec(
        distribution=model.distribution,
        version=model.version,
        summary=f"The {model.model_id} embedding model's files, for docs-mcp search servers",
        requires_python=">=3.8",
        license=_model_license(model_dir),
        readme=(
            f"# {model.distribution}\n\nThe files of the sentence embedding model "
            f"`{model.model_id}` (weights SHA-256 `{model.weights_sha256}`), shared by every "
            "docs-mcp search server built with it, so that installing several servers fetches "
            "the model once.\n"
        ),
        files={
            f"{model.package}/__init__.py": init.encode(),
            **tree(model_dir, f"{model.package}/model"),
        },
    )


def server_wheel(
    release: Release, server_root: Path, model: ModelPackage, readme: str
) -> WheelSpec:
    """The server's wheel: runtime, config, database and a console command."""
    package = release.package
    folder = ServerFolder(server_root, release.server)
    database = folder.database
    if not database.is_file():
        raise FileNotFoundError(
            f"{database} not found: build it with `tools/build_mcp.sh {release.server}`"
        )
    runtime = requirements(folder)
    install = {
        "name": release.server,
        "form": "wheel",
        "version": release.version,
        "distribution": release.distribution,
        "model_package": model.package,
        "model_distribution": model.distribution,
        "model_version": model.version,
        "requirements": runtime,
    }
    init = (
        f'"""MCP search server for {release.server}: `{release.distribution}` (stdio), '
        f'`{release.distribution} --http`, `{release.distribution} --doctor`."""\n\n'
        "import sys\nfrom pathlib import Path\n\n"
        f"NAME = {release.server!r}\n"
        f"__version__ = {release.version!r}\n\n\n"
        "def main() -> int:\n"
        '    """Run the server (arguments from the command line)."""\n'
        "    from .docserve.launch import main as launch\n\n"
        "    return launch(NAME, Path(__file__).resolve().parent, sys.argv[1:])\n"
    )
    main = "import sys\n\nfrom . import main\n\nsys.exit(main())\n"
    config = folder.server_config
    urls = {
        label: url
        for label, url in (("Homepage", release.homepage), ("Repository", release.repository))
        if url
    }
    return WheelSpec(
        distribution=release.distribution,
        version=release.version,
        summary=release.description,
        requires=[*runtime, model.requirement],
        scripts={release.distribution: f"{package}:main"},
        readme=readme,
        license=release.license,
        author=release.author,
        author_email=release.author_email,
        urls=urls,
        files={
            f"{package}/__init__.py": init.encode(),
            f"{package}/__main__.py": main.encode(),
            f"{package}/{INSTALL_FILE}": json_bytes(install),
            f"{package}/config/server_config.yaml": config,
            f"{package}/{SKILL_FILE}": folder.skill,
            f"{package}/runtime/{database.name}": database,
            **{f"{package}/runtime/{path.name}": path for path in encoder_files(database.parent)},
            **tree(RUNTIME_SOURCE / RUNTIME_PACKAGE, f"{package}/{RUNTIME_PACKAGE}"),
        },
    )
