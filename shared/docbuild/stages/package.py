"""The package stage: make ``servers/NAME`` self-contained: runtime code, the server script, the
model, a README and SKILL.md.

The runtime code has one source, ``shared/runtime/docserve``; every server folder carries an
exact copy, so an end user needs only that folder and its ``requirements.txt``.
"""

from __future__ import annotations

import compileall
import filecmp
import json
import os
import py_compile
import shutil
from pathlib import Path
from typing import Any

from docserve.build_info import BuildInfo
from docserve.doctor import CHECKSUMS_FILE
from docserve.duck import connect
from docserve.encoder import file_sha256
from docserve.folder import ServerFolder, underscored

from docbuild.build_report import BuildError
from docbuild.config import ProcessingConfig
from docbuild.embedding import Embedder
from docbuild.embedding.local import model_folder
from docbuild.services.client_config import CLIENTS, client_config
from docbuild.services.scaffold import TEMPLATES, render

RUNTIME_SOURCE = Path(__file__).resolve().parents[2] / "runtime"
RUNTIME_PACKAGE = "docserve"
WEIGHTS_FILE = "model.safetensors"
MODEL_FILES = (
    "config.json",
    "sentence_bert_config.json",
    "modules.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "README.md",
    "1_Pooling/config.json",
    WEIGHTS_FILE,
)


def runtime_files() -> list[Path]:
    """The runtime's source files, relative to ``shared/runtime``."""
    return sorted(
        p.relative_to(RUNTIME_SOURCE) for p in (RUNTIME_SOURCE / RUNTIME_PACKAGE).glob("*.py")
    )


def precompile(package: Path) -> None:
    """Write the bytecode of ``package`` for this Python, checked against each source's hash (so
    it stays valid in a copied folder): a server started where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE``, a read-only folder) need not compile its runtime each time."""
    compileall.compile_dir(
        package,
        quiet=1,
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
    )


def install_runtime(folder: ServerFolder) -> Path:
    """Copy the runtime package and render the server script; returns the script."""
    runtime, name = folder.runtime, folder.name
    package = runtime / RUNTIME_PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    wanted = {p.name for p in runtime_files()}
    for stale in package.glob("*.py"):
        if stale.name not in wanted:
            stale.unlink()
    for relative in runtime_files():
        source, target = RUNTIME_SOURCE / relative, runtime / relative
        if not target.exists() or not filecmp.cmp(source, target, shallow=False):
            shutil.copyfile(source, target)
    precompile(package)
    requirements = (TEMPLATES / "requirements.txt").read_text()
    if _text_of(folder.requirements) != requirements:
        folder.requirements.write_text(requirements)
    script = folder.script
    text = render(
        (RUNTIME_SOURCE / "server_script.py").read_text(),
        {"name": name, "name_underscored": underscored(name)},
    )
    if not script.exists() or script.read_text() != text:
        script.write_text(text)
        script.chmod(0o755)
    return script


