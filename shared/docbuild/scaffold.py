"""Create ``servers/NAME/`` from the templates in ``shared/templates``."""

from __future__ import annotations

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
        source_block = f"  local: {portable_path(path, root)}\n"
    else:
        source_block = f"  git:\n    url: {git_url}\n    ref: {git_ref or 'null'}\n    subfolder: {git_subfolder or 'null'}\n"
    values = {
        "name": name,
        "name_underscored": underscored(name),
        "format": fmt,
        "url_base": url_base or "null",
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
