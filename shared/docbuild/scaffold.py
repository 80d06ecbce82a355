"""Create ``servers/NAME/`` from the templates in ``shared/templates``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from docbuild.config import NAME_PATTERN, project_root, server_root, underscored
from docbuild.processors import FORMATS

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


class ScaffoldError(ValueError):
    """The name or source given to the scaffold is not usable."""


def render(template: str, values: dict[str, str]) -> str:
    """Replace ``{{key}}`` placeholders (``${VAR}`` is left for load time)."""
    for key, value in values.items():
        template = template.replace("{{" + key + "}}", value)
    return template


def portable_path(path: Path, root: Path) -> str:
    """``${PROJECT_ROOT}/...`` for paths near the project, else the absolute path."""
    relative = Path(os.path.relpath(path, root))
    if relative.parts[:3].count("..") <= 1:
        return "${PROJECT_ROOT}/" + relative.as_posix()
    return str(path)


def scaffold(
    name: str,
    source: str | None = None,
    fmt: str = "auto",
    url_base: str | None = None,
    git_url: str | None = None,
    git_ref: str | None = None,
    git_subfolder: str | None = None,
    root: Path | None = None,
    url_suffix: str = "",
) -> Path:
    """Create the server folder; raises :class:`ScaffoldError` on a bad name or source."""
    root = root or project_root()
    if not NAME_PATTERN.match(name):
        raise ScaffoldError(
            f"invalid name {name!r}: use lower-case letters, digits and single hyphens, "
            "starting with a letter (for example mojo-manual-mcp)"
        )
    if fmt not in FORMATS:
        raise ScaffoldError(f"invalid format {fmt!r}: choose one of {', '.join(FORMATS)}")
    target = server_root(name, root)
    if target.exists():
        raise ScaffoldError(f"servers/{name} already exists; pick another name or remove it first")
    if bool(source) == bool(git_url):
        raise ScaffoldError("give exactly one source: --source PATH or --git URL")
    if source:
        path = Path(source).expanduser().resolve()
        if not path.exists():
            raise ScaffoldError(f"source path does not exist: {source}")
        source_block = (
            "  # Your folder (or a single JSONL file), read in place at every build: edits,\n"
            "  # new files and deletions there reach the next build and `watch`.\n"
            f"  path: {json.dumps(portable_path(path, root))}\n"
        )
    else:
        source_block = (
            "  # Filled from the repository below by tools/sync_documentation.sh (the first\n"
            "  # build syncs it too); sync again to pick up upstream changes.\n"
            "  path: ${PROJECT_ROOT}/source-documentation/${MCP_NAME}\n"
            f"  git:\n    url: {git_url}\n    ref: {git_ref or 'null'}\n"
            f"    subfolder: {git_subfolder or 'null'}\n"
        )
    values = {
        "name": name,
        "name_underscored": underscored(name),
        "format": fmt,
        "url_base": url_base or "null",
        "url_suffix": url_suffix,
        "source_block": source_block,
    }
    staging = target.with_name(f".{name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "config").mkdir(parents=True)
    (staging / "runtime").mkdir()
    for template, destination in [
        ("processing_config.yaml", "config/processing_config.yaml"),
        ("server_config.yaml", "config/server_config.yaml"),
        ("requirements.txt", "requirements.txt"),
        ("README.md", "README.md"),
    ]:
        text = render((TEMPLATES / template).read_text(encoding="utf-8"), values)
        (staging / destination).write_text(text, encoding="utf-8")
    staging.rename(target)
    return target