def _text_of(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def bundle_model(model_dir: Path, target: Path, weights: bool = True) -> Path:
    """Copy the embedding model's files into ``target`` (a server's ``runtime/model``) with
    their checksums; without ``weights``, only the tokenizer and settings (an int8 server's
    encoder is its own file). Skipped when ``target`` already holds exactly those files."""
    names = [
        name
        for name in MODEL_FILES
        if (model_dir / name).is_file() and (weights or name != WEIGHTS_FILE)
    ]
    held = [name for name in MODEL_FILES if (target / name).is_file()]
    if held == names and all(
        filecmp.cmp(model_dir / name, target / name, shallow=False) for name in names
    ):
        if not (target / CHECKSUMS_FILE).is_file():
            write_checksums(target)
        return target
    staging = target.with_name(f"{target.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    for name in names:
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(model_dir / name, staging / name)
    write_checksums(staging)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def needs_weights(info: BuildInfo) -> bool:
    """Whether a build's server embeds queries with the fp32 weights (no quantized encoder)."""
    return not info.encoder_file


def encoder_file_name(embedder: Embedder) -> str | None:
    """The name a quantized encoder has in ``runtime/`` (its hash in it, so a server still
    serving the previous build keeps its own); None for an fp32 or remote encoder."""
    digest = embedder.encoder_sha256
    return f"encoder-{embedder.precision}-{digest[:12]}.onnx" if digest else None


def encoder_files(runtime: Path) -> list[Path]:
    """The quantized encoders in a server's ``runtime/`` folder (shipped with its database)."""
    return sorted(runtime.glob("encoder-*.onnx"))


def remove_other_encoders(folder: ServerFolder, keep: object) -> None:
    """Delete the quantized encoders in ``runtime/`` other than ``keep`` (the served build's)."""
    for path in encoder_files(folder.runtime):
        if path.name != keep:
            path.unlink()


def write_checksums(model_dir: Path) -> Path:
    """Record each model file's SHA-256 (``sha256sum`` format), which ``--doctor`` checks."""
    lines = [
        f"{file_sha256(model_dir / name)}  {name}"
        for name in MODEL_FILES
        if (model_dir / name).is_file()
    ]
    path = model_dir / CHECKSUMS_FILE
    path.write_text("\n".join(lines) + "\n")
    return path


def render_readme(folder: ServerFolder, info: BuildInfo) -> Path:
    """Write the server's README: install, run, client configs, tools, build_info."""
    name = folder.name
    configs = {
        client.replace("-", "_"): client_config(name, folder.root, client) for client in CLIENTS
    }
    shown = {k: v for k, v in info.as_dict().items() if k not in ("probe_vector", "eval")}
    text = render(
        (TEMPLATES / "server_README.md").read_text(),
        {
            "tools_table": (TEMPLATES / "tools_table.md").read_text(),  # first: it has {{name}}
            "name": name,
            "name_underscored": underscored(name),
            **configs,
            "build_info": json.dumps(shown, indent=2, default=str),
            "chunks": str(info.chunk_count),
            "documents": str(info.document_count),
            "model": str(info.model_id or "?"),
            "precision": f" ({info.precision} encoder)" if info.precision else "",
            "quality": _quality(info.eval),
            "versions": _versions(info),
        },
    )
    folder.readme.write_text(text)
    return folder.readme


def render_skill(folder: ServerFolder, info: BuildInfo) -> Path:
    """Write the server's ``SKILL.md``: for an agent, when to use which tool and mode, how to
    narrow a search and how to read on (shipped in the folder, the wheel and the bundle)."""
    labels, default = info.version_labels, info.default_version
    text = render(
        (TEMPLATES / "SKILL.md").read_text(),
        {
            "name": folder.name,
            "documents": str(info.document_count),
            "chunks": str(info.chunk_count),
            "versions_line": f", in versions {', '.join(labels)} (default {default})"
            if labels
            else "",
            "versions_hint": f" This server holds {', '.join(labels)}." if labels else "",
        },
    )
    folder.skill.write_text(text)
    return folder.skill


def _versions(info: BuildInfo) -> str:
    """A line naming the documentation versions (empty for a server without versions)."""
    versions = info.versions
    if not versions:
        return ""
    listed = ", ".join(f"{v.get('label')} ({v.get('chunks')} passages)" for v in versions)
    return (
        f"\nIt holds {len(versions)} versions of the documentation, oldest first: {listed}; "
        f"searches answer from {info.default_version} unless asked for another one.\n"
    )


def _quality(report: Any) -> str:
    """The measured-quality section of the README (empty when the build ran no eval)."""
    if not isinstance(report, dict):
        return ""
    return (
        f"## Measured quality\n\nThe build scored this database on {report.get('count')} queries "
        f"from `{Path(str(report.get('queries'))).name}` (`tools/eval_mcp.sh` reruns it):\n\n"
        + str(report.get("table", ""))
        + "\n"
    )


def package_server(config: ProcessingConfig, info: BuildInfo) -> None:
    """Make the server folder self-contained for the build ``info`` describes: runtime code,
    script, the model files its queries need (and no others), README and SKILL.md."""
    install_runtime(config.folder)
    model = local_model(config, info)
    if model is not None:
        bundle_model(model, config.folder.model, needs_weights(info))
    remove_other_encoders(config.folder, info.encoder_file)
    render_docs(config)


def local_model(config: ProcessingConfig, info: BuildInfo) -> Path | None:
    """The model folder a build embedded with in process (None: an embedding server)."""
    if not info.local:
        return None
    return model_folder(config.embedding.model_path)


def ship_model(config: ProcessingConfig, info: BuildInfo) -> None:
    """Put what a build's server embeds queries with into ``runtime/`` before its database:
    the model's tokenizer and settings, and the fp32 weights or the quantized encoder its
    vectors came from. Weights the served database may still need stay until
    :func:`package_server` (an int8 server does not ship them). A rollback to an int8 build
    quantizes again if need be, and must get the same file."""
    model = local_model(config, info)
    if model is None:
        return
    folder = config.folder.model
    if needs_weights(info):
        weights = file_sha256(model / WEIGHTS_FILE)
        if info.model_sha256 not in (None, weights):
            raise BuildError(
                f"the model in {model} (weights {weights[:12]}) is not the one that build "
                f"embedded with ({str(info.model_sha256)[:12]}): rebuild instead"
            )
    bundle_model(model, folder, needs_weights(info) or (folder / WEIGHTS_FILE).is_file())
    name = info.encoder_file
    if not name:
        return
    target = config.folder.runtime / str(name)
    expected = str(info.encoder_sha256)
    if target.is_file() and file_sha256(target) == expected:
        return
    from docbuild.embedding.quantize import int8_encoder

    source = int8_encoder(model)
    if file_sha256(source) != expected:
        raise BuildError(
            f"the int8 encoder made here ({source}) is not the one that build embedded with "
            f"(SHA-256 {expected[:12]}): the model or ONNX Runtime differs from that build's; "
            "rebuild instead of rolling back"
        )
    staged = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.copyfile(source, staged)
    os.replace(staged, target)


def render_docs(config: ProcessingConfig) -> None:
    """Render the server's README and SKILL.md from the database's ``build_info``."""
    with connect(config.database_path, read_only=True, extensions=()) as con:
        info = BuildInfo.read(con)
    render_readme(config.folder, info)
    render_skill(config.folder, info)
